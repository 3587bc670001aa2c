"""cuGraph as the GPU oracle: it agrees with the SciPy float64 oracle (where it is installed)."""

import numpy as np
import pytest

from streamrank.backend import gpu_available
from streamrank.engine import Engine
from streamrank.oracle.static import oracle_name, oracle_pagerank

pytestmark = pytest.mark.gpu


@pytest.fixture
def cugraph():
    from streamrank.oracle.cugraph_static import cugraph_available

    if not gpu_available() or not cugraph_available():
        pytest.skip("pylibcugraph is not installed")


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_cugraph_matches_scipy(cugraph, dangling):
    rng = np.random.default_rng(9)
    src = np.concatenate([rng.integers(0, 3000, 20000), np.arange(3000, 3100)])
    dst = np.concatenate([rng.integers(0, 3000, 20000), np.arange(3100, 3200)])  # 100 dangling targets
    src = np.concatenate([src, [7]])
    dst = np.concatenate([dst, [7]])  # an explicit self-loop
    eng = Engine("gpu", "dfp")
    eng.load_edges(src, dst)
    assert oracle_name(eng.graph) == "cugraph"
    ref = oracle_pagerank(eng.graph, dangling=dangling, use="scipy")
    got = oracle_pagerank(eng.graph, dangling=dangling, use="cugraph")
    assert abs(got.sum() - 1) < 1e-12
    assert np.abs(got - ref).sum() < 1e-8


def test_dfp_on_gpu_checked_by_cugraph(cugraph):
    rng = np.random.default_rng(10)
    eng = Engine("gpu", "dfp")
    eng.load_edges(rng.integers(0, 5000, 40000), rng.integers(0, 5000, 40000))
    from streamrank.batch import EdgeBatch
    from streamrank.oracle.metrics import error_report

    for _ in range(5):
        eng.apply(EdgeBatch.from_arrays(rng.integers(0, 5100, 200), rng.integers(0, 5100, 200)))
    err = error_report(eng.ranks()[1], oracle_pagerank(eng.graph))
    assert err["l1_error"] < 1e-5 and err["top20_precision"] == 1.0
