"""Personalized PageRank of weighted graphs: every method on both backends (the CPU store, the
engine's weighted GPU store and a device view of a host store) against NetworkX's weighted PPR,
and on the bundled CollegeMsg replayed in sum mode (a message adds weight 1 to its pair) every
GPU method against the float64 oracle."""

from __future__ import annotations

import gzip
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from streamrank import EdgeBatch, Engine
from streamrank.backend import gpu_available, to_host
from streamrank.ppr import DeviceGraphView, personalized_pagerank, personalized_pagerank_batch, topk_precision

GPU = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")]
#: Where a query runs: the CPU store, the GPU engine holding the same records, a device view.
WHERE = ["cpu", pytest.param("gpu-engine", marks=GPU), pytest.param("gpu-view", marks=GPU)]
EXACT = [
    ("power", {}, 1e-8),
    ("push", {"eps": 1e-10}, 1e-6),
    ("pull", {"eps": 1e-10}, 1e-6),
    ("hybrid", {"eps": 1e-10}, 1e-6),
]
DATA = Path(__file__).resolve().parents[1] / "streamrank" / "data" / "CollegeMsg.txt.gz"


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


def _graph_on(eng, where):
    """``(graph, external ids in its internal order)`` of the CPU engine's records, ``where``."""
    if where == "cpu":
        return eng.graph, eng.graph.ids.external
    if where == "gpu-view":
        return DeviceGraphView(eng.graph), eng.graph.ids.external
    s, d = eng.edges_external()
    gpu = Engine("gpu", "dfp", weighted=True, multi_edges="sum")
    gpu.load_edges(s, d, weight=eng.graph.edge_weights())
    return gpu.graph, to_host(gpu.graph.ids.external)


def _nx_ppr(G, seed, dangling, weight="weight"):
    kw = {} if dangling == "personalization" else {"dangling": {v: 1.0 for v in G}}
    return nx.pagerank(G, alpha=0.85, personalization={seed: 1.0}, weight=weight, tol=1e-14, max_iter=10_000, **kw)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("method, options, bound", EXACT)
def test_every_exact_method_matches_networkx(weighted, where, dangling, method, options, bound):
    eng, G, _plain, seed = weighted
    graph, ext = _graph_on(eng, where)
    ref = _nx_ppr(G, seed, dangling)
    want = np.array([ref[int(v)] for v in ext])
    res = personalized_pagerank(graph, seed, method=method, dangling=dangling, return_vector=True, **options)
    assert res.device == ("cpu" if where == "cpu" else "gpu")
    l1 = np.abs(res.vector - want).sum()
    assert l1 <= bound, (method, l1)
    if method != "power":
        assert l1 <= res.error_bound + 1e-12  # the bound the method reports holds
    assert [v for v, _ in res.top_k[:5]] == [int(ext[i]) for i in np.argsort(-want, kind="stable")[:5]]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_monte_carlo_walks_follow_the_weights(weighted, where, dangling):
    eng, G, plain, seed = weighted
    graph, ext = _graph_on(eng, where)
    want = np.array([_nx_ppr(G, seed, dangling)[int(v)] for v in ext])
    unweighted = np.array([_nx_ppr(plain, seed, dangling, weight=None)[int(v)] for v in ext])
    res = personalized_pagerank(graph, seed, method="montecarlo", dangling=dangling, walks=1 << 19,
                                return_vector=True, rng_seed=3)
    err = np.abs(res.vector - want).sum()
    assert err < 0.02, err
    assert np.abs(unweighted - want).sum() > 10 * err  # the walks took the weights, not the degrees


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("where", ["gpu-engine", "gpu-view"])
def test_gpu_batch_of_a_weighted_graph_takes_the_weights(weighted, dangling, where):
    eng, G, _plain, seed = weighted
    graph, ext = _graph_on(eng, where)
    want = np.array([_nx_ppr(G, seed, dangling)[int(v)] for v in ext])
    batch = personalized_pagerank_batch(graph, [seed, int(ext[1])], method="power", dangling=dangling,
                                        return_vector=True)
    assert batch[0].device == "gpu" and batch[0].converged
    assert np.abs(batch[0].vector - want).sum() <= 1e-8
    push = personalized_pagerank_batch(graph, [seed], method="push", dangling=dangling, eps=1e-10,
                                       return_vector=True)  # the other methods' batches too
    assert push[0].device == "gpu" and np.abs(push[0].vector - want).sum() <= 1e-6


