"""Personalized PageRank: every method on both backends against NetworkX."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from streamrank.backend import gpu_available, to_host
from streamrank.errors import InvalidArgumentError
from streamrank.store.cpu import CpuGraph
from streamrank.ppr import DeviceGraphView, personalized_pagerank, personalized_pagerank_batch, topk_precision

BACKENDS = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not gpu_available(), reason="no CUDA GPU with CuPy")])]
LOCAL = ["push", "pull", "hybrid"]


def _on(graph, backend):
    if backend == "cpu":
        return graph
    try:
        from streamrank.store.gpu import GpuGraph

        s, d = graph.edges_external()
        return GpuGraph.from_edges(s, d)
    except ImportError:
        return DeviceGraphView(graph)


def _random_graph(seed, n=120, m=420, isolated_parts=True):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    keep = s % 7 != 3  # vertices 3, 10, 17, ... lose their out-edges: dangling
    s, d = s[keep], d[keep]
    if isolated_parts:  # a separate component, with a dangling vertex in it
        s = np.concatenate([s, [1000, 1001, 1002]])
        d = np.concatenate([d, [1001, 1002, 1003]])
    return s * 10 + 5, d * 10 + 5  # external ids that differ from internal ones


def _reference(s, d, graph, pers: dict, dangling: str):
    G = nx.DiGraph()
    G.add_nodes_from(np.unique(np.concatenate([s, d])).tolist())
    G.add_edges_from(zip(s.tolist(), d.tolist()))
    dang = None if dangling == "personalization" else {v: 1.0 for v in G}
    ref = nx.pagerank(G, alpha=0.85, personalization=pers, dangling=dang, tol=1e-15, max_iter=100000)
    out = np.array([ref[int(e)] for e in graph.ids.external])
    out[out < 1e-13] = 0.0  # NetworkX leaves ~1e-16 round-off on unreachable vertices
    return out


def _seed_cases(s, d):
    out_deg = {}
    for a in s.tolist():
        out_deg[a] = out_deg.get(a, 0) + 1
    verts = np.unique(np.concatenate([s, d])).tolist()
    dangling = [v for v in verts if v not in out_deg]
    # a seed with exactly one out-neighbour, which is dangling
    adj = {}
    for a, b in zip(s.tolist(), d.tolist()):
        adj.setdefault(a, set()).add(b)
    one_dangling = [a for a, nb in adj.items() if len(nb) >= 1 and any(x in dangling for x in nb)]
    return {"plain": {int(s[0]): 1.0}, "dangling": {int(dangling[0]): 1.0},
            "dangling_neighbour": {int(one_dangling[0]): 1.0},
            "other_component": {1000 * 10 + 5: 1.0},
            "weighted": {int(s[1]): 2.0, int(d[2]): 1.0, int(dangling[0]): 1.0}}


@pytest.fixture(scope="module")
def graph_case():
    s, d = _random_graph(3)
    return s, d, CpuGraph.from_edges(s, d)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("case", ["plain", "dangling", "dangling_neighbour", "other_component", "weighted"])
def test_power_matches_networkx(graph_case, backend, dangling, case):
    s, d, g = graph_case
    pers = _seed_cases(s, d)[case]
    ref = _reference(s, d, g, pers, dangling)
    res = personalized_pagerank(_on(g, backend), pers, method="power", dangling=dangling,
                                return_vector=True, tol=1e-13)
    assert res.converged and res.device == backend
    assert np.abs(res.vector - ref).max() < 1e-11
    assert abs(res.vector.sum() - 1) < 1e-9
    top = [v for v, _ in res.top_k]
    assert topk_precision(g.ids.lookup(np.array(top)), ref, 20) == 1.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("method", LOCAL)
@pytest.mark.parametrize("case", ["plain", "dangling", "dangling_neighbour", "other_component", "weighted"])
def test_local_methods_within_stated_error(graph_case, backend, dangling, method, case):
    s, d, g = graph_case
    pers = _seed_cases(s, d)[case]
    ref = _reference(s, d, g, pers, dangling)
    res = personalized_pagerank(_on(g, backend), pers, method=method, dangling=dangling,
                                return_vector=True, eps=1e-8)
    assert res.converged
    err = np.abs(res.vector - ref).sum()
    assert err <= res.error_bound * (1 + 1e-6) + 1e-12
    assert res.error_bound < 1e-4


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_hybrid_equals_push_and_pull(graph_case, backend, dangling):
    s, d, g = graph_case
    gg = _on(g, backend)
    seed = int(s[0])
    vecs = {m: personalized_pagerank(gg, seed, method=m, dangling=dangling, return_vector=True, eps=1e-9).vector
            for m in LOCAL}
    assert np.abs(vecs["push"] - vecs["pull"]).max() < 1e-12
    assert np.abs(vecs["hybrid"] - vecs["push"]).max() < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
def test_hybrid_records_choices(graph_case, backend):
    s, d, g = graph_case
    res = personalized_pagerank(_on(g, backend), int(s[0]), method="hybrid", eps=1e-9)
    assert res.extra["choices"] and set(res.extra["choices"]) <= {"push", "pull"}
    c = res.extra["unit_costs"]
    assert c["lambda3"] == 1.0 and c["lambda1"] > 0 and c["lambda2"] > 0
    assert all("phi_rdw" in row for row in res.stats)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_atomics_modes_agree(graph_case, dangling):
    s, d, g = graph_case
    gg = _on(g, "gpu")
    a = personalized_pagerank(gg, int(s[0]), method="push", atomics="native", dangling=dangling,
                              return_vector=True, eps=1e-9)
    b = personalized_pagerank(gg, int(s[0]), method="push", atomics="exchange", dangling=dangling,
                              return_vector=True, eps=1e-9)
    assert abs(a.vector.sum() - b.vector.sum()) < 1e-9
    assert np.abs(a.vector - b.vector).sum() <= a.error_bound + b.error_bound + 1e-12
    cpu = personalized_pagerank(g, int(s[0]), method="push", dangling=dangling, return_vector=True, eps=1e-9)
    assert np.abs(a.vector - cpu.vector).sum() <= a.error_bound + cpu.error_bound + 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("case", ["plain", "dangling_neighbour", "weighted"])
def test_montecarlo_within_statistical_error(graph_case, backend, dangling, case):
    s, d, g = graph_case
    pers = _seed_cases(s, d)[case]
    ref = _reference(s, d, g, pers, dangling)
    walks = 400_000
    res = personalized_pagerank(_on(g, backend), pers, method="montecarlo", dangling=dangling,
                                return_vector=True, walks=walks, rng_seed=7)
    assert res.walks >= walks * 0.9 and res.steps > res.walks
    assert abs(res.vector.sum() - 1) < 1e-9
    # per-entry error within 6 standard errors of the complete-path estimator
    se = np.sqrt(np.maximum(ref, 1e-6) / (0.15 * res.walks)) * 2.5
    assert np.all(np.abs(res.vector - ref) <= 6 * se + 1e-4)
    top = np.array([v for v, _ in res.top_k])
    assert topk_precision(g.ids.lookup(top), ref, 5) >= 0.8


@pytest.mark.parametrize("backend", BACKENDS)
def test_dangling_seed_keeps_everything_in_personalization_mode(backend):
    g = CpuGraph.from_edges([1, 2], [2, 3])
    for m in ("power", "push", "pull", "hybrid", "montecarlo"):
        res = personalized_pagerank(_on(g, backend), 3, method=m, k=3, walks=10000)
        assert res.top_k[0][0] == 3 and abs(res.top_k[0][1] - 1.0) <= (res.error_bound or 0) + 1e-9


def test_invalid_arguments(graph_case):
    s, d, g = graph_case
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, 999999)
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, int(s[0]), method="nope")
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, int(s[0]), atomics="locks")
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, int(s[0]), alpha=1.0)
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, int(s[0]), k=0)
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, [], method="power")
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, {int(s[0]): -1.0})
    with pytest.raises(InvalidArgumentError):
        personalized_pagerank(g, int(s[0]), dangling="self-loop")


def test_batch_and_query_after_update():
    from streamrank.batch import EdgeBatch

    g = CpuGraph.from_edges([1, 2, 3], [2, 3, 1])
    res = personalized_pagerank_batch(g, [1, [2, 3], {1: 1.0, 3: 3.0}], method="push", k=3)
    assert len(res) == 3 and res[1].seeds == [2, 3]
    before = personalized_pagerank(g, 1, method="power", return_vector=True, dangling="uniform").vector
    g.apply(EdgeBatch.from_arrays(np.array([1, 4]), np.array([4, 1])))
    after = personalized_pagerank(g, 1, method="push", return_vector=True, dangling="uniform", eps=1e-10)
    assert after.vector.shape[0] == 4 and before.shape[0] == 3
    exact = personalized_pagerank(g, 1, method="power", return_vector=True, dangling="uniform").vector
    assert np.abs(after.vector - exact).sum() < 1e-8


def test_ppr_cli_on_a_checkpoint_directory(tmp_path, capsys):
    """`streamrank ppr CHECKPOINT_DIR` answers on the graph the daemon last checkpointed."""
    import json as _json

    import networkx as nx

    from streamrank.checkpoints.full import save_checkpoint
    from streamrank.cli import main
    from streamrank.engine import Engine

    rng = np.random.default_rng(12)
    src, dst = rng.integers(0, 60, 400), rng.integers(0, 60, 400)
    eng = Engine("cpu", "dfp")
    eng.load_edges(src, dst)
    save_checkpoint(tmp_path / "ck", eng.state(), seq=0, positions={})
    seed = int(src[0])
    out = tmp_path / "ppr.json"
    assert main(["ppr", str(tmp_path / "ck"), "--seed", str(seed), "--k", "5", "--device", "cpu",
                 "--json", str(out)]) == 0
    doc = _json.loads(out.read_text())
    assert doc["checkpoint"].endswith(".npz") and doc["seq"] == 0
    top = doc["results"][0]["top_k"]
    G = nx.DiGraph()
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    ref = nx.pagerank(G, alpha=0.85, personalization={seed: 1.0}, tol=1e-13, max_iter=1000)
    want = sorted(ref, key=ref.get, reverse=True)[:5]
    assert [v for v, _ in top] == want
    for v, score in top:
        assert abs(score - ref[v]) < 1e-9
    # truncated power from the CLI: not converged, with its L1 bound
    assert main(["ppr", str(tmp_path / "ck"), "--seed", str(seed), "--max-iter", "3", "--tol", "0",
                 "--device", "cpu", "--json", str(out)]) == 0
    res = _json.loads(out.read_text())["results"][0]
    assert res["iterations"] == 3 and not res["converged"]
    assert res["l1_bound"] == pytest.approx(2 * 0.85**3)
    capsys.readouterr()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_truncated_power_within_its_bound(graph_case, backend, dangling, dtype):
    s, d, g = graph_case
    pers = _seed_cases(s, d)["plain"]
    ref = _reference(s, d, g, pers, dangling)
    for t in (1, 2, 4, 7):
        res = personalized_pagerank(_on(g, backend), pers, method="power", dangling=dangling, max_iter=t,
                                    tol=0.0, dtype=dtype, return_vector=True)
        assert not res.converged and res.iterations == t
        bound = 2 * 0.85**t
        assert res.extra["l1_bound"] == pytest.approx(bound)
        assert np.abs(res.vector - ref).sum() <= bound + 1e-6
    # the bound is not loose by orders of magnitude: after 2 iterations it is still far off
    early = personalized_pagerank(_on(g, backend), pers, method="power", dangling=dangling, max_iter=2,
                                  tol=0.0, return_vector=True)
    assert np.abs(early.vector - ref).sum() > 0.1 * 2 * 0.85**2


def _rmat_pair(scale):
    from streamrank.store.gpu import GpuGraph
    from streamrank.bench.rmat import rmat_edges

    s, d = rmat_edges(scale, 16, seed=5)
    return CpuGraph.from_edges(s, d), GpuGraph.from_edges(s, d)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_gpu_power_phases_match_cpu_iterates_on_rmat(dangling):
    """R-MAT 14 has in-degrees in every bucket of the GPU sweep (block per vertex above 1024):
    each truncated GPU iterate (sparse phase, then dense sweeps over the relabeled snapshot)
    equals the CPU's iterate of the same count, and the converged vectors agree."""
    cpu, gpu = _rmat_pair(14)
    assert int(gpu.in_degree.max()) > 1024
    deg = np.asarray(cpu.out_degree)
    seeds = [int(cpu.ids.external[i]) for i in np.nonzero(deg > 0)[0][[0, 7, 99]]]
    seeds.append(int(cpu.ids.external[int(np.argmax(deg))]))  # a hub: no sparse phase
    for seed in seeds:
        for t in (1, 2, 3, 5, 9):
            a = personalized_pagerank(cpu, seed, method="power", max_iter=t, tol=0.0, dangling=dangling,
                                      return_vector=True)
            b = personalized_pagerank(gpu, seed, method="power", max_iter=t, tol=0.0, dangling=dangling,
                                      return_vector=True)
            order = gpu.ids.lookup(cpu.ids.external)
            assert np.abs(a.vector - b.vector[to_host(order)]).max() < 1e-13
        a = personalized_pagerank(cpu, seed, method="power", dangling=dangling, return_vector=True, tol=1e-12)
        b = personalized_pagerank(gpu, seed, method="power", dangling=dangling, return_vector=True, tol=1e-12)
        order = gpu.ids.lookup(cpu.ids.external)
        order = to_host(order)
        assert a.converged and b.converged
        assert np.abs(a.vector - b.vector[order]).max() < 1e-11
        f64 = personalized_pagerank(gpu, seed, method="power", dangling=dangling, max_iter=9, tol=0.0,
                                    return_vector=True)
        f32 = personalized_pagerank(gpu, seed, method="power", dangling=dangling, max_iter=9, tol=0.0,
                                    dtype="float32", return_vector=True)
        assert np.abs(f32.vector - f64.vector).max() < 1e-6


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
@pytest.mark.parametrize("split", [None, 96])
@pytest.mark.parametrize("coop", [False, True])
def test_gpu_power_reads_changes_a_chunk_at_a_time(split, coop):
    """The dense phase queues several iterations and reads their changes once; the sweeps
    after convergence do nothing. A converged run still stops at the CPU's iteration with the
    CPU's vector, and a capped run at its cap, for caps on both sides of a chunk boundary.
    With ``split=96`` every in-list above 96 is summed in slices by several blocks. With
    ``coop=True`` the whole dense phase is one cooperative launch that iterates on the device:
    the same iterations, the same stopping point."""
    import cupy as cp

    from streamrank.ppr._graph import graph_arrays
    from streamrank.ppr.gpu_power import CHUNK, power_gpu, snapshot_of
    from streamrank.ppr.power import power_cpu

    cpu, gpu = _rmat_pair(12)
    ga_c, ga_g = graph_arrays(cpu), graph_arrays(gpu)
    snap = snapshot_of(ga_g) if split is None else snapshot_of(ga_g, bounds=(2, 4, 8, 16, 32, 64), split=split)
    if split is not None:
        assert snap.plan.counts[-1] > 10 and int(snap.plan.split_slot.shape[0]) > snap.plan.counts[-1]
    order = to_host(gpu.ids.lookup(cpu.ids.external))
    hub = int(np.argmax(np.asarray(cpu.out_degree)))
    pd_c = np.zeros(cpu.num_vertices)
    pd_c[hub] = 1.0
    pd_g = np.zeros(gpu.num_vertices)
    pd_g[order[hub]] = 1.0
    kw = dict(alpha=0.85, dangling="personalization")
    for tol in (1e-6, 1e-9, 1e-12):
        a = power_cpu(ga_c, pd_c, tol=tol, max_iter=1000, **kw)
        b = power_gpu(ga_g, cp.asarray(pd_g), tol=tol, max_iter=1000, snap=snap, coop=coop, **kw)
        assert a[2] and b.converged and a[1] == b.iterations and a[3] == pytest.approx(b.change, rel=1e-9)
        assert np.abs(a[0] - to_host(b.store_vector())[order]).max() < 1e-13
    for cap in (CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3):
        b = power_gpu(ga_g, cp.asarray(pd_g), tol=1e-14, max_iter=cap, snap=snap, coop=coop, **kw)
        a = power_cpu(ga_c, pd_c, tol=0.0, max_iter=cap, **kw)
        assert b.iterations == cap and not b.converged
        assert np.abs(a[0] - to_host(b.store_vector())[order]).max() < 1e-13
    f32 = power_gpu(ga_g, cp.asarray(pd_g), tol=0.0, max_iter=7, snap=snap, coop=coop, dtype="float32", **kw)
    a = power_cpu(ga_c, pd_c, tol=0.0, max_iter=7, dtype="float32", **kw)
    assert f32.iterations == 7 and np.abs(a[0] - to_host(f32.store_vector())[order]).max() < 1e-6


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
@pytest.mark.parametrize("dangling", ["personalization", "uniform"])
def test_gpu_batch_power_equals_single_queries(dangling):
    """The batched GPU power iteration (every query a column, long in-lists cut into slices)
    gives each query the single query's vector and top-k: truncated, converged, float32, and
    over more queries than one group holds (so the groups are 128 + 4 wide)."""
    from streamrank.ppr import _snapshot
    from streamrank.ppr._graph import graph_arrays
    from streamrank.ppr.gpu_batch import batch_items, batch_top_k, power_batch_gpu

    cpu, gpu = _rmat_pair(14)
    deg = np.asarray(cpu.out_degree)
    ext = cpu.ids.external
    rng = np.random.default_rng(2)
    dangling_ids = [int(ext[i]) for i in np.nonzero(deg == 0)[0][:3]]
    singles = [int(ext[i]) for i in rng.choice(cpu.num_vertices, 125, replace=False)]
    sets = singles + dangling_ids + [int(ext[int(np.argmax(deg))]),
                                     {singles[0]: 2.0, singles[1]: 1.0, dangling_ids[0]: 1.0},
                                     [singles[2], singles[3]], {singles[4]: 1.0, singles[5]: 0.0}]
    assert len(sets) == 132
    ga = graph_arrays(gpu)
    items = batch_items(_snapshot(gpu, ga))
    assert items.slots > 0  # some in-lists are longer than a slice
    for t, tol, dtype, close in [(3, 0.0, "float64", 1e-13), (7, 0.0, "float64", 1e-13),
                                 (1000, 1e-12, "float64", 1e-11), (6, 0.0, "float32", 1e-6)]:
        kw = dict(method="power", dangling=dangling, max_iter=t, tol=tol, dtype=dtype, k=10, return_vector=True)
        batch = personalized_pagerank_batch(gpu, sets, **kw)
        assert [r.extra["batch_size"] for r in batch] == [128] * 128 + [4] * 4
        for r, s in zip(batch, sets):
            one = personalized_pagerank(gpu, s, **kw)
            assert np.abs(r.vector - one.vector).max() < close
            assert r.iterations >= one.iterations and r.converged == one.converged
            if dtype == "float64":  # the same top-k (ties at the k-th place may go either way)
                ids = to_host(gpu.ids.lookup(np.array([v for v, _ in r.top_k])))
                assert topk_precision(ids, one.vector, 10) == 1.0
            assert r.seeds == one.seeds
    # the candidate buffer overflowing falls back to one column at a time, same answer
    snap = _snapshot(gpu, ga)
    seeds = [(np.array([3, 9]), np.array([0.5, 0.5])), (np.array([11]), np.array([1.0]))]
    run = power_batch_gpu(ga, snap, items, seeds, alpha=0.85, dangling=dangling, tol=0.0, max_iter=5)
    assert not run.converged and run.iterations == 5 and run.width == 32
    a, b = batch_top_k(run, snap, 20, 2), batch_top_k(run, snap, 20, 2, cap=1)
    for x, y in zip(a, b):
        assert np.array_equal(x.ids, y.ids) and np.allclose(x.values, y.values)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU with CuPy")
