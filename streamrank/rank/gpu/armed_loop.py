"""The next one-wait batch's rank loop packed ahead: what it was packed for, and the check that all
of it still holds when the batch arrives (``pagerank_gpu.arm_update`` packs it beside the running
loop; ``pagerank_gpu.launch_update`` takes it; docs/architecture.md).

Private to :mod:`streamrank.rank.gpu.pagerank`.
"""

from __future__ import annotations

from typing import NamedTuple

from . import frontier_loop


class ArmedRank(NamedTuple):
    """A loop packed ahead (:func:`frontier_loop.arm_loop`) and what it was packed for; kept in its
    workspace's ``armed_loop`` until the next batch takes or drops it."""

    algorithm: str
    config: object  # the RankConfig object (compared by identity)
    replay: object  # the BatchGraphs the loop's graph was captured in
    version: int  # the graph store's
    arrays: tuple  # rank_arrays(graph), compared by identity
    n: int  # vertices before the batch
    x_prev_ptr: int  # the address of the batch's previous iterate
    ticks: object  # frontier_loop.LOOP_TICKS (profiling)
    room: int  # new vertices the packed iterate has room for
    mode: int
    ws: object  # the workspace the image points at
    loop: frontier_loop.ArmedLoop


def rank_arrays(graph) -> tuple:
    """The graph arrays whose addresses the loop's argument image holds (a weighted store's
    weights and out-weights too)."""
    arrays = (graph._in.off, graph._in.deg, graph._in.idx, graph._out.off, graph._out.deg, graph._out.idx)
    if getattr(graph, "weighted", False):
        arrays += (graph._in.wt, graph._out.wt, graph._w_out)
    return arrays


def take(algorithm: str, graph, pending, x_prev, config, replay) -> ArmedRank | None:
    """The loop packed ahead for this batch (``pending``: its graph update, still on the device),
    when everything it was packed for still holds; else None. Either way the workspace holds no
    packed loop afterwards (one launch per arming)."""
    ws = getattr(graph, "_rank_workspaces", {}).get(config.dtype)
    held = None if ws is None else ws.armed_loop
    if held is None:
        return None
    ws.armed_loop = None
    g, n, arrays = graph, held.n, held.arrays
    if (held.algorithm != algorithm or held.config is not config or held.replay is not replay
            or held.version != g.version or held.ticks is not frontier_loop.LOOP_TICKS
            or pending.num_vertices_before != n or 2 * pending.received > held.room
            or not isinstance(x_prev, g.xp.ndarray) or x_prev.shape[0] != n or x_prev.dtype != held.loop.x.dtype
            or int(x_prev.data.ptr) != held.x_prev_ptr
            or arrays[0] is not g._in.off or arrays[1] is not g._in.deg or arrays[2] is not g._in.idx
            or arrays[3] is not g._out.off or arrays[4] is not g._out.deg or arrays[5] is not g._out.idx):
        return None
    return held
