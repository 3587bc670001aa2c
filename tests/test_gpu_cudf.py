"""cuDF paths on the GPU backend give exactly what the CuPy paths give."""

import numpy as np
import pytest

from streamrank.backend import gpu_available
from streamrank.batch import EdgeBatch

pytestmark = pytest.mark.gpu


@pytest.fixture
def cudf_on(monkeypatch):
    from streamrank import cudf_support

    if not gpu_available() or not cudf_support.cudf_enabled():
        pytest.skip("cuDF is not installed")
    return cudf_support


def test_collapse_matches_cupy(cudf_on, monkeypatch):
    import cupy as cp

    from streamrank.normalize import collapse_last_op

    rng = np.random.default_rng(4)
    s, d = cp.asarray(rng.integers(0, 20, 5000)), cp.asarray(rng.integers(0, 20, 5000))
    ins = cp.asarray(rng.random(5000) < 0.5)
    got = collapse_last_op(cp, s, d, ins)
    monkeypatch.setenv("STREAMRANK_CUDF", "0")
    want = collapse_last_op(cp, s, d, ins)
    assert got[3] == want[3]
    for a, b in zip(got[:3], want[:3]):
        assert cp.asnumpy(a).tolist() == cp.asnumpy(b).tolist()


def test_arrow_batch_through_cudf(cudf_on):
    import cupy as cp

    b = EdgeBatch.from_arrays([5, 6, 7], [1, 2, 3], [True, False, True])
    g = EdgeBatch.from_arrow(b.to_arrow(), xp=cp)
    assert isinstance(g.src, cp.ndarray)
    assert cp.asnumpy(g.src).tolist() == [5, 6, 7] and cp.asnumpy(g.insert).tolist() == [True, False, True]
