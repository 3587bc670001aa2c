"""Rank algorithms against hand-computed values, NetworkX and the SciPy oracle, on both backends."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamrank.batch import EdgeBatch
from streamrank.config import ALGORITHMS, UPDATE_ORDERS, RankConfig
from streamrank.engine import Engine
from streamrank.errors import InvalidArgumentError
from streamrank.oracle.metrics import l1_error, linf_error, topk_precision
from streamrank.oracle.static import oracle_pagerank, scipy_pagerank

ALPHA = 0.85
DYNAMIC = [a for a in ALGORITHMS if a != "static"]


def ranks_by_external(eng):
    ids, p = eng.ranks()
    return dict(zip(ids.tolist(), p.tolist()))


def engine(device, algorithm, src, dst, **cfg):
    eng = Engine(device, algorithm, config=RankConfig(**cfg))
    eng.load_edges(np.asarray(src), np.asarray(dst))
    return eng


# ------------------------------------------------------------------ hand-checkable graphs
@pytest.mark.parametrize("order", UPDATE_ORDERS)
def test_cycle_is_uniform(device, order):
    # Jacobi from x = 1 keeps the cycle's symmetry exactly; Gauss-Seidel (CPU) breaks it until it
    # converges: the error is then bounded by the tolerance (1e-10 on the L-inf change)
    exact = order == "jacobi" or device == "gpu"  # the GPU always iterates Jacobi
    for dangling in ("uniform", "self-loop"):
        r = ranks_by_external(engine(device, "dfp", [0, 1, 2], [1, 2, 0], dangling=dangling, update_order=order))
        assert r == pytest.approx({0: 1 / 3, 1: 1 / 3, 2: 1 / 3}, abs=1e-12 if exact else 1e-10)


def test_dangling_vertex_by_hand_and_after_deletion(device):
    # 0->1, 0->2, 1->2; vertex 2 dangles. Local form: x0 = 1, x1 = 1 + a/2, x2 = 1 + a(1/2 + x1)
    x = np.array([1.0, 1 + ALPHA / 2, 1 + ALPHA * (0.5 + 1 + ALPHA / 2)])
    for algorithm in ALGORITHMS:
        # tol 1e-13: the GPU's Static and warm iterate the standard form, whose base term moves
        # every sweep, so they meet the default tol (1e-10 on the L-inf change) about 1e-10
        # from the exact ranks; the local-form sweeps reach this DAG's exact values in 3 steps
        eng = engine(device, algorithm, [0, 0, 1], [1, 2, 2], tol=1e-13)
        r = ranks_by_external(eng)
        assert [r[i] for i in range(3)] == pytest.approx(x / x.sum(), abs=1e-11)
        # delete 1->2: vertex 1 becomes dangling; x2 = 1 + a/2
        step = eng.apply(EdgeBatch.from_arrays([1], [2], [False]))
        assert step.rank.converged
        x2 = np.array([1.0, 1 + ALPHA / 2, 1 + ALPHA / 2])
        r = ranks_by_external(eng)
        assert [r[i] for i in range(3)] == pytest.approx(x2 / x2.sum(), abs=1e-11), algorithm


def test_self_loop_mode_by_hand(device):
    # 0->1 with implicit self-loops: d0 = 2, d1 = 1.
    # x0 = 1/(1 - a/2); x1 = (1 + a x0/2)/(1 - a)
    x0 = 1 / (1 - ALPHA / 2)
    x1 = (1 + ALPHA * x0 / 2) / (1 - ALPHA)
    r = ranks_by_external(engine(device, "static", [0], [1], dangling="self-loop"))
    assert [r[0], r[1]] == pytest.approx([x0 / (x0 + x1), x1 / (x0 + x1)], abs=1e-11)


@pytest.mark.parametrize("algorithm", ["dt", "df", "dfp"])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_explicit_self_loop_is_solved_in_its_own_update(device, dangling, algorithm):
    # 0->1, 1->1: vertex 1's only out-edge is its own loop. A batch adds 2->1. Summing the loop
    # like any in-edge, a Jacobi step would shrink vertex 1's error by alpha per iteration (about
    # 140 iterations to 1e-10); divided out of its own equation, its value is exact after one
    # update. By hand (local form, loops = the explicit one + the implicit one in self-loop mode):
    #   uniform:   x0 = x2 = 1,               x1 = (1 + a (x0 + x2)) / (1 - a)
    #   self-loop: x0 = x2 = 1 / (1 - a / 2), x1 = (1 + a (x0 + x2) / 2) / (1 - 2 a / 2)
    eng = engine(device, algorithm, [0, 1], [1, 1], dangling=dangling, update_order="jacobi")
    step = eng.apply(EdgeBatch.from_arrays([2], [1], [True]))
    assert step.rank.converged
    assert step.rank.iterations <= 4, step.rank.iterations
    if dangling == "uniform":
        x0 = 1.0
        x1 = (1 + ALPHA * 2 * x0) / (1 - ALPHA)
    else:
        x0 = 1 / (1 - ALPHA / 2)
        x1 = (1 + ALPHA * x0) / (1 - ALPHA)
    x = np.array([x0, x1, x0])
    r = ranks_by_external(eng)
    assert [r[i] for i in range(3)] == pytest.approx(x / x.sum(), abs=1e-11)


def test_matches_networkx_on_a_graph_with_dangling_vertices(device):
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, 300, 1200), rng.integers(0, 300, 1200)
    src = np.concatenate([src, np.arange(300, 332)])  # 32 extra vertices...
    dst = np.concatenate([dst, np.arange(300, 332) + 100])  # ...pointing at dangling ones
    eng = engine(device, "static", src, dst)
    G = nx.DiGraph()
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    ref = nx.pagerank(G, alpha=ALPHA, tol=1e-15, max_iter=10_000)
    r = ranks_by_external(eng)
    assert sum(1 for v in G if G.out_degree(v) == 0) >= 32
    assert sum(abs(r[v] - ref[v]) for v in G) < 1e-8


def test_scipy_oracle_matches_networkx_self_loop_mode():
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 80, 300), rng.integers(0, 80, 300)
    pairs = sorted(set(zip(src.tolist(), dst.tolist())))
    s = np.array([a for a, _ in pairs])
    d = np.array([b for _, b in pairs])
    G = nx.MultiDiGraph()
    G.add_nodes_from(range(80))
    G.add_edges_from(pairs)
    G.add_edges_from((v, v) for v in range(80))  # implicit self-loops (multi-edge beside an explicit one)
    ref = nx.pagerank(G, alpha=ALPHA, tol=1e-15, max_iter=10_000)
    p = scipy_pagerank(s, d, 80, dangling="self-loop")
    assert np.abs(p - np.array([ref[v] for v in range(80)])).sum() < 1e-10


# ------------------------------------------------------------------ property-based
edge = st.tuples(st.integers(0, 25), st.integers(0, 25))


@st.composite
def stream(draw):
    base = draw(st.lists(edge, min_size=0, max_size=60))
    batches = draw(st.lists(
        st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.booleans()), min_size=0, max_size=15),
        min_size=1, max_size=6))
    return base, batches


def _run_property(device, dangling, data, order="gauss-seidel"):
    base, batches = data
    cfg = RankConfig(dangling=dangling, update_order=order)
    engines = {a: Engine(device, a, config=cfg) for a in ALGORITHMS}
    for eng in engines.values():
        if base:
            eng.load_edges(np.array([e[0] for e in base]), np.array([e[1] for e in base]))
    for batch in batches:
        # delete some existing edges too (present deletions), plus whatever the strategy drew
        first = engines["dfp"]
        s = [b[0] for b in batch]
        d = [b[1] for b in batch]
        ins = [b[2] for b in batch]
        if first.graph.num_edges:
            es, ed = (first.backend.to_host(a) for a in first.graph.edges_external())
            s += es[:2].tolist()
            d += ed[:2].tolist()
            ins += [False] * len(es[:2])
        eb = EdgeBatch.from_arrays(np.array(s, dtype=np.int64), np.array(d, dtype=np.int64), np.array(ins, dtype=bool))
        for algorithm, eng in engines.items():
            step = eng.apply(eb)
            assert step.rank.converged, algorithm
        ref = oracle_pagerank(first.graph, dangling=dangling)
        for algorithm, eng in engines.items():
            _, p = eng.ranks()
            if p.size == 0:
                continue
            # DF-P prunes vertices whose relative change is <= 1e-6: its error is bounded by that
            bound = 1e-5 if algorithm in ("dfp", "auto") else 1e-8
            assert l1_error(p, ref) < bound, (algorithm, l1_error(p, ref))
            assert abs(p.sum() - 1) < 1e-12


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=stream())
@pytest.mark.parametrize("order", UPDATE_ORDERS)
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_every_algorithm_matches_oracle_after_every_batch_cpu(dangling, order, data):
    _run_property("cpu", dangling, data, order)


@pytest.mark.gpu
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=stream())
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_every_algorithm_matches_oracle_after_every_batch_gpu(dangling, data):
    _run_property("gpu", dangling, data)


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_larger_random_stream_with_new_vertices(device, dangling):
    rng = np.random.default_rng(1)
    n = 400
    src, dst = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    cfg = dict(dangling=dangling)
    engines = {a: engine(device, a, src, dst, **cfg) for a in DYNAMIC}
    for b in range(8):
        k = 60
        s, d = rng.integers(0, n + 50, k), rng.integers(0, n + 50, k)  # new vertices appear
        es, ed = engines["dfp"].graph.edges_external()
        es, ed = engines["dfp"].backend.to_host(es), engines["dfp"].backend.to_host(ed)
        pick = rng.integers(0, es.shape[0], 20)
        batch = EdgeBatch.from_arrays(np.concatenate([s, es[pick], s[:5]]), np.concatenate([d, ed[pick], d[:5]]),
                                      np.concatenate([np.ones(k, bool), np.zeros(20, bool), np.ones(5, bool)]))
        for a, eng in engines.items():
            step = eng.apply(batch)
            assert step.rank.converged and step.seq == b + 1
        ref = oracle_pagerank(engines["dfp"].graph, dangling=dangling)
        for a, eng in engines.items():
            _, p = eng.ranks()
            assert l1_error(p, ref) < (1e-5 if a in ("dfp", "auto") else 1e-8), a
            assert linf_error(p, ref) < 1e-7
            assert topk_precision(p, ref, 20) >= 0.95
    # the frontier algorithms really work on fewer vertices than a full sweep
    assert engines["dfp"].last.affected_total < engines["nd"].last.affected_total


def test_state_round_trip_keeps_ranks(device):
    rng = np.random.default_rng(2)
    eng = engine(device, "dfp", rng.integers(0, 100, 500), rng.integers(0, 100, 500))
    eng.apply(EdgeBatch.from_arrays(rng.integers(0, 120, 30), rng.integers(0, 120, 30)))
    eng2 = Engine.from_state(eng.state(), device=device)
    assert eng2.seq == 1
    np.testing.assert_allclose(eng2.ranks()[1], eng.ranks()[1], rtol=0, atol=0)
    batch = EdgeBatch.from_arrays(rng.integers(0, 130, 30), rng.integers(0, 130, 30))
    eng.apply(batch)
    eng2.apply(batch)
    np.testing.assert_allclose(eng2.ranks()[1], eng.ranks()[1], atol=1e-15)


def test_config_validation():
    with pytest.raises(InvalidArgumentError):
        RankConfig(alpha=1.0)
    with pytest.raises(InvalidArgumentError):
        RankConfig(dangling="nope")
    with pytest.raises(InvalidArgumentError, match="sweep_contributions"):
        RankConfig(sweep_contributions="float16")
    with pytest.raises(InvalidArgumentError, match="update_order"):
        RankConfig(update_order="red-black")
    with pytest.raises(InvalidArgumentError):
        Engine("cpu", "pagerank")
    with pytest.raises(InvalidArgumentError):
        Engine("tpu")


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_warm_matches_oracle_and_returns_the_local_form(device, dangling):
    """The standard-form warm start converges to the oracle's ranks in fewer sweeps than ND and
    hands back the local-form x, so DF-P continues from it."""
    rng = np.random.default_rng(21)
    src, dst = rng.integers(0, 500, 3000), rng.integers(0, 520, 3000)  # ids 500..519 dangle
    warm = engine(device, "warm", src, dst, dangling=dangling)
    nd = engine(device, "nd", src, dst, dangling=dangling)
    batch = EdgeBatch.from_arrays(rng.integers(0, 530, 40), rng.integers(0, 530, 40))
    step_w, step_nd = warm.apply(batch), nd.apply(batch)
    assert step_w.rank.converged and step_w.rank.iterations < step_nd.rank.iterations
    ref = oracle_pagerank(warm.graph, dangling=dangling)
    assert l1_error(warm.ranks()[1], ref) < 1e-8
    # local form: x = 1 + alpha * P^T x (self-loop: own loop in closed form), checked on the host
    x = warm.backend.to_host(warm.x)
    s, d = (warm.backend.to_host(a) for a in warm.graph.edges())
    deg = np.bincount(s, minlength=x.shape[0]).astype(float) + (1.0 if dangling == "self-loop" else 0.0)
    pull = np.bincount(d, weights=ALPHA * x[s] / deg[s], minlength=x.shape[0])
    local = 1.0 + pull
    if dangling == "self-loop":
        local = local / (1.0 - ALPHA / deg)
    assert np.abs(local - x).max() / x.sum() < 1e-9
    # DF-P continues from warm's x
    warm.algorithm = "dfp"
    warm.apply(EdgeBatch.from_arrays(rng.integers(0, 530, 40), rng.integers(0, 530, 40)))
    assert l1_error(warm.ranks()[1], oracle_pagerank(warm.graph, dangling=dangling)) < 1e-5


def test_recompute_with_its_own_settings(device):
    # the temporal protocol's base ranks: tol 0 runs to the iteration cap, past the engine's tol
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 400, 2000), rng.integers(0, 400, 2000)
    eng = engine(device, "dfp", src, dst, dangling="self-loop")
    # SciPy's float64 power iteration to 1e-15: cuGraph's oracle stops at its own looser tolerance
    ref = oracle_pagerank(eng.graph, dangling="self-loop", use="scipy")
    loose = l1_error(eng.ranks()[1], ref)
    res = eng.recompute(config=RankConfig(dangling="self-loop", tol=0.0, max_iter=300))
    assert res.iterations == 300 and not res.converged
    assert l1_error(eng.ranks()[1], ref) < min(loose, 1e-12)
    assert eng.config.tol == 1e-10  # the engine's own settings are unchanged
    with pytest.raises(InvalidArgumentError):
        eng.recompute(config={"tol": 0.0})
