"""The edge batch: what sources produce and the graph store applies.

A batch is three equally long arrays in arrival order: ``src`` and ``dst`` (external vertex ids)
and ``insert`` (``True`` for an insertion, ``False`` for a deletion). Ids are non-negative 64-bit
integers (NumPy or CuPy arrays) or strings (Arrow string arrays, on the host; see
:mod:`streamrank.ids.kinds`); both arrays of a batch hold the same kind. The engine encodes
string ids to integer codes (:mod:`streamrank.ids.strings`) before a batch reaches the graph
store. Batches cross between the host and the device, and between processes, as Arrow tables with
columns ``src``, ``dst`` (``int64`` or ``string``) and ``op: int8`` (+1 insert, -1 delete).

A weighted batch has a fourth array, ``weight`` (float64, same array module as ``src``): a positive
finite weight per insertion; per deletion a positive finite weight or NaN ("no weight given").
Its Arrow form has a ``weight: float64`` column, null where a deletion has no weight; an
unweighted batch has ``weight=None`` and no such column.
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


def _weight_problem(value: float) -> str:
    """Why a weight value is bad."""
    if np.isnan(value):
        return "NaN (an insertion needs a weight)"
    if np.isinf(value):
        return f"infinite ({value!r})"
    if value == 0:
        return "zero"
    return f"negative ({value!r})"


def check_weights(xp, weight, insert):
    """``weight`` as a validated float64 array of ``xp`` (the batch's weights).

    Insertions need a finite positive weight; deletions a finite positive weight or NaN (no weight
    given: the whole edge goes).

    Raises
    ------
    BatchFormatError
        For a non-numeric or wrongly shaped array, or naming the first bad row and why (zero,
        negative, NaN on an insertion, infinite).
    """
    if isinstance(weight, (pa.Array, pa.ChunkedArray)):
        weight = weight.to_numpy(zero_copy_only=False)
    try:
        if isinstance(weight, (list, tuple)) or (isinstance(weight, np.ndarray) and weight.dtype.kind == "O"):
            weight = np.asarray(weight, dtype=np.float64)  # None -> NaN
        weight = xp.asarray(weight)
    except (TypeError, ValueError) as exc:
        raise BatchFormatError(f"weight must hold numbers ({exc})") from None
    weight = weight.reshape(-1)
    if weight.dtype.kind not in "fiu":
        raise BatchFormatError(f"weight must hold numbers, got dtype {weight.dtype}")
    weight = weight.astype(xp.float64, copy=False)
    n = int(insert.shape[0])
    if weight.shape[0] != n:
        raise BatchFormatError(f"weight and src differ in length ({weight.shape[0]} vs {n})")
    if n:
        with np.errstate(invalid="ignore"):
            ok = (weight > 0) & (weight < np.inf)
            ok |= ~insert & xp.isnan(weight)
        if not bool(xp.all(ok)):  # syncs on the GPU: validation only
            row = int(xp.argmin(ok))
            op = "insertion" if bool(insert[row]) else "deletion"
            raise BatchFormatError(f"row {row}: the {op}'s weight is {_weight_problem(float(weight[row]))}; "
                                   "weights are finite and > 0")
    return weight


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
    weight : array of float64 or None
        None for an unweighted batch; else the weight of each row (finite, > 0; NaN on a deletion
        means no weight given). Validated by :meth:`from_arrays`, not by the constructor.
    id_kind : {"int", "string"}
        The kind of the vertex ids (set when the batch is built, not passed).
    """

    src: Any
    dst: Any
    insert: Any
    weight: Any = None
    # read on the host's critical path of every GPU batch (Engine.apply, len()), so known from the
    # start rather than computed at the first read
    id_kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "id_kind", id_kind(self.src))

    @classmethod
    def from_arrays(cls, src, dst, insert=None, *, weight=None, xp=np,
                    max_id_bytes: int = DEFAULT_MAX_ID_BYTES) -> "EdgeBatch":
        """Build a validated batch.

        Parameters
        ----------
        src, dst : array_like of int, or of str
            External vertex ids: non-negative integers below 2**63, or strings (a sequence of
            ``str``, a NumPy ``str``/``object`` array or an Arrow string array). Both of one kind.
        insert : array_like of bool, optional
            Per-edge op, ``True`` = insert. Default: all insertions.
        weight : array_like of float, optional
            Per-edge weight (a weighted batch): finite and > 0 on insertions; on deletions finite
            and > 0, or NaN (or None in a list) for "no weight given". Default: unweighted.
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
            (:class:`~streamrank.ids.kinds.IdError`, with its ``reason``); for a bad weight
            (naming its row: zero, negative, NaN on an insertion, infinite).
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
        if weight is not None:
            weight = check_weights(xp, weight, insert)
        return cls(src, dst, insert, weight)

    @classmethod
    def empty(cls, *, xp=np, weighted: bool = False) -> "EdgeBatch":
        """A batch with no edges (with an empty weight array when ``weighted``)."""
        z = xp.zeros(0, dtype=xp.int64)
        return cls(z, z.copy(), xp.zeros(0, dtype=bool), xp.zeros(0, dtype=xp.float64) if weighted else None)

    @property
    def weighted(self) -> bool:
        """Whether the batch carries weights."""
        return self.weight is not None

    @classmethod
    def from_arrow(cls, table, *, xp=np) -> "EdgeBatch":
        """Build a batch from an Arrow table (``src``, ``dst`` integers or strings, optional ``op``
        int8 +1/-1, optional ``weight`` float64).

        A ``weight`` column makes a weighted batch: a null weight on a deletion means no weight
        given, on an insertion weight 1 (an insertion without a weight counts 1).
        """
        names = set(table.column_names)
        if not {"src", "dst"} <= names:
            raise BatchFormatError(f"an edge table needs columns src and dst, has {sorted(names)}")
        op = table.column("op").to_numpy(zero_copy_only=False) if "op" in names else None
        weight = arrow_weights(table.column("weight"), op) if "weight" in names else None
        src_type = table.column("src").type
        if not (pa.types.is_integer(src_type) or pa.types.is_floating(src_type)):
            return cls.from_arrays(table.column("src"), table.column("dst"), op, weight=weight)
        if xp is not np and weight is None:
            from .cudf_support import arrow_to_device, cudf_enabled

            if cudf_enabled():
                return cls.from_arrays(*arrow_to_device(table), xp=xp)
        src = table.column("src").to_numpy(zero_copy_only=False)
        dst = table.column("dst").to_numpy(zero_copy_only=False)
        if xp is not np:
            src, dst = xp.asarray(src), xp.asarray(dst)
            op = None if op is None else xp.asarray(op)
            weight = None if weight is None else xp.asarray(weight)
        return cls.from_arrays(src, dst, op, weight=weight, xp=xp)

    def to_arrow(self):
        """The batch as an Arrow table (``src``, ``dst``, ``op`` int8, and ``weight`` float64 when
        weighted, null where a deletion has no weight); copies to the host."""
        op = np.where(to_host(self.insert), 1, -1).astype(np.int8)
        if self.id_kind == "string":
            cols = {"src": to_string_array(self.src), "dst": to_string_array(self.dst), "op": op}
        else:
            cols = {"src": to_host(self.src), "dst": to_host(self.dst), "op": op}
        if self.weight is not None:
            w = np.asarray(to_host(self.weight), dtype=np.float64)
            cols["weight"] = pa.array(w, type=pa.float64(), mask=np.isnan(w))
        return pa.table(cols)

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
        w = self.weight
        if xp is np:
            return EdgeBatch(self.src.get(), self.dst.get(), self.insert.get(), None if w is None else w.get())
        return EdgeBatch(xp.asarray(self.src), xp.asarray(self.dst), xp.asarray(self.insert),
                         None if w is None else xp.asarray(w))


def arrow_weights(column, op) -> np.ndarray:
    """Host float64 weights of an Arrow ``weight`` column: null -> NaN on a deletion, 1 on an
    insertion (``op`` None: all insertions)."""
    t = column.type
    if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t)):
        raise BatchFormatError(f"the weight column must be numeric, got {t}")
    w = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)  # nulls -> NaN
    if column.null_count:
        nulls = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        inserts = np.ones(len(w), dtype=bool) if op is None else np.asarray(op).reshape(-1) > 0
        if inserts.shape == w.shape:
            w = w.copy()
            w[nulls & inserts] = 1.0
            w[nulls & ~inserts] = np.nan
    return w


def _xp_of(array):
    mod = type(array).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np
