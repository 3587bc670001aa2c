"""Graph store: normalization rules, what apply() returns, CSR views, state round trip."""

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.engine import Engine
from streamrank.errors import BatchFormatError


def _graph(device, src=(), dst=()):
    eng = Engine(device, "dfp")
    if len(src):
        eng.graph.apply(EdgeBatch.from_arrays(np.array(src), np.array(dst), xp=eng.backend.xp))
    return eng.graph, eng.backend


def _edge_set(graph, backend):
    s, d = graph.edges_external()
    return set(zip(backend.to_host(s).tolist(), backend.to_host(d).tolist()))


def _neighbours(backend, offset, degree, indices, v):
    o, k = int(backend.to_host(offset)[v]), int(backend.to_host(degree)[v])
    return sorted(backend.to_host(indices)[o:o + k].tolist())


def test_normalization_counts_and_changes(device):
    g, be = _graph(device, [1, 1, 2, 3, 3], [2, 3, 3, 1, 1])
    assert (g.num_vertices, g.num_edges) == (3, 4)  # (3,1) twice collapses
    batch = EdgeBatch.from_arrays(
        np.array([1, 1, 9, 5, 5, 2, 7]), np.array([2, 2, 1, 6, 6, 3, 8]),
        np.array([False, True, True, True, False, True, False]), xp=be.xp)
    ch = g.apply(batch)
    s = ch.summary()
    # (1,2): delete then insert, present -> collapses to insert of a present edge (dropped)
    # (5,6): insert then delete, absent -> collapses to delete of an absent edge (dropped)
    # (2,3): present insertion; (7,8): deletion of an edge between unknown vertices
    assert s["received"] == 7
    assert s["dropped_duplicate"] == 2
    assert s["dropped_present_insertion"] == 2
    assert s["dropped_absent_deletion"] == 2
    assert s["inserted"] == 1 and s["deleted"] == 0
    assert s["new_vertices"] == 1  # 9 only: deletions and net-deleted inserts create no vertex
    assert _edge_set(g, be) == {(1, 2), (1, 3), (2, 3), (3, 1), (9, 1)}
    ext = be.to_host(g.ids.external)
    assert int(be.to_host(ch.ins_src)[0]) == int(np.nonzero(ext == 9)[0][0])


def test_deletion_makes_dangling_and_csr_views_agree(device):
    g, be = _graph(device, [0, 0, 1], [1, 2, 2])
    ch = g.apply(EdgeBatch.from_arrays(np.array([1]), np.array([2]), np.array([False]), xp=be.xp))
    assert ch.num_deletions == 1
    ids = be.to_host(g.ids.lookup(be.xp.asarray([0, 1, 2])))
    assert be.to_host(g.out_degree)[ids].tolist() == [2, 0, 0]
    assert be.to_host(g.in_degree)[ids].tolist() == [0, 1, 1]
    assert _neighbours(be, g.out_offset, g.out_degree, g.out_indices, ids[0]) == sorted(ids[[1, 2]].tolist())
    assert _neighbours(be, g.in_offset, g.in_degree, g.in_indices, ids[2]) == [ids[0]]


def test_id_lookup_with_a_per_vertex_attribute(device):
    g, be = _graph(device, [10, 10, 11], [11, 12, 12])
    both = be.to_host(g.ids.lookup_with(np.array([12, 99, 10, 11]), g.out_degree))
    internal = be.to_host(g.ids.lookup(be.xp.asarray([12, 99, 10, 11])))
    assert both.shape == (2, 4) and both[0].tolist() == internal.tolist() and internal[1] == -1
    assert both[1].tolist() == [0, 0, 2, 1]  # out-degrees; 0 for the unknown id
    assert be.to_host(g.ids.lookup_with(np.array([], dtype=np.int64), g.out_degree)).shape == (2, 0)


def test_self_loops_are_ordinary_edges(device):
    g, be = _graph(device, [4, 4], [4, 5])
    assert g.num_edges == 2
    i4 = int(be.to_host(g.ids.lookup(be.xp.asarray([4])))[0])
    assert be.to_host(g.out_degree)[i4] == 2 and be.to_host(g.in_degree)[i4] == 1


