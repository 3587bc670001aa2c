"""The weighted GPU store and rank kernels against the CPU ones: the same stream leaves the same
edges, weights, out-weights and changes batch after batch (set and sum, hubs, compaction), and
the ranks of every algorithm agree with SciPy's weighted oracle (and cuGraph's, where installed)."""

from __future__ import annotations

import numpy as np
import pytest

from streamrank import ALGORITHMS, EdgeBatch, Engine, RankConfig
from streamrank.backend import to_host
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

pytestmark = pytest.mark.gpu


def _stream(seed: int, batches: int, n: int, k: int):
    """Batches of weighted insertions (a hub and repeated pairs) and deletions with and without weights."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(batches):
        s, d = rng.integers(0, n, k), rng.integers(0, n, k)
        s[: k // 8] = 0  # a hub's list grows, moves and loses entries
        ins = rng.random(k) < 0.65
        w = np.round(rng.uniform(0.1, 4.0, k), 2)
        w[~ins & (rng.random(k) < 0.5)] = np.nan
        if out:  # repeats of the previous batch's pairs: reweights and deletions of present edges
            ps, pd, _, _ = out[-1]
            s[-k // 4:], d[-k // 4:] = ps[: k // 4], pd[: k // 4]
        out.append((s, d, ins, w))
    return out


def _store_view(graph, ids):
    """``{(src, dst): weight}`` in external ids, and ``{vertex: out-weight}``."""
    s, d = (to_host(a) for a in graph.edges())
    w = to_host(graph.edge_weights())
    ext = to_host(graph.ids.external)
    edges = dict(zip(zip(ext[s].tolist(), ext[d].tolist()), w.tolist()))
    outw = dict(zip(ext.tolist(), to_host(graph.out_weight).tolist()))
    return edges, outw


@pytest.mark.parametrize("planning", ["fused", "host", "device"])
@pytest.mark.parametrize("mode", ["set", "sum"])
def test_the_gpu_store_follows_the_cpu_store(mode, planning):
    gpu = Engine("gpu", "dfp", weighted=True, multi_edges=mode)
    gpu.graph.fused = planning == "fused"
    gpu.graph.host_planning = planning == "host"
    cpu = Engine("cpu", "dfp", weighted=True, multi_edges=mode)
    for b, (s, d, ins, w) in enumerate(_stream(5, 25, 400, 300)):
        batch = EdgeBatch.from_arrays(s, d, ins, weight=w)
        a, c = gpu.graph.apply(batch), cpu.graph.apply(batch)
        assert (a.num_insertions, a.num_deletions, a.num_reweights) == \
            (c.num_insertions, c.num_deletions, c.num_reweights), b
        assert a.dropped == c.dropped and a.num_vertices_after == c.num_vertices_after
        np.testing.assert_array_equal(to_host(gpu.graph.ids.external), cpu.graph.ids.external)
        if b == 12:
            gpu.graph.compact()  # lists and weights move together
        eg, og = _store_view(gpu.graph, None)
        ec, oc = _store_view(cpu.graph, None)
        assert eg.keys() == ec.keys(), b
        assert all(abs(eg[e] - ec[e]) <= 1e-12 * ec[e] for e in ec), b
        assert all(abs(og[v] - oc[v]) <= 1e-9 * max(oc[v], 1.0) for v in oc), b
        assert gpu.graph.num_edges == cpu.graph.num_edges
    if planning == "fused":  # the first batch found no room reserved yet; the others took the fused path
        assert gpu.graph.fast_batches >= 20, (gpu.graph.fast_batches, gpu.graph.fast_fallbacks)
    # the in-direction holds the same weights as the out-direction
    g = gpu.graph
    n = g.num_vertices
    ins = {}
    for arrs in [(to_host(g.in_offset), to_host(g.in_degree), to_host(g.in_indices), to_host(g.in_weights))]:
        off, deg, idx, wt = arrs
        for v in range(n):
            for j in range(off[v], off[v] + deg[v]):
                ins[(int(idx[j]), v)] = float(wt[j])
    s, d = (to_host(a) for a in g.edges())
    assert dict(zip(zip(s.tolist(), d.tolist()), to_host(g.edge_weights()).tolist())) == ins


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_algorithm_on_a_larger_graph(dangling, dtype):
    rng = np.random.default_rng(8)
    m, n = 60_000, 5_000
    s = np.concatenate([rng.integers(0, n, m), np.zeros(3000, np.int64)])  # vertex 0: out-degree > 3000
    d = np.concatenate([rng.integers(0, n, m), rng.integers(0, n, 3000)])
    d[:2000] = 7  # vertex 7: in-degree > 2000
    # explicit self-loops: at the two hubs (solved by a block's gather) and at small vertices
    s = np.concatenate([s, [0, 7, 11, 12]])
    d = np.concatenate([d, [0, 7, 11, 12]])
    w = rng.uniform(0.2, 3.0, s.shape[0])
    config = RankConfig(dangling=dangling, dtype=dtype)
    stream = _stream(9, 4, n + 50, 400)
    bound = 1e-6 if dtype == "float64" else 1e-4
    for algorithm in ALGORITHMS:
        eng = Engine("gpu", algorithm, config=config, weighted=True, multi_edges="sum")
        eng.load_edges(s, d, weight=w)
        for bs, bd, bi, bw in stream:
            step = eng.apply(EdgeBatch.from_arrays(bs, bd, bi, weight=bw))
            assert step.rank.converged or dtype == "float32", algorithm
        ref = oracle_pagerank(eng.graph, dangling=dangling)
        assert l1_error(eng.ranks()[1], ref) <= bound, (algorithm, l1_error(eng.ranks()[1], ref))


def test_cugraph_weighted_oracle_agrees():
    from streamrank.oracle.cugraph_static import cugraph_available, cugraph_pagerank

    if not cugraph_available():
        pytest.skip("pylibcugraph is not installed")
    rng = np.random.default_rng(4)
    eng = Engine("gpu", "dfp", weighted=True, multi_edges="sum")
    eng.load_edges(rng.integers(0, 3000, 30_000), rng.integers(0, 3000, 30_000), weight=rng.uniform(0.5, 2.0, 30_000))
    for bs, bd, bi, bw in _stream(2, 3, 3100, 500):
        eng.apply(EdgeBatch.from_arrays(bs, bd, bi, weight=bw))
    for dangling in ("uniform", "self-loop"):
        ref = cugraph_pagerank(eng.graph, dangling=dangling)
        assert l1_error(oracle_pagerank(eng.graph, dangling=dangling), ref) <= 1e-8
    assert l1_error(eng.ranks()[1], cugraph_pagerank(eng.graph)) <= 1e-6


@pytest.mark.parametrize("mode", ["set", "sum"])
def test_weighted_gpu_engine_takes_the_one_wait_batch(mode):
    """Small host batches: the fused weighted update and the rank loop queued behind it, one wait;
    reweights (which the loop reads from the update's counters) move the ranks as they must."""
    eng = Engine("gpu", "dfp", weighted=True, multi_edges=mode)  # (auto may pick warm sweeps on 4 vertices)
    eng.load_edges([1, 2, 3, 4, 4], [2, 3, 1, 1, 2], weight=[1.0, 2.0, 3.0, 1.0, 1.0])
    eng.apply(EdgeBatch.from_arrays([3], [2], weight=[5.0]))  # the room is reserved after this batch
    before = eng._stepper.steps
    for w in (4.0, 0.5, 9.0):  # a reweight alone: the only change of the batch
        step = eng.apply(EdgeBatch.from_arrays([4], [1], weight=[w]))
        assert step.changes.num_reweights == 1 and step.changes.num_insertions == 0
        assert step.rank.algorithm == "dfp" and step.rank.device == "gpu"
        assert l1_error(eng.ranks()[1], oracle_pagerank(eng.graph)) <= 1e-6  # (an ignored reweight: ~1e-2)
    assert eng._stepper.steps == before + 3
