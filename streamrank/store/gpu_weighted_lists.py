"""One direction of the weighted device graph store: :class:`~streamrank.store.gpu_lists.Direction`
with a float64 weight per slot.

``wt`` lies beside ``idx`` slot for slot (the weight of the edge stored in ``idx[j]`` is
``wt[j]``), so the in-direction's pull reads its weights where it reads its neighbours. Every
kernel that moves a slot moves its weight too (``kernels/cuda/graph_weights.cu``); the
unweighted direction's kernels (``graph_update.cu``) are not used here and stay as they are.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cuda.launch import BLOCK, grid_for_warps, launch, grid_for_threads
from ..kernels.cuda.loader import get_kernel
from .gpu_lists import Direction, _exclusive_cumsum, _slack

_CU = "graph_weights.cu"
_NAMES = (
    "pair_info<int>",
    "edge_weight<int>",
    "set_weight<int>",
    "fold_pairs<bool>",
    "row_sums<int>",
    "fill_weights<int>",
    "delete_grouped_w<int>",
    "insert_grouped_w<int>",
    "relocate_all_w<int>",
    "gather_edges_w<int>",
)


def weights_kernel(name: str):
    return get_kernel(_CU, name, _NAMES)


def fold_pairs(cp, starts, insert, weight, before, summing: bool, zero_rel: float):
    """Each pair's weight after its records (NaN: absent): ``fold_pairs`` in graph_weights.cu,
    the CPU store's rule (:func:`streamrank.kernels.cpu.weighted_csr.fold_pairs`)."""
    npairs = int(before.shape[0])
    after = cp.empty(npairs, dtype=cp.float64)
    if npairs:
        launch(weights_kernel("fold_pairs<bool>"), grid_for_threads(npairs), BLOCK,
               (starts, np.int64(npairs), cp.ascontiguousarray(insert), weight, before, np.int32(bool(summing)),
                np.float64(zero_rel), after))
    return after


