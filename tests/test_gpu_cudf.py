"""cuDF paths on the GPU backend give exactly what the CuPy paths give."""

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


def test_arrow_batch_through_cudf(cudf_on):
    import cupy as cp

    b = EdgeBatch.from_arrays([5, 6, 7], [1, 2, 3], [True, False, True])
    g = EdgeBatch.from_arrow(b.to_arrow(), xp=cp)
    assert isinstance(g.src, cp.ndarray)
    assert cp.asnumpy(g.src).tolist() == [5, 6, 7] and cp.asnumpy(g.insert).tolist() == [True, False, True]
