"""DF/DF-P in uniform mode read an in-neighbour of out-degree 1 one step ahead (Jacobi order:
kernels/cpu/common.py ``lookahead``, the GPU's ``sr::defer_ahead`` in kernels/cuda/rank_gather.cuh).

The first two iterates after a batch are computed here by hand from an arbitrary previous
iterate (not a converged one, so that the lookahead changes the values by O(1)) and compared
with both backends, the GPU's single-launch loop and its launch sequence; then the converged
ranks against the SciPy oracle, and the iteration counts of the two backends."""

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.kernels.cpu.common import LOOK_MAX_IN
from streamrank.store.cpu import CpuGraph
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

ALPHA = 0.85
ENGINES = ["cpu", pytest.param("gpu-loop", marks=pytest.mark.gpu), pytest.param("gpu-sequence", marks=pytest.mark.gpu)]


def _base_edges():
    """A hub 0 with 40 two-cycles 0 <-> i (each i of out-degree 1 and in-degree 1); vertex 41 of
    out-degree 1 into 0 with LOOK_MAX_IN + 8 in-neighbours (read plainly); vertex 82 of
    out-degree 1 into 0 with exactly LOOK_MAX_IN (read ahead); vertex 90 with three in-neighbours
    of out-degree 1 and one of out-degree 2; a vertex whose only out-edge is its own loop, and
    one dangling vertex."""
    e = []
    e += [(0, i) for i in range(1, 41)] + [(i, 0) for i in range(1, 41)]
    e += [(41, 0)] + [(u, 41) for u in range(42, 42 + LOOK_MAX_IN + 8)] + [(u, 0) for u in range(42, 42 + LOOK_MAX_IN + 8)]
    e += [(82, 0)] + [(u, 82) for u in range(120, 120 + LOOK_MAX_IN)] + [(0, u) for u in range(120, 124)]
    e += [(91, 90), (92, 90), (93, 90), (94, 90), (94, 95), (90, 91), (5, 92), (95, 93), (90, 96)]
    e += [(97, 97), (97 - 1, 97), (90, 98)]  # 97: an explicit self-loop only; 98 dangles
    s, d = (np.array(c, dtype=np.int64) for c in zip(*e))
    return s, d


def _graph(engine, s, d):
    if engine == "cpu":
        return CpuGraph.from_edges(s, d)
    from streamrank.store.gpu import GpuGraph

    return GpuGraph.from_edges(s, d)


def _update(engine, monkeypatch, g, ch, x, algorithm, cfg):
    if engine == "cpu":
        from streamrank.rank.cpu import pagerank as pagerank_cpu

        return pagerank_cpu.update_pagerank(algorithm, g, ch, x, config=cfg)
    import cupy

    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop

    monkeypatch.setattr(frontier_loop, "_LOOP", engine == "gpu-loop")
    return pagerank_gpu.update_pagerank(algorithm, g, ch, cupy.asarray(x), config=cfg)


def _apply(engine, g, s, d):
    if engine == "cpu":
        return g.apply(EdgeBatch.from_arrays(s, d))
    import cupy

    return g.apply(EdgeBatch.from_arrays(cupy.asarray(s), cupy.asarray(d), xp=cupy))


