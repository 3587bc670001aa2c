"""Vertices without edges lie past the CPU store's sweep end, which the Gauss-Seidel dense passes
never cross (the published protocol's padding costs nothing per batch); a batch that gives a
vertex past it an edge moves that vertex to the end."""

import numpy as np
import pytest

from streamrank import EdgeBatch, Engine, RankConfig
from streamrank.bench.rmat import rmat_edges
from streamrank.errors import InvalidArgumentError
from streamrank.kernels.cpu import common as kernel_common
from streamrank.kernels.cpu import frontier_order
from streamrank.kernels.cpu.common import GS_BLOCK
from streamrank.rank.cpu.pagerank import static_pagerank, update_pagerank
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.store.cpu import CpuGraph

IDS = 6000  # ids created up front; the graph's edges use 1024 of them, spread over all


def _padded(seed=1):
    s, d = rmat_edges(10, 6, seed=seed)
    ids = np.random.default_rng(seed).permutation(IDS)[:1024]
    eng = Engine("cpu", "dfp", config=RankConfig(dangling="self-loop"))
    eng.load_edges(ids[s], ids[d], vertices=np.arange(IDS))
    return eng, ids


def _check_end(g):
    order, _ = g.sweep_order
    end = g.sweep_end
    has = (g.in_degree > 0) | (g.out_degree > 0)
    assert not has[order[end:]].any()  # past the end: no vertex with an edge
    assert g.sweep_blocks[-1] < max(end, 1)
    return has, order, end


def test_a_layout_puts_the_vertices_without_edges_last():
    eng, _ = _padded()
    has, order, end = _check_end(eng.graph)
    assert end == int(has.sum()) and has[order[:end]].all()
    np.testing.assert_array_equal(order[end:], np.sort(order[end:]))  # in id order


@pytest.mark.parametrize("block", [512, GS_BLOCK])
def test_batches_that_reach_isolated_vertices_move_the_end_and_rank_as_a_fresh_workspace(block, monkeypatch):
    """Batches give edges to vertices past the end (and delete edges): the end moves past them, the
    kept workspace (its mirror and end kept by the batches) ranks bit for bit as a fresh one, and
    the ranks match a static recompute; blocks of 512 make every dense pass run several blocks."""
    monkeypatch.setattr(kernel_common, "GS_BLOCK", block)
    eng, ids = _padded(seed=2)
    g = eng.graph
    cfg = RankConfig(dangling="self-loop")
    g_fresh = CpuGraph.from_state(g.state())
    x = x_fresh = static_pagerank(g, config=cfg).x
    ws = FrontierWorkspace()
    rng = np.random.default_rng(4)
    isolated = np.setdiff1d(np.arange(IDS), ids)
    s_all, d_all = g.edges()
    moved = 0
    for b in range(10):
        bs, bd = rng.choice(ids, 30), rng.choice(ids, 30)
        bs[:3] = rng.choice(isolated, 3)  # new out-edges of vertices past the end
        bd[3:5] = rng.choice(isolated, 2)  # and new in-edges
        pick = rng.integers(0, s_all.shape[0], 5)
        batch = EdgeBatch.from_arrays(np.concatenate([bs, s_all[pick]]), np.concatenate([bd, d_all[pick]]),
                                      np.concatenate([np.ones(30, bool), np.zeros(5, bool)]))
        end = g.sweep_end
        ch, ch_fresh = g.apply(batch), g_fresh.apply(batch)
        moved += g.sweep_end > end
        _check_end(g)
        r = update_pagerank("dfp", g, ch, x, config=cfg, workspace=ws)
        r_fresh = update_pagerank("dfp", g_fresh, ch_fresh, x_fresh, config=cfg)
        assert r.iterations == r_fresh.iterations and r.affected == r_fresh.affected
        np.testing.assert_array_equal(r.x, r_fresh.x)
        x, x_fresh = r.x, r_fresh.x
    assert moved >= 1
    exact = static_pagerank(g, config=RankConfig(dangling="self-loop", tol=1e-14)).x
    assert np.abs(x / x.sum() - exact / exact.sum()).sum() < 1e-6


