"""Which graph store and rank code serve a backend, weighted or not."""

from __future__ import annotations

from .backend import Backend


def backend_modules(backend: Backend, weighted: bool = False, multi_edges: str = "set"):
    """``(graph store factory, rank module, rank keyword arguments)`` of a backend: the CPU rank
    code takes a workspace that lives as long as the engine. A weighted graph has its own store
    on either backend and runs the unweighted rank code with its weights passed along (its
    kernels compiled apart, so the unweighted ones never see a weight)."""
    if backend.is_gpu and weighted:
        from functools import partial

        from .store.gpu_weighted import WeightedGpuGraph
        from .rank.gpu import pagerank as pagerank_gpu

        return partial(WeightedGpuGraph, multi_edges=multi_edges), pagerank_gpu, {}
    if backend.is_gpu:
        from .store import gpu as graph_gpu
        from .rank.gpu import pagerank as pagerank_gpu

        return graph_gpu.GpuGraph, pagerank_gpu, {}
    if weighted:
        from functools import partial

        from .store.cpu_weighted import WeightedCpuGraph
        from .rank.cpu import pagerank as pagerank_cpu

        store = partial(WeightedCpuGraph, multi_edges=multi_edges)
        return store, pagerank_cpu, {"workspace": pagerank_cpu.FrontierWorkspace(weighted=True)}
    from .store import cpu as graph
    from .rank.cpu import pagerank as pagerank_cpu

    return graph.CpuGraph, pagerank_cpu, {"workspace": pagerank_cpu.FrontierWorkspace()}
