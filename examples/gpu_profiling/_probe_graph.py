"""Shared pieces of the driver-cost probes: the stand-in for the graph update's captured CUDA graph
(a graph of empty kernel nodes, as the host's rehearsal launches: the fused update's graph has 4
kernel nodes), optionally followed by more work queued by the caller (gate_latency.py: a node that
writes mapped memory), and a host spin.
Used by driver_call_cost.py, gate_latency.py, host_costs.py, host_speed_series.py, replay_cost.py
and after_flood.py."""
import time

import cupy as cp
import numpy as np

from streamrank.gpu_batch_graph import capture_graph
from streamrank.kernels.loader import get_kernel


def empty_kernel():
    """A kernel of two pointer arguments that does nothing (``kernels/host_warm.cu``, the node of
    :func:`empty_graph`)."""
    return get_kernel("host_warm.cu", "host_warm_noop", ("host_warm_noop",))


def empty_graph(nodes: int = 4, then=None):
    """An executable graph of ``nodes`` launches of :func:`empty_kernel` (one block of 32 threads),
    and whatever ``then()`` queues after them, captured on a non-blocking stream of its own
    (:func:`streamrank.gpu_batch_graph.capture_graph`)."""
    kernel = empty_kernel()

    def queue():
        for _ in range(nodes):
            kernel((1,), (32,), (np.uint64(0), np.uint64(0)))
        if then is not None:
            then()

    return capture_graph(cp, cp.cuda.Stream(non_blocking=True), queue)


def host_spin(us: float) -> None:
    """Keep the host busy for ``us`` microseconds (a Python loop on the clock)."""
    t = time.perf_counter_ns() + us * 1e3
    while time.perf_counter_ns() < t:
        pass
