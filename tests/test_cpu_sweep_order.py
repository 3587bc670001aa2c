"""The sweep order of the CPU Gauss-Seidel dense passes: the store's order (set by each layout,
new vertices appended, kept by state()) and the workspace's position-space mirror of the
in-edges, which every batch must leave exact (rows rewritten in place or at the end, rebuilt
when its room runs out or the store lays itself out afresh)."""

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.kernels.cpu import common as kernel_common
from streamrank.kernels.cpu import frontier_order, mirror_upkeep, sweep_order
from streamrank.kernels.cpu.common import CHUNK, block_size
from streamrank.kernels.cpu.sweeps import gs_iterate
from streamrank.rank.cpu.threads import threads_set
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.errors import InvalidArgumentError
from streamrank.store.cpu import CpuGraph
from streamrank.store.cpu_weighted import WeightedCpuGraph
from streamrank.rank.cpu.pagerank import static_pagerank, update_pagerank
from streamrank.bench.rmat import rmat_edges


def _expected_order(in_deg):
    bucket = np.minimum(in_deg, sweep_order.ORDER_BUCKETS - 1)
    return np.argsort(-bucket, kind="stable").astype(np.int32)


def test_layout_sorts_by_in_degree_and_new_vertices_go_last():
    s, d = rmat_edges(10, 8, seed=3)
    g = CpuGraph.from_edges(s, d)  # a bulk load: laid out
    order, pos = g.sweep_order
    np.testing.assert_array_equal(order, _expected_order(g.in_degree))
    np.testing.assert_array_equal(pos[order], np.arange(g.num_vertices))
    n, version, before = g.num_vertices, g.order_version, order.copy()
    g.apply(EdgeBatch.from_arrays(np.array([5000, 5001, 3]), np.array([5001, 3, 5002])))  # three new ids
    order, pos = g.sweep_order
    assert g.order_version == version  # a small batch does not lay out
    np.testing.assert_array_equal(order[:n], before)  # positions stay until the next layout
    np.testing.assert_array_equal(order[n:], np.arange(n, n + 3))
    np.testing.assert_array_equal(pos[order], np.arange(g.num_vertices))


def _expected_cuts(work, end, nb):
    """kernels.cpu.sweep_order.cut_blocks in NumPy: block b starts at the first chunk boundary
    where the work before it reaches b / nb of the work of ``[0, end)``."""
    before = np.concatenate([[0], np.cumsum(work[:end])])
    starts = [0]
    for b in range(1, nb):
        p = next(p for p in range(starts[-1] + CHUNK, end, CHUNK) if before[p] * nb >= before[end] * b)
        starts.append(p)
    return np.array(starts, dtype=np.int64)


