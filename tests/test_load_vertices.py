"""``Engine.load_edges(..., vertices=...)``: the vertices the edges name take the first internal
ids and the extra ones (isolated) come after them, on both backends; the ranks by external id
are those of the same graph loaded with the vertices first, and match the SciPy oracle."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from streamrank.bench.temporal import _read_lines
from streamrank.config import RankConfig
from streamrank.engine import Engine
from streamrank.errors import InvalidArgumentError
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

DATA = Path(__file__).resolve().parents[1] / "streamrank" / "data" / "CollegeMsg.txt.gz"
PADDED = 20000  # ids 0 .. PADDED-1 up front, as the published protocol pads its graph


def _edges():
    src, dst = _read_lines(str(DATA))
    keep = src != dst
    return src[keep], dst[keep]


def _by_external(eng):
    ext, p = eng.ranks()
    out = np.zeros(PADDED)
    out[np.asarray(ext, dtype=np.int64)] = p
    return out


@pytest.mark.parametrize("dangling", ["self-loop", "uniform"])
def test_padding_vertices_follow_the_vertices_with_edges(device, dangling):
    src, dst = _edges()
    cfg = RankConfig(dangling=dangling)
    eng = Engine(device, "dfp", config=cfg)
    eng.load_edges(src, dst, vertices=np.arange(PADDED))
    g = eng.graph
    assert g.num_vertices == PADDED
    ind = np.asarray(eng.backend.to_host(g.in_degree))
    outd = np.asarray(eng.backend.to_host(g.out_degree))
    has = (ind > 0) | (outd > 0)
    k = int(has.sum())
    assert k == np.union1d(src, dst).shape[0]
    assert has[:k].all() and not has[k:].any()  # the vertices with edges first, then the padding
    ext, _ = eng.ranks()
    assert sorted(np.asarray(ext, dtype=np.int64).tolist()) == list(range(PADDED))

    # the same graph with the padding created first (ids in the order given)
    first = Engine(device, "dfp", config=cfg)
    first.add_vertices(np.arange(PADDED))
    first.load_edges(src, dst)
    np.testing.assert_array_equal(np.asarray(first.backend.to_host(first.graph.ids.external)), np.arange(PADDED))
    exact = replace(cfg, tol=0.0)
    eng.recompute(config=exact)
    first.recompute(config=exact)
    a, b = _by_external(eng), _by_external(first)
    assert l1_error(a, b) < 1e-12
    oracle = oracle_pagerank(eng.graph, alpha=cfg.alpha, dangling=dangling)
    _, p = eng.ranks()
    assert l1_error(p, oracle) < 1e-9


def test_vertices_of_another_shape_are_refused_before_the_graph_changes(device):
    src, dst = _edges()
    eng = Engine(device, "dfp")
    with pytest.raises(InvalidArgumentError, match="one-dimensional"):
        eng.load_edges(src, dst, vertices=np.arange(10).reshape(2, 5))
    assert eng.graph.num_vertices == 0 and eng.graph.num_edges == 0