def test_gpu_power_matches_cugraph_personalized_pagerank():
    """Exact power against pylibcugraph's personalized PageRank (where it is installed), in the
    dangling mode cuGraph uses (rank of dangling vertices back to the personalization)."""
    from streamrank.oracle.cugraph_static import (build_cugraph_graph, cugraph_available,
                                           personalized_pagerank_on)

    if not cugraph_available():
        pytest.skip("pylibcugraph is not installed")
    cpu, gpu = _rmat_pair(12)
    s, d = gpu.edges()
    handle, cg = build_cugraph_graph(s, d, gpu.num_vertices, weight_dtype="float64")
    deg = to_host(gpu.out_degree)
    ext = to_host(gpu.ids.external)
    cases = [{int(ext[int(np.argmax(deg))]): 1.0}, {int(ext[int(np.nonzero(deg == 0)[0][0])]): 1.0},
             {int(ext[5]): 2.0, int(ext[17]): 1.0}]
    for case in cases:
        ours = personalized_pagerank(gpu, case, method="power", tol=1e-14, return_vector=True)
        ids = to_host(gpu.ids.lookup(np.array(list(case))))
        w = np.array(list(case.values()))
        ref = to_host(personalized_pagerank_on(handle, cg, ids, w / w.sum(), tol=1e-13))
        assert ours.converged and np.abs(ours.vector - ref).sum() < 1e-9


