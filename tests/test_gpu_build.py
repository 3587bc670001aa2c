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
