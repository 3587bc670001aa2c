"""DF/DF-P for one batch as one cooperative launch (``kernels/frontier_loop.cu``): its knobs, its
argument struct ``LoopLists``, the launch and the one status read of the batch.

Private to :mod:`streamrank.pagerank_gpu`.
"""

from __future__ import annotations

import functools
import os
import struct

import numpy as np

from ..errors import InvalidArgumentError
from ..gpu_launch import _cupy, launch, sm_count
from ..kernels.loader import get_kernel, resident_blocks
from .state import _CTYPE, _PAIR_CNT, _THREADS, _args_bytes, _kernel, _upload

_LOOP_CU = "frontier_loop.cu"
#: DF/DF-P run their whole iteration loop in one cooperative launch (``frontier_loop.cu``);
#: STREAMRANK_FRONTIER_LOOP=0 turns that off (the launch sequence of pagerank.cu then runs every
#: iteration, as it does for frontiers past the hand-over size).
_LOOP = os.environ.get("STREAMRANK_FRONTIER_LOOP", "1") != "0"
#: Blocks per multiprocessor of the cooperative loop (fewer: cheaper grid barriers; more: more
#: vertices in flight), capped by what is resident. Knob STREAMRANK_LOOP_BLOCKS_PER_SM.
_LOOP_BLOCKS_PER_SM = int(os.environ.get("STREAMRANK_LOOP_BLOCKS_PER_SM", "2"))
#: The loop hands over to the launch sequence when a frontier exceeds this many vertices per
#: resident thread of the loop's grid (knob STREAMRANK_LOOP_HANDOVER).
_LOOP_HANDOVER = float(os.environ.get("STREAMRANK_LOOP_HANDOVER", "4"))
#: Frontier lists of up to this many vertices per lane group of the loop's grid take a group of
#: lanes per vertex (in-edges gathered, out-edges marked together) instead of a thread per vertex
#: (knob STREAMRANK_LOOP_WARP_FACTOR); the group has _LOOP_GROUP lanes (STREAMRANK_LOOP_GROUP).
_LOOP_WARP_FACTOR = float(os.environ.get("STREAMRANK_LOOP_WARP_FACTOR", "4"))
_LOOP_GROUP = int(os.environ.get("STREAMRANK_LOOP_GROUP", "8"))
#: Initial marking: sources of at least this out-degree take a block, smaller ones a warp (knob
#: STREAMRANK_LOOP_BLOCK_SOURCE). 64 against the earlier 1024: the loop's device time 3-7% lower
#: on sx-mathoverflow (docs/GPU.md).
_LOOP_BLOCK_SOURCE = int(os.environ.get("STREAMRANK_LOOP_BLOCK_SOURCE", "64"))
#: Phase P marks the small flag list balanced over out-edges (1) or a group of lanes / a thread
#: per flagged vertex (0). Knob STREAMRANK_LOOP_MARK_PACKED.
_LOOP_MARK_PACKED = 0 if os.environ.get("STREAMRANK_LOOP_MARK_PACKED", "1") == "0" else 1
#: The loop's rank updates write the new contributions in place (1): a vertex may read this
#: iteration's value of an in-neighbour updated before it (asynchronous relaxation), instead of
#: the previous iteration's only (0, Jacobi). Knob STREAMRANK_LOOP_IN_PLACE.
_LOOP_IN_PLACE = os.environ.get("STREAMRANK_LOOP_IN_PLACE", "0") != "0"
#: ``auto``: DF-P hands over to warm sweeps when its frontier exceeds this share of the vertices
#: (and the loop's hand-over size). Knob STREAMRANK_AUTO_FLOOD.
#: Why the cooperative loop is not used in this process (set at its first failure).
loop_unavailable: str | None = None
#: Set to a device uint64 array of at least 3 * max_iter + 4 entries to have the frontier loop
#: write the device clock (ns) at its start, after its first two phases, at the start of each
#: iteration and after each of its two phases, and at its end (profiling; layout in
#: frontier_loop.cu's LoopLists::ticks).
LOOP_TICKS = None
_LISTS_FORMAT = "<16Qqq4Q3qQ"  # LoopLists<I, V> in frontier_loop.cu
_LISTS_OFFSET = 256  # where LoopLists sits in the uploaded buffer, after RankArgs


def _lists_bytes(ws, cp, grid: int, handover: int, warp_limit: int, x_prev, changes) -> bytes:
    """The LoopLists struct of frontier_loop.cu: frontier pairs A, B, C, flag pairs flags and
    flags 2, their counters, the block-result buffer, the hand-over size, the longest list that
    takes a warp per vertex, and the batch (previous ranks, changed edges)."""
    if ws.loop_part is None or ws.loop_part.shape[0] < 5 * grid:
        ws.loop_part = cp.zeros(5 * grid, dtype=cp.float64)
    base = int(ws.cnt.data.ptr)
    rows = [ws.row_ptr(r) for r in (0, 1, 2, 3, 6, 7)]  # A, B, C
    cnts = [base + 4 * _PAIR_CNT[p] for p in (0, 1, 3)]
    flags = [ws.row_ptr(r) for r in (4, 5, 8, 9)]  # flags, flags 2
    fcnts = [base + 4 * _PAIR_CNT[p] for p in (2, 4)]
    edges = [cp.ascontiguousarray(a, dtype=cp.int64) for a in (changes.ins_src, changes.del_src, changes.del_dst)]
    ws.loop_batch = edges  # kept alive until the launch has read them
    ptr = lambda a: int(a.data.ptr) if a.shape[0] else 0  # noqa: E731
    return struct.pack(_LISTS_FORMAT, *rows, *cnts, *flags, *fcnts, int(ws.loop_part.data.ptr), int(handover),
                       int(warp_limit), ptr(x_prev), *(ptr(a) for a in edges), int(x_prev.shape[0]),
                       int(edges[0].shape[0]), int(edges[1].shape[0]),
                       0 if LOOP_TICKS is None else int(LOOP_TICKS.data.ptr))