def _jacobi(x, src, dst, n, *, look):
    """One Jacobi update of every vertex in the local form, uniform mode: 1 + alpha * sum of the
    in-neighbours' values, an in-neighbour u of out-degree 1 (u != v, at most LOOK_MAX_IN
    in-edges) read as u's own update when ``look``; an explicit self-loop divided out."""
    od = np.bincount(src, minlength=n)
    idg = np.bincount(dst, minlength=n)
    c = np.where(od > 0, x / np.maximum(od, 1), 0.0)
    plain = np.zeros(n)
    np.add.at(plain, dst, c[src])
    own = np.zeros(n)
    loop = src == dst
    np.add.at(own, src[loop], 1.0)
    ahead = 1.0 + ALPHA * plain  # u's update, u with no self-loop (out-degree 1 into v != u)
    val = np.where(look & (od[src] == 1) & (src != dst) & (idg[src] <= LOOK_MAX_IN), ahead[src], c[src])
    acc = np.zeros(n)
    np.add.at(acc, dst[~loop], val[~loop])
    return (1.0 + ALPHA * acc) / (1.0 - own * ALPHA / np.maximum(od, 1))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("algorithm", ["df", "dfp"])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_first_iterates_by_hand(engine, monkeypatch, algorithm, dangling):
    s, d = _base_edges()
    g = _graph(engine, s, d)
    n_prev = g.num_vertices
    rng = np.random.default_rng(5)
    x_prev = rng.uniform(1.0, 3.0, n_prev)  # not a fixed point: the lookahead moves values by O(1)
    new = 200  # a new vertex, out-degree 2, into the hub (block gather) and 90 (thread/group)
    ch = _apply(engine, g, np.array([new, new]), np.array([0, 90]))
    src, dst = (np.asarray(_host(a), dtype=np.int64) for a in g.edges())
    ext = dict(zip(np.concatenate([_host(a) for a in g.edges_external()]).tolist(),
                   np.concatenate([src, dst]).tolist()))  # external id -> internal id
    n = g.num_vertices
    x0 = np.concatenate([x_prev, np.ones(n - n_prev)])
    look = dangling == "uniform"
    selfloop = dangling == "self-loop"
    if selfloop:  # self-loop mode: every vertex has an implicit loop (d = outdeg + 1), no lookahead
        loops = np.arange(n)
        src_m, dst_m = np.concatenate([src, loops]), np.concatenate([dst, loops])
    else:
        src_m, dst_m = src, dst
    for iters in (1, 2):
        cfg = RankConfig(dangling=dangling, update_order="jacobi", max_iter=iters, tol=1e-15, frontier_tol=0.0,
                         prune_tol=0.0, switch_degree=16)
        res = _update(engine, monkeypatch, g, ch, x_prev, algorithm, cfg)
        assert res.iterations == iters and not res.converged
        # iteration 1 updates the out-neighbours of the new edges' source (and in self-loop mode
        # the source); iteration 2 those
        # (every change spreads and nothing is pruned at zero tolerances) and their out-neighbours
        first = np.zeros(n, dtype=bool)
        first[[ext[0], ext[90]]] = True
        first[ext[new]] = selfloop  # self-loop mode also marks the sources of changed edges
        expect = np.where(first, _jacobi(x0, src_m, dst_m, n, look=look), x0)
        if iters == 2:
            second = first.copy()
            second[dst[first[src]]] = True
            expect = np.where(second, _jacobi(expect, src_m, dst_m, n, look=look), expect)
        np.testing.assert_allclose(_host(res.x), expect, rtol=1e-13, atol=0)
        if look:  # the lookahead is what these values test: without it they differ
            plain = np.where(first, _jacobi(x0, src_m, dst_m, n, look=False), x0)
            assert np.abs(plain - expect).max() > 1e-3


def _chain_graph(rng, n=4000, m=12000, tails=3000):
    """Random edges plus in-trees of out-degree-1 vertices hanging off random vertices, and
    two-cycles: the shape whose tails the lookahead shortens."""
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    t = np.arange(n, n + tails)
    s = np.concatenate([s, t, rng.integers(0, n, tails // 2)])
    d = np.concatenate([d, rng.integers(0, n + tails, tails), t[: tails // 2]])
    return s, d


@pytest.mark.parametrize("engine", ENGINES)
def test_converges_to_the_oracle_with_the_cpu_iterations(engine, monkeypatch):
    """Batches on a graph rich in out-degree-1 vertices: the ranks meet the SciPy oracle, and
    the GPU runs the CPU's Jacobi iteration counts (the same rule in both backends)."""
    rng = np.random.default_rng(11)
    s, d = _chain_graph(rng)
    g = _graph(engine, s, d)
    cg = CpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling="uniform", update_order="jacobi", tol=1e-12)
    from streamrank.rank.cpu import pagerank as pagerank_cpu

    x = pagerank_cpu.static_pagerank(cg, config=cfg).x
    xc = x.copy()
    for k in (1, 4, 40, 400):
        bs, bd = rng.integers(0, 7200, k), rng.integers(0, 7200, k)
        ch = _apply(engine, g, bs, bd)
        chc = cg.apply(EdgeBatch.from_arrays(bs, bd))
        res = _update(engine, monkeypatch, g, ch, _host(x), "dfp", cfg)
        ref_cpu = pagerank_cpu.update_pagerank("dfp", cg, chc, xc, config=cfg)
        assert res.converged
        assert abs(res.iterations - ref_cpu.iterations) <= 1, (k, res.iterations, ref_cpu.iterations)
        assert l1_error(_host(res.ranks), oracle_pagerank(cg, dangling="uniform")) < 1e-6
        x, xc = _host(res.x), ref_cpu.x
