"""The fused path of :meth:`streamrank.store.gpu_weighted.WeightedGpuGraph.apply`: a small host batch
with its weights in five launches queued back to back and one wait.

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
from .gpu_fast import _HEADER, FAST_MAX_EDGES, FAST_THREADS, FastUpdater

_CU = "graph_weighted_fast.cu"
_NAMES = ("wfast_fold", "wfast_weights", "wfast_rows")
#: Bytes of the fold's scratch (at least sizeof(WfWork) in graph_weighted_fast.cu).
WF_WORK_BYTES = 1 << 18
#: Counter slots of the weighted counts (WC_* in graph_weighted_fast.cu), after the fused update's.
WEIGHTED_COUNTERS = ("duplicate", "present_insertion", "absent_deletion", "reweighted")
_WC_FIRST = 9
#: Threads per block of the two grid kernels after the update (a warp per pair).
_GRID_THREADS = 256


class WeightedFastUpdater(FastUpdater):
    """The fused update's scratch and kernels for a weighted store (one per graph)."""

    def __init__(self, cp):
        super().__init__(cp, weighted=True)
        fm = FAST_MAX_EDGES
        self.kernel_fold = get_kernel(_CU, "wfast_fold", _NAMES)
        self.kernel_weights = get_kernel(_CU, "wfast_weights", _NAMES)
        self.kernel_rows = get_kernel(_CU, "wfast_rows", _NAMES)
        self.wwork = cp.empty(WF_WORK_BYTES, dtype=cp.uint8)
        #: The structural batch the fold stages for fast_update_hdr (device memory, its layout).
        self.hdr = cp.empty((_HEADER + 17 * fm) // 8 + 1, dtype=cp.int64)
        #: The reweighted pairs' internal ids: sources at [0, k), targets at [FAST_MAX_EDGES, ...).
        self.rew = cp.empty(2 * fm, dtype=cp.int64)
        #: The reweighted pairs of a batch without any (shared, never written).
        self.no_reweights = cp.zeros(0, dtype=cp.int64)
        # The host batch: src, dst (int64), weight (float64), insert flags, in one pinned buffer and
        # its device copy (one asynchronous copy per batch).
        self.wstage_bytes = 25 * fm
        self._wmem = cp.cuda.alloc_pinned_memory(self.wstage_bytes)
        self._wsrc = np.frombuffer(self._wmem, dtype=np.int64, count=fm)
        self._wdst = np.frombuffer(self._wmem, dtype=np.int64, count=fm, offset=8 * fm)
        self._wweight = np.frombuffer(self._wmem, dtype=np.float64, count=fm, offset=16 * fm)
        self._wins = np.frombuffer(self._wmem, dtype=np.uint8, count=fm, offset=24 * fm)
        self._wdev = cp.empty(self.wstage_bytes, dtype=cp.uint8)
        base = int(self._wdev.data.ptr)
        # the fold's arguments in its order: src, dst, insert flags, weights
        self._wptrs = tuple(np.uint64(base + k * fm) for k in (0, 8, 24, 16))
        self._grid = 4 * sm_count()

    def launch_weighted(self, src, dst, insert, weight, ids, out, inn, n: int, room: int, out_weight,
                        summing: bool):
        """Queue the weighted batch (host arrays, 1..FAST_MAX_EDGES edges; ``weight`` NaN on a
        deletion without one, already checked) without waiting; returns the changes buffer
        (sections of stride ``m``, as :meth:`FastUpdater.launch`). :meth:`weighted_counts` reads
        the counters after the caller's synchronization."""
        cp = self.cp
        m = int(src.shape[0])
        changes, changes_ptr = self._take_changes()
        self._wsrc[:m] = src
        self._wdst[:m] = dst
        self._wweight[:m] = weight
        self._wins[:m] = insert
        stream = cp.cuda.get_current_stream()
        # the batch up (the previous batch's kernels have read the buffer: every batch ends with a sync)
        cp.cuda.runtime.memcpyAsync(int(self._wdev.data.ptr), int(self._wsrc.ctypes.data), self.wstage_bytes, 1,
                                    stream.ptr)
        launch(self.kernel_fold, 1, FAST_THREADS,
               (*self._wptrs, np.int32(m), np.int32(1 if summing else 0), np.float64(ZERO_REL),
                ids.keys, ids.vals, ids.mask, np.int32(n),
                out.off, out.deg, out.idx, out.wt, inn.off, inn.deg, inn.idx, inn.wt,
                np.int64(room), np.int64(out.end), np.int64(inn.end), np.int64(changes_ptr), self.hdr, self.wwork))
        self._queue_header_update(self.hdr, ids, out, inn)  # the structure, from the staged pairs
        launch(self.kernel_weights, self._grid, _GRID_THREADS,
               (ids.keys, ids.vals, ids.mask, out.off, out.deg, out.idx, out.wt, inn.off, inn.deg, inn.idx, inn.wt,
                self.wwork, self.rew, self.counters))
        launch(self.kernel_rows, self._grid, _GRID_THREADS,
               (ids.keys, ids.vals, ids.mask, out.off, out.deg, out.wt, out_weight, self.wwork, self.counters,
                self._hcounters))
        self._queue_counters(stream)
        return changes, changes_ptr

    def weighted_counts(self) -> list:
        """The last weighted batch's counters after the caller's synchronization: the fused
        update's (:data:`~streamrank.store.gpu_fast.COUNTERS`; its drop counts are those of the
        structural batch, not the batch's) followed by :data:`WEIGHTED_COUNTERS`."""
        return self.host[:_WC_FIRST + len(WEIGHTED_COUNTERS)].tolist()
