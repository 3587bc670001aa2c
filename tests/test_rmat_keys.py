"""The bounded R-MAT generator (streamrank/bench/rmat_keys.py): the same keys whatever the chunk,
on the host and the device, equal to drawing every edge at once."""

import numpy as np
import pytest

from streamrank.bench import rmat_keys as rk
from streamrank.bench.rmat import rmat_edges
from streamrank.errors import InvalidArgumentError


def all_at_once(scale, ef, seed):
    """Every edge drawn in one piece, loops dropped, sorted and deduplicated by np.unique."""
    base = rk._base(seed)
    perm = rk._permutation(np, base, 1 << scale)
    s, d = rk._host_draw(base, 0, ef << scale, scale, rk._thresholds(rk.RMAT_ABC), perm)
    keep = s != d
    return np.unique((s[keep] << 32) | d[keep])


@pytest.mark.parametrize("scale,ef,seed", [(8, 4, 0), (10, 8, 3)])
def test_keys_equal_drawing_every_edge_at_once_whatever_the_chunk(scale, ef, seed):
    ref = all_at_once(scale, ef, seed)
    for chunk in (1, 97, 5000, 1 << 29):  # chunk 1: every source range holds one source
        keys = rk.rmat_keys(scale, ef, seed=seed, chunk=chunk)
        assert keys.dtype == np.int64 and np.array_equal(keys, ref), chunk
    s, d = ref >> 32, ref & 0xFFFFFFFF
    assert (np.diff(ref) > 0).all() and not (s == d).any() and max(s.max(), d.max()) < (1 << scale)
    assert not np.array_equal(ref, rk.rmat_keys(scale, ef, seed=seed + 1))


def test_keys_are_an_rmat_graph():
    """Skewed degrees, and as many distinct edges as the permutation-based generator draws."""
    keys = rk.rmat_keys(12, 8, seed=2, chunk=4000)
    s = keys >> 32
    assert np.bincount(s).max() > 20 * np.bincount(s).mean()
    old = rmat_edges(12, 8, seed=2)[0].shape[0]
    assert abs(keys.shape[0] - old) < 0.02 * old
    assert rk.HOST_STEP >= 1


def test_bad_arguments():
    for kw in ({"scale": 0}, {"scale": 32}, {"scale": 5, "edge_factor": 0}, {"scale": 5, "chunk": 0},
               {"scale": 5, "abc": (0.6, 0.3, 0.2)}):
        with pytest.raises(InvalidArgumentError):
            rk.rmat_keys(**kw)


@pytest.mark.gpu
@pytest.mark.parametrize("chunk", [300, 1 << 29])
def test_device_keys_equal_the_host_keys(cp, chunk):
    ref = rk.rmat_keys(11, 8, seed=4)
    keys = rk.rmat_keys(11, 8, seed=4, xp=cp, chunk=chunk)
    assert keys.dtype == cp.int64 and np.array_equal(keys.get(), ref)


@pytest.mark.gpu
def test_device_graph_from_keys_equals_the_graph_from_edges(cp):
    from streamrank.store.gpu import GpuGraph

    keys = rk.rmat_keys(12, 8, seed=6, xp=cp, chunk=5000)
    a = GpuGraph.from_keys(keys.copy(), id_bound=1 << 12)
    b = GpuGraph.from_edges(keys >> 32, keys & 0xFFFFFFFF)
    c = GpuGraph.from_keys(keys[::-1].copy())  # unsorted keys are sorted and deduplicated first
    for g in (a, c):
        assert np.array_equal(g.ids.external.get(), b.ids.external.get())
        for x, y in zip(g.edges(), b.edges()):
            assert np.array_equal(x.get(), y.get())
    with pytest.raises(InvalidArgumentError):
        GpuGraph.from_keys(keys.copy(), id_bound=10)
