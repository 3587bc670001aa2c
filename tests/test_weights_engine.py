"""Weighted graphs through the engine on both backends: set and sum streams with deletions, every
algorithm, both dangling modes, against NetworkX's weighted PageRank of a final graph built here
from the records (and cuGraph's weighted PageRank on the GPU where it is installed)."""

from __future__ import annotations

import networkx as nx
import numba
import numpy as np
import pytest

from streamrank import ALGORITHMS, EdgeBatch, Engine, RankConfig
from streamrank.backend import to_host
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank


def _weights(eng) -> dict:
    """``{(src, dst): weight}`` of the engine's store (external ids), on the host."""
    s, d = eng.edges_external()
    return dict(zip(zip(s.tolist(), d.tolist()), to_host(eng.graph.edge_weights()).tolist()))


def _model_apply(model: dict, src, dst, insert, weight, mode: str) -> None:
    """The contract's rule, one record at a time, on a dict ``(u, v) -> weight``."""
    for u, v, ins, w in zip(src.tolist(), dst.tolist(), insert.tolist(), weight.tolist()):
        if ins:
            model[(u, v)] = model[(u, v)] + w if mode == "sum" and (u, v) in model else w
        elif (u, v) in model:
            if mode == "sum" and not np.isnan(w):
                left = model[(u, v)] - w
                if left > 1e-12 * model[(u, v)]:
                    model[(u, v)] = left
                else:
                    del model[(u, v)]
            else:
                del model[(u, v)]


def _records(seed: int, batches: int = 6):
    """A base load and batches of weighted insertions (repeated pairs, new vertices) and
    deletions (of present edges, with and without a weight, and of absent ones)."""
    rng = np.random.default_rng(seed)
    m = 700
    base = (rng.integers(0, 160, m), rng.integers(0, 160, m), np.ones(m, bool), rng.integers(1, 6, m).astype(float))
    out = []
    for _ in range(batches):
        k = 60
        s, d = rng.integers(0, 180, k), rng.integers(0, 180, k)  # ids >= 160 are new
        s[:10], d[:10] = base[0][:10], base[1][:10]  # repeats of base pairs
        ins = rng.random(k) < 0.6
        ins[:5] = False  # deletions of present edges
        w = rng.integers(1, 4, k).astype(float) * 0.5
        w[~ins & (rng.random(k) < 0.5)] = np.nan  # deletions without a weight
        out.append((s, d, ins, w))
    return base, out


def _networkx_ranks(model: dict, vertices, dangling: str) -> np.ndarray:
    G = nx.DiGraph()
    G.add_nodes_from(vertices)
    for (u, v), w in model.items():
        G.add_edge(u, v, weight=w)
    if dangling == "self-loop":  # every vertex's implicit loop weighs 1
        for v in vertices:
            G.add_edge(v, v, weight=G[v][v]["weight"] + 1.0 if G.has_edge(v, v) else 1.0)
    ref = nx.pagerank(G, alpha=0.85, weight="weight", tol=1e-14, max_iter=10_000)
    return np.array([ref[v] for v in vertices])


