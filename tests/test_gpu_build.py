"""The bounded build of the GPU store (streamrank/store/gpu_build.py): its numbering and layout
equal the general path's, on the host (its kernels' NumPy equivalents) and on the device."""

import numpy as np
import pytest

from streamrank.ids.plan import plan_new_ids
from streamrank.store import gpu_build as gb


def edges(seed, n_ids, m):
    """Unsorted edges with duplicates and self-loops, ids below ``n_ids``."""
    rng = np.random.default_rng(seed)
    s = (rng.pareto(1.2, m) * 7).astype(np.int64) % n_ids
    d = rng.integers(0, n_ids, m)
    return s, d


def reference(s, d):
    """The general path: sorted distinct pairs, plan_new_ids over the interleaved endpoints."""
    keys = np.unique((s << 32) | d)
    us, vs = keys >> 32, keys & 0xFFFFFFFF
    both = np.empty(2 * keys.shape[0], dtype=np.int64)
    both[0::2], both[1::2] = us, vs
    plan = plan_new_ids(np, both, np.full(both.shape[0], -1, dtype=np.int64), 0)
    return plan, plan.internal[0::2], plan.internal[1::2]


def bounded(xp, s, d):
    hi = int(max(s.max(), d.max()))
    keys = gb.packed_keys(xp, xp.asarray(s), xp.asarray(d))
    if not gb.sorted_distinct(xp, keys):
        keys = gb.distinct_sorted(xp, keys)
    plan, to_int = gb.dense_plan(xp, keys, hi)
    gb.to_internal_keys(xp, keys, to_int)
    n = plan.count
    out, inn = gb.build_both(xp, n, n + max(16, n // 4), keys)
    return plan, out, inn


def check_direction(direction, n, u, t):
    """Degrees, capacities (deg + 2 + deg/8), offsets (their exclusive sum) and each list's set."""
    deg = np.bincount(u, minlength=n)
    cap = deg + 2 + (deg >> 3)
    off = np.concatenate([[0], np.cumsum(cap)[:-1]])
    get = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)  # noqa: E731
    assert np.array_equal(get(direction.deg[:n]), deg)
    assert np.array_equal(get(direction.cap[:n]), cap)
    assert np.array_equal(get(direction.off[:n]), off)
    assert direction.end == int(cap.sum())
    assert get(direction.idx).shape[0] == direction.end + max(1 << 16, direction.end // 4)
    idx = get(direction.idx)
    order = np.lexsort((t, u))
    for v in np.unique(u)[:200]:
        assert np.array_equal(np.sort(idx[off[v]: off[v] + deg[v]]), t[order][u[order] == v])


@pytest.mark.parametrize("seed,n_ids,m", [(1, 300, 2000), (2, 9000, 40000), (3, 50, 30)])
def test_bounded_build_equals_the_general_path_on_the_host(seed, n_ids, m):
    s, d = edges(seed, n_ids, m)
    ref, si, di = reference(s, d)
    plan, out, inn = bounded(np, s, d)
    assert np.array_equal(plan.fresh, ref.fresh)  # same numbering (degree order past 4,096 ids)
    n = plan.count
    check_direction(out, n, si, di)
    check_direction(inn, n, di, si)


def test_sorted_distinct_input_skips_the_dedup():
    keys = np.array([1, 5, 9], dtype=np.int64)
    assert gb.sorted_distinct(np, keys)
    assert not gb.sorted_distinct(np, np.array([1, 1, 2], dtype=np.int64))
    assert not gb.sorted_distinct(np, np.array([2, 1], dtype=np.int64))
    assert gb.dense_ids(4 * 100 + (1 << 20) - 1, 100) and not gb.dense_ids(2**31, 10**9)
    assert gb.load_work_bytes(99, 10, dedup=True) - gb.load_work_bytes(99, 10, dedup=False) == 90


@pytest.mark.gpu
@pytest.mark.parametrize("seed,n_ids,m", [(1, 300, 2000), (2, 9000, 40000)])
def test_bounded_build_on_the_device_equals_the_general_path(cp, seed, n_ids, m):
    from streamrank.store.gpu import GpuGraph

    s, d = edges(seed, n_ids, m)
    ref, si, di = reference(s, d)
    plan, out, inn = bounded(cp, s, d)
    assert np.array_equal(plan.fresh.get(), ref.fresh)
    check_direction(out, plan.count, si, di)
    check_direction(inn, plan.count, di, si)
    # the store: bounded and general builds hold the same ids and edges
    a = GpuGraph.from_edges(s, d)
    b = GpuGraph()
    b._from_edges(cp.asarray(s), cp.asarray(d), dense=False)
    assert np.array_equal(a.ids.external.get(), b.ids.external.get())
    for x, y in zip(a.edges(), b.edges()):
        assert np.array_equal(x.get(), y.get())
    assert np.array_equal(a.in_degree.get(), b.in_degree.get())


def test_max_id_of_packed_keys_on_the_host():
    keys = np.array([(3 << 32) | 70, (9 << 32) | 2], dtype=np.int64)
    assert gb.max_id(np, keys) == 70 and gb.max_id(np, keys[:0]) == -1
    assert gb.max_id(np, np.array([-5], dtype=np.int64)) < 0


def sparse_ids(seed=7, k=200, m=20000):
    """``k`` vertices with ids spread below 2**20 (dense enough for the bounded build)."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(1 << 20, k, replace=False).astype(np.int64)
    return ids[rng.integers(0, k, m)], ids[rng.integers(0, k, m)]


@pytest.mark.gpu
def test_the_load_checks_the_store_it_will_really_hold(cp):
    """The build's check counts the vertices and slots it lays out: a limit of the built store's
    bytes (plus the empty store's, which it replaces) admits it, one byte less refuses it; the
    former estimate (every id of the range, at most 2 |E| vertices) would have refused it."""
    from streamrank.errors import GraphCapacityError
    from streamrank.store.gpu import FastUpdate, GpuGraph

    s, d = sparse_ids()
    off = FastUpdate(enabled=False)  # no room reserved after the build: nbytes is the build's
    g = GpuGraph.from_edges(s, d, fast_update=off)
    empty = GpuGraph(fast_update=off).nbytes
    assert gb.max_id(cp, gb.packed_keys(cp, cp.asarray(s), cp.asarray(d))) == int(max(s.max(), d.max()))
    GpuGraph.from_edges(s, d, fast_update=off, max_bytes=g.nbytes + empty)
    with pytest.raises(GraphCapacityError):
        GpuGraph.from_edges(s, d, fast_update=off, max_bytes=g.nbytes - 1)
    e = int(g.num_edges)
    n_most = min(int(max(s.max(), d.max())) + 1, 2 * s.shape[0])
    assert gb.store_bytes(n_most, e) > g.nbytes + empty


@pytest.mark.gpu
@pytest.mark.parametrize("string_ids", [False, True])
def test_engine_load_takes_the_bounded_build_and_ranks_as_the_cpu(cp, string_ids):
    from streamrank import Engine, RankConfig

    s, d = edges(5, 3000, 30000)
    if string_ids:
        s, d = np.array([f"v{v}" for v in s], dtype=object), np.array([f"v{v}" for v in d], dtype=object)
    cfg = RankConfig(tol=1e-12)
    gpu, cpu = Engine("gpu", "static", config=cfg), Engine("cpu", "static", config=cfg)
    def not_as_a_batch(*args, **kwargs):
        raise AssertionError("the first load of dense ids goes through the bounded build")

    gpu.graph.apply = not_as_a_batch
    gpu.load_edges(s, d)
    del gpu.graph.apply
    cpu.load_edges(s, d)
    assert gpu.graph.version == 1
    ea, pa = gpu.ranks()
    eb, pb = cpu.ranks()
    assert np.array_equal(ea, eb) and np.abs(pa - pb).sum() < 1e-9
    # a load with deletions keeps arrival-order semantics (applied as a batch)
    other = Engine("gpu", "static", config=cfg)
    ins = np.ones(len(s), dtype=bool)
    ins[5] = False
    other.load_edges(s, d, ins)
    assert other.graph.num_edges <= gpu.graph.num_edges


@pytest.mark.gpu
def test_engine_load_refused_by_the_limit_leaves_the_engine_empty(cp):
    from streamrank import Engine
    from streamrank.errors import GraphCapacityError

    s, d = edges(6, 3000, 30000)
    eng = Engine("gpu", "static", max_graph_bytes=1 << 16)
    with pytest.raises(GraphCapacityError):
        eng.load_edges(s, d)
    assert eng.num_vertices == 0 and eng.graph.num_edges == 0
    eng.max_graph_bytes = None
    eng.load_edges(s, d)
    assert eng.graph.num_edges == np.unique((s << 32) | d).shape[0]
