"""A float64 PageRank oracle for graphs past cuSPARSE's int32 CSR: a power iteration whose
product is one small kernel of its own over the GPU store's in-lists (int64 offsets).

``cupyx.scipy.sparse`` keeps CSR indices and row pointers in int32, and rebuilding its matrix
from the edge list takes about 64 bytes per edge beside the store: at R-MAT 27 (2.1 G edges)
neither fits one H200. This oracle reads the store's in-direction as it is (``in_offset``,
``in_degree``, ``in_indices``; gaps skipped), one warp per vertex summing ``c[u]`` in float64,
and runs the same standard-form iteration as :class:`streamrank.bench.baselines.CusparsePower`:
``p <- alpha P^T p + (alpha * dangling mass + 1 - alpha) / n``, normalized, until the L1 change
is below ``tol``. It shares no kernel with the engine's rank code (the sweeps, the frontier
loop); what it shares is the store, whose lists the graph tests check against the CPU store.
"""

from __future__ import annotations

import numpy as np

from ..config import DANGLING_MODES
from ..errors import InvalidArgumentError

_SOURCE = r"""
extern "C" __global__ void oracle_in_sum(long long n, const long long* __restrict__ off,
                                         const int* __restrict__ deg, const int* __restrict__ idx,
                                         const double* __restrict__ c, int self_loop, double* __restrict__ y) {
  const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
  const int lane = threadIdx.x & 31;
  for (long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; v < n; v += nwarps) {
    const long long o = off[v];
    const long long dg = deg[v];
    double s = 0.0;
    for (long long k = lane; k < dg; k += 32) s += c[idx[o + k]];
    for (int w = 16; w > 0; w >>= 1) s += __shfl_down_sync(0xFFFFFFFFu, s, w);
    if (lane == 0) y[v] = self_loop ? s + c[v] : s;
  }
}
"""
_KERNEL = {}


def store_pagerank(graph, *, alpha: float, dangling: str, tol: float = 1e-13, max_iter: int = 5000):
    """Float64 PageRank of a :class:`~streamrank.store.gpu.GpuGraph` as a host array (sums to 1).

    Parameters
    ----------
    graph : GpuGraph
    alpha : float
        Damping factor in (0, 1).
    dangling : {"uniform", "self-loop"}
        As :class:`~streamrank.config.RankConfig`: dangling mass spread uniformly, or a self-loop
        added to every vertex (then no vertex is dangling).
    tol : float
        Stop when the L1 change of an iteration is below it (default 1e-13).
    max_iter : int

    Raises
    ------
    InvalidArgumentError
        For a bad ``alpha``, ``dangling``, ``tol`` or ``max_iter``.
    """
    if not 0 < float(alpha) < 1:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    if dangling not in DANGLING_MODES:
        raise InvalidArgumentError(f"dangling must be one of {DANGLING_MODES}, got {dangling!r}")
    if not float(tol) > 0 or int(max_iter) < 1:
        raise InvalidArgumentError("tol must be > 0 and max_iter >= 1")
    cp = graph.xp
    if "in_sum" not in _KERNEL:
        _KERNEL["in_sum"] = cp.RawKernel(_SOURCE, "oracle_in_sum")
    n = int(graph.num_vertices)
    if n == 0:
        return np.zeros(0)
    a, self_loop = float(alpha), dangling == "self-loop"
    out_deg = graph.out_degree.astype(cp.float64) + (1.0 if self_loop else 0.0)
    inv = cp.where(out_deg > 0, 1.0 / cp.maximum(out_deg, 1.0), 0.0)
    dangling_mask = (out_deg == 0).astype(cp.float64)
    del out_deg
    p = cp.full(n, 1.0 / n, dtype=cp.float64)
    y = cp.empty(n, dtype=cp.float64)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = (min(sms * 32, (n * 32 + 255) // 256),)
    args = (np.int64(n), graph.in_offset, graph.in_degree, graph.in_indices)
    for _ in range(int(max_iter)):
        c = p * inv
        _KERNEL["in_sum"](grid, (256,), args + (c, np.int32(self_loop), y))
        del c
        new = a * y + (a * float(p @ dangling_mask) + 1.0 - a) / n
        new /= new.sum()
        err = float(cp.abs(new - p).sum())  # sync: once per iteration
        p = new
        if err < tol:
            break
    return p.get()
