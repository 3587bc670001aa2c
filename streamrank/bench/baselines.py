"""What a user without streamrank would run per batch, measured beside the engine: a cuSPARSE
power iteration on a rebuilt CSR matrix, and cuGraph (rebuild + warm-started PageRank)."""

from __future__ import annotations

import time

from ..errors import DeviceMemoryError


class CusparsePower:
    """Standard-form PageRank power iteration on cuSPARSE (``cupyx.scipy.sparse``).

    ``p <- alpha P^T p + (alpha * dangling mass + 1 - alpha) / n``; the matrix is built from the
    graph's edge list (``rebuild``), which is what a user without a dynamic store does per batch.
    Stops on ``criterion="linf"`` (the engine's: max change of p) or ``"l1"`` (cuGraph's).
    """

    def __init__(self, graph, *, alpha: float, dangling: str, dtype: str):
        import cupy as cp
        import cupyx.scipy.sparse as csp

        self.cp = cp
        n = graph.num_vertices
        s, d = graph.edges()
        if dangling == "self-loop":
            loops = cp.arange(n, dtype=cp.int64)
            s, d = cp.concatenate([s, loops]), cp.concatenate([d, loops])
        outdeg = cp.bincount(s, minlength=n).astype(dtype)
        w = (1.0 / outdeg[s]).astype(dtype)
        self.PT = csp.coo_matrix((w, (d, s)), shape=(n, n)).tocsr()
        self.PT.sum_duplicates()
        self.dangling = (outdeg == 0).astype(dtype)
        self.n, self.alpha, self.dtype = n, float(alpha), dtype

    def run(self, *, tol: float, criterion: str = "linf", p0=None, max_iter: int = 1000):
        cp = self.cp
        n, a = self.n, self.alpha
        if p0 is None:
            p = cp.full(n, 1.0 / n, dtype=self.dtype)
        else:
            p = cp.asarray(p0, dtype=self.dtype)
            p = p / p.sum()
        it = 0
        for it in range(1, max_iter + 1):
            new = a * (self.PT @ p) + (a * (p @ self.dangling) + 1.0 - a) / n
            new /= new.sum()
            diff = cp.abs(new - p)
            err = float(diff.sum() if criterion == "l1" else diff.max())  # sync: once per iteration
            p = new
            if err < tol:
                break
        return p, it


#: Device bytes per edge of rebuilding the cuSPARSE matrix from the edge list beside the store
#: (the edge list's int64 pairs and their sort, the weights, the COO-to-CSR conversion's copies).
CUSPARSE_BYTES_PER_EDGE = 64
#: Device bytes per edge of cuGraph's graph built from the edge list: the store's edge list
#: (int64 pairs, 16) and pylibcugraph's build and PageRank at their peak (float64 weights, its
#: int32 copies, sort and CSR: 58-60 on R-MAT 20-25, benchmarks/profiling/cugraph_memory.py).
CUGRAPH_BYTES_PER_EDGE = 76
#: cuSPARSE's CSR (``cupyx.scipy.sparse``) indexes with int32.
CUSPARSE_MAX_NNZ = 2**31 - 1


def baseline_fits(name: str, graph, *, available: int, self_loops: bool = False) -> str | None:
    """None when the baseline ``name`` (``"cusparse"`` or ``"cugraph"``) can load ``graph`` on
    this GPU, else why not (for the bench's baseline row): its index type, or its estimated
    bytes against ``available`` (free device memory); ``self_loops``: a loop is added to every
    vertex (``dangling="self-loop"``)."""
    e = int(graph.num_edges) + (int(graph.num_vertices) if self_loops else 0)
    if name == "cusparse" and e > CUSPARSE_MAX_NNZ:
        return f"cannot load: {e:,} nonzeros past cuSPARSE's int32 CSR"
    need = (CUSPARSE_BYTES_PER_EDGE if name == "cusparse" else CUGRAPH_BYTES_PER_EDGE) * e
    if need > int(available):
        return (f"cannot load on this GPU: ~{need / 2**30:.0f} GiB to build its graph beside the engine's, "
                f"{int(available) / 2**30:.0f} GiB free")
    return None


def gpu_oracle(graph, *, alpha: float, dangling: str):
    """float64 cuSPARSE power iteration to an L1 change below 1e-13, as a host array."""
    p, _ = CusparsePower(graph, alpha=alpha, dangling=dangling, dtype="float64").run(
        tol=1e-13, criterion="l1", max_iter=5000)
    return p.get()