@pytest.mark.parametrize("backend", BACKENDS)
def test_top_k_selection_matches_a_full_sort(backend):
    from streamrank.ppr.semantics import top_k

    xp = np
    if backend == "gpu":
        import cupy as xp
    rng = np.random.default_rng(4)
    for n, k, kind in [(300_000, 20, "skewed"), (300_000, 50, "ties"), (100_000, 20, "sparse"),
                       (50_000, 20, "zeros"), (7, 20, "skewed"), (200_000, 20, "flat")]:
        p = rng.random(n) ** 40
        if kind == "flat":  # every entry a candidate: more than the GPU's packed buffer holds
            p[:] = 0.5
        elif kind == "ties":
            p = np.round(p, 1)
        elif kind == "sparse":
            p[rng.random(n) < 0.9999] = 0
        elif kind == "zeros":
            p[:] = 0
        best = top_k(xp, xp.asarray(p), k)
        ref = np.lexsort((np.arange(n), -p))[:k]
        assert np.array_equal(best.ids, ref) and np.array_equal(best.values, p[ref]), kind
        assert best.external is None
        # p in another id order: ids maps positions to ids, ties still by id; external ids ride along
        perm = rng.permutation(n)
        q = np.empty(n)
        q[np.argsort(perm)] = p  # q[i] = p[perm[i]]
        ext = np.arange(n) * 7 + 3
        other = top_k(xp, xp.asarray(q), k, ids=xp.asarray(perm), external=xp.asarray(ext))
        assert np.array_equal(other.ids, ref) and np.array_equal(other.values, p[ref]), kind
        assert np.array_equal(other.external, ext[ref]), kind
        if backend == "gpu":  # float32 scores, and a host id map with a device vector
            f32 = top_k(xp, xp.asarray(p.astype(np.float32)), k, external=ext)
            r32 = np.lexsort((np.arange(n), -p.astype(np.float32)))[:k]
            assert np.array_equal(f32.ids, r32) and np.array_equal(f32.external, ext[r32]), kind