def _expected_split_order(in_deg, out_deg, loops, block):
    """The order and block starts of a graph of several blocks (kernels.cpu.sweep_order), in
    NumPy: the last block takes the sinks, then the sources, then the fewest in-edges from others
    (ties by id), until it holds its share of the work (whole chunks before it); in it the sinks
    go last; the plain order within each group; the blocks before it cut at equal work."""
    n = in_deg.shape[0]
    nb = -(-n // block)
    assert nb > 1
    work = sweep_order.VERTEX_WORK + in_deg.astype(np.int64)
    own = loops.astype(np.int64)
    key = np.where(out_deg - own == 0, 0, np.where(in_deg - own == 0, 1, 2 + in_deg - own))
    ranked = np.lexsort((np.arange(n), key))
    taken = int(np.searchsorted(np.cumsum(work[ranked]), work.sum() // nb)) + 1  # reaches the share
    first_last = max((n - taken) // CHUNK * CHUNK, (nb - 1) * CHUNK)
    last = np.zeros(n, dtype=bool)
    last[ranked[:n - first_last]] = True
    group = np.where(last, np.where(key == 0, 2, 1), 0)
    bucket = np.minimum(in_deg, sweep_order.ORDER_BUCKETS - 1)
    order = np.lexsort((np.arange(n), -bucket, group)).astype(np.int32)
    starts = np.concatenate([_expected_cuts(work[order], first_last, nb - 1), [first_last]])
    return order, last, key, starts


@pytest.mark.parametrize("block", [512, 1024, 2048])
def test_a_graph_of_several_blocks_puts_the_cheapest_stale_readers_last(block, monkeypatch):
    """The last Gauss-Seidel block reads the others' values of the pass's start: it gets the
    vertices without out-edges to others (no cycle through them), then those without in-edges
    from others, then the fewest in-edges from others, up to its share of the work; the blocks
    are cut at equal work (whole chunks), not at equal vertex counts; a graph within one block
    keeps the plain order. The store's layout cuts by the kernels' GS_BLOCK, the same on one and
    two threads."""
    s, d = rmat_edges(12, 4, seed=5)
    rng = np.random.default_rng(6)
    sinks = rng.integers(0, 4096, 300)  # no out-edges to others: some only a self-loop
    keep = ~np.isin(s, sinks) | (s == d)
    loops = np.arange(0, 4096, 7)
    s, d = np.concatenate([s[keep], loops]), np.concatenate([d[keep], loops])
    monkeypatch.setattr(kernel_common, "GS_BLOCK", block)
    g = CpuGraph.from_edges(s, d)
    n = g.num_vertices
    own = np.zeros(n, dtype=np.uint8)
    es, ed = g.edges()
    own[es[es == ed]] = 1
    expected, last, key, starts = _expected_split_order(g.in_degree, g.out_degree, own, block)
    order, pos = g.sweep_order
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(pos[order], np.arange(n))
    np.testing.assert_array_equal(g.sweep_blocks, starts)
    nb = starts.shape[0]
    assert nb == -(-n // block) and starts[0] == 0 and np.all(starts % CHUNK == 0) and np.all(np.diff(starts) > 0)
    assert starts[-1] == n - int(last.sum())  # the last block's vertices begin where it begins
    # equal work: no block holds more than its share plus the work of one chunk around its ends
    work = (sweep_order.VERTEX_WORK + g.in_degree.astype(np.int64))[order]
    per_block = np.add.reduceat(work, starts)
    slack = 2 * np.add.reduceat(work, np.arange(0, n, CHUNK)).max()
    assert per_block.max() - per_block.min() <= slack
    for threads in (1, 2):  # the layout does not depend on the thread count
        with threads_set(threads):
            again = CpuGraph.from_edges(s, d)
        np.testing.assert_array_equal(again.sweep_order[0], order)
        np.testing.assert_array_equal(again.sweep_blocks, starts)
    tail = int(last.sum())
    assert set(order[n - tail:].tolist()) == set(np.flatnonzero(last).tolist())  # the last block exactly
    assert key[order[n - tail:]].max() <= key[order[:n - tail]].min()  # the cheapest stale readers
    assert (key[order[n - tail:]] == 0).sum() > 0 and key[order[-1]] == 0  # sinks, and they go last
    monkeypatch.setattr(kernel_common, "GS_BLOCK", 1 << 14)  # one block: the plain order
    g = CpuGraph.from_edges(s, d)
    np.testing.assert_array_equal(g.sweep_order[0], _expected_order(g.in_degree))
    np.testing.assert_array_equal(g.sweep_blocks, [0])


def test_blocks_of_equal_vertex_counts_would_overload_the_first():
    """The reason for cutting by work: the sweep order puts the high in-degrees first, so blocks
    of equal vertex counts give the first block most in-edges; the work cut moves its start."""
    s, d = rmat_edges(13, 8, seed=2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel_common, "GS_BLOCK", 4096)
        g = CpuGraph.from_edges(s, d)
    n = g.num_vertices
    starts = g.sweep_blocks
    assert starts.shape[0] == 2
    order = g.sweep_order[0]
    in_deg = g.in_degree[order].astype(np.int64)
    work = sweep_order.VERTEX_WORK + in_deg
    half = block_size(n, 4096)  # the equal-count cut of before
    assert work[:half].sum() > 1.2 * work[half:].sum()
    assert starts[1] < half
    assert abs(int(work[:starts[1]].sum()) - int(work[starts[1]:].sum())) <= 2 * CHUNK * work.max()


def test_a_growing_store_cuts_its_kept_order_afresh_when_the_block_count_changes(monkeypatch):
    """Vertices a batch adds take positions at the end, in the last block; when the vertex count
    asks for another block, the kept order is cut at equal work (sweep_order.recut) without a
    layout."""
    monkeypatch.setattr(kernel_common, "GS_BLOCK", 1024)
    s, d = rmat_edges(10, 4, seed=1)
    g = CpuGraph.from_edges(s, d)
    n0, version = g.num_vertices, g.order_version
    assert g.sweep_blocks.shape[0] == -(-n0 // 1024)
    before = g.sweep_blocks.copy()
    rng = np.random.default_rng(2)
    grew = False
    for b in range(12):
        new = np.arange(100_000 + 200 * b, 100_000 + 200 * (b + 1))
        g.apply(EdgeBatch.from_arrays(new, rng.integers(0, n0, new.shape[0])))
        n = g.num_vertices
        starts = g.sweep_blocks
        assert g.order_version == version  # no layout
        assert starts.shape[0] == -(-n // 1024)
        if starts.shape[0] == before.shape[0]:
            np.testing.assert_array_equal(starts, before)  # kept while the count holds
        else:
            grew = True
            work = sweep_order.VERTEX_WORK + g.in_degree[g.sweep_order[0]].astype(np.int64)
            np.testing.assert_array_equal(starts, _expected_cuts(work, n, starts.shape[0]))
        before = starts.copy()
    assert grew


def test_state_keeps_the_order():
    s, d = rmat_edges(9, 8, seed=4)
    g = CpuGraph.from_edges(s, d)
    g.apply(EdgeBatch.from_arrays(np.array([7000, 1, 2]), np.array([1, 7001, 7000])))
    back = CpuGraph.from_state(g.state())
    np.testing.assert_array_equal(back.sweep_order[0], g.sweep_order[0])
    np.testing.assert_array_equal(back.sweep_order[1], g.sweep_order[1])
    np.testing.assert_array_equal(back.sweep_blocks, g.sweep_blocks)
    st = g.state()
    for bad in ([1], [0, 100], [0, 512, 512], [0, 1 << 20]):  # not starts of whole, ordered, inner chunks
        with pytest.raises(InvalidArgumentError):
            CpuGraph.from_state({**st, "sweep_blocks": np.array(bad)})
    st.pop("sweep_blocks")  # saved before the blocks were kept: the saved order cut afresh
    back = CpuGraph.from_state(st)
    np.testing.assert_array_equal(back.sweep_order[0], g.sweep_order[0])
    work = sweep_order.VERTEX_WORK + back.in_degree[back.sweep_order[0]].astype(np.int64)
    np.testing.assert_array_equal(back.sweep_blocks, _expected_cuts(work, back.num_vertices,
                                                                    back.sweep_blocks.shape[0]))
    st.pop("sweep_order")  # a state without one (a GPU store's): the layout's own order
    back = CpuGraph.from_state(st)
    np.testing.assert_array_equal(back.sweep_order[0], _expected_order(back.in_degree))
    st["sweep_order"] = np.zeros(g.num_vertices, dtype=np.int32)
    with pytest.raises(InvalidArgumentError):
        CpuGraph.from_state(st)


def _check_mirror(ws, graph):
    """Every row of a built mirror holds the positions of its vertex's in-neighbours."""
    n = graph.num_vertices
    order, pos = graph.sweep_order
    assert ws.mstate[frontier_order.BUILT] == n or ws.mstate[frontier_order.BUILT] < 0
    if ws.mstate[frontier_order.BUILT] < 0:
        return False
    in_off, in_deg, in_idx = graph.in_offset, graph.in_degree, graph.in_indices
    for p in range(n):
        v = order[p]
        row = ws.m_idx[ws.m_off[p]:ws.m_end[p]]
        np.testing.assert_array_equal(row, pos[in_idx[in_off[v]:in_off[v] + in_deg[v]]])
        if ws.weighted:  # the weights beside, bit for bit
            np.testing.assert_array_equal(ws.m_wt[ws.m_off[p]:ws.m_end[p]],
                                          graph.in_weights[in_off[v]:in_off[v] + in_deg[v]])
    np.testing.assert_array_equal(ws.invp[:n], ws.inv[order])
    np.testing.assert_array_equal(ws.loopsp[:n], ws.loops[order])
    np.testing.assert_array_equal(ws.outdp[:n], graph.out_degree[order])
    # the rows' entries are counted, and rows moved away leave at most 1 / COMPACT of m_idx's used part
    live, used = int((ws.m_end[:n] - ws.m_off[:n]).sum()), int(ws.mstate[frontier_order.USED])
    assert ws.mstate[frontier_order.LIVE] == live
    assert used - live <= used // mirror_upkeep.COMPACT
    return True


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("room", [frontier_order.ROOM, 1])
def test_mirror_stays_exact_and_ranks_match_a_fresh_workspace(room, weighted, monkeypatch):
    """Room 1: the rows a batch grows soon fill ``m_idx`` and the mirror is rebuilt (with the default
    room, the rows moved away make it rebuild: ``COMPACT``); the kept
    workspace still ranks bit for bit as a fresh one, which builds its mirror afresh. Weighted
    (``sum``: repeated pairs are reweights): the mirror's weights too."""
    monkeypatch.setattr(frontier_order, "ROOM", room)
    s, d = rmat_edges(10, 8, seed=5)
    s, d = np.concatenate([s, np.arange(0, 1024, 7)]), np.concatenate([d, np.arange(0, 1024, 7)])
    cfg = RankConfig()  # DF-P's default, Gauss-Seidel
    if weighted:
        g_kept, g_fresh = (WeightedCpuGraph.from_edges(s, d, multi_edges="sum") for _ in range(2))
    else:
        g_kept, g_fresh = CpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    x_kept = x_fresh = static_pagerank(g_kept, config=cfg).x
    ws = FrontierWorkspace(weighted)
    rng = np.random.default_rng(11)
    built = rebuilt = 0
    used = None
    for b in range(14):
        size = 3000 if b == 7 else 120  # batch 7 is a bulk batch: the store lays itself out afresh
        bs, bd = rng.integers(0, 1300, size), rng.integers(0, 1300, size)
        bd[:2] = bs[:2]  # self-loops
        pick = rng.integers(0, s.shape[0], 10)
        batch = EdgeBatch.from_arrays(np.concatenate([bs, s[pick]]), np.concatenate([bd, d[pick]]),
                                      np.concatenate([np.ones(size, bool), np.zeros(10, bool)]))
        version = g_kept.order_version
        ch_kept, ch_fresh = g_kept.apply(batch), g_fresh.apply(batch)
        assert (g_kept.order_version != version) == (b == 7)
        r_kept = update_pagerank("dfp", g_kept, ch_kept, x_kept, config=cfg, workspace=ws)
        r_fresh = update_pagerank("dfp", g_fresh, ch_fresh, x_fresh, config=cfg,
                                  workspace=FrontierWorkspace(weighted))
        assert r_kept.iterations == r_fresh.iterations and r_kept.affected == r_fresh.affected
        np.testing.assert_array_equal(r_kept.x, r_fresh.x)
        if _check_mirror(ws, g_kept):
            built += 1
            now = int(ws.mstate[frontier_order.USED])
            rebuilt += used is not None and now < used
            used = now
        x_kept, x_fresh = r_kept.x, r_fresh.x
    assert built >= 10  # the batches went dense: the mirror was in use
    assert rebuilt >= 1  # room 1: m_idx filled up; the default room: rows moved away (COMPACT)


def _reference_sweep(s, d, n, x, order, starts, alpha=0.85):
    """One Gauss-Seidel sweep of the local form (uniform mode) in the sweep order, by the textbook
    rule: a vertex reads the values its block updated before it, every other value as the sweep
    began; an explicit self-loop divided out."""
    out_deg = np.bincount(s, minlength=n)
    inv = np.where(out_deg > 0, 1.0 / np.maximum(out_deg, 1), 0.0)
    loop = np.zeros(n)
    loop[s[s == d]] = 1.0
    ins = [[] for _ in range(n)]
    for u, v in zip(s.tolist(), d.tolist()):
        if u != v:
            ins[v].append(u)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    blk = np.searchsorted(starts, np.arange(n), side="right") - 1  # the block of each position
    c_start = x * inv
    c = c_start.copy()
    new = x.copy()
    for p in range(n):
        v = order[p]
        acc = sum(c[u] if blk[pos[u]] == blk[p] and pos[u] < p else c_start[u] for u in ins[v])
        new[v] = (1.0 + alpha * acc) / (1.0 - loop[v] * alpha * inv[v])
        c[v] = new[v] * inv[v]
    return new


@pytest.mark.parametrize("block", [512, 1024, 4096])
def test_a_sweep_of_several_blocks_reads_its_own_block_fresh_and_the_others_from_its_start(block, monkeypatch):
    """The dense pass keeps block 0's values in ``cp`` and the other blocks' in ``cprevp`` while it
    runs (frontier_order._dense_block) and joins them after: one sweep from a random start
    (Static's gs_iterate, max_iter 1) matches the textbook rule, with 1, 2 and 4 blocks, on one
    and two threads."""
    monkeypatch.setattr(kernel_common, "GS_BLOCK", block)
    s, d = rmat_edges(11, 6, seed=9)
    s, d = np.concatenate([s, np.arange(0, 2048, 5)]), np.concatenate([d, np.arange(0, 2048, 5)])
    g = CpuGraph.from_edges(s, d)
    n = g.num_vertices
    es, ed = g.edges()
    x = np.random.default_rng(3).uniform(0.5, 2.0, n)
    order, pos = g.sweep_order
    starts = g.sweep_blocks
    assert starts.shape[0] == {512: 4, 1024: 2, 4096: 1}[block]
    expected = _reference_sweep(es, ed, n, x, order, starts)
    for threads in (1, 2):
        with threads_set(threads):
            got = gs_iterate(g.kernel_arrays(), g.num_edges, x, 0.85, False, 0.0, 1,
                             np.zeros(1, dtype=np.int64), order, pos, starts)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("block", [512, 1024, 4096])
def test_dense_pass_of_two_blocks_leaves_the_joined_values_in_the_spare_pair(block):
    """frontier_order.dense_pass: with two blocks each block also writes its values into the spare
    pair (no join after the pass); the values, sign bits, kept flags, iterate and partials are
    dense_order's bit for bit, with 1, 2 and 3 blocks, on one and two threads."""
    s, d = rmat_edges(11, 6, seed=4)
    g = CpuGraph.from_edges(s, d)
    n = g.num_vertices
    order = g.sweep_order[0]
    starts = sweep_order.recut(g.in_degree, order, n, block)  # blocks of equal work
    assert starts.shape[0] == {512: 3, 1024: 2, 4096: 1}[block]
    rng = np.random.default_rng(8)
    ws = FrontierWorkspace()
    ws._grow(n)
    ws.m_idx = np.empty(g.num_edges + 1024, dtype=np.int32)  # the mirror's rows (begin sizes it in a batch)
    x = rng.uniform(0.5, 2.0, n)
    inv = np.where(g.out_degree > 0, 1.0 / np.maximum(g.out_degree, 1), 0.0)
    c = x * inv
    c[rng.random(n) < 0.3] *= -1.0  # spreaders of the iteration before
    flags = (rng.random(n) < 0.5).astype(np.uint8)
    ws.inv[:n], ws.loops[:n] = inv, 0
    mv = ws.mirror()
    mv = (*g.sweep_order, *mv[2:10], starts)
    parts = (ws.parts_f[0], ws.parts_f[1], ws.parts_i[0], ws.parts_i[1], ws.parts_i[2], ws.parts_i[3])
    gk = g.kernel_arrays()

    def run(pingpong, threads):
        mv[5][frontier_order.BUILT] = -1
        frontier_order.enter(n, gk, ws.inv, ws.loops, mv, x.copy(), c.copy(), flags.copy(), ws.xnew, ws.cnew,
                             ws.keep2)
        with threads_set(threads):
            if pingpong:
                swapped = frontier_order.dense_pass(n, True, gk, mv, ws.cnew, mv[6], ws.cpn, ws.cprevpn,
                                                    ws.xnew, ws.keep2, True, 0.85, False, 1e-6, 1e-6, True, True,
                                                    parts, ws.parts_i[5])
                assert swapped == (block == 1024)
                cp, cprevp = (ws.cpn, ws.cprevpn) if swapped else (ws.cnew, mv[6])
            else:
                frontier_order.dense_order(n, True, gk, mv, ws.cnew, ws.xnew, ws.keep2, True, 0.85, False,
                                           1e-6, 1e-6, True, True, parts, ws.parts_i[5])
                cp, cprevp = ws.cnew, mv[6]
        nch = (n + 511) // 512
        return [a[:n].copy() for a in (cp, cprevp, ws.xnew, ws.keep2)] + [p[:nch].copy() for p in parts]

    want = run(False, 1)
    for threads in (1, 2):
        for a, b in zip(run(True, threads), want):
            np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
