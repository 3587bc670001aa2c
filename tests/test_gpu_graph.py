"""GpuGraph against CpuGraph: same internal ids, edge sets, degrees, changes and drop counts."""

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.store.cpu import CpuGraph

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
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(1)
    s, d = _random_graph(rng, 400, 3000)
    _assert_same(GpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_batches_match_cpu(cp, seed):
    from streamrank.store.gpu import GpuGraph

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
    from streamrank.store.gpu import GpuGraph

    gg, cg = GpuGraph(), CpuGraph()
    rng = np.random.default_rng(5)
    for _ in range(10):
        bs, bd, bi = _random_batch(rng, 100, 60, p_insert=0.9)
        assert gg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary() == \
            cg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary()
    _assert_same(gg, cg)
    assert gg.apply(EdgeBatch.empty()).summary() == cg.apply(EdgeBatch.empty()).summary()


def test_has_edges(cp):
    from streamrank.store.gpu import GpuGraph

    g = GpuGraph.from_edges(np.array([0, 0, 1]), np.array([1, 2, 2]))
    got = _host(g.has_edges(cp.asarray([0, 0, 1, 2, 5]), cp.asarray([1, 2, 0, 2, 1])))
    assert got.tolist() == [True, True, False, False, False]


def test_rmat_on_device(cp):
    from streamrank.bench.rmat import rmat_edges

    s, d = rmat_edges(12, 8, seed=3, xp=cp)
    assert s.dtype == cp.int64 and int((s == d).sum()) == 0
    keys = _host(s) * 4096 + _host(d)
    assert np.unique(keys).shape[0] == keys.shape[0]
    assert int(s.max()) < 4096 and int(s.shape[0]) > 4096 * 4
    deg = np.bincount(_host(s))
    assert deg.max() > 20 * deg.mean()  # skewed


@pytest.mark.parametrize("fast", [True, False])
def test_hub_lists_above_the_block_threshold(cp, fast):
    """Deletions from lists longer than BIG_LIST: the fast kernel's block-wide compaction, and
    the slow path's grid-wide deletion (fast path off), down to a hub list deleted whole."""
    from streamrank.store.gpu import GpuGraph
    from streamrank.store.gpu_lists import BIG_LIST as _BIG_LIST

    rng = np.random.default_rng(11)
    k = _BIG_LIST + 1500
    s = np.concatenate([np.zeros(k, np.int64), rng.integers(2, 9000, k), rng.integers(0, 9000, 3000)])
    d = np.concatenate([rng.integers(2, 9000, k), np.ones(k, np.int64), rng.integers(0, 9000, 3000)])
    gg = GpuGraph.from_edges(s, d, fast_update=_settings(fast))
    cg = CpuGraph.from_edges(s, d)
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
    # every out-edge of hub 0 at once (its list empties), beside deletions from hub 1's in-list
    es, ed = cg.edges_external()
    pick = np.concatenate([np.flatnonzero(es == 0), rng.choice(np.flatnonzero(ed == 1), 900, replace=False)])
    bs, bd, bi = es[pick], ed[pick], np.zeros(len(pick), bool)
    assert gg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary() == \
        cg.apply(EdgeBatch.from_arrays(bs, bd, bi)).summary()
    _assert_same(gg, cg)
    hub0 = int(cg.ids.lookup(np.array([0]))[0])
    assert int(_host(gg.out_degree)[hub0]) == 0 and int(cg.out_degree[hub0]) == 0


# ---------------------------------------------------------------------- the fast path
def _settings(on=True, **kw):
    from streamrank.store.gpu_fast import FastUpdate

    return FastUpdate(enabled=on, **kw)


def _apply_both(cp, gg, cg, bs, bd, bi):
    """Apply one batch to both stores; the changes must agree (GPU: sorted by (src, dst))."""
    ch_g = gg.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(bi), xp=cp))
    ch_c = cg.apply(EdgeBatch.from_arrays(np.asarray(bs), np.asarray(bd), np.asarray(bi)))
    assert ch_g.summary() == ch_c.summary()
    assert (ch_g.num_vertices_before, ch_g.num_vertices_after) == \
        (ch_c.num_vertices_before, ch_c.num_vertices_after)
    for kind in ("ins", "del"):
        kg = _host(getattr(ch_g, kind + "_src")) * 2**32 + _host(getattr(ch_g, kind + "_dst"))
        kc = np.sort(getattr(ch_c, kind + "_src") * 2**32 + getattr(ch_c, kind + "_dst"))
        assert np.array_equal(kg, kc), kind  # same edges, and the GPU's already sorted
    _assert_same(gg, cg)
    return ch_g


