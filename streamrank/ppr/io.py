"""Load the graph a PPR command queries: an edge file, a checkpoint directory, or ``rmat:S[:EF]``.

A graph with string vertex ids comes with its :class:`~streamrank.ids.strings.StringIdMap`: the
store's external ids are then the dictionary's integer codes, and the command maps seeds and
results through it (:func:`load_graph_with_ids`).
"""

from __future__ import annotations

import os

import pyarrow as pa

from ..backend import resolve_backend
from ..errors import InvalidArgumentError, SourceError
from ..ids.strings import StringIdMap


def _store(backend, weighted: bool = False):
    if weighted:
        if backend.is_gpu:
            from ..store.gpu_weighted import WeightedGpuGraph

            return WeightedGpuGraph
        from ..store.cpu_weighted import WeightedCpuGraph

        return WeightedCpuGraph
    if backend.is_gpu:
        from ..store.gpu import GpuGraph

        return GpuGraph
    from ..store.cpu import CpuGraph

    return CpuGraph


def load_graph(spec: str, *, device: str = "auto"):
    """Returns (graph store on the resolved backend, description dict); string ids as their codes."""
    graph, desc, _ids = load_graph_with_ids(spec, device=device)
    return graph, desc


def load_graph_with_ids(spec: str, *, device: str = "auto", id_type: str = "auto", layout=None):
    """Returns ``(graph store, description dict, StringIdMap or None)``.

    The map is given for a graph with string vertex ids (an edge file read with ``id_type``, or
    a checkpoint of a string-id engine); ``None`` for integer ids. ``layout`` (a
    :class:`connectors.files.Layout`) says which columns of an edge file hold what.
    """
    backend = resolve_backend(device)
    cls = _store(backend)
    if spec.startswith("rmat:"):
        parts = spec.split(":")[1:]
        try:
            scale = int(parts[0])
            ef = int(parts[1]) if len(parts) > 1 else 16
        except (ValueError, IndexError) as exc:
            raise InvalidArgumentError(f"--graph rmat:SCALE[:EDGE_FACTOR], got {spec!r}") from exc
        from ..bench.rmat import rmat_edges

        # generated where the store lives (on the GPU: seconds at scale 22 instead of minutes)
        s, d = rmat_edges(scale, ef, seed=0, xp=backend.xp)
        return cls.from_edges(s, d), {"graph": spec, "backend": backend.name, "reason": backend.reason}, None
    if os.path.isdir(spec):
        from ..checkpoints.recovery import load_latest_state

        ck = load_latest_state(spec)  # full checkpoint + the batches logged after it
        if ck is None:
            raise SourceError(f"no readable checkpoint in {spec}")
        ids = StringIdMap.from_state(ck.engine_state) if ck.engine_state.get("id_type") == "string" else None
        if "weight" in ck.engine_state:  # a weighted engine's checkpoint: its weights, on either backend
            cls = _store(backend, weighted=True)
        return cls.from_state(ck.engine_state), {"graph": spec, "checkpoint": ck.path, "seq": ck.seq,
                                                 "backend": backend.name, "reason": backend.reason}, ids
    if not os.path.exists(spec):
        raise SourceError(f"no such graph file or checkpoint directory: {spec}")
    from connectors.files import read_edges

    from ..batch import EdgeBatch, arrow_weights
    from ..store.cpu import CpuGraph

    table, report = read_edges(spec, id_type=id_type, layout=layout)
    if table.num_rows == 0:
        why = f"{report.bad} bad {report.unit}s, no good one" if report.bad else "the file has no edges"
        raise SourceError(f"{spec}: empty graph ({why})")
    ids = None
    if pa.types.is_string(table.schema.field("src").type):  # strings -> codes, as the engine does
        ids = StringIdMap()
        insert = table.column("op").to_numpy() > 0
        src, dst = ids.encode_edges(table.column("src").combine_chunks(), table.column("dst").combine_chunks(), insert)
        weight = arrow_weights(table.column("weight"), insert) if "weight" in table.column_names else None
        batch = EdgeBatch.from_arrays(src, dst, insert, weight=weight)
    else:
        batch = EdgeBatch.from_arrow(table)
    if batch.weighted:  # weights: repeated pairs set the weight (on the GPU, the weighted device store)
        g = _store(backend, weighted=True)()
        g.apply(batch)
        return g, {"graph": spec, "backend": backend.name, "reason": backend.reason}, ids
    g = CpuGraph()
    g.apply(batch)
    if backend.is_gpu:
        s, d = g.edges_external()
        g = cls.from_edges(s, d)
    return g, {"graph": spec, "backend": backend.name, "reason": backend.reason}, ids
