"""A cuGraph baseline or oracle that runs out of device memory beside the engine's graph: the
failure is the package's DeviceMemoryError, the bench releases CuPy's cached blocks and tries once
more, then goes on without cuGraph (its rows say why, the oracle falls back) instead of dying."""

from types import SimpleNamespace

import pytest

from streamrank.bench.baselines import BenchOracle, with_cache_released
from streamrank.errors import DeviceMemoryError, KernelError
from streamrank.oracle.cugraph_static import cugraph_failure

RMM_OOM = ("non-success value returned from cugraph_graph_create_with_times_sg(): CUGRAPH_UNKNOWN_ERROR "
           "std::bad_alloc: out_of_memory: CUDA error (failed to allocate 8502735256 bytes) at: "
           "/__w/rmm/rmm/cpp/include/rmm/mr/device/cuda_memory_resource.hpp:62: cudaErrorMemoryAllocation")


def test_cugraph_failures_become_the_package_errors():
    oom = cugraph_failure("building the cuGraph graph", RuntimeError(RMM_OOM))
    assert isinstance(oom, DeviceMemoryError) and isinstance(oom, MemoryError)
    assert oom.needed == 8502735256 and "ran out of device memory" in str(oom)
    assert isinstance(cugraph_failure("cuGraph PageRank", MemoryError("std::bad_alloc")), DeviceMemoryError)
    other = cugraph_failure("cuGraph PageRank", TypeError("bad argument"))
    assert type(other) is KernelError and "cuGraph PageRank failed: bad argument" in str(other)


class _Pool:
    def __init__(self):
        self.freed = 0

    def free_all_blocks(self):
        self.freed += 1


def _failing(times):
    calls = []

    def fn(*_):
        calls.append(1)
        if len(calls) <= times:
            raise DeviceMemoryError("cuGraph ran out of device memory", needed=2**33)
        return "ranks"
    return fn, calls


def test_a_cugraph_call_is_tried_once_more_after_the_cache_is_released():
    pool = _Pool()
    xp = SimpleNamespace(get_default_memory_pool=lambda: pool)
    fn, calls = _failing(1)
    assert with_cache_released(fn, xp) == "ranks" and len(calls) == 2 and pool.freed == 1
    fn, calls = _failing(2)
    with pytest.raises(DeviceMemoryError):
        with_cache_released(fn, xp)
    assert len(calls) == 2 and pool.freed == 2
    fn, calls = _failing(1)  # no pool to release (the host): the first failure stands
    with pytest.raises(DeviceMemoryError):
        with_cache_released(fn, SimpleNamespace())
    assert len(calls) == 1


def test_the_oracle_falls_back_for_the_rest_of_the_run():
    pool = _Pool()
    fn, calls = _failing(2)
    fallback = BenchOracle("store-spmv-float64", lambda g: ("fallback", g))
    oracle = BenchOracle("cugraph", fn, fallback=fallback, xp=SimpleNamespace(get_default_memory_pool=lambda: pool))
    assert oracle("g1") == ("fallback", "g1")
    assert oracle.name == "store-spmv-float64" and isinstance(oracle.failure, DeviceMemoryError)
    assert oracle("g2") == ("fallback", "g2") and len(calls) == 2  # cuGraph is not tried again
    ok = BenchOracle("cugraph", lambda g: "cugraph ranks", fallback=fallback, xp=SimpleNamespace())
    assert ok("g") == "cugraph ranks" and ok.name == "cugraph" and ok.failure is None


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["oracle", "baseline", "batches"])
def test_bench_goes_on_without_cugraph_when_it_does_not_fit(where, tmp_path, monkeypatch):
    """cuGraph 'installed' but out of device memory: in the oracle (then every cuGraph call), in
    the baseline's graph builds, or only in the per-batch rebuilds (its static run standing in).
    The bench completes, cuGraph's rows say why, and the oracle is cuSPARSE's where cuGraph's
    could not run."""
    import streamrank.bench.random_batches as rb
    import streamrank.oracle.cugraph_static as cgs
    from streamrank.bench.random_batches import BenchOptions, run_bench
    from streamrank.oracle.static import oracle_pagerank

    def no_room(*_, **__):
        raise cgs.cugraph_failure("building the cuGraph graph", RuntimeError(RMM_OOM))

    monkeypatch.setattr(cgs, "cugraph_available", lambda: True)
    monkeypatch.setattr(cgs, "build_cugraph_graph", no_room)
    if where == "oracle":
        monkeypatch.setattr(cgs, "cugraph_pagerank", no_room)
    else:  # the oracle runs (SciPy standing in for cuGraph's float64 PageRank)
        monkeypatch.setattr(cgs, "cugraph_pagerank", lambda g, alpha, dangling: oracle_pagerank(
            g, alpha=alpha, dangling=dangling, use="scipy"))
    if where == "batches":
        monkeypatch.setattr(rb, "_cugraph_static", lambda *_: {"ms": 1.0, "l1_error": 0.0, "tol_l1": 1e-6})
    report = run_bench(BenchOptions(graph="rmat:9", device="gpu", batches=1, fractions=(1e-3, 1e-2),
                                    algorithms=("auto",)), log=lambda *_: None)
    assert report["cugraph"].startswith("cannot load on this GPU: ran out of device memory")
    assert "7.9 GiB asked" in report["cugraph"]
    assert report["oracle"] == ("cusparse-float64" if where == "oracle" else "cugraph")
    assert ("oracle_note" in report) == (where == "oracle")
    rows = [r for r in report["rows"] if r["algorithm"] == "cugraph"]
    assert len(rows) == 2 and all(r["note"] == report["cugraph"] for r in rows)
    assert ("cugraph_static" in report) == (where == "batches")
    auto = [r for r in report["rows"] if r["algorithm"] == "auto"]
    assert len(auto) == 2 and all(r["l1_error"] < 1e-6 for r in auto)
