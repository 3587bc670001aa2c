"""The stand-in for the graph update's captured CUDA graph that the driver-cost probes launch: a
graph of empty kernel nodes (the fused update's graph has 4 kernel nodes), optionally followed by
more work queued by the caller (gate_latency.py: a node that writes mapped memory).
Used by driver_call_cost.py, gate_latency.py, host_costs.py, host_speed_series.py and
replay_cost.py."""
import cupy as cp
import numpy as np

_SRC = 'extern "C" __global__ void empty_nodes(const void* a, const void* b) {}'


def empty_kernel():
    """A kernel of two pointer arguments that does nothing (the node of :func:`empty_graph`)."""
    return cp.RawModule(code=_SRC).get_function("empty_nodes")


def empty_graph(nodes: int = 4, then=None):
    """An executable graph of ``nodes`` launches of :func:`empty_kernel` (one block of 32 threads),
    and whatever ``then()`` queues after them, captured on a non-blocking stream of its own."""
    kernel = empty_kernel()
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        side.begin_capture()
        for _ in range(nodes):
            kernel((1,), (32,), (np.uint64(0), np.uint64(0)))
        if then is not None:
            then()
        return side.end_capture()