def test_bench_ppr_cli_reports_every_variant(tmp_path, capsys):
    import json as _json

    from streamrank.cli import main

    out, png = tmp_path / "b.json", tmp_path / "b.png"
    assert main(["bench-ppr", "--graph", "rmat:8", "--seeds", "3", "--device", "cpu", "--walks", "4096",
                 "--power-iters", "2,40", "--power-dtypes", "float64,float32", "--json", str(out),
                 "--plot", str(png)]) == 0
    doc = _json.loads(out.read_text())
    rows = {r["method"]: r for r in doc["rows"]}
    assert list(rows) == ["power", "power/it=2", "power/it=40", "power/it=2/f32", "power/it=40/f32",
                          "push/native", "push/exchange", "pull", "hybrid/native", "hybrid/exchange",
                          "montecarlo/4096"]
    assert rows["power"]["mean_prec"] == 1.0
    assert rows["power/it=40"]["mean_prec"] == 1.0  # 2 * 0.85**40 < 3e-3: the top-20 is settled
    assert rows["power/it=2"]["mean_iters"] == 2 and rows["power/it=2"]["mean_prec"] < 1.0
    assert 0.0 <= rows["hybrid/native"]["push_share"] <= 1.0
    assert doc["static_baselines"]["static"]["ms"] > 0 and all(r["x_static"] > 0 for r in doc["rows"])
    assert png.stat().st_size > 0
    assert "x static" in capsys.readouterr().out
