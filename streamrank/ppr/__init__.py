"""Personalized PageRank on the live graph (issue 5; semantics and methods in docs/PPR.md).

>>> from streamrank.graph import CpuGraph
>>> from streamrank.ppr import personalized_pagerank
>>> g = CpuGraph.from_edges([1, 2, 3, 3], [2, 3, 1, 4])
>>> res = personalized_pagerank(g, 1, k=3)
>>> [v for v, _ in res.top_k]
[1, 2, 3]
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InvalidArgumentError
from ._graph import DeviceGraphView, cached, graph_arrays
from .semantics import (ATOMICS, DANGLING_MODES, METHODS, PprResult, check_alpha, check_choice,
                        resolve_seeds, top_k, top_k_pairs, topk_precision)

__all__ = ["personalized_pagerank", "personalized_pagerank_batch", "PprResult", "METHODS", "ATOMICS",
           "DANGLING_MODES", "DeviceGraphView", "topk_precision"]


def _check_number(name, value, *, lo=None, integer=False):
    try:
        v = int(value) if integer else float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}") from exc
    if integer and v != value:
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if lo is not None and not v >= lo:
        raise InvalidArgumentError(f"{name} must be >= {lo}, got {value!r}")
    return v


def _snapshot(graph, ga):
    """The GPU power iteration's snapshot of the graph (cached per graph version)."""
    from .gpu_power import snapshot_of

    return cached(graph, ("ppr-snapshot",), lambda: snapshot_of(ga))


def _leaky_uniform(graph, ga, alpha, *, is_gpu):
    """The leaky PPR of the uniform vector (cached per graph version), for the uniform split."""

    def make():
        xp = ga.xp
        u0 = xp.full(ga.n, 1.0 / max(ga.n, 1))
        kw = dict(alpha=alpha, dangling="uniform", tol=1e-13 / max(ga.n, 1), max_iter=10000, leaky=True)
        if is_gpu:
            from .gpu_power import power_gpu

            u, _, _, change = power_gpu(ga, u0, snap=_snapshot(graph, ga), **kw)
        else:
            from .power import power_cpu

            u, _, _, change = power_cpu(ga, u0, **kw)
        # L1 error of u: at most alpha / (1 - alpha) times the last change's L1 norm
        return u, float(u.sum()), ga.n * change * alpha / (1.0 - alpha)

    return cached(graph, ("leaky-uniform", float(alpha)), make)