@pytest.mark.parametrize("mode", ["set", "sum"])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_weighted_replay_matches_networkx_for_every_algorithm(device, mode, dangling):
    config = RankConfig(dangling=dangling)
    base, batches = _records(seed=11)
    model: dict = {}
    _model_apply(model, *base, mode)
    for s, d, ins, w in batches:
        _model_apply(model, s, d, ins, w, mode)
    results = {}
    for algorithm in ALGORITHMS:
        eng = Engine(device, algorithm, config=config, weighted=True, multi_edges=mode)
        eng.load_edges(base[0], base[1], weight=base[3])
        steps = [eng.apply(EdgeBatch.from_arrays(s, d, ins, weight=w)) for s, d, ins, w in batches]
        assert all(st.rank.converged for st in steps), algorithm
        results[algorithm] = eng
    reweights = sum(st.changes.num_reweights for st in steps)
    assert reweights > 0 and sum(st.changes.num_deletions for st in steps) > 0  # the stream exercises both
    ext, _ = results["dfp"].ranks()
    ref = _networkx_ranks(model, ext.tolist(), dangling)
    for algorithm, eng in results.items():
        ids, p = eng.ranks()
        np.testing.assert_array_equal(ids, ext)
        assert l1_error(p, ref) <= 1e-6, (algorithm, l1_error(p, ref))
    # the store holds exactly the model's edges and weights
    got = _weights(results["dfp"])
    assert got.keys() == model.keys()
    assert all(abs(got[k] - model[k]) <= 1e-12 * model[k] for k in model)
    # SciPy's weighted oracle agrees with NetworkX
    assert l1_error(oracle_pagerank(results["dfp"].graph, dangling=dangling), ref) <= 1e-9


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_weighted_jacobi_order_matches_networkx(dangling):
    """The Jacobi update order (its sparse and dense steps, the uniform mode's lookahead, the
    Jacobi sweeps) with weights, on a sum stream with reweights and deletions."""
    config = RankConfig(dangling=dangling, update_order="jacobi")
    base, batches = _records(seed=13)
    model: dict = {}
    _model_apply(model, *base, "sum")
    for s, d, ins, w in batches:
        _model_apply(model, s, d, ins, w, "sum")
    ref = None
    for algorithm in ("static", "nd", "dt", "df", "dfp"):
        eng = Engine("cpu", algorithm, config=config, weighted=True, multi_edges="sum")
        eng.load_edges(base[0], base[1], weight=base[3])
        steps = [eng.apply(EdgeBatch.from_arrays(s, d, ins, weight=w)) for s, d, ins, w in batches]
        assert all(st.rank.converged for st in steps), algorithm
        ids, p = eng.ranks()
        if ref is None:
            ref = _networkx_ranks(model, ids.tolist(), dangling)
        assert l1_error(p, ref) <= 1e-6, (algorithm, l1_error(p, ref))


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_set_mode_with_weight_one_ranks_as_unweighted(device, dangling):
    base, batches = _records(seed=12, batches=4)
    config = RankConfig(dangling=dangling)
    plain = Engine(device, "dfp", config=config)
    weighted = Engine(device, "dfp", config=config, weighted=True)
    plain.load_edges(base[0], base[1])
    weighted.load_edges(base[0], base[1])  # an unweighted batch: weight 1
    for s, d, ins, _w in batches:
        plain.apply(EdgeBatch.from_arrays(s, d, ins))
        weighted.apply(EdgeBatch.from_arrays(s, d, ins, weight=np.where(ins, 1.0, np.nan)))
    ids_a, p_a = plain.ranks()
    ids_b, p_b = weighted.ranks()
    np.testing.assert_array_equal(ids_a, ids_b)
    assert l1_error(p_a, p_b) <= 2e-6  # each DF-P within its pruning error of the same PageRank
    assert l1_error(oracle_pagerank(weighted.graph, dangling=dangling),
                    oracle_pagerank(plain.graph, dangling=dangling)) <= 1e-12


@pytest.mark.parametrize("algorithm", ["df", "dfp", "dt"])
def test_a_weight_change_alone_moves_the_ranks(device, algorithm):
    eng = Engine(device, algorithm, weighted=True)
    eng.load_edges([1, 1, 2, 3], [2, 3, 3, 1], weight=[1.0, 1.0, 1.0, 1.0])
    before = eng.ranks()[1].copy()
    step = eng.apply(EdgeBatch.from_arrays([1], [2], weight=[9.0]))  # set: 1 -> 9
    assert step.changes.num_reweights == 1 and not step.changes.empty
    assert step.changes.num_insertions == step.changes.num_deletions == 0
    assert step.changes.summary()["reweighted"] == 1
    model = {(1, 2): 9.0, (1, 3): 1.0, (2, 3): 1.0, (3, 1): 1.0}
    ids, p = eng.ranks()
    bound = 1e-6 if algorithm == "dfp" else 1e-8  # DF-P: within its pruning error
    assert l1_error(p, _networkx_ranks(model, ids.tolist(), "uniform")) <= bound
    assert l1_error(p, before) > 1e-3
    same = eng.apply(EdgeBatch.from_arrays([1], [2], weight=[9.0]))  # the same weight: no change
    assert same.changes.empty and same.changes.dropped["present_insertion"] == 1


