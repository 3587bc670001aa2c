"""The edge batch: what sources produce and the graph store applies.

A batch is three equally long arrays in arrival order: ``src`` and ``dst`` (external vertex ids)
and ``insert`` (``True`` for an insertion, ``False`` for a deletion). Ids are non-negative 64-bit
integers (NumPy or CuPy arrays) or strings (Arrow string arrays, on the host; see
:mod:`streamrank.ids.kinds`); both arrays of a batch hold the same kind. The engine encodes
string ids to integer codes (:mod:`streamrank.ids.strings`) before a batch reaches the graph
store. Batches cross between the host and the device, and between processes, as Arrow tables with
columns ``src``, ``dst`` (``int64`` or ``string``) and ``op: int8`` (+1 insert, -1 delete).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .backend import to_host
from .errors import BatchFormatError
from .ids.kinds import (DEFAULT_MAX_ID_BYTES, IdError, check_max_id_bytes, id_kind, string_id_problems,
                         to_string_array)

#: Largest accepted external vertex id (ids are stored as int64).
MAX_VERTEX_ID = np.iinfo(np.int64).max

_INSERT_OPS = {"+", "insert", "i", "add", "1", "+1"}
_DELETE_OPS = {"-", "delete", "d", "del", "remove", "-1"}


def parse_op(value: Any) -> bool:
    """Map an op field to ``True`` (insert) or ``False`` (delete).

    Accepts ``"+"``/``"-"``, ``"insert"``/``"delete"`` (any case), ``1``/``-1`` and
    ``None`` (absent op means insert).

    Raises
    ------
    BatchFormatError
        For any other value.
    """
    if value is None:
        return True
    if isinstance(value, bool):
        raise BatchFormatError(f"unknown op {value!r}")
    if isinstance(value, (int, np.integer)):
        if value == 1:
            return True
        if value == -1:
            return False
        raise BatchFormatError(f"unknown op {value!r}")
    text = str(value).strip().lower()
    if text == "":
        return True
    if text in _INSERT_OPS:
        return True
    if text in _DELETE_OPS:
        return False
    raise BatchFormatError(f"unknown op {value!r}")


def _check_ids(xp, ids, name: str):
    if ids.ndim != 1:
        raise BatchFormatError(f"{name} must be one-dimensional, got shape {ids.shape}")
    if ids.dtype.kind == "f":
        # Floats are accepted only when they hold exact integers (CSV readers produce them).
        if ids.size and bool(xp.any(ids != xp.floor(ids))):  # syncs on the GPU: validation only
            raise BatchFormatError(f"{name} holds non-integer vertex ids")
        if ids.size and bool(xp.any(xp.abs(ids) >= 2.0**63)):
            raise BatchFormatError(f"{name} holds vertex ids beyond 64 bits")
        ids = ids.astype(xp.int64)
    elif ids.dtype.kind == "u":
        if ids.size and bool(xp.any(ids > MAX_VERTEX_ID)):
            raise BatchFormatError(f"{name} holds vertex ids beyond the int64 range")
        ids = ids.astype(xp.int64)
    elif ids.dtype.kind == "i":
        ids = ids.astype(xp.int64, copy=False)
    else:
        raise BatchFormatError(f"{name} must hold integers, got dtype {ids.dtype}")
    if ids.size and bool(xp.any(ids < 0)):  # syncs on the GPU: validation only
        raise BatchFormatError(f"{name} holds negative vertex ids")
    return ids


def _ids_of(values, xp):
    """``(kind, ids)``: an Arrow string array, or an unvalidated integer array of ``xp``.

    Lists and object arrays are typed by Arrow's inference, so ``["a", 1]`` is a mixed-type
    error rather than the strings ``"a", "1"``.
    """
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        t = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
                or pa.types.is_large_binary(t):
            return "string", to_string_array(values)
        if pa.types.is_null(t):
            if len(values):
                raise BatchFormatError("ids are all missing (null)")
            return "int", xp.zeros(0, dtype=xp.int64)
        if values.null_count:
            raise BatchFormatError(f"{values.null_count} ids are missing (null)")
        return "int", xp.asarray(values.to_numpy(zero_copy_only=False))
    if isinstance(values, (list, tuple)) or (isinstance(values, np.ndarray) and values.dtype.kind == "O"):
        try:
            arr = pa.array(values.ravel() if isinstance(values, np.ndarray) else list(values))
        except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
            raise IdError("mixed_id_types", f"ids mix strings with other values ({exc})") from None
        except UnicodeEncodeError:
            raise IdError("bad_utf8_id", "an id is not valid UTF-8 (lone surrogate)") from None
        return _ids_of(arr, xp)
    if isinstance(values, np.ndarray) and values.dtype.kind in "US":
        return "string", to_string_array(values)
    return "int", xp.asarray(values).reshape(-1)


def _check_string_ids(ids: pa.Array, name: str, max_id_bytes: int) -> pa.Array:
    if ids.null_count:
        raise BatchFormatError(f"{name} holds {ids.null_count} missing (null) vertex ids")
    bad = string_id_problems(ids, max_bytes=max_id_bytes, name=name)
    if bad:
        row = min(bad)
        raise IdError(bad[row].reason, f"{bad[row].detail} (row {row})")
    return ids


@dataclass(frozen=True)
class EdgeBatch:
    """A batch of edge insertions and deletions, in arrival order.

    Attributes
    ----------
    src, dst : array of int64, or pyarrow.Array of strings
        External vertex ids (non-negative integers, or strings on the host). Built directly (not
        by :meth:`from_arrays`), string ids may also be NumPy ``object`` arrays of ``str``.
    insert : array of bool
        ``True`` for an insertion, ``False`` for a deletion.
    id_kind : {"int", "string"}
        The kind of the vertex ids (set when the batch is built, not passed).
    """

    src: Any
    dst: Any
    insert: Any
    # read on the host's critical path of every GPU batch (Engine.apply, len()), so known from the
    # start rather than computed at the first read
    id_kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "id_kind", id_kind(self.src))

    @classmethod
    def from_arrays(cls, src, dst, insert=None, *, xp=np, max_id_bytes: int = DEFAULT_MAX_ID_BYTES) -> "EdgeBatch":
        """Build a validated batch.

        Parameters
        ----------
        src, dst : array_like of int, or of str
            External vertex ids: non-negative integers below 2**63, or strings (a sequence of
            ``str``, a NumPy ``str``/``object`` array or an Arrow string array). Both of one kind.
        insert : array_like of bool, optional
            Per-edge op, ``True`` = insert. Default: all insertions.
        xp : module, optional
            :mod:`numpy` (default) or :mod:`cupy`: where the batch lives. String ids stay on the
            host whatever ``xp`` is (the engine encodes them before the batch moves).
        max_id_bytes : int, optional
            Longest accepted string id in UTF-8 bytes (default 1 KiB).

        Raises
        ------
        BatchFormatError
            For mismatched lengths, non-integer, negative or too large integer ids; for empty,
            too long or non-UTF-8 string ids, and for ids mixing the two kinds
            (:class:`~streamrank.ids.kinds.IdError`, with its ``reason``).
        """
        max_id_bytes = check_max_id_bytes(max_id_bytes)
        kind_s, src = _ids_of(src, xp)
        kind_d, dst = _ids_of(dst, xp)
        if len(src) != len(dst):
            raise BatchFormatError(f"src and dst differ in length ({len(src)} vs {len(dst)})")
        n = len(src)
        if kind_s != kind_d and n:
            raise IdError("mixed_id_types", f"src ids are {kind_s}s but dst ids are {kind_d}s")
        if kind_s == "string" and kind_d == "string":
            src = _check_string_ids(src, "src", max_id_bytes)
            dst = _check_string_ids(dst, "dst", max_id_bytes)
            xp = np
        else:
            src = _check_ids(xp, src, "src") if kind_s == "int" else xp.zeros(0, dtype=xp.int64)
            dst = _check_ids(xp, dst, "dst") if kind_d == "int" else xp.zeros(0, dtype=xp.int64)
        if insert is None:
            insert = xp.ones(n, dtype=bool)
        else:
            insert = xp.asarray(insert).reshape(-1)
            if insert.dtype != bool:
                if insert.dtype.kind not in "iu":
                    raise BatchFormatError(f"insert must be boolean, got dtype {insert.dtype}")
                if insert.size and bool(xp.any((insert != 1) & (insert != -1) & (insert != 0))):
                    raise BatchFormatError("integer ops must be +1 (insert) or -1 (delete)")
                insert = insert > 0
            if insert.shape != (n,):
                raise BatchFormatError("insert and src differ in length")
        return cls(src, dst, insert)

    @classmethod
    def empty(cls, *, xp=np) -> "EdgeBatch":
        """A batch with no edges."""
        z = xp.zeros(0, dtype=xp.int64)
        return cls(z, z.copy(), xp.zeros(0, dtype=bool))

    @classmethod
    def from_arrow(cls, table, *, xp=np) -> "EdgeBatch":
        """Build a batch from an Arrow table (``src``, ``dst`` integers or strings, optional ``op``
        int8 +1/-1)."""
        names = set(table.column_names)
        if not {"src", "dst"} <= names:
            raise BatchFormatError(f"an edge table needs columns src and dst, has {sorted(names)}")
        src_type = table.column("src").type
        if not (pa.types.is_integer(src_type) or pa.types.is_floating(src_type)):
            op = table.column("op").to_numpy(zero_copy_only=False) if "op" in names else None
            return cls.from_arrays(table.column("src"), table.column("dst"), op)
        if xp is not np:
            from .cudf_support import arrow_to_device, cudf_enabled

            if cudf_enabled():
                return cls.from_arrays(*arrow_to_device(table), xp=xp)
        src = table.column("src").to_numpy(zero_copy_only=False)
        dst = table.column("dst").to_numpy(zero_copy_only=False)
        op = table.column("op").to_numpy(zero_copy_only=False) if "op" in names else None
        if xp is not np:
            src, dst = xp.asarray(src), xp.asarray(dst)
            op = None if op is None else xp.asarray(op)
        return cls.from_arrays(src, dst, op, xp=xp)

    def to_arrow(self):
        """The batch as an Arrow table (``src``, ``dst``, ``op`` int8); copies to the host."""
        op = np.where(to_host(self.insert), 1, -1).astype(np.int8)
        if self.id_kind == "string":
            return pa.table({"src": to_string_array(self.src), "dst": to_string_array(self.dst), "op": op})
        return pa.table({"src": to_host(self.src), "dst": to_host(self.dst), "op": op})

    def __len__(self) -> int:
        return len(self.src) if self.id_kind == "string" else int(self.src.shape[0])

    def to(self, xp) -> "EdgeBatch":
        """This batch on another backend (host<->device copy when it moves).

        Raises
        ------
        BatchFormatError
            For a string-id batch and a device backend (the engine encodes strings first).
        """
        if self.id_kind == "string":
            if xp is np:
                return self
            raise BatchFormatError("a batch of string ids stays on the host; Engine.apply encodes it first")
        if _xp_of(self.src) is xp:
            return self
        if xp is np:
            return EdgeBatch(self.src.get(), self.dst.get(), self.insert.get())
        return EdgeBatch(xp.asarray(self.src), xp.asarray(self.dst), xp.asarray(self.insert))


def _xp_of(array):
    mod = type(array).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np
