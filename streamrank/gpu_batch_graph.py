"""The one-wait batch (:mod:`streamrank.gpu_step`) replayed from two captured CUDA graphs.

Queueing a small batch's work one call at a time costs the host about 120 us in Python and CuPy
(staging, a 26-argument launch, argument structs, copies), while the GPU needs about 25 us for
the graph update; the cooperative loop starts only when the host has queued it. Here both
updates are captured once into CUDA graphs whose every launch argument is a fixed address, and
each batch only writes its values into pinned memory and replays them (docs/GPU.md, "One wait
per batch"):

- graph G: copy of a 64-byte header and the batch (fixed layout, ``FAST_MAX_EDGES`` entries per
  column) from pinned memory to the device, the fused update ``fast_update_hdr`` (it reads the
  batch size, vertex count, room, ends of ``idx`` and the address of the changes buffer from the
  header), copy of its counters into pinned memory;
- graph R: copy of the loop's argument image (RankArgs and LoopLists, 512 bytes) from pinned
  memory, the cooperative loop, copy of its result block (status, sum, frontier sizes) into
  pinned memory.

A graph is captured again when an address or size it holds changes (the store grew or was
compacted, the id map was rebuilt, another workspace, another loop kernel): the key of each is
checked per batch. Capturing needs a stream of its own (the default stream cannot be captured);
the replays go to the current stream. If capturing fails on a device, the reason is kept in
:attr:`BatchGraphs.unavailable` and the batches are queued call by call.
"""

from __future__ import annotations

import logging

import numpy as np

from .gpu_launch import launch
from .graph_gpu_fast import FAST_MAX_EDGES, FAST_THREADS, PendingFast, _COUNTERS

log = logging.getLogger(__name__)

_HEADER = 64
_IMAGE = 512
_THREADS = 256  # the loop's block (rank_gpu.state._THREADS)
_LISTS_OFFSET = 256  # LoopLists in the image (rank_gpu.frontier_loop._LISTS_OFFSET)


