"""What a user without streamrank would run per batch, measured beside the engine: a cuSPARSE
power iteration on a rebuilt CSR matrix, and cuGraph (rebuild + warm-started PageRank)."""

from __future__ import annotations

import time


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
#: Device bytes per edge of cuGraph's graph built from the edge list (int64 pairs, float64
#: weights, its own CSR).
CUGRAPH_BYTES_PER_EDGE = 48
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


def oracle_fn(backend, cfg, *, cugraph: bool, cusparse: bool = True, weighted: bool = False):
    """The benches' float64 oracle as ``(graph -> host ranks, name)``: cuGraph where ``cugraph``,
    else on the GPU for an unweighted graph a cuSPARSE power iteration where ``cusparse`` (its
    matrix fits), else the same iteration over the store's own in-lists
    (:mod:`streamrank.oracle.gpu_spmv`), else SciPy (which takes a weighted store's weights)."""
    if cugraph:
        from ..oracle.cugraph_static import cugraph_pagerank

        return lambda g: cugraph_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling), "cugraph"
    if backend.is_gpu and cusparse and not weighted:
        return lambda g: gpu_oracle(g, alpha=cfg.alpha, dangling=cfg.dangling), "cusparse-float64"
    if backend.is_gpu and not weighted:
        from ..oracle.gpu_spmv import store_pagerank

        return lambda g: store_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling), "store-spmv-float64"
    from ..oracle.static import oracle_pagerank

    return lambda g: oracle_pagerank(g, alpha=cfg.alpha, dangling=cfg.dangling), "scipy"


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
        handle, g = build_cugraph_graph(s, d, n, dangling=cfg.dangling, weight_dtype="float64")
        backend.synchronize()
        t1 = time.perf_counter()
        p, its = pagerank_on(handle, g, alpha=cfg.alpha, tol=1e-6, initial=p0, graph_dtype="float64"), -1
    backend.synchronize()
    t2 = time.perf_counter()
    return p, (t1 - t) * 1e3, (t2 - t1) * 1e3, its


