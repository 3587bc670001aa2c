"""Personalized PageRank on the live graph (semantics and methods in docs/ppr.md).

>>> from streamrank.store.cpu import CpuGraph
>>> from streamrank.ppr import personalized_pagerank
>>> g = CpuGraph.from_edges([1, 2, 3, 3], [2, 3, 1, 4])
>>> res = personalized_pagerank(g, 1, k=3)
>>> [v for v, _ in res.top_k]
[1, 2, 3]
"""

from __future__ import annotations

import time

import numpy as np

from ..backend import to_host
from ..errors import InvalidArgumentError
from ._graph import DeviceGraphView, cached, graph_arrays
from .semantics import (ATOMICS, DANGLING_MODES, METHODS, PprResult, check_alpha, check_choice,
                        resolve_seed_sets, resolve_seeds, top_k, topk_precision)

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


def _pairs(best) -> list:
    """[(external id, score)] of a :class:`~.semantics.TopK`."""
    return [(int(a), float(b)) for a, b in zip(best.external, best.values)]


def _check_options(graph, *, method, k, alpha, dangling, atomics, dtype, tol, eps, max_iter, walks, walkers) -> dict:
    """Validate the query options shared by the single and the batch call; normalized values."""
    check_choice("method", method, METHODS)
    check_choice("dangling", dangling, DANGLING_MODES)
    check_choice("atomics", atomics, ATOMICS)
    check_choice("dtype", dtype, ("float64", "float32"))
    out = dict(alpha=check_alpha(alpha), k=_check_number("k", k, lo=1, integer=True),
               tol=_check_number("tol", tol, lo=0.0), eps=_check_number("eps", eps, lo=0.0),
               max_iter=_check_number("max_iter", max_iter, lo=1, integer=True),
               walks=_check_number("walks", walks, lo=1, integer=True),
               walkers=None if walkers is None else _check_number("walkers", walkers, lo=1, integer=True))
    if method in ("push", "pull", "hybrid") and out["eps"] <= 0:
        raise InvalidArgumentError("eps must be > 0 for push/pull/hybrid")
    if not hasattr(graph, "out_offset") or not hasattr(graph, "ids"):
        raise InvalidArgumentError(f"graph must be a graph store, got {type(graph).__name__}")
    return out


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
        if is_gpu and ga.weighted:
            from .gpu_weighted import power_gpu_weighted

            u, _, _, change = power_gpu_weighted(graph, u0, **kw)
        elif is_gpu:
            from .gpu_power import power_gpu

            run = power_gpu(ga, u0, snap=_snapshot(graph, ga), **kw)
            u, change = run.store_vector(), run.change
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
        Where a dangling vertex's rank goes (docs/ppr.md).
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
    opts = _check_options(graph, method=method, k=k, alpha=alpha, dangling=dangling, atomics=atomics, dtype=dtype,
                          tol=tol, eps=eps, max_iter=max_iter, walks=walks, walkers=walkers)
    alpha, k, tol, eps, max_iter, walks, walkers = (opts[x] for x in ("alpha", "k", "tol", "eps", "max_iter", "walks",
                                                                       "walkers"))
    t0 = time.perf_counter()
    weighted_gpu = getattr(graph, "weighted", False) and getattr(graph, "xp", np) is not np
    pers = resolve_seeds(graph, seeds, weights)
    ga = cached(graph, ("graph-arrays",), lambda: graph_arrays(graph))
    xp, is_gpu = ga.xp, ga.is_gpu
    device = "gpu" if is_gpu else "cpu"
    res = dict(iterations=0, converged=True, error_bound=None, stats=[], walks=0, steps=0)
    extra = {}

    ids = None  # p's positions are store ids (else: ids[i] is the store id of position i)
    if method == "power":
        if weighted_gpu:
            from .gpu_power import personalization_gpu
            from .gpu_weighted import power_gpu_weighted

            pd, _seeds = personalization_gpu(ga.n, pers)
            p, it, conv, change = power_gpu_weighted(graph, pd, alpha=alpha, dangling=dangling, tol=tol,
                                                     max_iter=max_iter, dtype=dtype)
        elif is_gpu:
            from .gpu_power import personalization_gpu, power_gpu

            pd, seeds_d = personalization_gpu(ga.n, pers)
            run = power_gpu(ga, pd, alpha=alpha, dangling=dangling, tol=tol, max_iter=max_iter,
                            snap=_snapshot(graph, ga), seeds=seeds_d, seed_volume=int(pers.out_degree.sum()),
                            dtype=dtype)
            p, ids, it, conv, change = run.p, run.ids, run.iterations, run.converged, run.change
        else:
            from .power import power_cpu

            pd = np.zeros(ga.n)
            pd[pers.internal] = pers.weights
            p, it, conv, change = power_cpu(ga, pd, alpha=alpha, dangling=dangling, tol=tol, max_iter=max_iter,
                                            dtype=dtype)
        res.update(iterations=it, converged=conv, error_bound=change)
        if not conv:  # stopped by max_iter: ||p - p_it||_1 <= 2 alpha^it (docs/ppr.md)
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
            from .gpu_montecarlo import montecarlo_gpu, out_cumulative

            cum = cached(graph, ("ppr-out-cumulative",), lambda: out_cumulative(ga)) if ga.weighted else None
            p, nw, ns = montecarlo_gpu(ga, pers, alpha=alpha, dangling=dangling, walks=walks,
                                       walkers=walkers, rng_seed=rng_seed, out_cum=cum)
            extra["walkers"] = int(min(walks, 1 << 16) if walkers is None else walkers)
        else:
            from .montecarlo import montecarlo_cpu

            p, nw, ns = montecarlo_cpu(ga, pers, alpha=alpha, dangling=dangling, walks=walks, rng_seed=rng_seed)
        res.update(walks=nw, steps=ns)

    best = top_k(xp, p, k, ids=ids, external=graph.ids.external)  # host arrays (GPU: synchronizes)
    elapsed = (time.perf_counter() - t0) * 1e3
    vector = None
    if return_vector:
        if ids is not None:
            full = xp.empty(ga.n, dtype=xp.float64)
            full[ids] = p
            p = full
        vector = to_host(p).astype(np.float64, copy=False)
    return PprResult(top_k=_pairs(best), vector=vector, seeds=pers.external.tolist(),
                     method=method, device=device, dangling=dangling, elapsed_ms=elapsed, extra=extra,
                     **res)


