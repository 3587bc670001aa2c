"""The store's compiled plan of a small batch (kernels.cpu.batch_plan) against the NumPy plan."""

import numpy as np
import pytest

from streamrank import EdgeBatch
from streamrank.kernels.cpu import batch_plan
from streamrank.store.cpu import CpuGraph


def _graph(rng, n_ids=60, m=150):
    ids = rng.choice(10_000, n_ids, replace=False)  # sparse external ids
    return CpuGraph.from_edges(rng.choice(ids, m), rng.choice(ids, m)), ids


def _batch(rng, ids, size, p_del):
    pool = np.concatenate([ids, rng.choice(20_000, 10) + 10_000])  # known ids and new ones
    src, dst = rng.choice(pool, size), rng.choice(pool, size)
    rep = rng.integers(0, size, size // 3)  # repeated pairs with other ops
    src, dst = np.concatenate([src, src[rep]]), np.concatenate([dst, dst[rep]])
    return EdgeBatch.from_arrays(src, dst, rng.random(src.shape[0]) >= p_del)


@pytest.mark.parametrize("seed", range(12))
def test_small_plan_matches_numpy_plan(seed):
    rng = np.random.default_rng(seed)
    g, ids = _graph(rng)
    for step in range(8):
        batch = _batch(rng, ids, int(rng.integers(1, 40)), p_del=(0.0, 0.3, 0.7)[step % 3])
        n = g.num_vertices
        want = g._plan(batch, n)
        got = g._plan_small(batch, n)
        for name in ("internal", "fresh", "uniq", "rank"):
            np.testing.assert_array_equal(getattr(got[0], name), getattr(want[0], name), err_msg=name)
            assert getattr(got[0], name).dtype == np.int64
        assert got[0].base == want[0].base
        for a, b in zip(got[1:5], want[1:5]):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
        assert got[5] == want[5]
        g.apply(batch)  # through the compiled plan (small batch): the id map's side table grows


def test_apply_small_and_large_batches_agree():
    rng = np.random.default_rng(5)
    a, ids = _graph(rng)
    b = CpuGraph.from_edges(*a.edges_external())
    np.testing.assert_array_equal(np.sort(b.ids.external), np.sort(a.ids.external))
    for _ in range(5):
        batch = _batch(rng, ids, 30, p_del=0.3)
        ca = a.apply(batch)
        cb = b._plan(batch, b.num_vertices)  # the NumPy plan on an equal store
        b.apply(batch)
        assert ca.dropped == cb[5]
    sa, da = a.edges_external()
    sb, db = b.edges_external()
    assert sorted(zip(sa.tolist(), da.tolist())) == sorted(zip(sb.tolist(), db.tolist()))


def test_max_edges_stays_in_first_appearance_numbering():
    from streamrank.ids.plan import DEGREE_ORDER_MIN

    assert 2 * batch_plan.MAX_EDGES <= DEGREE_ORDER_MIN


def test_insert_sorted_matches_np_insert():
    rng = np.random.default_rng(1)
    for _ in range(100):
        keys = np.unique(rng.integers(0, 1000, rng.integers(0, 50)))
        vals = rng.integers(0, 99, keys.shape[0])
        add = np.setdiff1d(np.unique(rng.integers(0, 1000, rng.integers(0, 20))), keys)
        add_vals = rng.integers(0, 99, add.shape[0])
        at = np.searchsorted(keys, add)
        k, v = batch_plan.insert_sorted(keys, vals, add, add_vals)
        np.testing.assert_array_equal(k, np.insert(keys, at, add))
        np.testing.assert_array_equal(v, np.insert(vals, at, add_vals))


def test_sorted_sides_match_lexsort():
    from streamrank.store.cpu import _sorted_pairs

    rng = np.random.default_rng(2)
    for size in (0, 1, 7, 300):
        pairs = np.unique(rng.integers(0, 2**31 - 1, (2 * size + 1, 2)), axis=0)[:size]
        rng.shuffle(pairs)
        s, d = pairs[:size // 2, 0], pairs[:size // 2, 1]
        s2, d2 = pairs[size // 2:, 0], pairs[size // 2:, 1]
        want = (*_sorted_pairs(s, d), *_sorted_pairs(s2, d2), *_sorted_pairs(d, s), *_sorted_pairs(d2, s2))
        got = batch_plan.sorted_sides(s, d, s2, d2)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == np.int64


def test_argsort_is_numpys_stable_argsort():
    rng = np.random.default_rng(6)
    for size in (0, 1, 2, 3, 17, 64, 1000):
        a = rng.integers(0, 7 if size > 20 else 3, size).astype(np.int64)  # many ties
        np.testing.assert_array_equal(batch_plan.argsort_stable(a), np.argsort(a, kind="mergesort"))