def test_random_batches_match_a_python_set(device):
    rng = np.random.default_rng(7)
    g, be = _graph(device)
    truth = set()
    for _ in range(30):
        k = int(rng.integers(1, 40))
        s = rng.integers(0, 30, k)
        d = rng.integers(0, 30, k)
        ins = rng.random(k) < 0.6
        expect_dups = k - len(set(zip(s.tolist(), d.tolist())))
        final = {}
        for a, b, i in zip(s.tolist(), d.tolist(), ins.tolist()):
            final[(a, b)] = i
        present_ins = sum(1 for e, i in final.items() if i and e in truth)
        absent_del = sum(1 for e, i in final.items() if not i and e not in truth)
        for e, i in final.items():
            (truth.add if i else truth.discard)(e)
        ch = g.apply(EdgeBatch.from_arrays(s, d, ins, xp=be.xp))
        assert ch.dropped == {"duplicate": expect_dups, "present_insertion": present_ins,
                              "absent_deletion": absent_del}
        assert _edge_set(g, be) == truth
        assert g.num_edges == len(truth)
        assert int(be.to_host(g.out_degree).sum()) == len(truth) == int(be.to_host(g.in_degree).sum())


def test_state_round_trip(device):
    rng = np.random.default_rng(3)
    g, be = _graph(device, rng.integers(0, 50, 200), rng.integers(0, 50, 200))
    g2 = type(g).from_state(g.state())
    assert _edge_set(g2, be) == _edge_set(g, be)
    assert be.to_host(g2.ids.external).tolist() == be.to_host(g.ids.external).tolist()


@pytest.mark.parametrize("bad", [
    dict(src=[-1], dst=[2]),
    dict(src=[1.5], dst=[2]),
    dict(src=np.array([2**64 - 1], dtype=np.uint64), dst=[2]),
    dict(src=[1, 2], dst=[2]),
    dict(src=["a"], dst=[2]),
])
def test_bad_batches_raise_package_error(bad):
    with pytest.raises(BatchFormatError):
        EdgeBatch.from_arrays(np.asarray(bad["src"]), np.asarray(bad["dst"]))


def test_arrow_round_trip():
    b = EdgeBatch.from_arrays([1, 2], [3, 4], [True, False])
    b2 = EdgeBatch.from_arrow(b.to_arrow())
    assert b2.src.tolist() == [1, 2] and b2.insert.tolist() == [True, False]


def test_fast_update_settings():
    from streamrank.errors import InvalidArgumentError
    from streamrank.store.gpu_fast import FAST_MAX_EDGES, FastUpdate

    default = FastUpdate()
    assert default.enabled and default.max_edges == FAST_MAX_EDGES
    off = FastUpdate(enabled=False, max_edges=100)
    assert not off.enabled and off.max_edges == 100
    assert FastUpdate().vertices == 2 * FAST_MAX_EDGES and FastUpdate().slots >= 2**18
    assert FastUpdate(vertex_room=0, slot_room=5).vertices == 0 and FastUpdate(slot_room=5).slots == 5
    for bad in (dict(max_edges=FAST_MAX_EDGES + 1), dict(max_edges=-1), dict(slot_room=-1), dict(vertex_room=-2)):
        with pytest.raises(InvalidArgumentError):
            FastUpdate(**bad)


def _adjacency(backend, offset, degree, indices, n):
    off, deg, idx = (backend.to_host(a) for a in (offset, degree, indices))
    return [sorted(idx[off[v]: off[v] + deg[v]].tolist()) for v in range(n)]