def _messy_batch(rng, cg, k, n_ids, big_ids=True):
    """Random ops with duplicates, insert/delete pairs, present insertions, absent deletions and
    new ids (some far above 2**32)."""
    s = rng.integers(0, n_ids, k)
    d = rng.integers(0, n_ids, k)
    ins = rng.random(k) < 0.6
    es, ed = cg.edges_external()
    if len(es):
        pick = rng.integers(0, len(es), k)
        use = rng.random(k) < 0.4  # existing edges: present insertions or real deletions
        s, d = np.where(use, es[pick], s), np.where(use, ed[pick], d)
    if big_ids:
        far = rng.random(k) < 0.05
        s = np.where(far, 2**40 + rng.integers(0, 50, k), s)
    # repeat a slice with flipped ops (insert/delete pairs, resolved by arrival order)
    j = rng.integers(0, k, max(1, k // 5))
    return np.concatenate([s, s[j]]), np.concatenate([d, d[j]]), np.concatenate([ins, ~ins[j]])


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_random_batches_match_cpu(cp, on, seed):
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(100 + seed)
    s, d = _random_graph(rng, 300, 2000)
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(on)), CpuGraph.from_edges(s, d)
    steps = 30
    for step in range(steps):
        k = int(rng.integers(1, 700)) if step % 6 else int(rng.integers(1, 6))
        bs, bd, bi = _messy_batch(rng, cg, k, 360)
        _apply_both(cp, gg, cg, bs, bd, bi)
    assert gg.fast_batches == (steps if on else 0)
    assert gg.fast_fallbacks == 0
    gg.compact()
    _assert_same(gg, cg)
    _assert_same(GpuGraph.from_state(cg.state()), cg)


def test_fast_path_new_vertices_mid_stream(cp):
    """New ids in first-appearance order: as dst first, both endpoints of one edge, self-loops,
    after a deletion of the same unknown id (which creates no vertex)."""
    from streamrank.store.gpu import GpuGraph

    gg, cg = GpuGraph(fast_update=_settings()), CpuGraph()
    batches = [
        ([50, 7], [7, 50], [True, True]),
        ([7, 99, 3, 12], [42, 98, 3, 11], [True, True, True, True]),  # 42 first as dst; 99 -> 98; 3 -> 3
        ([500, 77, 500, 501], [501, 500, 502, 500], [False, True, True, True]),  # 500 deleted first
        ([2**62, 5, 2**62 + 1], [5, 2**62 + 1, 2**62], [True, True, True]),
        ([1000 + i for i in range(300)], [2000 - i for i in range(300)], [True] * 300),
    ]
    for bs, bd, bi in batches:
        _apply_both(cp, gg, cg, np.array(bs, np.int64), np.array(bd, np.int64), np.array(bi))
    assert gg.fast_batches == len(batches) and gg.fast_fallbacks == 0
    assert gg.num_vertices > 600


@pytest.mark.parametrize("on", [True, False])
def test_fast_path_hub_lists(cp, on):
    """Deletions and insertions on lists far above the block threshold (the block-wide commit),
    relocation of a hub into the tail, and in-lists of hubs."""
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(12)
    k = 20000
    s = np.concatenate([np.zeros(k, np.int64), rng.integers(2, 30000, k), np.full(2500, 5),
                        rng.integers(0, 30000, 5000)])
    d = np.concatenate([rng.integers(2, 30000, k), np.ones(k, np.int64), rng.integers(10, 30000, 2500),
                        rng.integers(0, 30000, 5000)])
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(on)), CpuGraph.from_edges(s, d)
    h0 = int(_host(gg.ids.lookup(cp.asarray([0], dtype=cp.int64)))[0])  # hub 0's internal id
    start = int(_host(gg.out_degree)[h0])
    for step in range(8):
        es, ed = cg.edges_external()
        hub = (es == 0) | (ed == 1) | (es == 5)
        pick = rng.choice(np.flatnonzero(hub), 600, replace=False)
        # hub 0 gains 700 edges a batch: its gap (2 + deg / 8) runs out, so it moves to the tail
        bs = np.concatenate([es[pick], np.zeros(700, np.int64), rng.integers(2, 30000, 300), [5, 5]])
        bd = np.concatenate([ed[pick], rng.integers(30000, 90000, 700), np.ones(300, np.int64), [3, 4]])
        bi = np.concatenate([np.zeros(600, bool), np.ones(1000, bool), [True, False]])
        _apply_both(cp, gg, cg, bs, bd, bi)
    # hub 0 outgrew the gap it was built with (2 + deg / 8), so its list moved to the tail
    assert int(_host(gg.out_degree)[h0]) > start + 2 + start // 8
    assert gg.fast_fallbacks == 0 and gg.fast_batches == (8 if on else 0)


