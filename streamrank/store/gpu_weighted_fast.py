"""The fused path of :meth:`streamrank.store.gpu_weighted.WeightedGpuGraph.apply`: a small host batch
with its weights in nine launches (one captured CUDA graph where the caller replays) and one wait.

``kernels/cuda/graph_weighted_fast.cu`` folds the batch's records per pair under ``set`` or
``sum`` on the device (the stored weights looked up there) and hands the structural changes (pairs
that appear or go) to the unweighted store's fused update (``graph_fast_update.cu``), compiled so
that its commit moves each slot's weight with it; then it writes the weights of the new and
reweighted pairs into their slots and sums the touched sources' out-weights afresh. The room the
fused update needs is the one :class:`~streamrank.store.gpu.GpuGraph` keeps reserved
(:meth:`~streamrank.store.gpu.GpuGraph.upkeep`); when it does not fit, nothing is written and
the store applies the batch through its host- or device-planned path.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cpu.weighted_csr import ZERO_REL
from ..kernels.cuda.launch import launch, sm_count
from ..kernels.cuda.loader import get_kernel
from .gpu_fast import _HEADER, FAST_MAX_EDGES, FAST_THREADS, FastUpdater, _graph_arrays

_CU = "graph_weighted_fast.cu"
_NAMES = ("wfast_sort", "wfast_pairs", "wfast_classify", "wfast_weights", "wfast_rows")
#: Bytes of the fold's scratch (at least sizeof(WfWork) in graph_weighted_fast.cu).
WF_WORK_BYTES = 1 << 18
#: Counter slots of the weighted counts (WC_* in graph_weighted_fast.cu), after the fused update's.
WEIGHTED_COUNTERS = ("duplicate", "present_insertion", "absent_deletion", "reweighted")
_WC_FIRST = 9
#: Threads per block of the grid kernels (a warp per pair).
_GRID_THREADS = 256


class WeightedFastUpdater(FastUpdater):
    """The fused update's scratch and kernels for a weighted store (one per graph)."""

    def __init__(self, cp):
        super().__init__(cp, weighted=True)
        fm = FAST_MAX_EDGES
        self.kernel_sort = get_kernel(_CU, "wfast_sort", _NAMES)
        self.kernel_pairs = get_kernel(_CU, "wfast_pairs", _NAMES)
        self.kernel_classify = get_kernel(_CU, "wfast_classify", _NAMES)
        self.kernel_weights = get_kernel(_CU, "wfast_weights", _NAMES)
        self.kernel_rows = get_kernel(_CU, "wfast_rows", _NAMES)
        self.wwork = cp.empty(WF_WORK_BYTES, dtype=cp.uint8)
        #: The structural batch the fold stages for fast_update_hdr (device memory, its layout).
        self.hdr = cp.empty((_HEADER + 17 * fm) // 8 + 1, dtype=cp.int64)
        #: The reweighted pairs of a batch without any (shared, never written).
        self.no_reweights = cp.zeros(0, dtype=cp.int64)
        # The host batch as the fold reads it (wfast_sort, wfast_pairs, wfast_classify): a header (m, n, room, the ends of both
        # idx, the changes buffer's address, 1 for sum), then src, dst (int64), weight (float64) and
        # the insert flags, in one pinned buffer and its device copy (one asynchronous copy per
        # batch, part of the captured graph): the launches' arguments are fixed addresses.
        self.wstage_bytes = _HEADER + 25 * fm
        self._wmem = cp.cuda.alloc_pinned_memory(self.wstage_bytes)
        self._wheader = np.frombuffer(self._wmem, dtype=np.int64, count=8)
        at = _HEADER
        self._wsrc = np.frombuffer(self._wmem, dtype=np.int64, count=fm, offset=at)
        self._wdst = np.frombuffer(self._wmem, dtype=np.int64, count=fm, offset=at + 8 * fm)
        self._wweight = np.frombuffer(self._wmem, dtype=np.float64, count=fm, offset=at + 16 * fm)
        self._wins = np.frombuffer(self._wmem, dtype=np.uint8, count=fm, offset=at + 24 * fm)
        self._wdev = cp.empty(self.wstage_bytes, dtype=cp.uint8)
        self._wdev_ptr, self._wmem_ptr = int(self._wdev.data.ptr), int(self._wheader.ctypes.data)
        self._grid = 4 * sm_count()
        self._wkey = None  # (arrays, key) of the last staged key

    def launch_weighted(self, src, dst, insert, weight, ids, out, inn, n: int, room: int, out_weight,
                        summing: bool, replay=None):
        """Queue the weighted batch (host arrays, 1..FAST_MAX_EDGES edges; ``weight`` NaN on a
        deletion without one, already checked) without waiting, replayed from a captured graph
        when ``replay`` (:class:`streamrank.rank.gpu.capture.BatchGraphs`) is given; returns the
        changes buffer (sections of stride ``m``, as :meth:`FastUpdater.launch`).
        :meth:`weighted_counts` reads the counters after the caller's synchronization."""
        m = int(src.shape[0])
        changes, changes_ptr = self._take_changes()
        # staged (the previous batch's copy has run: every batch ends with a sync)
        self._wheader[:7] = (m, n, room, out.end, inn.end, changes_ptr, 1 if summing else 0)
        self._wsrc[:m] = src
        self._wdst[:m] = dst
        self._wweight[:m] = weight
        self._wins[:m] = insert
        queue = lambda: self._queue_weighted(ids, out, inn, out_weight)  # noqa: E731
        if replay is None or not replay.replay("graph", self._weighted_key(ids, out, inn, out_weight), queue):
            queue()
        return changes, changes_ptr

    def _weighted_key(self, ids, out, inn, out_weight) -> tuple:
        """Every address and size :meth:`_queue_weighted` passes to the device (a captured copy of
        its work stays valid while the key is the same)."""
        arrays = (*_graph_arrays(ids, out, inn), out.wt, inn.wt, out_weight)
        held = self._wkey
        if held is not None and len(held[0]) == len(arrays) and all(a is b for a, b in zip(held[0], arrays)):
            return held[1]
        key = (*(int(a.data.ptr) for a in arrays), *(int(a.shape[0]) for a in arrays), int(ids.mask),
               self.counters_ptr, self.host_ptr)
        self._wkey = (arrays, key)
        return key

    def _queue_weighted(self, ids, out, inn, out_weight) -> None:
        """Queue the staged batch's copy up and the nine launches, with fixed addresses only (a
        CUDA graph can capture them: :mod:`streamrank.rank.gpu.capture`)."""
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        cp.cuda.runtime.memcpyAsync(self._wdev_ptr, self._wmem_ptr, self.wstage_bytes, 1, stream.ptr)
        launch(self.kernel_sort, 1, FAST_THREADS, (self._wdev, self.wwork))
        launch(self.kernel_pairs, self._grid, _GRID_THREADS,
               (self._wdev, np.float64(ZERO_REL), ids.keys, ids.vals, ids.mask,
                out.off, out.deg, out.idx, out.wt, inn.off, inn.deg, inn.idx, inn.wt, self.wwork))
        launch(self.kernel_classify, 1, FAST_THREADS, (self._wdev, self.hdr, self.wwork))
        self._queue_header_update(self.hdr, ids, out, inn)  # the structure, from the staged pairs
        launch(self.kernel_weights, self._grid, _GRID_THREADS,
               (ids.keys, ids.vals, ids.mask, out.off, out.deg, out.idx, out.wt, inn.off, inn.deg, inn.idx, inn.wt,
                self.wwork, self.counters))
        launch(self.kernel_rows, self._grid, _GRID_THREADS,
               (ids.keys, ids.vals, ids.mask, out.off, out.deg, out.wt, out_weight, self.wwork, self.counters,
                self._hcounters))
        self._queue_counters(stream)

    def weighted_counts(self) -> list:
        """The last weighted batch's counters after the caller's synchronization: the fused
        update's (:data:`~streamrank.store.gpu_fast.COUNTERS`; its drop counts are those of the
        structural batch, not the batch's) followed by :data:`WEIGHTED_COUNTERS`."""
        return self.host[:_WC_FIRST + len(WEIGHTED_COUNTERS)].tolist()