class BatchGraphs:
    """The two captured graphs of one engine, their pinned staging and their keys."""

    def __init__(self, cp):
        self.cp = cp
        self.side = cp.cuda.Stream(non_blocking=True)
        fm = FAST_MAX_EDGES
        self.stage_bytes = _HEADER + 17 * fm
        self._stage_mem = cp.cuda.alloc_pinned_memory(self.stage_bytes)
        mem = self._stage_mem
        self.header = np.frombuffer(mem, dtype=np.int64, count=8)
        self.src = np.frombuffer(mem, dtype=np.int64, count=fm, offset=_HEADER)
        self.dst = np.frombuffer(mem, dtype=np.int64, count=fm, offset=_HEADER + 8 * fm)
        self.ins = np.frombuffer(mem, dtype=np.uint8, count=fm, offset=_HEADER + 16 * fm)
        self.stage_host_ptr = int(self.header.ctypes.data)
        self.stage_dev = cp.empty(self.stage_bytes, dtype=cp.uint8)
        self._image_mem = cp.cuda.alloc_pinned_memory(_IMAGE)
        self.image = np.frombuffer(self._image_mem, dtype=np.uint8, count=_IMAGE)
        self.image_host_ptr = int(self.image.ctypes.data)
        self.image_dev = cp.empty(_IMAGE, dtype=cp.uint8)
        self.image_dev_ptr = int(self.image_dev.data.ptr)
        self._g = self._g_key = self._r = self._r_key = None
        #: Why capturing failed on this device (then nothing is replayed), or None.
        self.unavailable: str | None = None
        #: Captures made (a capture per change of an address the graphs hold).
        self.captures = 0

    # ------------------------------------------------------------------ graph update
    def graph_update(self, graph, batch) -> PendingFast | None:
        """Replay graph G for a host batch of 1..FAST_MAX_EDGES edges (the caller checked
        :meth:`~streamrank.graph_gpu.GpuGraph.fast_eligible`); no wait. As
        :meth:`~streamrank.graph_gpu.GpuGraph.launch_fast`; None when the graph could not be
        captured (nothing was queued; :attr:`unavailable` says why)."""
        cp = self.cp
        fast = graph.fast_updater()
        m = len(batch)
        n = graph.num_vertices
        out, inn, ids = graph._out, graph._in, graph.ids
        changes = cp.empty(4 * m, dtype=cp.int64)  # from the memory pool: no sync
        h = self.header
        h[0], h[1], h[2] = m, n, min(graph._vcap - n, ids.room)
        h[3], h[4], h[5] = out.end, inn.end, int(changes.data.ptr)
        self.src[:m] = batch.src
        self.dst[:m] = batch.dst
        self.ins[:m] = batch.insert
        key = (int(ids.keys.data.ptr), int(ids.vals.data.ptr), int(ids.mask), int(ids.external_buffer.data.ptr),
               *(int(a.data.ptr) for a in (out.off, out.deg, out.cap, out.idx, inn.off, inn.deg, inn.cap, inn.idx)),
               int(out.idx.shape[0]), int(inn.idx.shape[0]), int(fast.work.data.ptr), int(fast.counters.data.ptr),
               fast.host_ptr)
        if key != self._g_key:
            self._g = self._capture(lambda: self._queue_g(fast, ids, out, inn))
            if self._g is None:
                return None
            self._g_key = key
        self._g.launch(stream=cp.cuda.get_current_stream())
        return PendingFast(n, m, changes, fast.counters)

    def _queue_g(self, fast, ids, out, inn) -> None:
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        cp.cuda.runtime.memcpyAsync(int(self.stage_dev.data.ptr), self.stage_host_ptr, self.stage_bytes, 1,
                                    stream.ptr)
        launch(fast.kernel_hdr, 1, FAST_THREADS,
               (self.stage_dev, ids.keys, ids.vals, ids.mask, ids.external_buffer,
                out.off, out.deg, out.cap, out.idx, np.int64(out.idx.shape[0]),
                inn.off, inn.deg, inn.cap, inn.idx, np.int64(inn.idx.shape[0]),
                fast.work, np.int64(fast.work.nbytes), fast.counters))
        cp.cuda.runtime.memcpyAsync(fast.host_ptr, int(fast.counters.data.ptr), _COUNTERS * 8, 2, stream.ptr)

    # ------------------------------------------------------------------ rank update
    def rank_update(self, kernel, grid: int, image: bytes, ws, result_host_ptr: int) -> object:
        """Replay graph R with the loop's argument ``image``; no wait. Returns the device
        argument buffer (its first bytes are the RankArgs), or None when the graph could not be
        captured (nothing was queued)."""
        self.image[: len(image)] = np.frombuffer(image, dtype=np.uint8)
        n_results = 32 + 4 * int(ws.hist.shape[0])
        key = (id(kernel), int(grid), int(ws.results_ptr), int(result_host_ptr), n_results)
        if key != self._r_key:
            self._r = self._capture(lambda: self._queue_r(kernel, grid, ws, result_host_ptr, n_results))
            if self._r is None:
                return None
            self._r_key = key
        self._r.launch(stream=self.cp.cuda.get_current_stream())
        return self.image_dev

    def _queue_r(self, kernel, grid, ws, result_host_ptr, n_results) -> None:
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        cp.cuda.runtime.memcpyAsync(self.image_dev_ptr, self.image_host_ptr, _IMAGE, 1, stream.ptr)
        kernel((int(grid),), (_THREADS,), (np.uint64(self.image_dev_ptr), np.uint64(self.image_dev_ptr + _LISTS_OFFSET)))
        cp.cuda.runtime.memcpyAsync(int(result_host_ptr), int(ws.results_ptr), n_results, 2, stream.ptr)

    # ------------------------------------------------------------------ capture
    def _capture(self, queue):
        """Capture what ``queue`` queues on the side stream into an executable graph; None (and
        :attr:`unavailable` set) when this device or driver refuses it."""
        side = self.side
        side.synchronize()  # sync: the side stream is idle before a capture (it only ever captures)
        # thread-local: CUDA calls of other threads (the daemon's fetch and checkpoint threads)
        # neither break the capture nor are refused while it runs
        mode = getattr(self.cp.cuda.runtime, "streamCaptureModeThreadLocal", 1)
        try:
            with side:
                side.begin_capture(mode=mode)
                try:
                    queue()
                finally:
                    graph = side.end_capture()
        except Exception as exc:  # noqa: BLE001 - an unsupported capture: queue call by call instead
            self.unavailable = f"{type(exc).__name__}: {exc}"
            log.warning("CUDA graph capture unavailable, small batches are queued call by call: %s", exc)
            return None
        self.captures += 1
        return graph
