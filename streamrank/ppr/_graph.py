"""Read a graph store (CpuGraph or GpuGraph) through the contract, on its own backend."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np


@dataclass
class GraphArrays:
    """The store's CSR arrays as the PPR code uses them (NumPy or CuPy, never copied across)."""

    xp: object
    n: int
    num_edges: int
    out_offset: object
    out_degree: object
    out_indices: object
    in_offset: object
    in_degree: object
    in_indices: object
    #: Weighted stores only (None otherwise): per vertex the out-weight, the weights beside
    #: ``out_indices`` and ``in_indices``, and the running sum of ``out_weights`` within each
    #: vertex's segment (a Monte Carlo step draws an out-edge in proportion to its weight; CPU
    #: only, the GPU computes its own when a walk needs it).
    out_weight: object = None
    out_weights: object = None
    in_weights: object = None
    out_cumulative: object = None

    @property
    def weighted(self) -> bool:
        return self.out_weight is not None

    @property
    def is_gpu(self) -> bool:
        return self.xp is not np


def graph_arrays(graph) -> GraphArrays:
    """Wrap ``graph`` (its ``xp`` says the backend: NumPy for CpuGraph, CuPy for GpuGraph).

    Offsets and degrees keep their dtype (int32 or int64; the degree is cast to the offset's
    width when they differ); indices are int32.
    """
    xp = getattr(graph, "xp", np)
    out_off, in_off = graph.out_offset, graph.in_offset
    out_deg, in_deg = graph.out_degree, graph.in_degree
    if out_deg.dtype != out_off.dtype:
        out_deg = out_deg.astype(out_off.dtype)
    if in_deg.dtype != in_off.dtype:
        in_deg = in_deg.astype(in_off.dtype)
    out_idx, in_idx = graph.out_indices, graph.in_indices
    if out_idx.dtype != xp.int32:
        out_idx = out_idx.astype(xp.int32)
    if in_idx.dtype != xp.int32:
        in_idx = in_idx.astype(xp.int32)
    ga = GraphArrays(xp, int(graph.num_vertices), int(graph.num_edges), out_off, out_deg, out_idx,
                     in_off, in_deg, in_idx)
    if getattr(graph, "weighted", False):
        ga.out_weight, ga.out_weights, ga.in_weights = graph.out_weight, graph.out_weights, graph.in_weights
        if xp is np:  # the CPU's Monte Carlo walks (the GPU's: gpu_montecarlo.out_cumulative, on demand)
            from ..kernels.cpu.ppr import segment_sums

            ga.out_cumulative = segment_sums(ga.n, out_off, out_deg, graph.out_weights)
    return ga


def expand_segments(xp, offset, degree):
    """Positions ``offset[i] + j`` for ``j < degree[i]``, concatenated, and each one's segment.

    Vectorized: one cumulative sum and one repeat, no loop over the segments.
    """
    degree = degree.astype(xp.int64)
    total = int(degree.sum())
    if total == 0:
        z = xp.zeros(0, dtype=xp.int64)
        return z, z
    seg = xp.repeat(xp.arange(degree.shape[0], dtype=xp.int64), degree)
    starts = xp.cumsum(degree) - degree
    pos = xp.arange(total, dtype=xp.int64) - starts[seg] + offset.astype(xp.int64)[seg]
    return pos, seg


_version_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def graph_version(graph) -> tuple:
    """A token that changes when the graph changes (``graph.version`` when the store has one;
    else its sizes and the identity of its index arrays, which CpuGraph rebuilds on change)."""
    v = getattr(graph, "version", None)
    if v is not None:
        return ("v", v)
    return ("s", int(graph.num_vertices), int(graph.num_edges), id(graph.out_indices), id(graph.in_indices))


def cached(graph, key, make):
    """Per-graph cache (weakly keyed on the graph, invalidated by :func:`graph_version`)."""
    try:
        slot = _version_cache.setdefault(graph, {})
    except TypeError:  # not weak-referenceable: no caching
        return make()
    ver = graph_version(graph)
    hit = slot.get(key)
    if hit is not None and hit[0] == ver:
        return hit[1]
    val = make()
    slot[key] = (ver, val)
    return val


class DeviceGraphView:
    """A read-only GPU copy of a host graph store's arrays (CuPy), with the store contract's
    attributes. Used where no GPU store is at hand (the CLI loading a file with ``--device gpu``,
    tests); the engine's own GPU graph is queried directly. A weighted store's view carries its
    weights (``weighted``, ``out_weight``, ``out_weights``, ``in_weights``)."""

    backend_name = "gpu"

    def __init__(self, graph):
        import cupy as cp

        self.xp = cp
        self.ids = graph.ids  # host id map: seeds are looked up on the host
        self.num_vertices = int(graph.num_vertices)
        self.num_edges = int(graph.num_edges)
        self.weighted = bool(getattr(graph, "weighted", False))
        names = ("out_offset", "out_degree", "out_indices", "in_offset", "in_degree", "in_indices")
        if self.weighted:
            names += ("out_weight", "out_weights", "in_weights")
        for name in names:
            setattr(self, name, cp.asarray(getattr(graph, name)))
