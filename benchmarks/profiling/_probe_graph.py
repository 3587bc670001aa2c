"""Shared pieces of the driver-cost probes: the stand-in for the graph update's captured CUDA graph
(a graph of empty kernel nodes, as the host's rehearsal launches: the fused update's graph has 4
kernel nodes), optionally followed by more work queued by the caller (gate_latency.py: a node that
writes mapped memory), and a host spin.
Used by driver_call_cost.py, gate_latency.py, host_costs.py, host_speed_series.py, replay_cost.py
and after_flood.py."""
import time

import cupy as cp

from streamrank.rank.gpu.rehearsal import noop_graph
from streamrank.rank.gpu.rehearsal import noop_kernel as empty_kernel  # two pointer arguments, does nothing

__all__ = ["empty_graph", "empty_kernel", "host_spin"]


def empty_graph(nodes: int = 4, then=None):
    """An executable graph of ``nodes`` launches of :func:`empty_kernel` and whatever ``then()``
    queues after them, captured on a non-blocking stream of its own
    (:func:`streamrank.rank.gpu.rehearsal.noop_graph`, the host's rehearsal's graph)."""
    return noop_graph(cp, cp.cuda.Stream(non_blocking=True), nodes, then)


def host_spin(us: float) -> None:
    """Keep the host busy for ``us`` microseconds (a Python loop on the clock)."""
    t = time.perf_counter_ns() + us * 1e3
    while time.perf_counter_ns() < t:
        pass
