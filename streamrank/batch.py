"""The edge batch: what sources produce and the graph store applies.

A batch is three equally long arrays in arrival order: ``src`` and ``dst`` (external vertex ids,
non-negative 64-bit integers) and ``insert`` (``True`` for an insertion, ``False`` for a
deletion). The arrays live on one backend (NumPy or CuPy). Batches cross between the host and
the device, and between processes, as Arrow tables with columns ``src: int64``, ``dst: int64``,
``op: int8`` (+1 insert, -1 delete).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .backend import to_host
from .errors import BatchFormatError

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


@dataclass(frozen=True)
class EdgeBatch:
    """A batch of edge insertions and deletions, in arrival order.

    Attributes
    ----------
    src, dst : array of int64
        External vertex ids (non-negative).
    insert : array of bool
        ``True`` for an insertion, ``False`` for a deletion.
    """

    src: Any
    dst: Any
    insert: Any

    @classmethod
    def from_arrays(cls, src, dst, insert=None, *, xp=np) -> "EdgeBatch":
        """Build a validated batch.

        Parameters
        ----------
        src, dst : array_like of int
            External vertex ids, non-negative and below 2**63.
        insert : array_like of bool, optional
            Per-edge op, ``True`` = insert. Default: all insertions.
        xp : module, optional
            :mod:`numpy` (default) or :mod:`cupy`: where the batch lives.

        Raises
        ------
        BatchFormatError
            For mismatched lengths, non-integer, negative or too large ids.
        """
        src = _check_ids(xp, xp.asarray(src).reshape(-1), "src")
        dst = _check_ids(xp, xp.asarray(dst).reshape(-1), "dst")
        if src.shape != dst.shape:
            raise BatchFormatError(f"src and dst differ in length ({src.size} vs {dst.size})")
        if insert is None:
            insert = xp.ones(src.shape, dtype=bool)
        else:
            insert = xp.asarray(insert).reshape(-1)
            if insert.dtype != bool:
                if insert.dtype.kind not in "iu":
                    raise BatchFormatError(f"insert must be boolean, got dtype {insert.dtype}")
                if insert.size and bool(xp.any((insert != 1) & (insert != -1) & (insert != 0))):
                    raise BatchFormatError("integer ops must be +1 (insert) or -1 (delete)")
                insert = insert > 0
            if insert.shape != src.shape:
                raise BatchFormatError("insert and src differ in length")
        return cls(src, dst, insert)

    @classmethod
    def empty(cls, *, xp=np) -> "EdgeBatch":
        """A batch with no edges."""
        z = xp.zeros(0, dtype=xp.int64)
        return cls(z, z.copy(), xp.zeros(0, dtype=bool))

    @classmethod
    def from_arrow(cls, table, *, xp=np) -> "EdgeBatch":
        """Build a batch from an Arrow table (``src``, ``dst``, optional ``op`` int8 +1/-1)."""
        names = set(table.column_names)
        if not {"src", "dst"} <= names:
            raise BatchFormatError(f"an edge table needs columns src and dst, has {sorted(names)}")
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
        import pyarrow as pa

        op = np.where(to_host(self.insert), 1, -1).astype(np.int8)
        return pa.table({"src": to_host(self.src), "dst": to_host(self.dst), "op": op})

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def to(self, xp) -> "EdgeBatch":
        """This batch on another backend (host<->device copy when it moves)."""
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