# ------------------------------------------------------------------------- CollegeMsg, sum mode
def _college_batches(parts: int = 5):
    """CollegeMsg's messages in time order, cut into ``parts`` consecutive batches of insertions
    (weight 1 each: under ``sum`` a pair's weight is its message count)."""
    with gzip.open(DATA, "rt") as fh:
        rows = np.loadtxt(fh, dtype=np.int64, usecols=(0, 1))
    return np.array_split(rows, parts)


def _replay(device: str):
    eng = Engine(device, "dfp", weighted=True, multi_edges="sum")
    first, *rest = _college_batches()
    eng.load_edges(first[:, 0], first[:, 1], weight=np.ones(len(first)))
    for b in rest:  # the later batches add edges and raise the weights of pairs already there
        eng.apply(EdgeBatch.from_arrays(b[:, 0], b[:, 1], weight=np.ones(len(b))))
    return eng


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=GPU)])
def college(request):
    """An engine after the sum-mode replay (on the CPU, on the GPU), and float64 references in
    its internal order: NetworkX's weighted and unweighted PPR of its records for two seed sets."""
    eng = _replay(request.param)
    graph = eng.graph
    ext = to_host(graph.ids.external)
    si, di = (to_host(a) for a in graph.edges())
    s, d, w = ext[si], ext[di], to_host(graph.edge_weights())
    G, plain = nx.DiGraph(), nx.DiGraph()
    G.add_nodes_from(ext.tolist())
    plain.add_nodes_from(ext.tolist())
    G.add_weighted_edges_from(zip(s.tolist(), d.tolist(), w.tolist()))
    plain.add_edges_from(zip(s.tolist(), d.tolist()))
    assert w.max() > 50 and G.number_of_edges() < 0.5 * 59835  # repeated pairs: weights far from 1
    hub = int(ext[np.argmax(to_host(graph.out_degree))])
    seeds = {"one": {int(s[0]): 1.0}, "two": {hub: 0.7, int(d[-1]): 0.3}}
    refs = {}
    for name, pers in seeds.items():
        for dangling in ("personalization", "uniform"):
            kw = {} if dangling == "personalization" else {"dangling": {v: 1.0 for v in G}}
            for g, key in ((G, "weight"), (plain, None)):
                ref = nx.pagerank(g, alpha=0.85, personalization=pers, weight=key, tol=1e-15,
                                  max_iter=100_000, **kw)
                refs[name, dangling, key] = np.array([ref[int(v)] for v in ext])
    return request.param, graph, ext, seeds, refs


@pytest.mark.parametrize("seeds", ["one", "two"])
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("method", ["power", "push", "pull", "hybrid"])
def test_exact_methods_on_collegemsg(college, seeds, dangling, method):
    device, graph, ext, seed_sets, refs = college
    want = refs[seeds, dangling, "weight"]
    opts = {"tol": 1e-13} if method == "power" else {"eps": 1e-10}
    res = personalized_pagerank(graph, seed_sets[seeds], method=method, dangling=dangling, return_vector=True,
                                **opts)
    assert res.device == device and res.converged
    l1 = np.abs(res.vector - want).sum()
    if method == "power":
        assert l1 <= 1e-9, l1
    else:  # the residual bound the method reports (it holds with equality up to the reference's error)
        assert l1 <= res.error_bound + 1e-10, (l1, res.error_bound)
        assert res.error_bound < 1e-5
    top = [v for v, _ in res.top_k[:10]]
    assert top == [int(ext[i]) for i in np.argsort(-want, kind="stable")[:10]]
    assert np.abs(refs[seeds, dangling, None] - want).sum() > 1e3 * max(l1, 1e-9)  # weights matter here


@pytest.mark.parametrize("seeds", ["one", "two"])
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_monte_carlo_on_collegemsg_within_statistical_error(college, seeds, dangling):
    device, graph, _ext, seed_sets, refs = college
    want = refs[seeds, dangling, "weight"]
    walks = 400_000
    res = personalized_pagerank(graph, seed_sets[seeds], method="montecarlo", dangling=dangling,
                                return_vector=True, walks=walks, rng_seed=11)
    assert res.device == device and res.walks >= walks * 0.9 and res.steps > res.walks
    assert abs(res.vector.sum() - 1) < 1e-9
    # per-entry error within 6 standard errors of the complete-path estimator
    se = np.sqrt(np.maximum(want, 1e-6) / (0.15 * res.walks)) * 2.5
    assert np.all(np.abs(res.vector - want) <= 6 * se + 1e-4)
    ids = graph.ids.lookup(np.array([v for v, _ in res.top_k]))
    assert topk_precision(to_host(ids), want, 10) >= 0.8
    err = np.abs(res.vector - want).sum()
    assert np.abs(refs[seeds, dangling, None] - want).sum() > 3 * err  # the walks took the weights
