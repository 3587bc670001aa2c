"""The standard-form sweep kernels (kernels/cuda/sweep.cu) behind Static, warm and auto's warm part:
every lane-group width, the older rank kernels, and float32 contributions, against the SciPy
oracle and against each other."""

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

pytestmark = pytest.mark.gpu


def _edges(rng, n=5000, m=60000, hubs=5):
    """Mean in-degree 12 with hubs of in-degree 1500 (sweep_large) and dangling vertices."""
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    hs = rng.choice(n, hubs, replace=False)
    s = np.concatenate([s, rng.integers(0, n, 1500 * hubs), rng.integers(0, n, 60)])
    d = np.concatenate([d, np.repeat(hs, 1500), np.arange(n, n + 60)])
    return s, d


@pytest.fixture(scope="module")
def graph_and_batch(cp):
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(7)
    s, d = _edges(rng)
    gg = GpuGraph.from_edges(s, d)
    es, ed = (_host(a) for a in gg.edges_external())
    k = 3000
    ins = rng.random(k) < 0.8
    pick = rng.integers(0, len(es), k)
    bs = np.where(ins, rng.integers(0, 5100, k), es[pick])
    bd = np.where(ins, rng.integers(0, 5100, k), ed[pick])
    return gg, bs, bd, ins


def _fresh(cp, graph_and_batch):
    from streamrank.store.gpu import GpuGraph

    gg0, bs, bd, ins = graph_and_batch
    s, d = (_host(a) for a in gg0.edges_external())
    gg = GpuGraph.from_edges(s, d)
    return gg, EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(ins), xp=cp)


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("kernel,big", [("buckets", 1024), ("buckets", 40), ("buckets", 1), ("rank", 1024)])
@pytest.mark.parametrize("in_place", [True, False])
def test_sweep_variants_meet_the_oracle(cp, monkeypatch, graph_and_batch, dangling, kernel, big, in_place):
    """big 40: the warp bucket empty and mid-degree vertices on the block path; 1: every vertex
    with an in-edge there. in_place: the warm sweeps in one contribution buffer (the default)
    or two (sweeps._IN_PLACE False)."""
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import sweeps

    monkeypatch.setattr(sweeps, "_KERNEL", kernel)
    monkeypatch.setattr(sweeps, "_BIG", big)
    monkeypatch.setattr(sweeps, "_IN_PLACE", in_place)
    gg, batch = _fresh(cp, graph_and_batch)
    in_deg = _host(gg.in_degree)
    cfg = RankConfig(dangling=dangling, switch_degree=64, tol=1e-12)
    assert (in_deg >= 64).any() and (in_deg < 64).any()  # both sweep kernels run
    static = pagerank_gpu.static_pagerank(gg, config=cfg)
    assert static.converged
    assert l1_error(_host(static.ranks), oracle_pagerank(gg, dangling=dangling)) < 1e-9
    ch = gg.apply(batch)
    warm = pagerank_gpu.update_pagerank("warm", gg, ch, static.x, config=cfg)
    ref = oracle_pagerank(gg, dangling=dangling)
    assert warm.converged and warm.algorithm == "warm"
    assert l1_error(_host(warm.ranks), ref) < 1e-9
    assert abs(float(warm.x.sum()) - warm.total) < 1e-9 * warm.total
    # fewer sweeps from the previous ranks than from scratch
    assert warm.iterations < static.iterations


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_float32_contributions_reach_the_same_criterion(cp, graph_and_batch, dangling):
    from streamrank.rank.gpu import pagerank as pagerank_gpu

    gg, batch = _fresh(cp, graph_and_batch)
    f64 = RankConfig(dangling=dangling, tol=1e-11)
    f32 = RankConfig(dangling=dangling, tol=1e-11, sweep_contributions="float32")
    s64 = pagerank_gpu.static_pagerank(gg, config=f64)
    s32 = pagerank_gpu.static_pagerank(gg, config=f32)
    ref = oracle_pagerank(gg, dangling=dangling)
    assert s32.converged
    # float phase then full-precision sweeps: as accurate as float64 sweeps at the same tolerance
    assert l1_error(_host(s32.ranks), ref) < 1e-9
    assert l1_error(_host(s32.ranks), _host(s64.ranks)) < 1e-9
    ch = gg.apply(batch)
    w32 = pagerank_gpu.update_pagerank("warm", gg, ch, s32.x, config=f32)
    assert w32.converged and w32.x.dtype == cp.float64
    assert l1_error(_host(w32.ranks), oracle_pagerank(gg, dangling=dangling)) < 1e-9


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_sweeps_cover_every_vertex_of_a_graph_past_one_grid_stride(cp, dangling):
    """400 k vertices of low in-degree: more than one grid-stride of the bucket kernels on any
    device (a vertex left out of a sweep shows as non-convergence or an L1 error). At tol 1e-10
    the L1 error here is 1.9e-7 (p is about 2.5e-6 everywhere, so the L-infinity test is loose
    per vertex); tol 1e-13 makes the check tight."""
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(3)
    n, m = 400_000, 1_200_000
    s = np.concatenate([rng.integers(0, n, m), rng.integers(0, n, 3000)])
    d = np.concatenate([rng.integers(0, n, m), np.repeat(rng.integers(0, n, 2), 1500)])
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling=dangling, tol=1e-13)
    res = pagerank_gpu.static_pagerank(gg, config=cfg)
    assert res.converged and res.iterations < 250
    assert l1_error(_host(res.ranks), oracle_pagerank(gg, dangling=dangling)) < 1e-9
