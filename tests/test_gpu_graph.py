"""GpuGraph against CpuGraph: same internal ids, edge sets, degrees, changes and drop counts."""

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.graph import CpuGraph

pytestmark = pytest.mark.gpu


def _random_graph(rng, n, m, hubs=3):
    """Random edges plus a few hubs (out- and in-degree far above the switch degree)."""
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    hs = rng.integers(0, n, hubs)
    extra_s = np.concatenate([np.repeat(hs, 150), rng.integers(0, n, 150 * hubs)])
    extra_d = np.concatenate([rng.integers(0, n, 150 * hubs), np.repeat(hs, 150)])
    return np.concatenate([s, extra_s]), np.concatenate([d, extra_d])


def _random_batch(rng, n_ids, k, edges=None, p_insert=0.7):
    s = rng.integers(0, n_ids, k)
    d = rng.integers(0, n_ids, k)
    ins = rng.random(k) < p_insert
    if edges is not None and len(edges[0]):
        # half of the deletions hit existing edges
        pick = rng.integers(0, len(edges[0]), k)
        use = (~ins) & (rng.random(k) < 0.5)
        s = np.where(use, edges[0][pick], s)
        d = np.where(use, edges[1][pick], d)
    return s, d, ins


def _assert_same(gg, cg):
    assert gg.num_vertices == cg.num_vertices
    assert gg.num_edges == cg.num_edges
    assert np.array_equal(_host(gg.ids.external), cg.ids.external)
    gs, gd = gg.edges()
    cs, cd = cg.edges()
    assert np.array_equal(_host(gs), cs) and np.array_equal(_host(gd), cd)
    assert np.array_equal(_host(gg.out_degree), cg.out_degree)
    assert np.array_equal(_host(gg.in_degree), cg.in_degree)
    # every in-list holds exactly the in-neighbours (order free)
    off, deg, idx = _host(gg.in_offset), _host(gg.in_degree), _host(gg.in_indices)
    ioff, ideg, iidx = cg.in_offset, cg.in_degree, cg.in_indices
    for v in range(0, cg.num_vertices, max(1, cg.num_vertices // 50)):
        got = np.sort(idx[off[v]: off[v] + deg[v]])
        assert np.array_equal(got, np.sort(iidx[ioff[v]: ioff[v] + ideg[v]]))


def test_from_edges_matches_cpu(cp):
    from streamrank.graph_gpu import GpuGraph

    rng = np.random.default_rng(1)
    s, d = _random_graph(rng, 400, 3000)
    _assert_same(GpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_batches_match_cpu(cp, seed):
    from streamrank.graph_gpu import GpuGraph

    rng = np.random.default_rng(seed)
    s, d = _random_graph(rng, 300, 2000)
    gg, cg = GpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    for step in range(25):
        k = int(rng.integers(1, 400))
        bs, bd, bi = _random_batch(rng, 340, k, edges=cg.edges_external())  # some new ids
        if step % 5 == 4:  # a hub gains many edges at once: forces relocation
            hub = int(bs[0])
            bs = np.concatenate([bs, np.full(200, hub)])
            bd = np.concatenate([bd, rng.integers(0, 340, 200)])
            bi = np.concatenate([bi, np.ones(200, bool)])
        ch_g = gg.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(bi), xp=cp))
        ch_c = cg.apply(EdgeBatch.from_arrays(bs, bd, bi))
        assert ch_g.summary() == ch_c.summary()
        for kind in ("ins", "del"):  # the same edges (order within the arrays is free)
            kg = np.sort(_host(getattr(ch_g, kind + "_src")) * 2**32 + _host(getattr(ch_g, kind + "_dst")))
            kc = np.sort(getattr(ch_c, kind + "_src") * 2**32 + getattr(ch_c, kind + "_dst"))
            assert np.array_equal(kg, kc), kind
        _assert_same(gg, cg)
    gg.compact()
    _assert_same(gg, cg)
    # a host batch works too, and the state round-trips across backends
    ch = gg.apply(EdgeBatch.from_arrays(np.array([1, 2]), np.array([3, 4])))
    cg.apply(EdgeBatch.from_arrays(np.array([1, 2]), np.array([3, 4])))
    assert ch.received == 2
    _assert_same(GpuGraph.from_state(cg.state()), cg)
    _assert_same(gg, CpuGraph.from_state(gg.state()))


def test_empty_graph_grows_by_batches(cp):
    from streamrank.graph_gpu import GpuGraph

    gg, cg = GpuGraph(), CpuGraph()
    rng = np.random.default_rng(5)
    for _ in range(10):
        bs, bd, bi = _random_batch(rng, 100, 60, p_insert=0.9)
        assert gg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary() == \
            cg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary()
    _assert_same(gg, cg)
    assert gg.apply(EdgeBatch.empty()).summary() == cg.apply(EdgeBatch.empty()).summary()


def test_has_edges(cp):
    from streamrank.graph_gpu import GpuGraph

    g = GpuGraph.from_edges(np.array([0, 0, 1]), np.array([1, 2, 2]))
    got = _host(g.has_edges(cp.asarray([0, 0, 1, 2, 5]), cp.asarray([1, 2, 0, 2, 1])))
    assert got.tolist() == [True, True, False, False, False]


def test_rmat_on_device(cp):
    from streamrank.rmat import rmat_edges

    s, d = rmat_edges(12, 8, seed=3, xp=cp)
    assert s.dtype == cp.int64 and int((s == d).sum()) == 0
    keys = _host(s) * 4096 + _host(d)
    assert np.unique(keys).shape[0] == keys.shape[0]
    assert int(s.max()) < 4096 and int(s.shape[0]) > 4096 * 4
    deg = np.bincount(_host(s))
    assert deg.max() > 20 * deg.mean()  # skewed


def test_hub_lists_above_the_block_threshold(cp):
    """Deletions from lists longer than _BIG_LIST go through the block-wide compaction."""
    from streamrank.graph_gpu import _BIG_LIST, GpuGraph

    rng = np.random.default_rng(11)
    k = _BIG_LIST + 1500
    s = np.concatenate([np.zeros(k, np.int64), rng.integers(2, 9000, k), rng.integers(0, 9000, 3000)])
    d = np.concatenate([rng.integers(2, 9000, k), np.ones(k, np.int64), rng.integers(0, 9000, 3000)])
    gg, cg = GpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    assert int(_host(gg.out_degree).max()) >= _BIG_LIST
    for _ in range(4):
        es, ed = cg.edges_external()
        hub = (es == 0) | (ed == 1)
        pick = rng.choice(np.flatnonzero(hub), 700, replace=False)
        bs = np.concatenate([es[pick], np.zeros(300, np.int64), rng.integers(2, 9000, 300)])
        bd = np.concatenate([ed[pick], rng.integers(2, 9000, 300), np.ones(300, np.int64)])
        bi = np.concatenate([np.zeros(700, bool), np.ones(600, bool)])
        assert gg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary() == \
            cg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary()
        _assert_same(gg, cg)