def test_sum_rule_details(device):
    eng = Engine(device, "dfp", weighted=True, multi_edges="sum")
    eng.load_edges([1, 1, 1, 2], [2, 2, 3, 3])  # unweighted insertions count 1 each
    w = _weights(eng)
    assert w == {(1, 2): 2.0, (1, 3): 1.0, (2, 3): 1.0}
    # float error never leaves a ghost edge: three insertions of 0.1, one deletion of 0.3
    eng.apply(EdgeBatch.from_arrays([5, 5, 5, 5], [6, 6, 6, 6], [True, True, True, False], weight=[0.1, 0.1, 0.1, 0.3]))
    assert eng.graph.num_edges == 3 and eng.lookup([5, 6]).max() == -1  # nothing left: no vertex either
    step = eng.apply(EdgeBatch.from_arrays([1, 1, 2, 9], [2, 3, 3, 9], [False, False, False, False],
                                           weight=[0.5, 5.0, np.nan, 1.0]))
    w = _weights(eng)
    assert w == {(1, 2): 1.5}  # 2 - 0.5; 1 - 5 goes; a deletion without a weight removes
    assert step.changes.num_reweights == 1 and step.changes.num_deletions == 2
    assert step.changes.dropped["absent_deletion"] == 1
    eng.apply(EdgeBatch.from_arrays([1], [2], [False]))  # an unweighted deletion removes the edge
    assert eng.graph.num_edges == 0
    np.testing.assert_allclose(eng.ranks()[1].sum(), 1.0)


def test_out_weights_and_both_directions(device):
    eng = Engine(device, "dfp", weighted=True)
    eng.load_edges([1, 1, 2], [2, 3, 3], weight=[2.0, 3.0, 0.5])
    g = eng.graph
    i1, i2, i3 = eng.lookup([1, 2, 3])
    np.testing.assert_array_equal(to_host(g.out_weight)[[i1, i2, i3]], [5.0, 0.5, 0.0])
    out_w, out_i, out_o = to_host(g.out_weights), to_host(g.out_indices), to_host(g.out_offset)
    in_w, in_i, in_o, in_d = (to_host(a) for a in (g.in_weights, g.in_indices, g.in_offset, g.in_degree))
    ins = {int(in_i[j]): float(in_w[j]) for j in range(in_o[i3], in_o[i3] + in_d[i3])}
    assert ins == {int(i1): 3.0, int(i2): 0.5}
    outs = {int(out_i[j]): float(out_w[j]) for j in range(out_o[i1], out_o[i1] + to_host(g.out_degree)[i1])}
    assert outs == {int(i2): 2.0, int(i3): 3.0}


def test_auto_policy_and_threads_agree(device):
    base, batches = _records(seed=13, batches=3)
    eng = Engine(device, "auto", weighted=True, multi_edges="sum")
    eng.load_edges(base[0], base[1], weight=base[3])
    for s, d, ins, w in batches:
        step = eng.apply(EdgeBatch.from_arrays(s, d, ins, weight=w))
        assert step.rank.algorithm in ("dfp", "warm")
    assert l1_error(eng.ranks()[1], oracle_pagerank(eng.graph)) <= 1e-6


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
@pytest.mark.parametrize("algorithm", ["static", "warm", "dt", "dfp"])
def test_weighted_results_do_not_depend_on_the_thread_count(algorithm, monkeypatch):
    """Graphs past PARALLEL_EDGES run the weighted kernels in parallel chunks: bitwise the same
    ranks on one thread and on two."""
    monkeypatch.setenv("STREAMRANK_CPU_THREADS", "all")
    rng = np.random.default_rng(21)
    m = 40_000
    s, d, w = rng.integers(0, 6000, m), rng.integers(0, 6000, m), rng.random(m) + 0.25
    batches = [EdgeBatch.from_arrays(rng.integers(0, 6100, 300), rng.integers(0, 6100, 300),
                                     weight=rng.random(300) + 0.5) for _ in range(3)]
    xs = []
    before = numba.get_num_threads()
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            eng = Engine("cpu", algorithm, weighted=True, multi_edges="sum")
            eng.load_edges(s, d, weight=w)
            for b in batches:
                eng.apply(b)
        finally:
            numba.set_num_threads(before)
        xs.append(np.array(eng.x))
    np.testing.assert_array_equal(xs[0], xs[1])
