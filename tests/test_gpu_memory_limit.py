"""A capped device (STREAMRANK_GPU_MEMORY_LIMIT / --gpu-memory-limit, CuPy's pool limit): a load or
a batch that does not fit stops with the package's error before changing anything, an allocation
failure deep inside is re-raised as the package's error, and the CLI prints one paragraph."""

import subprocess
import sys

import numpy as np
import pytest

from streamrank import Engine, EdgeBatch
from streamrank.errors import DeviceMemoryError, GraphCapacityError, StreamrankError
from streamrank.store.memory import PoolPeak, apply_device_limit_setting, device_limit, set_device_limit

MIB = 1 << 20


def test_limit_setting_on_the_host_is_parsed_and_ignored():
    assert set_device_limit(np, "8G") == 8 << 30
    assert device_limit(np) is None
    with pytest.raises(StreamrankError, match="byte count"):
        set_device_limit(np, "lots")


def test_the_setting_names_its_variable(monkeypatch):
    monkeypatch.setenv("STREAMRANK_GPU_MEMORY_LIMIT", "much")
    with pytest.raises(StreamrankError, match="STREAMRANK_GPU_MEMORY_LIMIT"):
        apply_device_limit_setting(np)
    monkeypatch.setenv("STREAMRANK_GPU_MEMORY_LIMIT", "2g")
    assert apply_device_limit_setting(np) == 2 << 30


@pytest.fixture
def capped(cp):
    """``cap(extra)`` caps the pool at its live bytes plus ``extra``; the cap is lifted after."""
    pool = cp.get_default_memory_pool()

    def cap(extra):
        pool.free_all_blocks()
        return set_device_limit(cp, pool.used_bytes() + int(extra))

    yield cap
    set_device_limit(cp, None)


def rmat(scale):
    from streamrank.bench.rmat import rmat_edges

    return rmat_edges(scale, seed=1)


@pytest.mark.gpu
def test_a_load_past_the_cap_stops_before_allocating(cp, capped):
    from streamrank.store.gpu import GpuGraph

    s, d = (cp.asarray(a) for a in rmat(15))
    capped(4 * MIB)
    with PoolPeak(cp) as peak, pytest.raises(GraphCapacityError) as err:
        GpuGraph.from_edges(s, d)
    msg = str(err.value)
    assert "needs" in msg and "is free" in msg and "capped at" in msg
    assert "GPU with more memory" in msg and "fewer vertices" in msg and "multi-GPU" in msg
    assert err.value.needed > err.value.available
    assert peak.bytes - peak.start_bytes < s.nbytes  # refused before the build's arrays
    set_device_limit(cp, None)
    g = GpuGraph.from_edges(s, d)
    assert g.num_edges == s.shape[0]


@pytest.mark.gpu
def test_engine_state_is_unchanged_after_a_batch_that_does_not_fit(cp, capped):
    s, d = rmat(12)
    eng = Engine("gpu", "auto")
    eng.load_edges(s, d)
    eng.apply(EdgeBatch.from_arrays(np.array([s[0]]), np.array([d[1]])))
    ids0, p0 = eng.ranks()
    es0, ed0 = eng.edges_external()
    x0, seq0 = eng.x.get(), eng.seq
    rng = np.random.default_rng(0)
    big = EdgeBatch.from_arrays(rng.integers(10**9, 2 * 10**9, 300_000), rng.integers(10**9, 2 * 10**9, 300_000))
    capped(2 * MIB)
    with pytest.raises(GraphCapacityError):
        eng.apply(big)
    set_device_limit(cp, None)
    ids1, p1 = eng.ranks()
    es1, ed1 = eng.edges_external()
    assert eng.seq == seq0 and np.array_equal(eng.x.get(), x0)
    assert np.array_equal(ids0, ids1) and np.array_equal(p0, p1)
    assert np.array_equal(es0, es1) and np.array_equal(ed0, ed1)
    step = eng.apply(big)  # uncapped, the same batch applies
    assert step.seq == seq0 + 1 and eng.num_vertices > len(ids0)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["bad_alloc", "cupy"])
def test_allocation_failures_deep_inside_are_the_package_error(cp, monkeypatch, kind):
    from streamrank.rank.gpu import pagerank as rank_gpu
    from streamrank.store import gpu_build, gpu_slow
    from streamrank.store.gpu import GpuGraph

    def fail(*a, **k):
        raise MemoryError("std::bad_alloc") if kind == "bad_alloc" else cp.cuda.memory.OutOfMemoryError(1 << 40, 0)

    s, d = rmat(12)
    # the load: the id plan (where cupy.unique ran out at R-MAT 26) fails inside
    monkeypatch.setattr(gpu_build, "dense_plan", fail)
    with pytest.raises(GraphCapacityError) as err:
        GpuGraph.from_edges(s, d)
    assert isinstance(err.value.__cause__, MemoryError) and "no graph was built" in str(err.value)
    monkeypatch.undo()
    # a batch: its planning fails inside, the engine is unchanged
    eng = Engine("gpu", "dfp")
    eng.load_edges(s, d)
    es0, _ = eng.edges_external()
    x0 = eng.x.get()
    monkeypatch.setattr(gpu_slow, "collapse_last_op", fail)
    batch = EdgeBatch.from_arrays(np.arange(5000, 10000), np.arange(5001, 10001))
    with pytest.raises(GraphCapacityError) as err:
        eng.apply(batch)
    assert "nothing was changed" in str(err.value)
    assert eng.seq == 0 and np.array_equal(eng.edges_external()[0], es0) and np.array_equal(eng.x.get(), x0)
    monkeypatch.undo()
    # the rank update fails inside: DeviceMemoryError, never a raw MemoryError, never GraphCapacityError
    monkeypatch.setattr(rank_gpu, "_dynamic", fail)
    with pytest.raises(DeviceMemoryError) as err:
        eng.apply(batch)
    assert not isinstance(err.value, GraphCapacityError)
    assert "were not updated" in str(err.value) and np.array_equal(eng.x.get(), x0)


@pytest.mark.gpu
def test_the_cli_prints_one_paragraph(cp):
    cmd = [sys.executable, "-m", "streamrank", "bench", "--graph", "rmat:18", "--device", "gpu",
           "--algorithms", "auto", "--batches", "1", "--no-baselines", "--gpu-memory-limit", "48M"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("streamrank bench:")]
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert "device memory" in lines[0] and "GPU with more memory" in lines[0]


@pytest.mark.gpu
def test_pool_peak_counts_the_sorts_buffers(cp):
    a = cp.random.randint(0, 2**40, 4 << 20, dtype=cp.int64)
    cp.get_default_memory_pool().free_all_blocks()
    with PoolPeak(cp) as peak:
        b = cp.sort(a)
    assert peak.bytes > peak.start_bytes + b.nbytes  # the copy and thrust's buffer
    assert cp.cuda.memory.get_allocator() is not None