class BenchOracle:
    """The benches' float64 oracle: ``oracle(graph)`` gives the host ranks by internal id, and
    ``name`` says which oracle gave them.

    A cuGraph oracle whose graph does not fit beside the engine's (it runs out of device memory
    once more after CuPy's cached blocks were handed back: :func:`with_cache_released`) gives way
    to ``fallback`` for the rest of the run; ``failure`` then holds that error.
    """

    def __init__(self, name: str, fn, *, fallback=None, xp=None):
        self.name, self._fn, self._fallback, self._xp = name, fn, fallback, xp
        self.failure = None

    def __call__(self, graph):
        if self._fallback is None:
            return self._fn(graph)
        if self.failure is None:
            try:
                return with_cache_released(lambda: self._fn(graph), self._xp)
            except DeviceMemoryError as exc:
                self.failure = exc
                self.name = self._fallback.name
        return self._fallback(graph)


def with_cache_released(fn, xp):
    """``fn()``, a cuGraph call; where it runs out of device memory, once more after CuPy's
    pool has handed its cached blocks back to the device (cuGraph allocates through RMM, which
    cannot use them). The second failure's :class:`~streamrank.errors.DeviceMemoryError`
    propagates."""
    try:
        return fn()
    except DeviceMemoryError:
        if xp is None or not hasattr(xp, "get_default_memory_pool"):
            raise
        xp.get_default_memory_pool().free_all_blocks()
        return fn()


def oracle_fn(backend, cfg, *, cugraph: bool, cusparse: bool = True, weighted: bool = False) -> BenchOracle:
    """The benches' float64 oracle (:class:`BenchOracle`): cuGraph where ``cugraph`` (the next
    one where its graph does not fit), else on the GPU for an unweighted graph a cuSPARSE power
    iteration where ``cusparse`` (its matrix fits), else the same iteration over the store's own
    in-lists (:mod:`streamrank.oracle.gpu_spmv`), else SciPy (which takes a weighted store's
    weights)."""
    if cugraph:
        from ..oracle.cugraph_static import cugraph_pagerank

        return BenchOracle("cugraph", lambda g: cugraph_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling),
                           fallback=oracle_fn(backend, cfg, cugraph=False, cusparse=cusparse, weighted=weighted),
                           xp=backend.xp)
    if backend.is_gpu and cusparse and not weighted:
        return BenchOracle("cusparse-float64", lambda g: gpu_oracle(g, alpha=cfg.alpha, dangling=cfg.dangling))
    if backend.is_gpu and not weighted:
        from ..oracle.gpu_spmv import store_pagerank

        return BenchOracle("store-spmv-float64",
                           lambda g: store_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling))
    from ..oracle.static import oracle_pagerank

    return BenchOracle("scipy", lambda g: oracle_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling))


def baseline_step(name, graph, p_prev, cfg, backend):
    """One batch of a rebuild-and-warm-start baseline: (p, rebuild ms, rank ms, iterations)."""
    cp = backend.xp
    n = graph.num_vertices
    p0 = cp.full(n, 1.0 / n, dtype=cp.float64)
    p0[: p_prev.shape[0]] = p_prev
    backend.synchronize()
    t = time.perf_counter()
    if name == "cusparse":
        power = CusparsePower(graph, alpha=cfg.alpha, dangling=cfg.dangling, dtype=cfg.dtype)
        backend.synchronize()
        t1 = time.perf_counter()
        p, its = power.run(tol=cfg.tol, criterion="linf", p0=p0, max_iter=cfg.max_iter)
    else:
        from ..oracle.cugraph_static import build_cugraph_graph, pagerank_on

        s, d = graph.edges()
        handle, g = with_cache_released(
            lambda: build_cugraph_graph(s, d, n, dangling=cfg.dangling, weight_dtype="float64"), cp)
        backend.synchronize()
        t1 = time.perf_counter()
        p, its = pagerank_on(handle, g, alpha=cfg.alpha, tol=1e-6, initial=p0, graph_dtype="float64"), -1
    backend.synchronize()
    t2 = time.perf_counter()
    return p, (t1 - t) * 1e3, (t2 - t1) * 1e3, its


