"""Captured CUDA graphs of the one-wait batch (:mod:`streamrank.rank.gpu.step`), replayed per batch.

Queueing a small batch's work one call at a time costs the host about 120 us in Python and CuPy
(a 26-argument launch, argument structs, copies), while the GPU needs about 25 us for the graph
update, and the cooperative loop starts only when the host has queued it. The two pieces of a
batch are therefore written so that every launch argument is a fixed address and every
per-batch value sits in pinned memory (the graph update: ``FastUpdater.queue_staged``, reading a
staged header and batch; the rank update: the loop's argument image in the workspace,
``rank.gpu.frontier_loop``). :class:`BatchGraphs` captures such a piece once into a CUDA graph
and replays it for each batch; a piece is captured again when the key its owner gives changes
(an address or size the graph holds: the store grew or was compacted, the id map was rebuilt,
another workspace or loop kernel). docs/architecture.md.

Capturing needs a stream of its own (the default stream cannot be captured); the replays go to
the current stream. If capturing fails on a device, the reason is kept in
:attr:`BatchGraphs.unavailable` and the owners queue their work call by call.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading

log = logging.getLogger(__name__)


class BatchGraphs:
    """Captured graphs of one engine by slot (``"graph"``, ``"rank"``), each with its key."""

    def __init__(self, cp):
        self.cp = cp
        self.side = cp.cuda.Stream(non_blocking=True)
        self._slots = {}
        #: Why capturing failed on this device (then nothing is replayed), or None.
        self.unavailable: str | None = None
        #: Captures made (a capture per change of an address the graphs hold).
        self.captures = 0

    def replay(self, slot: str, key: tuple, queue) -> bool:
        """Replay the graph of ``slot`` on the current stream, capturing what ``queue`` queues
        first when the slot is empty or its key differs from ``key``. False when capturing is
        unavailable here (nothing was queued: call ``queue`` instead)."""
        graph = self.graph_for(slot, key, queue)
        if graph is None:
            return False
        graph.launch()  # None: the current stream's pointer, without a Stream object
        return True

    def graph_for(self, slot: str, key: tuple, queue):
        """The executable graph of ``slot`` for ``key`` (captured from what ``queue`` queues when
        the slot is empty or held another key), or None when capturing is unavailable here."""
        if self.unavailable is not None:
            return None
        held = self._slots.get(slot)
        if held is None or held[0] != key:
            graph = self._capture(queue)
            if graph is None:
                return None
            held = self._slots[slot] = (key, graph)
        return held[1]

    def _capture(self, queue):
        """Capture what ``queue`` queues on the side stream into an executable graph; None (and
        :attr:`unavailable` set) when this device or driver refuses it."""
        self.side.synchronize()  # sync: the side stream is idle before a capture (it only ever captures)
        try:
            graph = capture_graph(self.cp, self.side, queue)
        except Exception as exc:  # noqa: BLE001 - an unsupported capture: queue call by call instead
            self.unavailable = f"{type(exc).__name__}: {exc}"
            log.warning("CUDA graph capture unavailable, small batches are queued call by call: %s", exc)
            return None
        self.captures += 1
        return graph


def capture_graph(cp, stream, queue):
    """Capture what ``queue`` queues on ``stream`` (not the default stream; idle) into an
    executable graph. Thread-local: CUDA calls of other threads (the daemon's fetch and checkpoint
    threads) neither break the capture nor are refused while it runs. Python's cyclic garbage
    collector is paused during the capture: a collection there would run the finalizers of
    unreachable CUDA objects in this thread (another engine's graphs, streams, events), whose
    destroy calls a capturing thread may not make (``cudaErrorStreamCaptureUnsupported``, which
    invalidates the capture; tests/test_gpu_capture_gc.py). Raises what CuPy raises when this
    device or driver refuses the capture."""
    mode = getattr(cp.cuda.runtime, "streamCaptureModeThreadLocal", 1)
    with _collector_paused():
        with stream:
            stream.begin_capture(mode=mode)
            try:
                queue()
            finally:
                graph = stream.end_capture()
    return graph


_pause_lock = threading.Lock()
_pauses = 0  # captures running now, in any thread
_resume = False  # whether the collector was on when the first of them began


@contextlib.contextmanager
def _collector_paused():
    """Python's automatic garbage collection off while any capture runs (the collector is one per
    process: two threads' overlapping captures both keep it off until the last ends), then back to
    the state it had before the first."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
