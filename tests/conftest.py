"""Shared fixtures: the backend parameter (cpu always; gpu where CuPy sees a GPU) and CuPy.

Tests marked ``gpu`` are skipped where CuPy sees no GPU (:func:`pytest_collection_modifyitems`).
"""

from __future__ import annotations

import pytest

from streamrank.backend import gpu_available

BACKENDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def device(request):
    """Backend name; every test using it runs on the CPU and, where there is one, the GPU."""
    return request.param


@pytest.fixture(scope="session")
def cp():
    """The CuPy module, for tests marked ``gpu``."""
    import cupy

    return cupy
