"""Shared fixtures: the backend parameter (cpu always; gpu where CuPy sees a GPU) and CuPy.

Tests marked ``gpu`` are skipped where CuPy sees no GPU (:func:`pytest_collection_modifyitems`).
"""

from __future__ import annotations

import os
import tempfile

# Numba's disk cache is not safe to fill from several processes at once (numba/numba#4807: a
# process can load another's half-written machine code and crash), so under pytest-xdist each
# worker keeps its own cache directory. Set before any test module imports Numba.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), f"streamrank-numba-{os.getuid() if hasattr(os, 'getuid') else 'user'}")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(_base, os.environ["PYTEST_XDIST_WORKER"])

import pytest  # noqa: E402

from streamrank.backend import gpu_available  # noqa: E402

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
