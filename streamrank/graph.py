"""The dynamic graph store on the CPU: out-CSR and in-CSR kept current under batches.

Edges are kept as two sorted arrays of 64-bit keys, ``src << 32 | dst`` (out-CSR order) and
``dst << 32 | src`` (in-CSR order), with per-vertex degrees. A batch is applied with vectorized
``searchsorted`` + ``delete``/``insert``: O(|E| + |V|) memory traffic per batch and no Python loop
over edges or vertices. Internal ids are below 2**31.

Both stores (this one and :class:`streamrank.graph_gpu.GpuGraph`) expose a vertex's neighbours
as ``indices[offset[v] : offset[v] + degree[v]]`` for the out- and in-direction, so that the
rank code reads either the same way.
"""

from __future__ import annotations

import numpy as np

from .batch import EdgeBatch
from .changes import AppliedChanges
from .errors import InvalidArgumentError
from .idmap import IdMap
from .normalize import collapse_last_op

_SHIFT = np.int64(32)
_MASK = np.int64(0xFFFFFFFF)
MAX_VERTICES = 2**31 - 1


class CpuGraph:
    """Dynamic directed graph (set semantics, self-loops allowed) on the host.

    Attributes
    ----------
    ids : IdMap
        External <-> internal vertex ids.
    out_degree, in_degree : ndarray of int64
        Per internal vertex.
    """

    backend_name = "cpu"
    xp = np

    def __init__(self):
        self.ids = IdMap(np)
        self._out_keys = np.zeros(0, dtype=np.int64)
        self._in_keys = np.zeros(0, dtype=np.int64)
        self.out_degree = np.zeros(0, dtype=np.int64)
        self.in_degree = np.zeros(0, dtype=np.int64)
        self._csr_cache = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, src, dst) -> "CpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` (external ids; duplicates collapse)."""
        g = cls()
        g.apply(EdgeBatch.from_arrays(np.asarray(src), np.asarray(dst)))
        return g

    # ------------------------------------------------------------------ sizes
    @property
    def num_vertices(self) -> int:
        return len(self.ids)

    @property
    def num_edges(self) -> int:
        return int(self._out_keys.shape[0])

    # ------------------------------------------------------------------ CSR views
    def _csr(self):
        if self._csr_cache is None:
            out_indptr = np.zeros(self.num_vertices + 1, dtype=np.int64)
            np.cumsum(self.out_degree, out=out_indptr[1:])
            in_indptr = np.zeros(self.num_vertices + 1, dtype=np.int64)
            np.cumsum(self.in_degree, out=in_indptr[1:])
            out_idx = (self._out_keys & _MASK).astype(np.int32)
            in_idx = (self._in_keys & _MASK).astype(np.int32)
            self._csr_cache = (out_indptr, out_idx, in_indptr, in_idx)
        return self._csr_cache

    @property
    def out_indptr(self):
        return self._csr()[0]

    @property
    def out_indices(self):
        return self._csr()[1]

    @property
    def in_indptr(self):
        return self._csr()[2]

    @property
    def in_indices(self):
        return self._csr()[3]

    @property
    def out_offset(self):
        return self.out_indptr[:-1]

    @property
    def in_offset(self):
        return self.in_indptr[:-1]

    def edges(self):
        """All edges as internal ``(src, dst)`` arrays, sorted by (src, dst)."""
        return (self._out_keys >> _SHIFT), (self._out_keys & _MASK)

    def edges_external(self):
        """All edges as external ``(src, dst)`` arrays."""
        s, d = self.edges()
        return self.ids.external[s], self.ids.external[d]

    def has_edges(self, src, dst):
        """Whether each internal ``src[i] -> dst[i]`` is present."""
        keys = (np.asarray(src, dtype=np.int64) << _SHIFT) | np.asarray(dst, dtype=np.int64)
        return _member(self._out_keys, keys)

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch) -> AppliedChanges:
        """Apply a batch under set semantics and return what really changed.

        Parameters
        ----------
        batch : EdgeBatch
            Insertions and deletions in arrival order (external ids). A CuPy batch is copied
            to the host.

        Returns
        -------
        AppliedChanges
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        batch = batch.to(np)
        received = len(batch)
        n_before = self.num_vertices
        src, dst, ins, dups = collapse_last_op(np, batch.src, batch.dst, batch.insert)
        dropped = {"duplicate": dups, "present_insertion": 0, "absent_deletion": 0}

        # Deletions: only edges whose endpoints are known can be present.
        ds, dd = self.ids.lookup(src[~ins]), self.ids.lookup(dst[~ins])
        known = (ds >= 0) & (dd >= 0)
        dkeys = (ds[known] << _SHIFT) | dd[known]
        present = _member(self._out_keys, dkeys)
        dkeys = dkeys[present]
        dropped["absent_deletion"] = int((~ins).sum()) - int(dkeys.shape[0])

        # Insertions: new ids grow the graph (first-appearance order: src before dst per edge).
        isrc, idst = src[ins], dst[ins]
        both = np.empty(2 * isrc.shape[0], dtype=np.int64)
        both[0::2], both[1::2] = isrc, idst
        internal, _ = self.ids.add(both)
        if self.num_vertices > MAX_VERTICES:
            raise InvalidArgumentError(f"the CPU graph store holds at most {MAX_VERTICES} vertices")
        is_, id_ = internal[0::2], internal[1::2]
        ikeys = (is_ << _SHIFT) | id_
        new = ~_member(self._out_keys, ikeys)
        ikeys = ikeys[new]
        dropped["present_insertion"] = int(ins.sum()) - int(ikeys.shape[0])

        n_after = self.num_vertices
        if n_after > n_before:
            self.out_degree = np.concatenate([self.out_degree, np.zeros(n_after - n_before, np.int64)])
            self.in_degree = np.concatenate([self.in_degree, np.zeros(n_after - n_before, np.int64)])

        del_src, del_dst = dkeys >> _SHIFT, dkeys & _MASK
        ins_src, ins_dst = ikeys >> _SHIFT, ikeys & _MASK
        if dkeys.shape[0] or ikeys.shape[0]:
            self._out_keys = _merge(self._out_keys, dkeys, np.sort(ikeys))
            rin_del = (del_dst << _SHIFT) | del_src
            rin_ins = np.sort((ins_dst << _SHIFT) | ins_src)
            self._in_keys = _merge(self._in_keys, rin_del, rin_ins)
            self.out_degree += np.bincount(ins_src, minlength=n_after) - np.bincount(del_src, minlength=n_after)
            self.in_degree += np.bincount(ins_dst, minlength=n_after) - np.bincount(del_dst, minlength=n_after)
        if dkeys.shape[0] or ikeys.shape[0] or n_after > n_before:
            self._csr_cache = None
        return AppliedChanges(ins_src, ins_dst, del_src, del_dst, n_before, n_after, received, dropped)

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly (internal ids preserved)."""
        s, d = self.edges()  # fresh arrays: no copy needed
        return {"external": self.ids.external.copy(), "src": s, "dst": d}

    @classmethod
    def from_state(cls, state: dict) -> "CpuGraph":
        """Rebuild a graph saved by :meth:`state`."""
        g = cls()
        g.ids = IdMap.from_external(np.asarray(state["external"]), np)
        n = len(g.ids)
        s = np.asarray(state["src"], dtype=np.int64)
        d = np.asarray(state["dst"], dtype=np.int64)
        g._out_keys = np.sort((s << _SHIFT) | d)
        g._in_keys = np.sort((d << _SHIFT) | s)
        g.out_degree = np.bincount(s, minlength=n).astype(np.int64)
        g.in_degree = np.bincount(d, minlength=n).astype(np.int64)
        return g


def _member(sorted_keys, keys):
    if sorted_keys.shape[0] == 0 or keys.shape[0] == 0:
        return np.zeros(keys.shape[0], dtype=bool)
    pos = np.searchsorted(sorted_keys, keys)
    pos = np.minimum(pos, sorted_keys.shape[0] - 1)
    return sorted_keys[pos] == keys


def _merge(sorted_keys, remove, add_sorted):
    """``sorted_keys`` without ``remove`` (all present) and with ``add_sorted`` (all absent)."""
    if remove.shape[0]:
        sorted_keys = np.delete(sorted_keys, np.searchsorted(sorted_keys, remove))
    if add_sorted.shape[0]:
        sorted_keys = np.insert(sorted_keys, np.searchsorted(sorted_keys, add_sorted), add_sorted)
    return sorted_keys