def test_fast_path_relocates_overflowing_lists(cp):
    """A vertex whose list outgrows its capacity moves into the reserved tail, in the kernel."""
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(4)
    s, d = rng.integers(0, 200, 1500), rng.integers(0, 200, 1500)
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings()), CpuGraph.from_edges(s, d)
    end0 = gg.slots_used
    for step in range(6):
        v = step % 3
        bs = np.full(400, v, np.int64)
        bd = rng.integers(0, 5000, 400)
        _apply_both(cp, gg, cg, np.concatenate([bs, bd]), np.concatenate([bd, bs]), np.ones(800, bool))
    assert gg.fast_fallbacks == 0 and gg.fast_batches == 6
    assert gg.slots_used[0] > end0[0] and gg.slots_used[1] > end0[1]  # lists moved into the tails


@pytest.mark.parametrize("slot_room", [None, 1024])
def test_fast_path_tail_overflow_falls_back(cp, slot_room):
    """A hub relocation larger than the reserved tail: the kernel writes nothing, the slow path
    applies the batch with the same result."""
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(8)
    k = 40000
    s = np.concatenate([np.zeros(k, np.int64), rng.integers(1, 1000, 3000)])
    d = np.concatenate([np.arange(1, k + 1), rng.integers(1, 1000, 3000)])
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(slot_room=slot_room)), CpuGraph.from_edges(s, d)
    for step in range(4):  # 2000 new out-edges of vertex 0 a batch: its 5000 spare slots run out
        bd = np.arange(10**6 + 2000 * step, 10**6 + 2000 * (step + 1))
        _apply_both(cp, gg, cg, np.zeros(2000, np.int64), bd, np.ones(2000, bool))
    if slot_room is None:  # 2**18 slots reserved: the move fits
        assert gg.fast_fallbacks == 0 and gg.fast_batches == 4
    else:
        assert gg.fast_fallbacks >= 1 and gg.fast_batches + gg.fast_fallbacks == 4


def test_fast_path_id_map_and_vertex_room_overflow_falls_back(cp):
    from streamrank.store.gpu import GpuGraph
    from streamrank.ids.gpu import GpuIdMap

    rng = np.random.default_rng(9)
    s, d = rng.integers(0, 400, 3000), rng.integers(0, 400, 3000)
    # the id map full: no room for a new id
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings()), CpuGraph.from_edges(s, d)
    gg.ids = GpuIdMap.from_external(gg.ids.external, cp, room=0)
    assert gg.ids.room == 0
    _apply_both(cp, gg, cg, np.array([1, 7000]), np.array([7001, 2]), np.array([True, True]))
    assert (gg.fast_batches, gg.fast_fallbacks) == (0, 1)
    _apply_both(cp, gg, cg, np.array([1, 7002]), np.array([7003, 2]), np.array([True, True]))
    assert (gg.fast_batches, gg.fast_fallbacks) == (1, 1)  # room re-reserved by the slow path
    # the vertex rows full: no reserve ahead, and more new vertices than the build's spare rows
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(vertex_room=0)), CpuGraph.from_edges(s, d)
    gg.ids.reserve(10**5)
    spare = gg._vcap - gg.num_vertices
    new = np.arange(10**5, 10**5 + spare + 50)
    _apply_both(cp, gg, cg, new, np.roll(new, 1), np.ones(new.shape[0], bool))
    assert (gg.fast_batches, gg.fast_fallbacks) == (0, 1)
    _apply_both(cp, gg, cg, np.array([10**7]), np.array([3]), np.array([True]))
    assert (gg.fast_batches, gg.fast_fallbacks) == (1, 1)


@pytest.mark.parametrize("cap", [2048, 300])
def test_fast_path_cap(cp, cap):
    """A batch of exactly the cap takes the fast path; one edge more takes the slow path."""
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(cap)
    s, d = rng.integers(0, 3000, 8000), rng.integers(0, 3000, 8000)
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(max_edges=cap)), CpuGraph.from_edges(s, d)
    for size, fast in ((cap, 1), (cap + 1, 1), (cap, 2)):
        bs, bd, bi = _messy_batch(rng, cg, size, 3500)
        bs, bd, bi = bs[:size], bd[:size], bi[:size]
        _apply_both(cp, gg, cg, bs, bd, bi)
        assert gg.fast_batches == fast and gg.fast_fallbacks == 0


def test_fast_path_switch_and_profile(cp):
    from streamrank.store.gpu import GpuGraph

    assert not GpuGraph(fast_update=_settings(False)).fast.enabled
    g = GpuGraph()
    assert g.fast.enabled
    g.stage_ms = {}
    g.apply(EdgeBatch.from_arrays(np.array([1, 2]), np.array([2, 3])))
    assert list(g.stage_ms) == ["fast update"] and g.fast_batches == 1
    assert g.apply(EdgeBatch.empty()).summary()["received"] == 0


