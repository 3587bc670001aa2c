"""The CPU frontier workspace kept across batches: the same ranks as a fresh workspace per batch,
its invariants between batches (flags clear, contributions current), reloads when the vector
handed in is not its own, and growth past its capacity."""

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.config import UPDATE_ORDERS, RankConfig
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.store.cpu import CpuGraph
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank
from streamrank.rank.cpu.pagerank import static_pagerank, update_pagerank
from streamrank.bench.rmat import rmat_edges


def _batches(seed, count, *, n_ids, size, deletions_from=None):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        s, d = rng.integers(0, n_ids, size), rng.integers(0, n_ids, size)
        d[:3] = s[:3]  # explicit self-loops, which Gauss-Seidel divides out
        ins = np.ones(size, bool)
        if deletions_from is not None:
            ds, dd = deletions_from
            pick = rng.integers(0, ds.shape[0], size // 4)
            s, d = np.concatenate([s, ds[pick]]), np.concatenate([d, dd[pick]])
            ins = np.concatenate([ins, np.zeros(size // 4, bool)])
        out.append(EdgeBatch.from_arrays(s, d, ins))
    return out


def _check_invariants(ws, graph, selfloop, gauss_seidel=True):
    n = graph.num_vertices
    assert not ws.flags[:n].any()
    d = graph.out_degree + (1 if selfloop else 0)
    inv = np.where(d > 0, 1.0 / np.maximum(d, 1), 0.0)
    np.testing.assert_array_equal(ws.inv[:n], inv)
    np.testing.assert_allclose(ws.c[:n], ws.x[:n] * inv, rtol=1e-15, atol=0)
    assert ws.total == pytest.approx(float(ws.x[:n].sum()), rel=1e-12)
    s, t = graph.edges()
    loops = np.zeros(n, dtype=np.uint8)
    loops[s[s == t]] = 1
    np.testing.assert_array_equal(ws.loops[:n], loops)  # explicit self-loops, kept per batch
    if gauss_seidel:
        np.testing.assert_array_equal(ws.cprev[:n], ws.c[:n])  # the copy read across blocks


@pytest.mark.parametrize("order", UPDATE_ORDERS)
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("algorithm", ["dt", "df", "dfp"])
def test_kept_workspace_gives_the_ranks_of_a_fresh_one(algorithm, dangling, order):
    s, d = rmat_edges(10, 8, seed=5)
    s, d = np.concatenate([s, np.arange(0, 1024, 7)]), np.concatenate([d, np.arange(0, 1024, 7)])  # self-loops
    cfg = RankConfig(dangling=dangling, update_order=order)
    selfloop = dangling == "self-loop"
    g_kept, g_fresh = CpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    x_kept = x_fresh = static_pagerank(g_kept, config=cfg).x
    ws = FrontierWorkspace()
    # small batches with new vertices (ids up to 1200 > 1024) and deletions; the workspace
    # starts at the capacity of the first graph and must grow
    for batch in _batches(7, 12, n_ids=1200, size=30, deletions_from=(s, d)):
        ch_kept, ch_fresh = g_kept.apply(batch), g_fresh.apply(batch)
        r_kept = update_pagerank(algorithm, g_kept, ch_kept, x_kept, config=cfg, workspace=ws)
        before = x_fresh.copy()
        r_fresh = update_pagerank(algorithm, g_fresh, ch_fresh, x_fresh, config=cfg)
        np.testing.assert_array_equal(x_fresh, before)  # not the workspace's own: not modified
        assert r_kept.iterations == r_fresh.iterations and r_kept.affected == r_fresh.affected
        np.testing.assert_allclose(r_kept.x, r_fresh.x, rtol=1e-13)
        assert r_kept.x is not r_fresh.x
        _check_invariants(ws, g_kept, selfloop, order == "gauss-seidel")
        x_kept, x_fresh = r_kept.x, r_fresh.x
    ref = oracle_pagerank(g_kept, dangling=dangling)
    assert l1_error(r_kept.ranks, ref) < 1e-5


def test_foreign_vector_reloads_and_is_not_modified():
    s, d = rmat_edges(9, 8, seed=2)
    g = CpuGraph.from_edges(np.asarray(s), np.asarray(d))
    cfg = RankConfig()
    x0 = static_pagerank(g, config=cfg).x
    ws = FrontierWorkspace()
    batches = _batches(3, 3, n_ids=600, size=20)
    r1 = update_pagerank("dfp", g, g.apply(batches[0]), x0, config=cfg, workspace=ws)
    # the next batch starts from another vector (as after a static recompute): a full reload
    x_other = static_pagerank(g, config=cfg).x
    keep = x_other.copy()
    r2 = update_pagerank("dfp", g, g.apply(batches[1]), x_other, config=cfg, workspace=ws)
    np.testing.assert_array_equal(x_other, keep)
    _check_invariants(ws, g, False)
    # a batch applied without a rank update in between: the workspace cannot continue from
    # r2 (its degrees are stale) and reloads, as a call without a workspace does
    g.apply(batches[2])
    ch = g.apply(EdgeBatch.from_arrays(np.array([5]), np.array([6])))
    fresh = update_pagerank("dfp", g, ch, r2.x.copy(), config=cfg)
    with_ws = update_pagerank("dfp", g, ch, r2.x, config=cfg, workspace=ws)
    assert with_ws.iterations == fresh.iterations
    np.testing.assert_allclose(with_ws.x, fresh.x, rtol=1e-13)
    _check_invariants(ws, g, False)
    assert r1.converged and with_ws.converged


def test_switching_the_update_order_reloads_the_workspace():
    """The Jacobi loop does not keep the copy ``cprev`` that Gauss-Seidel reads across blocks:
    a workspace handed the other order reloads, and every batch gives a fresh workspace's ranks."""
    s, d = rmat_edges(10, 8, seed=4)
    s, d = np.asarray(s), np.asarray(d)
    g_kept, g_fresh = CpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    x_kept = x_fresh = static_pagerank(g_kept).x
    ws = FrontierWorkspace()
    for i, batch in enumerate(_batches(5, 6, n_ids=1100, size=25, deletions_from=(s, d))):
        cfg = RankConfig(update_order=UPDATE_ORDERS[(i // 2) % 2])
        r_kept = update_pagerank("dfp", g_kept, g_kept.apply(batch), x_kept, config=cfg, workspace=ws)
        r_fresh = update_pagerank("dfp", g_fresh, g_fresh.apply(batch), x_fresh, config=cfg)
        assert r_kept.iterations == r_fresh.iterations and r_kept.affected == r_fresh.affected
        np.testing.assert_allclose(r_kept.x, r_fresh.x, rtol=1e-13)
        _check_invariants(ws, g_kept, False, cfg.update_order == "gauss-seidel")
        x_kept, x_fresh = r_kept.x, r_fresh.x


def test_engine_switching_algorithms_keeps_ranks_right():
    from streamrank.engine import Engine

    s, d = rmat_edges(10, 8, seed=9)
    eng = Engine("cpu", "dfp")
    eng.load_edges(np.asarray(s), np.asarray(d))
    for i, batch in enumerate(_batches(11, 6, n_ids=1100, size=25)):
        eng.algorithm = "static" if i == 3 else "dfp"
        eng.apply(batch)
        assert l1_error(eng.ranks()[1], oracle_pagerank(eng.graph)) < 1e-5
    eng.add_vertices(np.array([5000, 5001]))  # a new x array: the workspace reloads
    eng.apply(EdgeBatch.from_arrays(np.array([5000]), np.array([1])))
    assert l1_error(eng.ranks()[1], oracle_pagerank(eng.graph)) < 1e-5


def test_workspace_type_is_checked():
    from streamrank.errors import InvalidArgumentError

    g = CpuGraph.from_edges(np.array([0, 1]), np.array([1, 0]))
    ch = g.apply(EdgeBatch.from_arrays(np.array([1]), np.array([2])))
    with pytest.raises(InvalidArgumentError):
        update_pagerank("dfp", g, ch, np.ones(2), workspace=object())


def test_thread_chooser_measures_both_then_takes_the_cheaper(monkeypatch):
    import numba

    from streamrank.rank.cpu import threads as cpu_threads

    monkeypatch.delenv(cpu_threads.ENV, raising=False)
    if numba.get_num_threads() < 2:
        pytest.skip("needs 2 Numba threads")
    top = numba.get_num_threads()
    ch = cpu_threads.ThreadChooser()
    picks = []
    for _ in range(4 * cpu_threads.PROBE_EVERY):
        t = ch.choose()
        picks.append(t)
        ch.observe(t, 1000.0 if len(picks) == 1 else (2.0 if t == top else 5.0), 1000)  # first: a compile
    assert picks[:4] == [top, top, 1, 1]
    # the compile-inflated first sample was replaced: all threads are cheaper, and one thread
    # is re-measured every PROBE_EVERY batches
    assert picks[4:].count(1) == sum(1 for b in range(5, len(picks) + 1) if b % cpu_threads.PROBE_EVERY == 0)
    for _ in range(3 * cpu_threads.PROBE_EVERY):  # the machine gets busy: all threads now cost more
        t = ch.choose()
        ch.observe(t, 20.0 if t == top else 5.0, 1000)
    assert ch.choose() == 1
    monkeypatch.setenv(cpu_threads.ENV, "all")
    assert ch.choose() == top


def test_threads_set_restores_the_count():
    import numba

    from streamrank.rank.cpu.threads import threads_set

    before = numba.get_num_threads()
    with threads_set(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before


def test_a_batch_that_leaves_its_dense_passes_leaves_the_workspace_settled():
    """A Gauss-Seidel DF-P batch whose dense passes end before its last iteration skips the O(n)
    settle (frontier.frontier_iterate): x, c and cprev are current and unsigned, and only the last
    frontier's flags were set; the next batches and a fresh workspace agree."""
    s, d = rmat_edges(11, 8, seed=12)
    cfg = RankConfig()
    g_kept, g_fresh = CpuGraph.from_edges(s, d), CpuGraph.from_edges(s, d)
    x_kept = x_fresh = static_pagerank(g_kept, config=cfg).x
    ws = FrontierWorkspace()
    left_dense = 0
    for batch in _batches(3, 8, n_ids=2048, size=40):
        ch_kept, ch_fresh = g_kept.apply(batch), g_fresh.apply(batch)
        r_kept = update_pagerank("dfp", g_kept, ch_kept, x_kept, config=cfg, workspace=ws)
        r_fresh = update_pagerank("dfp", g_fresh, ch_fresh, x_fresh, config=cfg)
        n = g_kept.num_vertices
        wide = [a > n // 2 for a in r_kept.affected]
        left_dense += any(wide) and not wide[-1]
        assert r_kept.affected == r_fresh.affected
        np.testing.assert_array_equal(r_kept.x, r_fresh.x)
        assert not np.signbit(ws.c[:n]).any()
        _check_invariants(ws, g_kept, False)
        x_kept, x_fresh = r_kept.x, r_fresh.x
    assert left_dense >= 3
    assert l1_error(r_kept.ranks, oracle_pagerank(g_kept)) < 1e-5
