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


@pytest.mark.gpu
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_store_spmv_oracle_matches_cusparse(dangling):
    """The oracle past cuSPARSE's int32 CSR (a float64 product over the store's in-lists) agrees
    with the cuSPARSE one, on a graph with dangling vertices and after deletions left gaps."""
    import numpy as np

    from streamrank.batch import EdgeBatch
    from streamrank.bench.baselines import gpu_oracle
    from streamrank.bench.rmat import rmat_edges
    from streamrank.oracle.gpu_spmv import store_pagerank
    from streamrank.store.gpu import GpuGraph

    s, d = rmat_edges(11, 6, seed=8)
    g = GpuGraph.from_edges(s, d)
    g.apply(EdgeBatch.from_arrays(s[:500], d[:500], np.zeros(500, dtype=bool)))
    a = store_pagerank(g, alpha=0.85, dangling=dangling)
    b = gpu_oracle(g, alpha=0.85, dangling=dangling)
    assert abs(a.sum() - 1) < 1e-12 and np.abs(a - b).sum() < 1e-11
