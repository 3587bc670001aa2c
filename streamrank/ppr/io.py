"""Load the graph a PPR command queries: an edge file, a checkpoint directory, or ``rmat:S[:EF]``."""

from __future__ import annotations

import os

from ..backend import resolve_backend
from ..errors import InvalidArgumentError, SourceError


def _store(backend):
    if backend.is_gpu:
        from ..graph_gpu import GpuGraph

        return GpuGraph
    from ..graph import CpuGraph

    return CpuGraph


def load_graph(spec: str, *, device: str = "auto"):
    """Returns (graph store on the resolved backend, description dict)."""
    backend = resolve_backend(device)
    cls = _store(backend)
    if spec.startswith("rmat:"):
        parts = spec.split(":")[1:]
        try:
            scale = int(parts[0])
            ef = int(parts[1]) if len(parts) > 1 else 16
        except (ValueError, IndexError) as exc:
            raise InvalidArgumentError(f"--graph rmat:SCALE[:EDGE_FACTOR], got {spec!r}") from exc
        from ..rmat import rmat_edges

        # generated where the store lives (on the GPU: seconds at scale 22 instead of minutes)
        s, d = rmat_edges(scale, ef, seed=0, xp=backend.xp)
        return cls.from_edges(s, d), {"graph": spec, "backend": backend.name, "reason": backend.reason}
    if os.path.isdir(spec):
        from ..recovery import load_latest_state

        ck = load_latest_state(spec)  # full checkpoint + the batches logged after it
        if ck is None:
            raise SourceError(f"no readable checkpoint in {spec}")
        return cls.from_state(ck.engine_state), {"graph": spec, "checkpoint": ck.path, "seq": ck.seq,
                                                 "backend": backend.name, "reason": backend.reason}
    if not os.path.exists(spec):
        raise SourceError(f"no such graph file or checkpoint directory: {spec}")
    from connectors.files import read_edges

    from ..batch import EdgeBatch
    from ..graph import CpuGraph

    table, _report = read_edges(spec)
    g = CpuGraph()
    g.apply(EdgeBatch.from_arrow(table))
    if backend.is_gpu:
        s, d = g.edges_external()
        g = cls.from_edges(s, d)
    return g, {"graph": spec, "backend": backend.name, "reason": backend.reason}