class WeightedDirection(Direction):
    """A gapped CSR direction with ``wt`` (float64) beside ``idx``."""

    def __init__(self, cp, vcap: int):
        super().__init__(cp, vcap)
        self.wt = cp.zeros(self.idx.shape[0], dtype=cp.float64)

    @classmethod
    def adopt(cls, direction: Direction) -> "WeightedDirection":
        """The arrays of an unweighted ``direction`` (a fresh build) with zero weights (filled by
        :meth:`fill`)."""
        d = cls.__new__(cls)
        d.__dict__.update(direction.__dict__)
        d.wt = d.cp.zeros(d.idx.shape[0], dtype=d.cp.float64)
        return d

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self.wt.nbytes)

    def reserve_bytes(self, extra: int) -> int:
        length = self._reserved_length(extra)
        return 12 * length if length != self.idx.shape[0] else 0

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more slots after ``end`` (both arrays allocated before either is
        replaced)."""
        length = self._reserved_length(extra)
        if length == self.idx.shape[0]:
            return
        cp = self.cp
        idx = cp.zeros(length, dtype=cp.int32)
        wt = cp.zeros(length, dtype=cp.float64)
        idx[: self.end] = self.idx[: self.end]
        wt[: self.end] = self.wt[: self.end]
        self.idx, self.wt = idx, wt

    @staticmethod
    def compact_bytes(n: int, num_edges: int) -> int:
        return 3 * Direction.compact_bytes(n, num_edges)

    def compact(self, n: int) -> None:
        """:meth:`Direction.compact` moving the weights along."""
        cp = self.cp
        deg = self.deg[:n].astype(cp.int64)
        cap = deg + _slack(cp, deg)
        off = _exclusive_cumsum(cp, cap)
        end = int(off[n].get())  # sync: the host sizes the new arrays
        length = end + max(1 << 16, end // 4)
        new_idx = cp.zeros(length, dtype=cp.int32)
        new_wt = cp.zeros(length, dtype=cp.float64)
        if n:
            launch(weights_kernel("relocate_all_w<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, off, self.idx, new_idx, self.wt, new_wt))
        self.idx, self.wt = new_idx, new_wt
        self.off[:n] = off[:n]
        self.cap[:n] = cap.astype(cp.int32)
        self.end = end

    def gather_weighted(self, n: int, num_edges: int):
        """All ``(u, t, w)`` of this direction (int64, int64, float64; unsorted)."""
        cp = self.cp
        start = _exclusive_cumsum(cp, self.deg[:n].astype(cp.int64))
        us = cp.empty(num_edges, dtype=cp.int64)
        ts = cp.empty(num_edges, dtype=cp.int64)
        ws = cp.empty(num_edges, dtype=cp.float64)
        if n and num_edges:
            launch(weights_kernel("gather_edges_w<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, start, self.idx, self.wt, us, ts, ws))
        return us, ts, ws

    def weights_of(self, own, nbr):
        """Stored weights of ``own[i] -> nbr[i]`` (int64 device arrays; -1 allowed), NaN where absent."""
        cp = self.cp
        m = int(own.shape[0])
        out = cp.empty(m, dtype=cp.float64)
        if m:
            launch(weights_kernel("edge_weight<int>"), grid_for_warps(m), BLOCK,
                   (cp.ascontiguousarray(own), cp.ascontiguousarray(nbr), np.int64(m), self.off, self.deg,
                    self.idx, self.wt, out))
        return out

    def set_weights(self, own, nbr, w) -> None:
        """Overwrite the weight of each stored ``own[i] -> nbr[i]`` with ``w[i]``."""
        cp = self.cp
        m = int(own.shape[0])
        if m:
            launch(weights_kernel("set_weight<int>"), grid_for_warps(m), BLOCK,
                   (cp.ascontiguousarray(own), cp.ascontiguousarray(nbr), np.int64(m), self.off, self.deg,
                    self.idx, self.wt, cp.ascontiguousarray(w)))

    def row_sums(self, verts, out, m: int | None = None) -> None:
        """``out[v]`` = the sum of ``v``'s list weights for each ``v`` of ``verts`` (int64), or for
        ``v < m`` when ``verts`` is None."""
        m = int(verts.shape[0]) if verts is not None else int(m)
        if m:
            launch(weights_kernel("row_sums<int>"), grid_for_warps(m), BLOCK,
                   (verts, np.int64(m), self.off, self.deg, self.wt, out))

    def fill(self, n: int, keys, kw, *, reverse: bool) -> None:
        """Weights of every stored edge from the sorted keys ``u << 32 | t`` and their weights
        ``kw`` (``reverse``: this is the in-direction, its rows hold sources)."""
        if n:
            launch(weights_kernel("fill_weights<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, self.idx, self.wt, keys, kw, np.int64(keys.shape[0]),
                    np.int32(bool(reverse))))

    def delete_weighted(self, keys, m: int, gend=None) -> None:
        """Remove the edges of the first ``m`` sorted keys (all present, distinct) with their
        weights; ``gend``: each key's group end when the caller has it."""
        if m == 0:
            return
        if gend is None:
            gend = self._groups(keys[:m])[0]
        launch(weights_kernel("delete_grouped_w<int>"), grid_for_warps(m), BLOCK,
               (keys, gend, np.int64(m), self.off, self.deg, self.idx, self.wt))

    def insert_weighted(self, keys, kw, m: int, plan) -> None:
        """Append the edges of the first ``m`` sorted keys with weights ``kw`` (plan:
        :meth:`Direction.plan_insertions`)."""
        if m == 0:
            return
        gend, new_off, new_cap, _ = plan
        launch(weights_kernel("insert_grouped_w<int>"), grid_for_warps(m), BLOCK,
               (keys, kw, gend, np.int64(m), new_off, new_cap, self.off, self.deg, self.cap, self.idx, self.wt))
