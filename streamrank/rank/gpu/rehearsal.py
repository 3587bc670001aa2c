"""The host's rehearsal after a long wait: the next batch's first host steps, run once before a
long batch returns (docs/architecture.md).

A one-wait batch's graph update is bound by its host steps before the update runs (the timing
event's ``record()``, the staging copies, the update graph's ``launch()``, the Python around
them: about 17-19 us on a warm host). After the host has waited a few milliseconds (an R-MAT
batch's flooded rank update: 11 ms), the same steps take 2-3x as long: the host's caches no longer
hold their code and data, and re-running the same work during the gap keeps them fast
(``benchmarks/profiling/warm_gap.py``: after 11 ms, ``record()`` 20 -> 6 us and ``launch()`` 14
-> 5 us when the gap re-ran the same driver calls on a side stream). So when a one-wait batch took
longer than :data:`AFTER_MS`, the stepper re-runs, right before returning, what the next batch
starts with, without its effects (:meth:`HostRehearsal.run`): a timing event's ``record()`` and the
launch of a captured graph of four empty kernels on a stream of its own, the staging copies of
this batch's edges into the staging buffer the next launch overwrites, and the store's checks
(:meth:`streamrank.store.gpu.GpuGraph.rehearse_fast`). Its time (10-20 us) is in this batch's
rank time, which is at least :data:`AFTER_MS`.

:data:`ENABLED` switches it off (False); :data:`AFTER_MS` (2) is the batch time from which it
runs.
"""

from __future__ import annotations

import numpy as np

from .capture import capture_graph
from ...kernels.cuda.loader import get_kernel


#: Rehearse after long one-wait batches (False: never).
ENABLED = True
#: Batch time (ms) from which the rehearsal runs.
AFTER_MS = 2.0


class HostRehearsal:
    """One engine's rehearsal: its stream, event and captured graph of empty kernels (GPU only;
    :func:`make_rehearsal` builds it)."""

    def __init__(self, cp, stream, graph):
        self.stream = stream
        self.event = cp.cuda.Event()
        self.graph = graph
        #: Rehearsals run.
        self.runs = 0

    def run(self, graph, batch) -> None:
        """Re-run the next batch's first host steps without their effects: the store's checks and
        the staging copies of ``batch`` (:meth:`~streamrank.store.gpu.GpuGraph.rehearse_fast`),
        then a timing event's record and a graph launch on this rehearsal's stream (no wait)."""
        graph.rehearse_fast(batch)
        self.event.record(self.stream)
        self.graph.launch(self.stream)
        self.runs += 1


def noop_kernel():
    """The rehearsal's kernel: two pointer arguments, does nothing (``kernels/cuda/host_warm.cu``)."""
    return get_kernel("host_warm.cu", "host_warm_noop", ("host_warm_noop",))


def noop_graph(cp, stream, nodes: int = 4, then=None):
    """An executable graph of ``nodes`` launches of :func:`noop_kernel` (one block of 32 threads),
    and whatever ``then()`` queues after them, captured on ``stream`` (not the default stream; idle)
    by :func:`streamrank.rank.gpu.capture.capture_graph`, which raises where the capture is refused.
    The rehearsal's graph, and the profiling probes' stand-in for the graph update's."""
    kernel = noop_kernel()
    zero = np.uint64(0)

    def queue():
        for _ in range(nodes):
            kernel((1,), (32,), (zero, zero))
        if then is not None:
            then()

    return capture_graph(cp, stream, queue)


def make_rehearsal(cp) -> HostRehearsal | None:
    """An engine's rehearsal, with its graph of four empty kernels (as many kernel nodes as the
    graph update's, :func:`noop_graph`) on its own stream; None where this device or driver refuses
    the capture."""
    stream = cp.cuda.Stream(non_blocking=True)
    try:
        graph = noop_graph(cp, stream, 4)
    except Exception:  # noqa: BLE001 - a capture this device refuses: no rehearsal
        return None
    return HostRehearsal(cp, stream, graph)
