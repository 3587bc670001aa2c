"""CUDA graph captures (streamrank/rank/gpu/capture.py) against Python's cyclic garbage collector.

A collection during a capture would finalize unreachable CUDA objects (another engine's captured
graphs) in the capturing thread, whose destroy calls a capturing thread may not make
(``cudaErrorStreamCaptureUnsupported``, raised in a finalizer, so reported as unraisable; it can
also invalidate the capture), at random in a long test run. ``capture_graph``
pauses the collector for the capture: checked on the device with a graph that becomes cyclic
garbage inside the capture while the collector runs at every allocation, and on the host with a
stand-in stream (the collector's state inside, after, and after a failed capture)."""

import gc
import sys
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from streamrank.rank.gpu.capture import capture_graph


@pytest.fixture
def eager_gc(monkeypatch):
    """The young generation collected at every allocation, and the finalizers' errors kept."""
    errors = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: errors.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    collecting, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(1, 10**6, 10**6)
    yield errors
    gc.set_threshold(*thresholds)
    (gc.enable if collecting else gc.disable)()


def _drop_into_a_cycle(held: list) -> None:
    """Move ``held``'s one item into a new reference cycle: garbage for the next collection."""
    cycle = [held.pop()]
    cycle.append(cycle)


@pytest.mark.gpu
def test_a_graph_dropped_during_a_capture_is_not_finalized_there(cp, eager_gc):
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(4)
    held = [capture_graph(cp, stream, lambda: x.__iadd__(1))]

    def queue():
        _drop_into_a_cycle(held)
        junk = [[i] for i in range(2000)]  # allocations: each would start a collection
        x.__iadd__(len(junk))

    graph = capture_graph(cp, stream, queue)
    assert gc.isenabled()  # restored after the capture
    graph.launch(stream)
    stream.synchronize()  # sync: the replay's result is read below
    assert eager_gc == []
    np.testing.assert_array_equal(cp.asnumpy(x), np.full(4, 2000.0))
    gc.collect()  # the old graph goes now, outside any capture
    assert eager_gc == []


class _Stream:
    """A stand-in for a CuPy stream: records the collector's state while capturing."""

    def __init__(self):
        self.seen = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def begin_capture(self, mode):
        self.seen.append(("begin", gc.isenabled()))

    def end_capture(self):
        self.seen.append(("end", gc.isenabled()))
        return "graph"


_Cp = SimpleNamespace(cuda=SimpleNamespace(runtime=SimpleNamespace(streamCaptureModeThreadLocal=1)))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_for_the_capture_and_restored(enabled):
    stream, inside = _Stream(), []
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert capture_graph(_Cp, stream, lambda: inside.append(gc.isenabled())) == "graph"
        assert gc.isenabled() == enabled  # as it was: a caller's disabled collector stays off
        with pytest.raises(ZeroDivisionError):
            capture_graph(_Cp, stream, lambda: 1 / 0)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if before else gc.disable)()
    assert inside == [False]
    assert stream.seen == [("begin", False), ("end", False)] * 2  # the failed capture was ended too


def test_a_capture_that_ends_while_another_thread_captures_leaves_the_collector_paused():
    b_capturing, a_ended, seen_by_b = threading.Event(), threading.Event(), []

    def b_queue():
        b_capturing.set()
        a_ended.wait(10)
        seen_by_b.append(gc.isenabled())

    b = threading.Thread(target=capture_graph, args=(_Cp, _Stream(), b_queue))

    def a_queue():
        b.start()
        b_capturing.wait(10)

    before = gc.isenabled()
    gc.enable()
    try:
        capture_graph(_Cp, _Stream(), a_queue)  # A ends while B still captures
        a_ended.set()
        b.join(10)
        assert gc.isenabled()  # on again once both have ended
    finally:
        (gc.enable if before else gc.disable)()
    assert seen_by_b == [False]
