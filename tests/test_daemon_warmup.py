"""The daemon's warm-up: a throwaway engine takes every path a stream's batches take (so that each
kernel is compiled before the first poll), and the settings that turn it on."""

from __future__ import annotations

import pytest

from streamrank.config import RankConfig
from streamrank.daemon import warmup
from streamrank.engine import Engine
from streamrank.errors import InvalidArgumentError


@pytest.mark.parametrize("mode, device, want", [
    ("auto", "gpu", True), ("auto", "cpu", False), ("on", "cpu", True), ("on", "gpu", True), ("off", "gpu", False)])
def test_wants_warm_up(mode, device, want):
    assert warmup.wants_warm_up(mode, device) is want


def test_wants_warm_up_refuses_an_unknown_mode():
    with pytest.raises(InvalidArgumentError):
        warmup.wants_warm_up("sometimes", "gpu")
    with pytest.raises(InvalidArgumentError):
        warmup.warm_up("cpu", config={"alpha": 0.85})


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_warm_up_takes_every_path(device, dangling, monkeypatch):
    """DF-P (the fused small-batch update and the frontier loop on the GPU), warm sweeps after a
    flood, Static, deletions, growth and a state round trip; on the GPU every kernel module of the
    rank and graph code is loaded and the store is compacted once."""
    ran, modules = [], set()
    apply = Engine.apply

    def recording_apply(self, batch):
        step = apply(self, batch)
        ran.append(step.rank.algorithm)
        return step

    monkeypatch.setattr(Engine, "apply", recording_apply)
    if device == "gpu":
        from streamrank.kernels.cuda import loader

        load = loader.load_module

        def recording_load(filename, *a, **kw):
            modules.add(filename)
            return load(filename, *a, **kw)

        monkeypatch.setattr(loader, "load_module", recording_load)
        from streamrank.rank.gpu import frontier_loop

        loop_kernel = frontier_loop._loop_kernel  # cached per process: a test before may have built it

        def recording_loop_kernel(*a, **kw):
            modules.add("frontier_loop.cu")
            return loop_kernel(*a, **kw)

        monkeypatch.setattr(frontier_loop, "_loop_kernel", recording_loop_kernel)
        from streamrank.store.gpu import GpuGraph

        compact = GpuGraph.compact

        def recording_compact(self):
            ran.append("compact")
            return compact(self)

        monkeypatch.setattr(GpuGraph, "compact", recording_compact)
    secs = warmup.warm_up(device, config=RankConfig(dangling=dangling))
    assert secs > 0
    assert {"dfp", "warm", "static"} <= set(ran), ran  # auto ran DF-P and, after the flood, warm sweeps
    if device == "gpu":
        assert {"pagerank.cu", "frontier_loop.cu", "sweep.cu", "graph_update.cu", "graph_fast_update.cu"} <= modules
        assert "compact" in ran  # the store's compaction (its CuPy kernels compile at first use)


def test_a_weighted_warm_up_takes_the_weighted_paths(device, monkeypatch):
    """A weighted daemon's warm-up runs a weighted engine (its store and, on the GPU, the weighted
    builds of the rank kernels: frontier loop, rank sequence and sweeps)."""
    ran, builds = [], set()
    apply = Engine.apply

    def recording_apply(self, batch):
        step = apply(self, batch)
        assert self.weighted and batch.weight is not None
        ran.append(step.rank.algorithm)
        return step

    monkeypatch.setattr(Engine, "apply", recording_apply)
    if device == "gpu":
        from streamrank.kernels.cuda import loader
        from streamrank.rank.gpu import frontier_loop, state

        load = loader.load_module

        def recording_load(filename, names, options=(), *a, **kw):
            if state.WEIGHTED_OPTIONS[0] in tuple(options):
                builds.add(filename)
            return load(filename, names, options, *a, **kw)

        monkeypatch.setattr(loader, "load_module", recording_load)
        loop_kernel = frontier_loop._loop_kernel

        def recording_loop_kernel(*a, **kw):
            if kw.get("weighted"):
                builds.add("frontier_loop.cu")
            return loop_kernel(*a, **kw)

        monkeypatch.setattr(frontier_loop, "_loop_kernel", recording_loop_kernel)
    assert warmup.warm_up(device, config=RankConfig(), weighted=True, multi_edges="sum") > 0
    assert {"dfp", "warm", "static"} <= set(ran), ran
    if device == "gpu":
        assert {"pagerank.cu", "frontier_loop.cu", "sweep.cu"} <= builds, builds
