"""The weighted store's compiled plan of a small batch (kernels.cpu.weighted_plan) against the
NumPy plan, and the commit's compiled sorts against lexsort."""

import numpy as np
import pytest

from streamrank import EdgeBatch
from streamrank.kernels.cpu import weighted_plan
from streamrank.store.cpu_weighted import WeightedCpuGraph, _sorted


def _graph(rng, mode, n_ids=25, m=150):
    ids = rng.choice(10_000, n_ids, replace=False)  # sparse external ids
    w = rng.integers(1, 4, m).astype(np.float64)  # small integers: sums hit equal weights too
    return WeightedCpuGraph.from_edges(rng.choice(ids, m), rng.choice(ids, m), w, multi_edges=mode), ids


def _batch(rng, ids, size, p_del):
    pool = np.concatenate([ids, rng.choice(20_000, 10) + 10_000])  # known ids and new ones
    src, dst = rng.choice(pool, size), rng.choice(pool, size)
    rep = rng.integers(0, size, size // 2)  # repeated pairs with other ops
    src, dst = np.concatenate([src, src[rep]]), np.concatenate([dst, dst[rep]])
    ins = rng.random(src.shape[0]) >= p_del
    w = rng.integers(1, 4, src.shape[0]).astype(np.float64)
    w[~ins & (rng.random(src.shape[0]) < 0.5)] = np.nan  # deletions with and without a weight
    return EdgeBatch.from_arrays(src, dst, ins, weight=w)


@pytest.mark.parametrize("mode", ["set", "sum"])
@pytest.mark.parametrize("seed", range(8))
def test_small_plan_matches_numpy_plan(seed, mode):
    rng = np.random.default_rng(seed)
    g, ids = _graph(rng, mode)
    kinds = set()
    for step in range(10):
        batch = _batch(rng, ids, int(rng.integers(1, 40)), p_del=(0.0, 0.3, 0.7)[step % 3])
        n = g.num_vertices
        want = g._plan_weighted(batch, n)
        got = g._plan_weighted_small(batch, n)
        for name in ("internal", "fresh", "uniq", "rank"):
            np.testing.assert_array_equal(getattr(got[0], name), getattr(want[0], name), err_msg=name)
        assert got[0].base == want[0].base
        for part in (1, 2, 3):  # deletions, insertions (with weights), reweights (with weights)
            for a, b in zip(got[part], want[part]):
                np.testing.assert_array_equal(a, b)
                assert a.dtype == b.dtype
            kinds.add(part) if len(got[part][0]) else None
        assert got[4] == want[4]
        g.apply(batch)  # through the compiled plan
    assert kinds == {1, 2, 3}  # the batches deleted, inserted and reweighted


def test_sorted_sides_match_lexsort():
    rng = np.random.default_rng(2)
    for _ in range(50):
        pairs = np.unique(rng.integers(0, 40, (int(rng.integers(0, 60)), 2)), axis=0)
        rng.shuffle(pairs)
        k = pairs.shape[0] // 3
        ds, dd, is_, id_ = pairs[:k, 0], pairs[:k, 1], pairs[k:, 0], pairs[k:, 1]
        iw = rng.random(is_.shape[0])
        got = weighted_plan.sorted_sides(ds, dd, is_, id_, iw)
        zeros = np.zeros(k)
        want = (*_sorted(ds, dd, zeros)[:2], *_sorted(dd, ds, zeros)[:2], *_sorted(is_, id_, iw), *_sorted(id_, is_, iw))
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