def personalized_pagerank_batch(graph, seeds_list, **kwargs) -> list:
    """One query per entry of ``seeds_list`` (each an id, a list of ids or a dict); the options
    of :func:`personalized_pagerank`.

    On the GPU, ``method="power"`` runs the queries together, up to
    :data:`~streamrank.ppr.gpu_batch.MAX_WIDTH` at a time, fewer when the batch's four
    ``|V| x width`` matrices would take more than half the free device memory
    (:mod:`~streamrank.ppr.gpu_batch`):
    same semantics and tolerance, and every query of a group runs the group's iteration count
    (until its slowest query converged, or ``max_iter``). A result's ``elapsed_ms`` is then the
    wall time from the call until its group finished, and ``extra["batch_size"]`` and
    ``extra["amortized_ms"]`` (the group's time, the seed lookup included for the first group,
    over its size) say how the work was shared.
    Other methods, and the CPU, run the queries one after the other.

    Returns
    -------
    list of PprResult
    """
    if isinstance(seeds_list, (int, np.integer, dict)):
        raise InvalidArgumentError("seeds_list must be a sequence of seed ids or seed sets")
    seeds_list = list(seeds_list)
    if (kwargs.get("method", "power") != "power" or not seeds_list or kwargs.get("weights") is not None
            or getattr(graph, "weighted", False)):
        return [personalized_pagerank(graph, s, **kwargs) for s in seeds_list]
    ga = cached(graph, ("graph-arrays",), lambda: graph_arrays(graph)) if hasattr(graph, "out_offset") else None
    if ga is None or not ga.is_gpu:
        return [personalized_pagerank(graph, s, **kwargs) for s in seeds_list]
    return _power_batch_gpu(graph, ga, seeds_list, **kwargs)


def _power_batch_gpu(graph, ga, seeds_list, *, method="power", k=20, alpha=0.85, dangling="personalization",
                     return_vector=False, tol=1e-10, max_iter=1000, dtype="float64", **rest) -> list:
    from .gpu_batch import batch_items, batch_top_k, batch_width, column_vector, power_batch_gpu

    unknown = set(rest) - {"eps", "atomics", "walks", "walkers", "rng_seed"}
    if unknown:
        raise InvalidArgumentError(f"unknown option(s): {sorted(unknown)}")
    opts = _check_options(graph, method=method, k=k, alpha=alpha, dangling=dangling,
                          atomics=rest.get("atomics", "native"), dtype=dtype, tol=tol, eps=rest.get("eps", 1e-7),
                          max_iter=max_iter, walks=rest.get("walks", 1), walkers=rest.get("walkers"))
    width = batch_width(ga.n, dtype)
    if width == 0:  # not even 32 columns fit in device memory: one query at a time
        return [personalized_pagerank(graph, s, method=method, k=k, alpha=alpha, dangling=dangling,
                                      return_vector=return_vector, tol=tol, max_iter=max_iter, dtype=dtype, **rest)
                for s in seeds_list]
    t0 = time.perf_counter()
    sets = resolve_seed_sets(graph, seeds_list)
    snap = _snapshot(graph, ga)
    items = cached(graph, ("ppr-batch-items",), lambda: batch_items(snap))
    out, start = [], t0  # a group's time includes the setup before it (the first: lookup, caches)
    for lo in range(0, len(sets), width):
        group = sets[lo:lo + width]
        run = power_batch_gpu(ga, snap, items, [(s.internal, s.weights) for s in group], alpha=opts["alpha"],
                              dangling=dangling, tol=opts["tol"], max_iter=opts["max_iter"], dtype=dtype)
        tops = batch_top_k(run, snap, opts["k"], len(group), external=graph.ids.external)
        vectors = [column_vector(run, snap, j) for j in range(len(group))] if return_vector else None
        done = time.perf_counter()
        group_ms, start = (done - start) * 1e3, done
        for j, pers in enumerate(group):
            extra = {"batch_size": len(group), "amortized_ms": group_ms / len(group)}
            if not run.converged:
                extra["l1_bound"] = 2.0 * opts["alpha"] ** run.iterations
            out.append(PprResult(top_k=_pairs(tops[j]), vector=None if vectors is None else vectors[j],
                                 seeds=pers.external.tolist(), method="power", device="gpu", dangling=dangling,
                                 iterations=run.iterations, converged=run.converged,
                                 error_bound=float(run.changes[j]), elapsed_ms=(done - t0) * 1e3, extra=extra))
    return out