def test_device_id_map_matches_host_map(cp):
    from streamrank.ids.cpu import IdMap
    from streamrank.ids.gpu import GpuIdMap

    gm, hm = IdMap(cp), IdMap(np)
    assert isinstance(gm, GpuIdMap)
    rng = np.random.default_rng(2)
    for step in range(12):  # grows past several rebuilds of the table
        ids = rng.integers(0, 2**62, 700) if step % 2 else rng.integers(0, 3000, 700)
        ids = np.concatenate([ids, ids[:50]])
        gi, gk = gm.add(cp.asarray(ids))
        hi, hk = hm.add(ids)
        assert gk == hk and np.array_equal(_host(gi), hi)
    assert len(gm) == len(hm) and np.array_equal(_host(gm.external), hm.external)
    q = np.concatenate([hm.external[::7], rng.integers(0, 2**62, 100), [0, 1, 2]])
    assert np.array_equal(_host(gm.lookup(cp.asarray(q))), hm.lookup(q))
    attr = np.arange(len(hm), dtype=np.int64) * 3
    assert np.array_equal(_host(gm.lookup_with(q, cp.asarray(attr))), hm.lookup_with(q, attr))
    back = IdMap.from_external(gm.external, cp)
    assert isinstance(back, GpuIdMap) and np.array_equal(_host(back.lookup(cp.asarray(q))), hm.lookup(q))
    assert gm.room >= 0 and _host(gm.keys).shape[0] >= 2 * len(gm)


@pytest.mark.parametrize("na,nb", [(0, 0), (1, 0), (0, 7), (31, 33), (4097, 100_000), (3_000_001, 5)])
def test_count_flags_matches_numpy(cp, na, nb):
    """The slow path's sizing count (one kernel for every size) against NumPy's."""
    from streamrank.store.gpu_lists import count_flags

    rng = np.random.default_rng(na + nb)
    a, b = rng.random(na) < 0.3, rng.random(nb) < 0.9
    out = cp.zeros(4, dtype=cp.int64)
    count_flags(cp, cp.asarray(a), cp.asarray(b), out)
    count_flags(cp, cp.asarray(a), cp.asarray(b), out)  # adds
    assert _host(out).tolist() == [2 * int(a.sum()), 2 * int(b.sum()), 0, 0]


@pytest.mark.parametrize("big_ids", [False, True])
def test_large_batches_collapse_packed_or_by_lexsort(cp, big_ids):
    """Batches above PACKED_COLLAPSE_MIN collapse by packed keys when the ids fit 31 bits, by the
    lexsort otherwise (ids up to 2**40): both against the CPU store."""
    from streamrank.store.gpu import GpuGraph
    from streamrank.store.gpu_slow import PACKED_COLLAPSE_MIN

    rng = np.random.default_rng(5)
    scale = 2**40 if big_ids else 1
    s, d = _random_graph(rng, 3000, 20000)
    gg, cg = GpuGraph.from_edges(s * scale, d * scale), CpuGraph.from_edges(s * scale, d * scale)
    for _ in range(3):
        es, ed = cg.edges_external()
        bs, bd, bi = _random_batch(rng, 3500, PACKED_COLLAPSE_MIN + 3000, edges=(es // scale, ed // scale))
        _apply_both(cp, gg, cg, bs * scale, bd * scale, bi)


def test_many_hub_lists_in_one_slow_batch(cp):
    """Deletions from many long lists in one slow-path batch (the grid-wide scan's chunks then
    cross from one list into the next), with insertions into the same lists."""
    from streamrank.store.gpu import GpuGraph
    from streamrank.store.gpu_lists import BIG_LIST

    rng = np.random.default_rng(12)
    hubs = np.arange(12, dtype=np.int64)
    deg = rng.integers(BIG_LIST, BIG_LIST + 700, len(hubs))
    s = np.concatenate([np.repeat(hubs, deg), rng.integers(100, 20000, 20000)] +
                       [rng.integers(100, 20000, k) for k in deg])
    d = np.concatenate([rng.integers(100, 20000, deg.sum()), rng.integers(100, 20000, 20000)] +
                       [np.full(k, h) for h, k in zip(hubs, deg)])
    gg, cg = GpuGraph.from_edges(s, d, fast_update=_settings(False)), CpuGraph.from_edges(s, d)
    for _ in range(3):
        es, ed = cg.edges_external()
        hub = (es < 12) | (ed < 12)
        pick = rng.choice(np.flatnonzero(hub), 3000, replace=False)
        bs = np.concatenate([es[pick], rng.integers(0, 12, 1500), rng.integers(100, 20000, 1500)])
        bd = np.concatenate([ed[pick], rng.integers(100, 20000, 1500), rng.integers(0, 12, 1500)])
        bi = np.concatenate([np.zeros(3000, bool), np.ones(3000, bool)])
        _apply_both(cp, gg, cg, bs, bd, bi)
    assert int(_host(gg.out_degree).max()) >= BIG_LIST