def test_many_batches_relocate_and_compact_and_both_directions_agree(device):
    """Hub vertices outgrow their room again and again, deletions leave holes; after every
    batch the out- and in-lists hold exactly the edge set (the CPU store relocates segments
    and compacts its arrays along the way)."""
    rng = np.random.default_rng(9)
    g, be = _graph(device, rng.integers(0, 200, 400), rng.integers(0, 200, 400))
    truth = _edge_set(g, be)
    for b in range(60):
        hubs = rng.integers(0, 40, 30)  # many insertions from and to a few vertices
        s = np.concatenate([hubs, rng.integers(0, 260, 30)])
        d = np.concatenate([rng.integers(0, 260, 30), hubs])
        es, ed = (be.to_host(a) for a in g.edges_external())
        pick = rng.integers(0, es.shape[0], 25)
        src, dst = np.concatenate([s, es[pick]]), np.concatenate([d, ed[pick]])
        ins = np.concatenate([np.ones(60, bool), np.zeros(25, bool)])
        final = {}
        for a, c, i in zip(src.tolist(), dst.tolist(), ins.tolist()):
            final[(a, c)] = i
        for e, i in final.items():
            (truth.add if i else truth.discard)(e)
        g.apply(EdgeBatch.from_arrays(src, dst, ins, xp=be.xp))
        assert g.num_edges == len(truth)
        if b % 10 == 9:
            assert _edge_set(g, be) == truth
            n = g.num_vertices
            ext = be.to_host(g.ids.external)
            outs = _adjacency(be, g.out_offset, g.out_degree, g.out_indices, n)
            ins_ = _adjacency(be, g.in_offset, g.in_degree, g.in_indices, n)
            assert {(int(ext[u]), int(ext[v])) for u in range(n) for v in outs[u]} == truth
            assert {(int(ext[u]), int(ext[v])) for v in range(n) for u in ins_[v]} == truth
    s, d = (be.to_host(a) for a in g.edges())
    assert np.all((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (d[1:] > d[:-1])))  # sorted by (src, dst)


