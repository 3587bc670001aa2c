"""GPU PageRank against the CPU reference and the SciPy oracle, every algorithm and kernel path."""

import zlib

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.config import ALGORITHMS, RankConfig
from streamrank.store.cpu import CpuGraph
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

pytestmark = pytest.mark.gpu


def _graph_edges(rng, n=600, m=4000, hubs=4):
    """Random graph with hubs of in- and out-degree well above 64, and dangling vertices."""
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    hs = rng.choice(n, hubs, replace=False)
    s = np.concatenate([s, np.repeat(hs, 200), rng.integers(0, n, 200 * hubs)])
    d = np.concatenate([d, rng.integers(0, n, 200 * hubs), np.repeat(hs, 200)])
    # dangling tails
    s = np.concatenate([s, rng.integers(0, n, 40)])
    d = np.concatenate([d, np.arange(n, n + 40)])
    return s, d


def _batch(rng, cg, k, n_ids):
    es, ed = cg.edges_external()
    ins = rng.random(k) < 0.8
    s = rng.integers(0, n_ids, k)
    d = rng.integers(0, n_ids, k)
    pick = rng.integers(0, len(es), k)
    s = np.where(ins, s, es[pick])
    d = np.where(ins, d, ed[pick])
    return s, d, ins


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("switch", [64, 4])
def test_static_matches_cpu_and_oracle(cp, dangling, switch):
    from streamrank.rank.cpu import pagerank as pagerank_cpu
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(2)
    s, d = _graph_edges(rng)
    cg, gg = CpuGraph.from_edges(s, d), GpuGraph.from_edges(s, d)
    in_deg = _host(gg.in_degree)
    assert (in_deg >= switch).any() and (in_deg < switch).any()  # both kernels run
    # the CPU reference in Jacobi order, the GPU's (its iteration counts are the comparison)
    cfg = RankConfig(dangling=dangling, switch_degree=switch, tol=1e-13, update_order="jacobi")
    rc = pagerank_cpu.static_pagerank(cg, config=cfg)
    rg = pagerank_gpu.static_pagerank(gg, config=cfg)
    assert rg.device == "gpu" and rg.converged
    # the GPU's Static iterates the standard form (docs/architecture.md): never more iterations
    assert rg.iterations <= rc.iterations + 1
    assert np.abs(_host(rg.x) - rc.x).max() < 1e-9 * rc.x.max()
    assert rg.total == pytest.approx(rc.total, rel=1e-10)
    ref = oracle_pagerank(cg, dangling=dangling)
    assert l1_error(_host(rg.ranks), ref) < 1e-9


@pytest.mark.parametrize("algorithm", [a for a in ALGORITHMS])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_batch_sequence_matches_cpu(cp, algorithm, dangling):
    from streamrank.rank.cpu import pagerank as pagerank_cpu
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(zlib.crc32(f"{algorithm}/{dangling}".encode()))
    s, d = _graph_edges(rng)
    cg, gg = CpuGraph.from_edges(s, d), GpuGraph.from_edges(s, d)
    switch = 64 if algorithm != "df" else 8
    # the CPU reference in Jacobi order, the GPU's: the same frontier decisions and errors
    cfg = RankConfig(dangling=dangling, switch_degree=switch, tol=1e-12, update_order="jacobi")
    xc = pagerank_cpu.static_pagerank(cg, config=cfg).x
    xg = pagerank_gpu.static_pagerank(gg, config=cfg).x
    for step in range(6):
        k = [1, 5, 50, 300, 2, 1000][step]
        bs, bd, bi = _batch(rng, cg, k, 660)
        chc = cg.apply(EdgeBatch.from_arrays(bs, bd, bi))
        chg = gg.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(bi), xp=cp))
        assert chc.summary() == chg.summary()
        rc = pagerank_cpu.update_pagerank(algorithm, cg, chc, xc, config=cfg)
        rg = pagerank_gpu.update_pagerank(algorithm, gg, chg, xg, config=cfg)
        # auto reports what ran: DF-P, or DF-P handing a flooded frontier to warm sweeps
        ran = ("dfp", "dfp>warm") if algorithm == "auto" else (algorithm,)
        assert rg.converged and rg.device == "gpu" and rg.algorithm in ran
        xc, xg = rc.x, rg.x
        # frontier decisions on borderline vertices may differ by rounding: tau_f-sized gaps
        bound = 1e-6 if algorithm in ("df", "dfp", "auto") else 1e-8
        assert np.abs(_host(xg) - xc).max() < bound * xc.max(), (algorithm, step)
        if algorithm in ("df", "dfp", "dt", "auto"):
            assert rg.initially_affected == rc.initially_affected
        ref = oracle_pagerank(cg, dangling=dangling)
        # no worse than the CPU reference of the same algorithm (DF-P's pruning costs accuracy)
        assert l1_error(_host(rg.ranks), ref) < 2 * l1_error(rc.ranks, ref) + 1e-9
    # the affected flags are all cleared between calls
    for ws in gg.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0


