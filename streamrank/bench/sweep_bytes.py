"""One full sweep against the memory system: time per sweep, the bytes a sweep must move at
least, and the bandwidth that makes, for the engine's sweep kernels (float64 and float32
contributions, and the older rank kernels) and for cuSPARSE's SpMV on the same graph, beside the
device's copy bandwidth measured in the same run (the ceiling; docs/architecture.md).

Bytes counted (each read or written once, the least any implementation moves):

- engine sweep: the in-edge indices (4 B per edge) and per vertex its list entry, offset,
  in- and out-degree (4 + 8 + 4 + 4 B), the iterate read and written (2 x 8 B), the new
  contribution written and the old one gathered once (2 x 4 or 2 x 8 B);
- cuSPARSE SpMV: per stored entry a column index and a value (4 + 8 B), per row its pointer
  (4 B), the input vector gathered once and the output written (2 x 8 B).
"""

from __future__ import annotations

import time

from ..config import RankConfig


def _timed(fn, backend, repeats: int) -> float:
    """Median wall ms of ``fn`` (each call ends with a device synchronization)."""
    out = []
    for _ in range(repeats):
        backend.synchronize()
        t = time.perf_counter()
        fn()
        backend.synchronize()
        out.append((time.perf_counter() - t) * 1e3)
    out.sort()
    return out[len(out) // 2]


def copy_bandwidth(backend, *, nbytes: int = 1 << 30) -> float:
    """GB/s of a device-to-device copy of ``nbytes`` (bytes read plus bytes written)."""
    cp = backend.xp
    a = cp.ones(nbytes // 8, dtype=cp.float64)
    b = cp.empty_like(a)
    b[...] = a  # warm-up
    ms = _timed(lambda: cp.copyto(b, a), backend, 5)
    return 2 * nbytes / ms / 1e6


def measure_sweeps(graph, cfg: RankConfig, backend, *, x0=None, sweeps: int = 10, log=print) -> dict:
    """Per-sweep time, compulsory bytes and GB/s of each sweep variant and of cuSPARSE's SpMV.

    Parameters
    ----------
    graph : GpuGraph
    cfg : RankConfig
        Dangling mode and dtype of the sweeps (float64 expected).
    backend : Backend
        The GPU backend.
    x0 : array, optional
        Starting iterate (e.g. converged ranks; the work per sweep does not depend on it).
    sweeps : int
        Sweeps per timed run (the median of three runs is reported, divided by ``sweeps``).
    log : callable
        Progress lines.

    Returns
    -------
    dict
        ``{"copy_gb_s": float, "rows": [{"variant", "ms_per_sweep", "bytes_per_sweep",
        "gb_per_s", "share_of_copy"}, ...]}``
    """
    from ..rank.gpu.sweeps import run_fixed_sweeps

    n, e = int(graph.num_vertices), int(graph.num_edges)
    copy = copy_bandwidth(backend)
    rows = []
    names = {"buckets": "sweep (buckets + big list)", "rank": "rank_small/large (before)"}
    for kernel, contrib in (("buckets", "float64"), ("buckets", "float32"), ("rank", "float64")):
        c = RankConfig(**{**cfg.to_dict(), "sweep_contributions": contrib})
        csize = 4 if contrib == "float32" else 8
        run_fixed_sweeps(graph, x0, c, sweeps=2, kernel=kernel)  # warm-up (compilation)
        ms = _timed(lambda: run_fixed_sweeps(graph, x0, c, sweeps=sweeps, kernel=kernel), backend, 3) / sweeps
        nbytes = 4 * e + n * (4 + 8 + 4 + 4 + 16 + 2 * csize)
        rows.append({"variant": f"streamrank {names[kernel]}, {contrib} contributions", "ms_per_sweep": ms,
                     "bytes_per_sweep": nbytes})
    rows.append(_cusparse_row(graph, cfg, backend, sweeps))
    for r in rows:
        r["gb_per_s"] = r["bytes_per_sweep"] / r["ms_per_sweep"] / 1e6
        r["share_of_copy"] = r["gb_per_s"] / copy
        log(f"sweep: {r['variant']}: {r['ms_per_sweep']:.3f} ms, {r['bytes_per_sweep'] / 1e6:.0f} MB, "
            f"{r['gb_per_s']:.0f} GB/s ({100 * r['share_of_copy']:.0f}% of the {copy:.0f} GB/s copy)")
    return {"copy_gb_s": copy, "vertices": n, "edges": e, "sweeps_timed": int(sweeps), "rows": rows}


def _cusparse_row(graph, cfg, backend, sweeps: int) -> dict:
    from .baselines import CusparsePower

    cp = backend.xp
    power = CusparsePower(graph, alpha=cfg.alpha, dangling=cfg.dangling, dtype="float64")
    p = cp.full(power.n, 1.0 / max(power.n, 1), dtype=cp.float64)
    _ = power.PT @ p  # warm-up
    ms = _timed(lambda: [power.PT @ p for _ in range(sweeps)], backend, 3) / sweeps
    return {"variant": "cuSPARSE SpMV (float64 CSR, cupyx)", "ms_per_sweep": ms,
            "bytes_per_sweep": 12 * int(power.PT.nnz) + 4 * (power.n + 1) + 16 * power.n}
