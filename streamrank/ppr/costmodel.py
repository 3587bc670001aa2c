"""The push/pull cost model of the lock-free PPR paper, and its unit costs.

Per iteration, with the active frontier ``F`` and the pulling set ``N`` (out-neighbours of
``F``), work is counted as the kernels schedule it: one warp of ``lanes`` threads per vertex,
``warps_per_block`` warps per block, and a block lasting as long as its slowest warp:

* ``Phi_rdw`` (push: random writes with atomics) = sum over blocks of the max over the
  block's warps of ``ceil(outdeg(u) / lanes)``, over ``u`` in ``F``;
* ``Phi_rdr`` (pull: random reads) = the same with ``ceil(indeg(v) / lanes)`` over ``N``;
* ``Phi_sqw`` (pull: writes of the gathered sums, one per pulling vertex) = ``ceil(|N| / lanes)``.

Push is chosen when ``lambda1 Phi_rdw - lambda2 Phi_rdr - lambda3 Phi_sqw < 0``. On the CPU
backend the same formulas are used with ``lanes = warps_per_block = 1`` (plain sums).

On a weighted graph the counts are the same: a round reads and writes along the same edges,
each edge's weight read beside its index (one more coalesced load per edge, in push and in
pull alike), so the model and its unit costs stay those of the unweighted graph.

Unit costs ``lambda1 : lambda2 : lambda3`` (normalized to ``lambda3 = 1``) are *measured*
at first use and cached per device: on the GPU by three micro-benchmark kernels
(``ppr_push.cu``: random atomic adds with the chosen atomics scheme, random reads, sequential
writes over a 128 MiB array), on the CPU by the compiled loops the CPU rounds run
(scatter-add, gather, store; :mod:`streamrank.kernels.cpu.ppr`).
"""

from __future__ import annotations

import time

import numpy as np

#: The published ratios, for reference (the engine measures its own).
PAPER_UNIT_COSTS = {"gpu-a": (6.3, 3.2, 1.0), "gpu-b": (2.3, 1.1, 1.0)}

_unit_cache: dict = {}


def phi(xp, degrees, *, lanes: int, warps_per_block: int):
    """``sum_blocks max_{warps in block} ceil(degree / lanes)`` (a backend scalar)."""
    m = int(degrees.shape[0])
    if m == 0:
        return xp.zeros((), dtype=xp.int64)
    w = (degrees.astype(xp.int64) + (lanes - 1)) // lanes
    if warps_per_block == 1:
        return w.sum()
    pad = (-m) % warps_per_block
    if pad:
        w = xp.concatenate([w, xp.zeros(pad, dtype=xp.int64)])
    return w.reshape(-1, warps_per_block).max(axis=1).sum()


def unit_costs(backend: str, atomics: str = "native") -> dict:
    """``{"lambda1", "lambda2", "lambda3", "source"}`` for the current device (cached)."""
    if backend == "gpu":
        import cupy

        key = ("gpu", cupy.cuda.Device().id, atomics)
    else:
        key = ("cpu", atomics)
    if key not in _unit_cache:
        raw = _measure_gpu(atomics) if backend == "gpu" else _measure_cpu()
        l3 = raw[2]
        _unit_cache[key] = {
            "lambda1": raw[0] / l3, "lambda2": raw[1] / l3, "lambda3": 1.0,
            "source": f"measured on {backend} at first use ({'micro-benchmark kernels' if backend == 'gpu' else 'compiled loops'})",
        }
    return _unit_cache[key]


def _measure_cpu(n: int = 1 << 20, size: int = 1 << 22) -> tuple:
    """Per-item time of the compiled loops the CPU rounds run: scatter-add, gather, store."""
    from ..kernels.cpu.ppr import gather_sum, scatter_add, store

    rng = np.random.default_rng(0)
    a = np.zeros(size)
    idx = rng.integers(0, size, n)
    vals = rng.random(n)

    def best(fn):
        fn()  # compile (or load from the cache) before timing
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts) / n

    l1 = best(lambda: scatter_add(a, idx, vals))
    l2 = best(lambda: gather_sum(a, idx))
    l3 = best(lambda: store(a, vals))
    return l1, l2, max(l3, 1e-12)


def _measure_gpu(atomics: str, n: int = 1 << 24) -> tuple:
    import cupy

    from .gpu_kernels import kernel

    exch = 1 if atomics == "exchange" else 0
    a = cupy.zeros(n, dtype=cupy.float64)
    idx = cupy.random.default_rng(0).integers(0, n, n, dtype=cupy.int64).astype(cupy.int32)
    out = cupy.zeros(1, dtype=cupy.float64)
    grid, block = ((n + 255) // 256,), (256,)
    kw = kernel("ppr_push.cu", f"ppr_micro_rand_write<{exch}>")
    kr = kernel("ppr_push.cu", "ppr_micro_rand_read")
    ks = kernel("ppr_push.cu", "ppr_micro_seq_write")
    runs = {
        "w": lambda: kw(grid, block, (a, idx, np.int64(n), np.float64(1e-9))),
        "r": lambda: kr(grid, block, (a, idx, np.int64(n), out)),
        "s": lambda: ks(grid, block, (a, np.int64(n), np.float64(0.5))),
    }
    res = {}
    for name, fn in runs.items():
        fn()  # warm-up (module load)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        ts = []
        for _ in range(5):
            start.record()
            fn()
            stop.record()
            stop.synchronize()  # host waits for the timed kernel
            ts.append(cupy.cuda.get_elapsed_time(start, stop))
        res[name] = float(np.median(ts)) / n
    return res["w"], res["r"], res["s"]
