"""The ranks the engine publishes (streamrank/rank/published.py): in self-loop mode the vertices
without in-edges at their exact rank and the rest scaled to the remaining mass; in uniform mode
``x / sum(x)``. Checked against the SciPy float64 oracle on the bundled CollegeMsg, padded with
isolated vertices as the published protocol pads sx-mathoverflow, on both backends."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.bench.temporal import _read_lines
from streamrank.config import RankConfig
from streamrank.engine import Engine
from streamrank.errors import InvalidArgumentError
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank
from streamrank.rank.published import published_ranks

DATA = Path(__file__).resolve().parents[1] / "streamrank" / "data" / "CollegeMsg.txt.gz"
ALPHA = 0.85


def _replay(device, dangling, padded, batches=6, size=60):
    """The temporal protocol on CollegeMsg (first 90% of lines as the base, then insert-only
    batches of ``size`` lines), DF-P in Jacobi order; yields the engine after each batch."""
    src, dst = _read_lines(str(DATA))
    keep = src != dst
    src, dst = src[keep], dst[keep]
    base = int(0.9 * src.shape[0])
    eng = Engine(device, "dfp", config=RankConfig(dangling=dangling, update_order="jacobi"))
    eng.load_edges(src[:base], dst[:base], vertices=np.arange(padded) if padded else None)
    # the base graph's ranks converged to the iteration cap, as the protocol has them: the error
    # left is DF-P's (the GPU's static sweeps stop at their 1e-10 criterion otherwise)
    eng.recompute(config=replace(eng.config, tol=0.0))
    for b in range(batches):
        lo, hi = base + b * size, base + (b + 1) * size
        eng.apply(EdgeBatch.from_arrays(src[lo:hi], dst[lo:hi]))
        yield eng


def test_self_loop_mode_publishes_exact_vertices_exactly_and_beats_both_plain_forms(device):
    errs = {"published": [], "sum": [], "scaled": []}
    for eng in _replay(device, "self-loop", padded=20000):
        exact = oracle_pagerank(eng.graph, alpha=ALPHA, dangling="self-loop")
        _, p = eng.ranks()
        x = np.asarray(eng.backend.to_host(eng.x), dtype=np.float64)
        n = x.shape[0]
        assert p.sum() == pytest.approx(1.0, abs=1e-13)
        # the vertices without in-edges: their closed form 1 / (1 - alpha / d), d counting the loop
        ind = np.asarray(eng.backend.to_host(eng.graph.in_degree))
        outd = np.asarray(eng.backend.to_host(eng.graph.out_degree))
        src = ind == 0
        assert 20000 - 1899 < src.sum() < n  # the padding, and vertices of CollegeMsg that nobody messaged
        closed = (1.0 - ALPHA) / n / (1.0 - ALPHA / (outd[src] + 1.0))
        # exact where a local-form update wrote them; vertices untouched since the base graph keep
        # the static ranks, which the GPU computes by standard-form sweeps to the 1e-10 criterion
        np.testing.assert_allclose(p[src], closed, rtol=1e-12 if device == "cpu" else 1e-9, atol=0)
        np.testing.assert_allclose(p[src], exact[src], rtol=1e-8, atol=0)
        errs["published"].append(l1_error(p, exact))
        errs["sum"].append(l1_error(x / x.sum(), exact))
        errs["scaled"].append(l1_error(x * ((1.0 - ALPHA) / n), exact))
    med = {k: float(np.median(v)) for k, v in errs.items()}
    # DF-P's truncated propagation leaves an error to share out: the plain division spreads it over
    # the padding too, the reference's scaling leaves the deficit unpublished
    assert 0 < med["published"] < 0.75 * med["scaled"] and med["scaled"] < med["sum"], med
    assert max(errs["published"]) < 1e-6


def test_uniform_mode_publishes_x_over_its_sum(device):
    for eng in _replay(device, "uniform", padded=None, batches=2):
        _, p = eng.ranks()
        x = np.asarray(eng.backend.to_host(eng.x), dtype=np.float64)
        np.testing.assert_array_equal(p, x / x.sum())
        assert l1_error(p, oracle_pagerank(eng.graph, alpha=ALPHA, dangling="uniform")) < 1e-6


def test_self_loop_mode_without_edges_or_near_the_fixed_point():
    x = 1.0 / (1.0 - ALPHA / np.array([1.0, 1.0, 2.0]))
    # every vertex without in-edges: the plain normalization (the pinned values sum to 1 only
    # where x is exact, as here, so both agree)
    p = published_ranks(x, np.zeros(3, np.int64), alpha=ALPHA, dangling="self-loop")
    np.testing.assert_allclose(p, x / x.sum(), rtol=1e-15)
    # an iterate far from the fixed point (pinned mass over 1): the plain normalization
    x_far = np.array([100.0, 100.0, 1.0])
    deg = np.array([0, 0, 1])
    np.testing.assert_array_equal(published_ranks(x_far, deg, alpha=ALPHA, dangling="self-loop"),
                                  x_far / x_far.sum())
    # otherwise: pinned entries at x (1 - alpha) / n, the rest in proportion to x
    x_near = np.array([1.0, 7.0, 12.0])
    p = published_ranks(x_near, np.array([0, 2, 1]), alpha=ALPHA, dangling="self-loop")
    assert p[0] == pytest.approx(0.15 / 3) and p[2] / p[1] == pytest.approx(12.0 / 7.0) and p.sum() == pytest.approx(1.0)
    assert published_ranks(np.zeros(0), np.zeros(0, np.int64), alpha=ALPHA, dangling="self-loop").shape == (0,)


@pytest.mark.parametrize("kwargs, match", [
    ({"dangling": "none"}, "dangling"),
    ({"alpha": 1.0}, "alpha"),
    ({"in_degree": None}, "in_degree"),
    ({"in_degree": np.zeros(2, np.int64)}, "shape"),
    ({"x": np.array([1.0, np.nan, 1.0])}, "finite"),
    ({"x": np.ones((3, 1))}, "one-dimensional"),
])
def test_arguments_are_checked(kwargs, match):
    args = {"x": np.ones(3), "in_degree": np.zeros(3, np.int64), "alpha": ALPHA, "dangling": "self-loop"}
    args.update(kwargs)
    x, deg = args.pop("x"), args.pop("in_degree")
    with pytest.raises(InvalidArgumentError, match=match):
        published_ranks(x, deg, **args)
