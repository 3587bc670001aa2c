"""Personalized PageRank of weighted graphs: every method against NetworkX's weighted PPR on the CPU;
on the GPU the power iteration (the engine's weighted device store and a device view of a host
store), the other methods refused with a clear error."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from streamrank import ConfigError, Engine
from streamrank.ppr import DeviceGraphView, personalized_pagerank, personalized_pagerank_batch


@pytest.fixture(scope="module")
def weighted():
    """A weighted engine (sum: repeated pairs add up) and the NetworkX graph of its records."""
    rng = np.random.default_rng(5)
    m = 900
    s, d = rng.integers(0, 220, m), rng.integers(0, 220, m)
    w = rng.integers(1, 9, m).astype(float)
    w[::7] *= 40.0  # heavy edges: far from the unweighted walk
    eng = Engine("cpu", "dfp", weighted=True, multi_edges="sum")
    eng.load_edges(s, d, weight=w)
    G = nx.DiGraph()
    G.add_nodes_from(int(v) for v in eng.graph.ids.external)
    plain = G.copy()
    for a, b, x in zip(s.tolist(), d.tolist(), w.tolist()):
        G.add_edge(a, b, weight=G[a][b]["weight"] + x if G.has_edge(a, b) else x)
        plain.add_edge(a, b)
    return eng, G, plain, int(s[0])


def _nx_ppr(G, seed, dangling, weight="weight"):
    kw = {} if dangling == "personalization" else {"dangling": {v: 1.0 for v in G}}
    return nx.pagerank(G, alpha=0.85, personalization={seed: 1.0}, weight=weight, tol=1e-14, max_iter=10_000, **kw)


@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("method, options, bound", [
    ("power", {}, 1e-8),
    ("push", {"eps": 1e-10}, 1e-6),
    ("pull", {"eps": 1e-10}, 1e-6),
    ("hybrid", {"eps": 1e-10}, 1e-6),
])
def test_every_exact_method_matches_networkx(weighted, dangling, method, options, bound):
    eng, G, _plain, seed = weighted
    ext = eng.graph.ids.external
    ref = _nx_ppr(G, seed, dangling)
    want = np.array([ref[int(v)] for v in ext])
    res = personalized_pagerank(eng.graph, seed, method=method, dangling=dangling, return_vector=True, **options)
    l1 = np.abs(res.vector - want).sum()
    assert l1 <= bound, (method, l1)
    if method != "power":
        assert l1 <= res.error_bound + 1e-12  # the bound the method reports holds
    assert [v for v, _ in res.top_k[:5]] == [int(ext[i]) for i in np.argsort(-want, kind="stable")[:5]]


@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_monte_carlo_walks_follow_the_weights(weighted, dangling):
    eng, G, plain, seed = weighted
    ext = eng.graph.ids.external
    want = np.array([_nx_ppr(G, seed, dangling)[int(v)] for v in ext])
    unweighted = np.array([_nx_ppr(plain, seed, dangling, weight=None)[int(v)] for v in ext])
    res = personalized_pagerank(eng.graph, seed, method="montecarlo", dangling=dangling, walks=1 << 19,
                                return_vector=True, rng_seed=3)
    err = np.abs(res.vector - want).sum()
    assert err < 0.02, err
    assert np.abs(unweighted - want).sum() > 10 * err  # the walks took the weights, not the degrees


@pytest.mark.gpu
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("where", ["engine", "view"])
def test_gpu_power_takes_the_weights_and_other_methods_refuse(weighted, dangling, where):
    eng, G, _plain, seed = weighted
    if where == "engine":  # the same records on the GPU engine
        s, d = eng.edges_external()
        gpu = Engine("gpu", "dfp", weighted=True, multi_edges="sum")
        gpu.load_edges(s, d, weight=eng.graph.edge_weights())
        graph = gpu.graph
        ext = gpu.graph.ids.external.get()
    else:
        graph = DeviceGraphView(eng.graph)
        ext = eng.graph.ids.external
    ref = _nx_ppr(G, seed, dangling)
    want = np.array([ref[int(v)] for v in ext])
    res = personalized_pagerank(graph, seed, method="power", dangling=dangling, return_vector=True)
    assert res.device == "gpu" and res.converged
    assert np.abs(res.vector - want).sum() <= 1e-8
    batch = personalized_pagerank_batch(graph, [seed, int(ext[1])], method="power", dangling=dangling,
                                        return_vector=True)
    assert np.abs(batch[0].vector - want).sum() <= 1e-8
    for method in ("push", "pull", "hybrid", "montecarlo"):
        with pytest.raises(ConfigError, match="method='power'"):
            personalized_pagerank(graph, seed, method=method, dangling=dangling)