def personalized_pagerank(graph, seeds, *, method: str = "power", k: int = 20, alpha: float = 0.85,
                          dangling: str = "personalization", weights=None, return_vector: bool = False,
                          tol: float = 1e-10, max_iter: int = 1000, eps: float = 1e-7,
                          atomics: str = "native", walks: int = 1 << 20, walkers: int | None = None,
                          rng_seed: int = 0, dtype: str = "float64") -> PprResult:
    """Personalized PageRank of ``seeds`` on ``graph`` as of its last applied batch.

    Parameters
    ----------
    graph : CpuGraph, GpuGraph or DeviceGraphView
        The engine's graph store; its backend (``graph.xp``) is where the query runs.
    seeds : int, sequence of int, or dict
        External seed id(s); a dict maps id -> weight (or give ``weights``).
    method : {"power", "push", "pull", "hybrid", "montecarlo"}
        ``power``: exact (L-infinity tolerance ``tol``). ``push``/``pull``/``hybrid``: forward
        push with residual threshold ``eps * max(outdeg, 1)``; the L1 error is at most the
        residual left (``error_bound``). ``montecarlo``: complete-path walks.
    k : int
        How many (vertex, score) pairs to return.
    alpha : float
        Damping, in (0, 1).
    dangling : {"personalization", "uniform"}
        Where a dangling vertex's rank goes (docs/PPR.md).
    return_vector : bool
        Also return the full vector (host NumPy, over internal ids).
    tol, max_iter : float, int
        Power iteration tolerance and iteration cap (the cap also bounds push/pull rounds).
        Power stopped by the cap (``converged=False``) is the truncated power iteration, an
        approximate method: ``||p - p_t||_1 <= 2 alpha^t`` (``extra["l1_bound"]``).
    dtype : {"float64", "float32"}
        Power: the type the iterate is stored in between iterations. ``"float32"`` is for the
        truncated (approximate) use; it cannot reach a ``tol`` much below 1e-7.
    eps : float
        Residual threshold of push/pull/hybrid.
    atomics : {"native", "exchange"}
        GPU push: hardware atomicAdd or the atomicExch software scheme.
    walks, walkers, rng_seed : int
        Monte Carlo: walks (the step budget is ``walks / (1 - alpha)``), GPU walker threads
        (default ``min(walks, 65536)``), random seed.

    Returns
    -------
    PprResult
    """
    check_choice("method", method, METHODS)
    check_choice("dangling", dangling, DANGLING_MODES)
    check_choice("atomics", atomics, ATOMICS)
    check_choice("dtype", dtype, ("float64", "float32"))
    alpha = check_alpha(alpha)
    k = _check_number("k", k, lo=1, integer=True)
    tol = _check_number("tol", tol, lo=0.0)
    eps = _check_number("eps", eps, lo=0.0)
    max_iter = _check_number("max_iter", max_iter, lo=1, integer=True)
    walks = _check_number("walks", walks, lo=1, integer=True)
    if walkers is not None:
        walkers = _check_number("walkers", walkers, lo=1, integer=True)
    if method in ("push", "pull", "hybrid") and eps <= 0:
        raise InvalidArgumentError("eps must be > 0 for push/pull/hybrid")
    if not hasattr(graph, "out_offset") or not hasattr(graph, "ids"):
        raise InvalidArgumentError(f"graph must be a graph store, got {type(graph).__name__}")
    pers = resolve_seeds(graph, seeds, weights)
    ga = cached(graph, ("graph-arrays",), lambda: graph_arrays(graph))
    xp, is_gpu = ga.xp, ga.is_gpu
    device = "gpu" if is_gpu else "cpu"
    t0 = time.perf_counter()
    res = dict(iterations=0, converged=True, error_bound=None, stats=[], walks=0, steps=0)
    extra = {}

    if method == "power":
        pd = xp.zeros(ga.n, dtype=xp.float64)
        pd[xp.asarray(pers.internal)] = xp.asarray(pers.weights)
        if is_gpu:
            from .gpu_power import power_gpu

            p, it, conv, change = power_gpu(ga, pd, alpha=alpha, dangling=dangling, tol=tol, max_iter=max_iter,
                                            snap=_snapshot(graph, ga),
                                            seeds=xp.asarray(pers.internal.astype(np.int32)), dtype=dtype)
        else:
            from .power import power_cpu

            p, it, conv, change = power_cpu(ga, pd, alpha=alpha, dangling=dangling, tol=tol, max_iter=max_iter,
                                            dtype=dtype)
        res.update(iterations=it, converged=conv, error_bound=change)
        if not conv:  # stopped by max_iter: ||p - p_it||_1 <= 2 alpha^it (docs/PPR.md)
            extra["l1_bound"] = 2.0 * alpha ** it
    elif method in ("push", "pull", "hybrid"):
        from .hybrid import HybridChooser, run_local

        if is_gpu:
            from .gpu_local import GpuLocalState

            state = GpuLocalState(ga, pers, alpha=alpha, eps=eps, dangling=dangling, atomics=atomics)
        else:
            from .push import CpuLocalState

            state = CpuLocalState(ga, pers, alpha=alpha, eps=eps, dangling=dangling)
        chooser = HybridChooser(xp, ga, backend=device, atomics=atomics) if method == "hybrid" else None
        it, conv, stats = run_local(state, method=method, max_iter=max_iter, chooser=chooser)
        p, rsum, lost = state.finish()
        bound = rsum
        if dangling == "uniform":
            u, usum, uerr = _leaky_uniform(graph, ga, alpha, is_gpu=is_gpu)
            psum = float(p.sum())  # GPU: sync, one scalar
            coef = (1.0 - psum - rsum) / usum
            p = p + coef * u
            bound = 2.0 * rsum + 2.0 * coef * uerr / usum
        res.update(iterations=it, converged=conv, error_bound=bound, stats=stats)
        extra["lost_mass"] = lost
        if chooser is not None:
            extra["unit_costs"] = chooser.costs
            extra["choices"] = [s["choice"] for s in stats]
        if method in ("push", "hybrid"):
            extra["atomics"] = atomics
    else:  # montecarlo
        if is_gpu:
            from .gpu_montecarlo import montecarlo_gpu

            p, nw, ns = montecarlo_gpu(ga, pers, alpha=alpha, dangling=dangling, walks=walks,
                                       walkers=walkers, rng_seed=rng_seed)
            extra["walkers"] = int(min(walks, 1 << 16) if walkers is None else walkers)
        else:
            from .montecarlo import montecarlo_cpu

            p, nw, ns = montecarlo_cpu(ga, pers, alpha=alpha, dangling=dangling, walks=walks, rng_seed=rng_seed)
        res.update(walks=nw, steps=ns)

    idx, vals = top_k(xp, p, k)  # host arrays (GPU: synchronizes)
    elapsed = (time.perf_counter() - t0) * 1e3
    vector = None
    if return_vector:
        vector = p.get() if is_gpu else np.asarray(p)
    return PprResult(top_k=top_k_pairs(graph, idx, vals), vector=vector, seeds=pers.external.tolist(),
                     method=method, device=device, dangling=dangling, elapsed_ms=elapsed, extra=extra,
                     **res)


def personalized_pagerank_batch(graph, seeds_list, **kwargs) -> list:
    """One query per entry of ``seeds_list`` (each an id, a list of ids or a dict), same options."""
    if isinstance(seeds_list, (int, np.integer)):
        raise InvalidArgumentError("seeds_list must be a sequence of seed ids or seed sets")
    return [personalized_pagerank(graph, s, **kwargs) for s in seeds_list]