def test_float32_and_small_switch(cp):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(9)
    s, d = _graph_edges(rng)
    gg = GpuGraph.from_edges(s, d)
    cg = CpuGraph.from_edges(s, d)
    cfg = RankConfig(dtype="float32", switch_degree=4, tol=1e-7)
    r = pagerank_gpu.static_pagerank(gg, config=cfg)
    assert r.x.dtype == cp.float32
    ref = oracle_pagerank(cg)
    assert l1_error(_host(r.ranks).astype(np.float64), ref) < 1e-4
    bs, bd, bi = _batch(rng, cg, 50, 660)
    ch = gg.apply(EdgeBatch.from_arrays(bs, bd, bi))
    cg.apply(EdgeBatch.from_arrays(bs, bd, bi))
    r2 = pagerank_gpu.update_pagerank("dfp", gg, ch, r.x, config=cfg)
    assert r2.converged and r2.x.dtype == cp.float32
    assert l1_error(_host(r2.ranks).astype(np.float64), oracle_pagerank(cg)) < 1e-4


def test_empty_batch_and_new_vertices(cp):
    from streamrank.rank.cpu import pagerank as pagerank_cpu
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    s, d = np.array([0, 1, 2]), np.array([1, 2, 0])
    gg, cg = GpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    cfg = RankConfig(update_order="jacobi")  # the GPU's order, on the CPU too
    xg = pagerank_gpu.static_pagerank(gg, config=cfg).x
    xc = pagerank_cpu.static_pagerank(cg, config=cfg).x
    ch = gg.apply(EdgeBatch.empty())
    r = pagerank_gpu.update_pagerank("dfp", gg, ch, xg, config=cfg)
    assert np.allclose(_host(r.x), xc)
    b = EdgeBatch.from_arrays(np.array([7, 2]), np.array([8, 7]))
    chg, chc = gg.apply(b), cg.apply(b)
    for alg in ALGORITHMS:
        rg = pagerank_gpu.update_pagerank(alg, gg, chg, xg, config=cfg)
        rc = pagerank_cpu.update_pagerank(alg, cg, chc, xc, config=cfg)
        assert np.abs(_host(rg.x) - rc.x).max() < 1e-8 * rc.x.max(), alg


def test_device_linf(cp):
    from streamrank.rank.gpu.pagerank import device_linf

    rng = np.random.default_rng(0)
    a, b = rng.random(100_001), rng.random(100_001)
    assert device_linf(cp.asarray(a), cp.asarray(b)) == pytest.approx(np.abs(a - b).max())
    assert device_linf(cp.asarray(a, dtype=cp.float32), cp.asarray(b, dtype=cp.float32)) == \
        pytest.approx(np.abs(a - b).max(), rel=1e-6)


def test_wrong_graph_type_raises(cp):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        pagerank_gpu.static_pagerank(CpuGraph.from_edges([0], [1]))