def _frontier_loop(graph, ws, x, x_prev, changes, config, mode: int, flood=None):
    """One batch of DF/DF-P as one cooperative launch (``frontier_loop.cu``): start of the
    iterate, initial marks and iterations. ``flood`` (``auto``): hand over only past this many
    frontier vertices (then warm sweeps take over).

    Returns ``(iterations, converged, affected, total)`` when the loop ran to the end;
    ``(None, iterations_done, affected, args)`` when it handed its frontier over (the launch
    sequence, or for ``auto`` warm sweeps, go on from pair A or B as the sequence expects it);
    None when cooperative launches are unavailable (nothing ran; the reason is kept in
    :data:`loop_unavailable`).
    """
    global loop_unavailable
    if loop_unavailable is not None:
        return None
    cp = graph.xp
    self_loop = 1 if config.dangling == "self-loop" else 0
    if _LOOP_GROUP not in (2, 4, 8, 16, 32):
        raise InvalidArgumentError(f"STREAMRANK_LOOP_GROUP must be 2, 4, 8, 16 or 32, got {_LOOP_GROUP}")
    if _LOOP_BLOCK_SOURCE < 1:
        raise InvalidArgumentError(f"STREAMRANK_LOOP_BLOCK_SOURCE must be at least 1, got {_LOOP_BLOCK_SOURCE}")
    try:
        k, grid = _loop_kernel(config.dtype, self_loop, mode)
        handover = int(_LOOP_HANDOVER * grid * _THREADS)
        if flood is not None:
            handover = max(handover, int(flood))
        groups = grid * _THREADS // _LOOP_GROUP
        lists = _lists_bytes(ws, cp, grid, handover, int(_LOOP_WARP_FACTOR * groups), x_prev, changes)
        buf = _upload(cp, ws, [(0, _args_bytes(graph, ws, x, config, in_place=_LOOP_IN_PLACE)), (_LISTS_OFFSET, lists)])
        args = buf[:_LISTS_OFFSET]
        k((grid,), (_THREADS,), (args, buf[_LISTS_OFFSET:]))
    except Exception as exc:  # compilation, or no cooperative launch on this device
        loop_unavailable = f"{type(exc).__name__}: {exc}"
        return None
    status, hist, total = _read_status(ws)  # the one sync of the batch's rank update
    it = int(status[1])
    if status[3]:  # handed over: frontier in loop pair status[3] - 1 after `it` iterations
        src = (0, 1, 3)[int(status[3]) - 1]
        dst = it % 2
        if src != dst:
            ss, sl, sc = ws.list_pair(src)
            ds, dl, dc = ws.list_pair(dst)
            launch(_kernel(config.dtype, "copy_pair<int>"), ws.gt, _THREADS, (ss, sl, sc, ds, dl, dc))
        ws.cnt[_PAIR_CNT[1 - dst]: _PAIR_CNT[1 - dst] + 2] = 0
        ws.cnt[4:6] = 0
        ws.status[3:4] = 0
        return None, it, hist[:it].tolist(), args
    return it, bool(status[2]), hist[:it].tolist(), total


@functools.lru_cache(maxsize=None)
def _loop_kernel(dtype: str, self_loop: int, mode: int):
    """(kernel, grid) of the cooperative loop, compiled and sized once per process."""
    ct = _CTYPE[dtype]
    k = get_kernel(_LOOP_CU, f"frontier_loop<int, {ct}, {self_loop}, {mode}>", _loop_names(ct),
                   (f"-DSR_GROUP={_LOOP_GROUP}", f"-DSR_BLOCK_SOURCE={_LOOP_BLOCK_SOURCE}",
                    f"-DSR_MARK_PACKED={_LOOP_MARK_PACKED}"), cooperative=True)
    return k, min(resident_blocks(k, _THREADS), max(1, _LOOP_BLOCKS_PER_SM) * sm_count())


def _loop_names(ct: str) -> tuple:
    return tuple(f"frontier_loop<int, {ct}, {s}, {m}>" for s in (0, 1) for m in (1, 2))


def _read_status(ws):
    """(status, per-iteration frontier sizes, sum of the iterate) with one synchronization."""
    cp = _cupy()
    n_hist = int(ws.hist.shape[0])
    if ws.result_host is None or ws.result_host[1].shape[0] < n_hist:
        mem = cp.cuda.alloc_pinned_memory(16 + 8 + 4 * n_hist)
        ws.result_host = (np.frombuffer(mem, dtype=np.int32, count=4),
                           np.frombuffer(mem, dtype=np.int32, count=n_hist, offset=24),
                           np.frombuffer(mem, dtype=np.float64, count=1, offset=16), mem)
    st, hist, tot, _ = ws.result_host
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memcpyAsync(st.ctypes.data, ws.status.data.ptr, 16, 2, stream.ptr)
    cp.cuda.runtime.memcpyAsync(tot.ctypes.data, ws.scalars.data.ptr, 8, 2, stream.ptr)
    cp.cuda.runtime.memcpyAsync(hist.ctypes.data, ws.hist.data.ptr, 4 * n_hist, 2, stream.ptr)
    stream.synchronize()  # sync: the loop's status, frontier sizes and sum(x) (one wait per batch)
    return st.copy(), hist, float(tot[0])