def test_a_restored_store_keeps_its_end_and_ranks_bit_for_bit(monkeypatch):
    """A restore keeps the saved end (a vertex left without edges by deletions stays before it), so
    later batches move the same vertices as the saved store's; a state saved without an end keeps
    every position inside, as the version that saved it did. Both rank bit for bit."""
    monkeypatch.setattr(kernel_common, "GS_BLOCK", 512)
    eng, ids = _padded(seed=3)
    g = eng.graph
    out = np.flatnonzero(g.out_degree > 0)[:3]  # delete every edge of three vertices: isolated, inside the end
    s_all, d_all = g.edges()
    gone = np.isin(s_all, out) | np.isin(d_all, out)
    g.apply(EdgeBatch.from_arrays(s_all[gone], d_all[gone], np.zeros(int(gone.sum()), bool)))
    state = g.state()
    back = CpuGraph.from_state(state)
    np.testing.assert_array_equal(back.sweep_order[0], g.sweep_order[0])
    np.testing.assert_array_equal(back.sweep_blocks, g.sweep_blocks)
    assert back.sweep_end == g.sweep_end < g.num_vertices
    _check_end(back)
    older = CpuGraph.from_state({k: v for k, v in state.items() if k != "sweep_end"})
    assert older.sweep_end == g.num_vertices
    with pytest.raises(InvalidArgumentError):  # a vertex with edges past the end
        CpuGraph.from_state({**state, "sweep_end": np.array([g.sweep_end - 1])})
    cfg = RankConfig(dangling="self-loop")
    x = static_pagerank(g, config=cfg).x
    isolated = np.setdiff1d(np.arange(IDS), ids)
    batch = EdgeBatch.from_arrays(np.concatenate([ids[:40], isolated[-3:]]), np.concatenate([ids[40:80], ids[:3]]))
    results = []
    for store in (g, back, older):
        end = store.sweep_end
        results.append(update_pagerank("dfp", store, store.apply(batch), x, config=cfg))
        assert (store.sweep_end > end) == (store is not older)  # past the end: the three isolated sources
    for r in results[1:]:
        assert r.iterations == results[0].iterations
        np.testing.assert_array_equal(r.x, results[0].x)
    np.testing.assert_array_equal(back.sweep_order[0], g.sweep_order[0])


def test_leaving_the_dense_passes_lists_the_frontier_in_id_order():
    """frontier_order.leave_to_sparse on a graph whose vertices past the end have no edges: it
    collects the kept vertices and the spreaders by position and sorts them, and lists what a walk
    over every id lists (frontier_dense.to_sparse: the kept in id order, then the unmarked
    out-neighbours of the spreaders in the spreaders' id order); the iterate goes back unsigned."""
    rng = np.random.default_rng(5)
    n, nd = 5000, 1200
    order = rng.permutation(n).astype(np.int32)
    live = order[:nd]
    s, d = rng.choice(live, 6000), rng.choice(live, 6000)
    g = CpuGraph.from_edges(s, d)  # internal ids: first appearance; map the order through them
    n_g = g.num_vertices
    ids = np.full(n, -1, dtype=np.int64)
    ids[g.ids.external] = np.arange(n_g)
    rest = np.flatnonzero(ids < 0)
    ids[rest] = np.arange(n_g, n_g + rest.shape[0])  # the vertices without edges, after the others
    ext_order = np.concatenate([live, order[nd:]])
    pos_order = ids[ext_order].astype(np.int32)  # position -> internal id, live ones first
    out_off = np.concatenate([g.out_offset, np.zeros(n - n_g, np.int64)])
    out_deg = np.concatenate([g.out_degree, np.zeros(n - n_g, np.int64)])
    gk = (None, None, None, out_off, out_deg, g.out_indices)
    xp, cp = rng.uniform(0.5, 2, n), rng.uniform(0.1, 1, n)
    cp[:nd][rng.random(nd) < 0.3] *= -1.0  # spreaders
    keepp = (rng.random(n) < 0.4).astype(np.uint8)
    keepp[nd:] = 0
    x, c, cprev = np.zeros(n), np.zeros(n), np.zeros(n)
    flags = np.zeros(n, dtype=np.uint8)
    last = np.full(n, -2, dtype=np.int32)
    F, spread, tmp = (np.empty(n, dtype=np.int32) for _ in range(3))
    m, kept = frontier_order.leave_to_sparse(nd, gk, (pos_order,), xp, cp, keepp, x, c, cprev, flags, last, 7, F,
                                             spread, tmp)
    v_of = pos_order[:nd].astype(np.int64)
    want = sorted(v_of[keepp[:nd] == 1].tolist())
    marked = set(want)
    for v in sorted(v_of[cp[:nd] < 0].tolist()):
        for w in g.out_indices[out_off[v]:out_off[v] + out_deg[v]].tolist():
            if w not in marked:
                marked.add(w)
                want.append(w)
    assert kept == int(keepp[:nd].sum()) and F[:m].tolist() == want
    np.testing.assert_array_equal(x[v_of], xp[:nd])
    np.testing.assert_array_equal(c[v_of], np.abs(cp[:nd]))
    np.testing.assert_array_equal(last[v_of] == 7, cp[:nd] < 0)
    assert flags.sum() == m