def test_compaction_recounts_the_room_the_update_needs():
    """A vertex that fits its old (relocated) room may not fit the room compaction gives it:
    the room the update takes is counted again after compacting (it once wrote past the array)."""
    from streamrank.store.cpu import _Side

    side = _Side(4)
    side.off[:], side.deg[:], side.cap[:] = [0, 100, 110, 115], [10, 2, 1, 1], [100, 10, 5, 5]
    side.idx = np.zeros(150, dtype=np.int32)
    side.idx[0:10] = np.arange(10)
    side.idx[100:102] = [0, 1]
    side.idx[110], side.idx[115] = 2, 3
    side.end, side.garbage = 120, 80  # over a quarter garbage: the update below compacts
    own = np.array([0] * 60 + [1] * 20, dtype=np.int64)  # vertex 0: 70 <= its room 100 before compaction
    nbr = np.array(list(range(10, 70)) + list(range(2, 22)), dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    plan = side.plan_update(4, none, own)
    assert plan.compact and plan.grow_to is not None  # the plan predicts the compaction and the growth
    side.update(4, plan, none, none, own, nbr)
    assert side.idx.shape[0] == plan.grow_to
    assert side.end <= side.idx.shape[0]
    got = [side.idx[side.off[v]: side.off[v] + side.deg[v]].tolist() for v in range(4)]
    assert got == [list(range(70)), list(range(22)), [2], [3]]


def test_host_id_map_against_a_dict_across_side_table_merges():
    from streamrank.ids import cpu as idmap_mod
    from streamrank.ids.cpu import IdMap

    rng = np.random.default_rng(12)
    m, ref = IdMap(np), {}
    for _ in range(60):  # 60 batches of 300 ids from 40 k: merges of the side table happen
        ids = rng.integers(0, 40_000, 300)
        internal, num_new = m.add(ids)
        before = len(ref)
        for v in ids.tolist():
            ref.setdefault(v, len(ref))
        assert num_new == len(ref) - before
        assert internal.tolist() == [ref[v] for v in ids.tolist()]
    assert len(ref) > idmap_mod.MERGE_MIN and m._keys.shape[0] > 0  # at least one merge ran
    probe = rng.integers(0, 45_000, 2_000)
    assert m.lookup(probe).tolist() == [ref.get(v, -1) for v in probe.tolist()]
    assert m.external.tolist() == sorted(ref, key=ref.get)
    again = IdMap.from_external(m.external, np)
    assert again.lookup(probe).tolist() == m.lookup(probe).tolist()
    assert again.add(np.array([45_001]))[0].tolist() == [len(ref)]
    assert len(m) == len(ref)  # from_external copied: the first map is unchanged


def test_new_vertex_order_first_appearance_or_degree(device):
    """Up to DEGREE_ORDER_MIN new ids a batch numbers them by first appearance; a larger addition
    (a bulk load) by descending degree in the batch, ties by first appearance (id_plan)."""
    from streamrank.ids.plan import DEGREE_ORDER_MIN

    g, be = _graph(device, [30, 10, 20], [10, 40, 10])  # distinct edges in (src, dst) order
    assert be.to_host(g.ids.external).tolist() == [10, 40, 20, 30]

    rng = np.random.default_rng(5)
    k = DEGREE_ORDER_MIN + 2000
    ids = 1000 + rng.permutation(k)
    src = np.concatenate([ids, np.repeat(ids[[17, 3, 900]], [50, 30, 10]), [30]])
    dst = np.concatenate([np.roll(ids, 1), ids[rng.choice(k, 90, replace=False) % (k - 1000) + 1000], [ids[5]]])
    g.apply(EdgeBatch.from_arrays(src, dst, xp=be.xp))
    # expected: the distinct edges in (src, dst) order, endpoints interleaved
    edges = sorted(set(zip(src.tolist(), dst.tolist())))
    both = [v for e in edges for v in e if v not in (30, 10, 20, 40)]
    first, deg = {}, {}
    for i, v in enumerate(both):
        first.setdefault(v, i)
        deg[v] = deg.get(v, 0) + 1
    want = sorted(first, key=lambda v: (-deg[v], first[v]))
    got = be.to_host(g.ids.external).tolist()
    assert got[:4] == [10, 40, 20, 30] and got[4:] == want
    assert want[:3] == ids[[17, 3, 900]].tolist()  # the hubs of this batch come first


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_packed_collapse_equals_lexsort(device, seed):
    """collapse_last_op by one stable sort of packed keys gives the lexsort's result exactly
    (last op per pair, sorted by (src, dst), duplicates counted), on both array modules."""
    from streamrank.store.normalize import collapse_last_op

    from streamrank.backend import to_host as _host

    xp = np if device == "cpu" else pytest.importorskip("cupy")
    rng = np.random.default_rng(seed)
    n = 20_000
    src = xp.asarray(rng.integers(0, 300, n) * (2**31 // 300))  # large ids below 2**31, many repeats
    dst = xp.asarray(rng.integers(0, 50, n))
    ins = xp.asarray(rng.random(n) < 0.6)
    a = collapse_last_op(xp, src, dst, ins)
    b = collapse_last_op(xp, src, dst, ins, packed=True)
    assert a[3] == b[3] and a[3] > 0
    for x, y in zip(a[:3], b[:3]):
        assert np.array_equal(_host(x), _host(y))


def test_section_changes_slice_their_buffer_on_first_use():
    from streamrank.store.changes import AppliedChanges, SectionChanges

    m = 5  # the fused kernel's layout: ins_src, ins_dst, del_src, del_dst at 0, m, 2m, 3m
    buf = np.arange(4 * m, dtype=np.int64)
    dropped = {"duplicate": 1, "present_insertion": 0, "absent_deletion": 2}
    lazy = SectionChanges(buf, m, 3, 2, 10, 12, m, dropped)
    assert lazy.num_insertions == 3 and lazy.num_deletions == 2 and lazy.num_new_vertices == 2
    assert "ins_src" not in vars(lazy)  # the counts needed no slice
    plain = AppliedChanges(buf[:3], buf[5:8], buf[10:12], buf[15:17], 10, 12, m, dropped)
    for name in ("ins_src", "ins_dst", "del_src", "del_dst"):
        assert np.array_equal(getattr(lazy, name), getattr(plain, name)), name
    assert lazy.summary() == plain.summary() and not lazy.empty
    assert lazy.ins_src is lazy.ins_src  # sliced once, then kept
    with pytest.raises(AttributeError):
        lazy.no_such_field  # noqa: B018

