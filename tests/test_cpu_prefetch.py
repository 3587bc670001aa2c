"""The software prefetch of the CPU kernels (streamrank.kernels.cpu.prefetch): it compiles for the
arrays the sparse step prefetches from and changes no value."""

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from streamrank.kernels.cpu.prefetch import prefetch


@njit
def _sum_prefetched(a, idx, ahead):
    s = 0.0
    for i in range(idx.shape[0]):
        if i + ahead < idx.shape[0]:
            prefetch(a, np.uint64(idx[i + ahead]))
            prefetch(idx, i + ahead)
        s += a[np.uint64(idx[i])]
    return s


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32, np.uint8])
def test_prefetch_changes_no_value(dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 100, 5000).astype(dtype)
    idx = rng.integers(0, a.shape[0], 20000).astype(np.int32)
    want = float(a[idx].astype(np.float64).sum())
    for ahead in (1, 8, 64):
        assert _sum_prefetched(a, idx, ahead) == want


def test_prefetch_takes_an_array_and_an_integer():
    @njit
    def bad(a):
        prefetch(a, 1.5)

    with pytest.raises(TypingError):
        bad(np.zeros(4))
