"""device_memory: the free-memory check and the peak tracker, on a stand-in for CuPy's counters
(the real counters are read by the gpu test at the end)."""

import types

import numpy as np
import pytest

from streamrank.backend import Backend
from streamrank.store.memory import DeviceMemory, DeviceMemoryTracker, check_fits, read_device_memory
from streamrank.errors import GraphCapacityError, InvalidArgumentError

GIB = 1 << 30


def fake_cupy(free, total, pool_used, pool_total):
    """A module with CuPy's two counters, which the test can move."""
    state = {"free": free, "total": total, "used": pool_used, "held": pool_total}
    pool = types.SimpleNamespace(used_bytes=lambda: state["used"], total_bytes=lambda: state["held"])
    runtime = types.SimpleNamespace(memGetInfo=lambda: (state["free"], state["total"]))
    mod = types.SimpleNamespace(__name__="cupy", cuda=types.SimpleNamespace(runtime=runtime),
                                get_default_memory_pool=lambda: pool)
    return mod, state


def test_reading_counts_the_pool_free_blocks_as_available():
    xp, _ = fake_cupy(2 * GIB, 80 * GIB, 5 * GIB, 6 * GIB)
    mem = read_device_memory(xp)
    assert mem == DeviceMemory(80 * GIB, 2 * GIB, 5 * GIB, 6 * GIB)
    assert mem.device_used == 78 * GIB and mem.pool_free == GIB and mem.available == 3 * GIB


def test_check_fits_against_free_device_memory():
    xp, _ = fake_cupy(2 * GIB, 80 * GIB, 5 * GIB, 6 * GIB)
    check_fits(3 * GIB, xp=xp, held=GIB, limit=None, what="a batch")  # exactly what is available
    with pytest.raises(GraphCapacityError) as err:
        check_fits(3 * GIB, xp=xp, held=GIB, limit=None, what="a batch of 7 edges", scratch=1)
    e = err.value
    assert isinstance(e, MemoryError) and e.needed == 3 * GIB + 1 and e.available == 3 * GIB
    msg = str(e)
    assert msg.startswith("a batch of 7 edges needs 3,072.0 MiB of device memory but only 3,072.0 MiB is free")
    assert "nothing was changed" in msg and "--device cpu" in msg


def test_check_fits_against_the_limit_ignores_scratch():
    xp, _ = fake_cupy(10 * GIB, 80 * GIB, 0, 0)
    check_fits(100, xp=np, held=900, limit=1000, what="x")  # the limit alone on the host
    check_fits(0, xp=np, held=5000, limit=1000, what="x", scratch=10**12)  # no growth: no check
    check_fits(100, xp=xp, held=900, limit=1000, what="x", scratch=GIB)  # scratch: memory only
    with pytest.raises(GraphCapacityError) as err:
        check_fits(101, xp=np, held=900, limit=1000, what="growing")
    assert err.value.needed == 101 and err.value.available == 100
    assert "limit" in str(err.value) and "--max-graph-bytes" in str(err.value)
    with pytest.raises(GraphCapacityError):
        check_fits(100, xp=xp, held=0, limit=None, what="x", scratch=11 * GIB)


def test_tracker_keeps_the_peaks():
    xp, st = fake_cupy(70 * GIB, 80 * GIB, GIB, 2 * GIB)
    track = DeviceMemoryTracker(Backend("gpu", xp, "test"))
    assert track.peak_bytes is None and track.per_edge(10) is None
    track.sample("build")
    st.update(free=60 * GIB, used=8 * GIB, held=9 * GIB)
    track.sample("batch")
    st.update(free=65 * GIB, used=3 * GIB, held=9 * GIB)
    mem = track.sample("batch")
    assert mem.device_used == 15 * GIB
    assert track.peak_bytes == 20 * GIB and track.peak_pool_used_bytes == 8 * GIB
    assert track.peak_pool_total_bytes == 9 * GIB and track.samples == 3
    assert track.peak_by_stage == {"build": 10 * GIB, "batch": 20 * GIB}
    assert track.per_edge(GIB) == 20.0 and track.per_edge(0) is None
    assert track.report(GIB)["peak_device_bytes_per_edge"] == 20.0


def test_tracker_reports_none_on_the_cpu():
    track = DeviceMemoryTracker(Backend("cpu", np, "test"))
    assert track.sample("x") is None
    assert track.peak_bytes is None and track.samples == 0
    assert track.report(100) == {"peak_device_bytes": None, "peak_pool_used_bytes": None,
                                 "peak_pool_total_bytes": None, "samples": 0, "peak_device_bytes_per_edge": None}
    with pytest.raises(InvalidArgumentError):
        DeviceMemoryTracker("gpu")


@pytest.mark.gpu
def test_tracker_on_the_device(cp):
    from streamrank.backend import resolve_backend

    track = DeviceMemoryTracker(resolve_backend("gpu"))
    track.sample("start")
    a = cp.ones(64 << 20, dtype=cp.uint8)  # 64 MiB in the pool
    mem = track.sample("allocated")
    assert mem.pool_used >= a.nbytes and track.peak_pool_used_bytes >= a.nbytes
    assert 0 < track.peak_bytes <= mem.device_total
