"""DF/DF-P for one batch as one cooperative launch (``kernels/cuda/frontier_loop.cu``): its compile
settings, its argument struct ``LoopLists``, the launch and the one status read of the batch.

Private to :mod:`streamrank.rank.gpu.pagerank`.
"""

from __future__ import annotations

import functools
import struct
from typing import NamedTuple

import numpy as np

from ...errors import InvalidArgumentError
from ...kernels.cuda.launch import _cupy, launch, sm_count
from ...kernels.cuda.loader import get_kernel, resident_blocks
from .state import _CTYPE, _PAIR_CNT, _THREADS, _UPLOAD_BYTES, WEIGHTED_OPTIONS, _args_bytes, _kernel, is_weighted

_LOOP_CU = "frontier_loop.cu"
#: Copies of each per-iteration accumulator of the loop (SR_SPREAD, at most 32); its buffer holds
#: the block sums of phase I, then 3 rotating sets x 2 accumulators x this many copies.
_SPREAD = 32
_ACCUMULATORS = 3 * 2 * _SPREAD
#: DF/DF-P run their whole iteration loop in one cooperative launch (``frontier_loop.cu``); False
#: runs the launch sequence of pagerank.cu for every iteration, as it does for frontiers past the
#: hand-over size (the reference tests/test_gpu_frontier_loop.py compares the loop against).
_LOOP = True
#: Blocks per multiprocessor of the cooperative loop (fewer: cheaper grid barriers; more: more
#: vertices in flight), capped by what is resident.
_LOOP_BLOCKS_PER_SM = 4
#: The loop hands over to the launch sequence when a frontier exceeds this many vertices per
#: resident thread of the loop's grid.
_LOOP_HANDOVER = 4.0
#: Frontier lists of up to this many vertices per lane group of the loop's grid take a group of
#: lanes per vertex (in-edges gathered, out-edges marked together) instead of a thread per vertex;
#: the group has _LOOP_GROUP lanes (2, 4, 8, 16 or 32).
_LOOP_WARP_FACTOR = 4.0
_LOOP_GROUP = 8
#: Shorter lists take wider groups first: a warp per vertex while the list fits the grid's warps
#: once, 16 lanes while it fits them twice (1; 0: _LOOP_GROUP lanes for every list up to the
#: limit).
_LOOP_TIERS = 1
#: A small vertex that stays in the frontier is appended to the next one in its marking's first
#: round (1: self-loop mode; 2: both modes; 0: neither).
_LOOP_FOLD = 1
#: Initial marking: sources of at least this out-degree take a block, smaller ones a warp. 64
#: against 1024: the loop's device time 3-7% lower on sx-mathoverflow.
_LOOP_BLOCK_SOURCE = 64
#: The loop's rank updates write the new contributions in place (True): a vertex may read this
#: iteration's value of an in-neighbour updated before it (asynchronous relaxation), instead of
#: the previous iteration's only (False, Jacobi, the default: its iterations and frontiers are the
#: launch sequence's; tests/test_gpu_frontier_loop.py checks the in-place loop's fixed point).
_LOOP_IN_PLACE = False
#: Why the cooperative loop is not used in this process (set at its first failure).
loop_unavailable: str | None = None
#: Set to a device uint64 array of at least 3 * max_iter + 4 entries to have the frontier loop
#: write the device clock (ns) at its start, after its first two phases, at the start of each
#: iteration and after its barrier, and at its end (profiling; layout in frontier_loop.cu's
#: LoopLists::ticks).
LOOP_TICKS = None
#: Profiling: set to 1 before the loop is first compiled (benchmarks/profiling/loop_trace.py) to
#: have it also write, into LOOP_TICKS from entry 2048 on, for each of the first 64 iterations and
#: each warp w of the grid, 4 entries at 2048 + (iteration * warps + w) * 4: the device clock when
#: the warp's large-list work ended, when its small-list work ended, its multiprocessor << 52 | its
#: small groups << 40 | largest marking degree << 20 | largest in-degree, and the clock when its
#: copies ended; then at 2048 + 64 * warps * 4 + 2 * iteration the small and large list sizes.
#: LOOP_TICKS then needs 2048 + 64 * warps * 4 + 128 entries.
_LOOP_TRACE = 0
#: Half-block teams take the large vertices when they outnumber the blocks: -1 in uniform mode
#: only, 1 in both modes, 0 in neither.
_LOOP_HALVES = -1
#: Blocks of 256 threads the loop is compiled to keep resident per multiprocessor
#: (``__launch_bounds__``; registers per thread at most 65,536 / (256 x blocks)), in self-loop mode
#: and in uniform mode (each 1 to 8).
_LOOP_MIN_BLOCKS = (4, 3)
#: The loop reads its argument structs from a copy in shared memory, which the grid barriers' L1
#: invalidation does not reach: bits 1 RankArgs, 2 LoopLists (its registers spill), 4 the LoopLists
#: fields of the decision; 5 (1 and 4) is the fastest.
_LOOP_ARGS_SHARED = 5
_LISTS_PREFIX = "<14Qqq"  # LoopLists<I, V> in frontier_loop.cu: lists, counters, block results, stamps, sizes
_LISTS_SUFFIX = "<4Q3qQQq"  # then the batch: x_prev, changed edges, their counts, ticks, graph counters, epoch
#: The loop's four frontier pairs in the workspace's list pairs (A, B, C, then the flag pair the
#: launch sequence uses; the loop has no flag lists).
_LOOP_PAIRS = (0, 1, 3, 2)
#: Frontier stamps are 32-bit: past this the stamps are zeroed and the epoch starts again.
_EPOCH_LIMIT = 2**32 - 1
_LISTS_OFFSET = 256  # where LoopLists sits in the uploaded buffer, after RankArgs
#: Where, in the argument image, the batch's changed-edge pointers (ins_src, del_src, del_dst:
#: the fields after x_prev) and the graph counters' pointer sit (an armed image is patched there).
_BATCH_OFFSET = _LISTS_OFFSET + struct.calcsize(_LISTS_PREFIX) + 8
_COUNTS_OFFSET = _LISTS_OFFSET + struct.calcsize(_LISTS_PREFIX) + 64
_pack_edges = struct.Struct("<3Q").pack_into
_pack_counts = struct.Struct("<Q").pack_into


class ArmedLoop(NamedTuple):
    """The next batch's loop, packed before the batch arrives (:func:`arm_loop`): its argument
    image (a host copy, the batch's fields still to be written), the captured loop it replays and
    the iterate it writes."""

    image: np.ndarray
    graph: object
    x: object


def host_batch(ws, cp, changes) -> tuple:
    """The loop's batch fields for applied ``changes`` whose sizes the host knows:
    (ins_src, del_src, del_dst pointers, n_ins, n_del, counts pointer = 0)."""
    edges = [cp.ascontiguousarray(a, dtype=cp.int64) for a in (changes.ins_src, changes.del_src, changes.del_dst)]
    ws.loop_batch = edges  # kept alive until the launch has read them
    ptr = lambda a: int(a.data.ptr) if a.shape[0] else 0  # noqa: E731
    return (*(ptr(a) for a in edges), int(edges[0].shape[0]), int(edges[1].shape[0]), 0)


def pending_batch(pending) -> tuple:
    """The loop's batch fields for a graph update still on the device
    (:class:`streamrank.store.gpu_fast.PendingFast`): the change buffer's sections, and the
    counters from which the loop reads the sizes."""
    base, m = pending.changes_ptr, pending.received
    return base, base + 16 * m, base + 24 * m, 0, 0, pending.counters_ptr


def _lists_bytes(ws, cp, grid: int, handover: int, warp_limit: int, max_iter: int, x_prev, batch: tuple) -> bytes:
    """The LoopLists struct of frontier_loop.cu: the four frontier pairs (:data:`_LOOP_PAIRS`),
    their counters, the block-result buffer, the frontier stamps, the hand-over size, the longest
    list that takes a group of lanes per vertex, the batch (previous ranks, changed edges:
    :func:`host_batch` or :func:`pending_batch`) and the batch's stamp epoch, above every stamp
    of earlier batches (a batch stamps at most ``epoch + max_iter``)."""
    ws.armed_loop = None  # an armed image holds an earlier epoch: packed again after this loop
    if ws.loop_part is None or ws.loop_part.shape[0] < grid + _ACCUMULATORS:  # block sums, accumulators
        ws.loop_part = cp.zeros(grid + _ACCUMULATORS, dtype=cp.float64)
        ws.loop_prefix = None
    if ws.loop_stamp is None:
        ws.loop_stamp = cp.zeros(2 * ws.n, dtype=cp.uint32)  # (ws.loop_epoch starts at 1, above 0)
        ws.loop_prefix = None
    if ws.loop_epoch + max_iter + 1 >= _EPOCH_LIMIT:  # queued before the launch that reads them
        ws.loop_stamp.fill(0)
        ws.loop_epoch = 1
    epoch = ws.loop_epoch
    ws.loop_epoch += max_iter + 1
    key = (grid, int(handover), int(warp_limit))
    if ws.loop_prefix is None or ws.loop_prefix[0] != key:  # the workspace's part, packed once
        base = int(ws.cnt.data.ptr)
        rows = [ws.row_ptr(2 * p + j) for p in _LOOP_PAIRS for j in (0, 1)]
        cnts = [base + 4 * _PAIR_CNT[p] for p in _LOOP_PAIRS]
        ws.loop_prefix = (key, struct.pack(_LISTS_PREFIX, *rows, *cnts, int(ws.loop_part.data.ptr),
                                           int(ws.loop_stamp.data.ptr), *key[1:]))
    p_ins, p_dsrc, p_ddst, n_ins, n_del, counts = batch
    return ws.loop_prefix[1] + struct.pack(
        _LISTS_SUFFIX, int(x_prev.data.ptr) if x_prev.shape[0] else 0, p_ins, p_dsrc, p_ddst,
        int(x_prev.shape[0]), n_ins, n_del, 0 if LOOP_TICKS is None else int(LOOP_TICKS.data.ptr), counts, epoch)


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
    cp = graph.xp
    args = launch_loop(graph, ws, x, x_prev, host_batch(ws, cp, changes), config, mode, flood)
    if args is None:
        return None
    cp.cuda.get_current_stream().synchronize()  # sync: the loop's status, frontier sizes and sum(x) (one wait per batch)
    return loop_outcome(graph, ws, config, args)


def loop_parts(graph, ws, x, x_prev, batch: tuple, config, mode: int, flood=None):
    """``(kernel, grid, image)`` of the cooperative loop for one batch: the kernel (compiled
    once per process), its grid and the argument image (RankArgs at 0, LoopLists at
    :data:`_LISTS_OFFSET`) the launch reads from device memory."""
    self_loop = 1 if config.dangling == "self-loop" else 0
    k, grid = _loop_kernel(config.dtype, self_loop, mode, weighted=is_weighted(graph))
    handover = int(_LOOP_HANDOVER * grid * _THREADS)
    if flood is not None:
        handover = max(handover, int(flood))
    groups = grid * _THREADS // _LOOP_GROUP
    lists = _lists_bytes(ws, graph.xp, grid, handover, int(_LOOP_WARP_FACTOR * groups), int(config.max_iter),
                         x_prev, batch)
    head = _args_bytes(graph, ws, x, config, in_place=_LOOP_IN_PLACE)
    return k, grid, head + bytes(_LISTS_OFFSET - len(head)) + lists


def launch_loop(graph, ws, x, x_prev, batch: tuple, config, mode: int, flood=None, replay=None):
    """Queue the cooperative loop and the copy of its results into pinned memory (no wait;
    :func:`loop_outcome` reads them after the caller's synchronization). The argument image goes
    up from the workspace's fixed pinned slot (one loop per workspace is in flight: its results
    are read before the next is queued), so that ``replay``
    (:class:`streamrank.rank.gpu.capture.BatchGraphs`) can replay the three steps from a captured
    graph. Returns the device argument buffer, or None when cooperative launches are
    unavailable (nothing was queued; :data:`loop_unavailable`)."""
    global loop_unavailable
    if loop_unavailable is not None:
        return None
    try:
        k, grid, image = loop_parts(graph, ws, x, x_prev, batch, config, mode, flood)
        ws.loop_image_host[: len(image)] = np.frombuffer(image, dtype=np.uint8)
        key, queue = _queue_parts(graph, ws, k, grid)
        if replay is None or not replay.replay("rank", key, queue):
            queue()
    except InvalidArgumentError:
        raise
    except Exception as exc:  # compilation, or no cooperative launch on this device
        loop_unavailable = f"{type(exc).__name__}: {exc}"
        return None
    return ws.loop_image_dev


def _queue_parts(graph, ws, k, grid: int):
    """``(key, queue)``: ``queue`` queues the loop's three steps (the argument image's upload from
    the workspace's fixed pinned slot, the launch, the copy of its results), with only fixed
    addresses, so that a captured graph of it replays for every batch while ``key`` is the same."""
    dev = ws.loop_image_dev_ptr

    def queue():
        stream = graph.xp.cuda.get_current_stream()
        graph.xp.cuda.runtime.memcpyAsync(dev, ws.loop_image_host_ptr, _UPLOAD_BYTES, 1, stream.ptr)
        k((grid,), (_THREADS,), (np.uint64(dev), np.uint64(dev + _LISTS_OFFSET)))
        queue_status(ws)

    return (id(k), grid, dev, ws.results_ptr, _status_buffers(ws)[4], int(ws.hist.shape[0])), queue


def arm_loop(graph, ws, x, x_prev, config, mode: int, flood, replay) -> ArmedLoop | None:
    """Pack the next batch's loop before the batch arrives (between batches, beside the running
    loop): its argument image but for the batch's changed edges and counters, and its captured
    graph looked up (or captured) in ``replay``. :func:`launch_armed_loop` then writes those
    fields and replays. The workspace drops an armed loop when anything else packs a loop on it
    (:func:`_lists_bytes`: the stamp epochs) or resizes its results. None when the loop or
    capturing is unavailable here (nothing armed)."""
    if loop_unavailable is not None or replay is None:
        return None
    k, grid, image = loop_parts(graph, ws, x, x_prev, (0, 0, 0, 0, 0, 0), config, mode, flood)
    key, queue = _queue_parts(graph, ws, k, grid)
    captured = replay.graph_for("rank", key, queue)
    if captured is None:
        return None
    return ArmedLoop(np.frombuffer(image, dtype=np.uint8).copy(), captured, x)


def launch_armed_loop(ws, armed: ArmedLoop, pending) -> object:
    """Queue an armed loop (:func:`arm_loop`) for the pending graph update ``pending``
    (:class:`streamrank.store.gpu_fast.PendingFast`): the image into the workspace's pinned slot
    (free: the previous loop's upload ran before the previous batch's wait), the batch's edge
    sections and counters written into it (:func:`pending_batch`), the captured graph replayed.
    Returns the device argument buffer, as :func:`launch_loop`."""
    img = ws.loop_image_host
    img[: armed.image.shape[0]] = armed.image
    p_ins, p_dsrc, p_ddst, _, _, counts = pending_batch(pending)  # the sizes: read from the counters
    _pack_edges(img, _BATCH_OFFSET, p_ins, p_dsrc, p_ddst)
    _pack_counts(img, _COUNTS_OFFSET, counts)
    armed.graph.launch()  # the current stream (CUDA graph replay, streamrank/rank/gpu/capture.py)
    return ws.loop_image_dev


def loop_outcome(graph, ws, config, args):
    """Interpret the loop's status once the stream has been synchronized after
    :func:`queue_status` (see :func:`_frontier_loop` for the result)."""
    status, hist, total = _status_host(ws)
    it = int(status[1])
    if status[3]:  # handed over: frontier in loop pair status[3] - 1 after `it` iterations
        src = _LOOP_PAIRS[int(status[3]) - 1]
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


def _loop_kernel(dtype: str, self_loop: int, mode: int, *, weighted: bool = False):
    """(kernel, grid) of the cooperative loop for the current settings, compiled and sized once per
    process and setting (``weighted``: the weighted build, ``state.WEIGHTED_OPTIONS``)."""
    return _compiled_loop(dtype, self_loop, mode, _LOOP_GROUP, _LOOP_BLOCK_SOURCE, _LOOP_TIERS, _LOOP_FOLD, _LOOP_TRACE,
                          _LOOP_HALVES, tuple(_LOOP_MIN_BLOCKS), _LOOP_ARGS_SHARED, bool(weighted))


def _check_knobs(group: int, block_source: int, fold: int, halves: int, args_shared: int = 5,
                 min_blocks: tuple = (4, 3)) -> None:
    """Raise InvalidArgumentError for compile settings the loop cannot be built with (the module
    constants above, which tests and profiling scripts may set)."""
    if group not in (2, 4, 8, 16, 32):
        raise InvalidArgumentError(f"_LOOP_GROUP must be 2, 4, 8, 16 or 32, got {group}")
    if halves not in (-1, 0, 1):
        raise InvalidArgumentError(f"_LOOP_HALVES must be -1, 0 or 1, got {halves}")
    if fold not in (0, 1, 2):
        raise InvalidArgumentError(f"_LOOP_FOLD must be 0, 1 or 2, got {fold}")
    if not 0 <= args_shared <= 7:
        raise InvalidArgumentError(f"_LOOP_ARGS_SHARED must be 0 to 7, got {args_shared}")
    if block_source < 1:
        raise InvalidArgumentError(f"_LOOP_BLOCK_SOURCE must be at least 1, got {block_source}")
    if len(min_blocks) != 2 or not all(isinstance(b, int) and 1 <= b <= 8 for b in min_blocks):
        raise InvalidArgumentError("_LOOP_MIN_BLOCKS must be two numbers of blocks per multiprocessor from 1 to 8 "
                                   f"(self-loop mode, uniform mode), got {min_blocks!r}")


@functools.lru_cache(maxsize=None)
def _compiled_loop(dtype: str, self_loop: int, mode: int, group: int, block_source: int, tiers: int, fold: int,
                   trace: int, halves: int, min_blocks: tuple, args_shared: int, weighted: bool = False):
    # checked once per setting (errors are not cached)
    _check_knobs(group, block_source, fold, halves, args_shared, min_blocks)
    per_self, per_uniform = min_blocks
    ct = _CTYPE[dtype]
    k = get_kernel(_LOOP_CU, f"frontier_loop<int, {ct}, {self_loop}, {mode}>", _loop_names(ct),
                   (f"-DSR_GROUP={group}", f"-DSR_BLOCK_SOURCE={block_source}", f"-DSR_SPREAD={_SPREAD}",
                    f"-DSR_TIERS={tiers}", f"-DSR_FOLD={fold}", f"-DSR_TRACE={trace}",
                    f"-DSR_HALVES={halves}", f"-DSR_MIN_BLOCKS_SELF={per_self}",
                    f"-DSR_MIN_BLOCKS_UNIFORM={per_uniform}", f"-DSR_ARGS_SHARED={int(args_shared)}")
                   + (WEIGHTED_OPTIONS if weighted else ()),
                   cooperative=True)
    return k, min(resident_blocks(k, _THREADS), max(1, _LOOP_BLOCKS_PER_SM) * sm_count())


def _loop_names(ct: str) -> tuple:
    return tuple(f"frontier_loop<int, {ct}, {s}, {m}>" for s in (0, 1) for m in (1, 2))


def _status_buffers(ws):
    """Pinned memory laid out as the workspace's result block (status at 0, sum(x) at 16,
    frontier sizes at 32), and its address."""
    cp = _cupy()
    n_hist = int(ws.hist.shape[0])
    if ws.result_host is None or ws.result_host[1].shape[0] < n_hist:
        mem = cp.cuda.alloc_pinned_memory(32 + 4 * n_hist)
        ws.result_host = (np.frombuffer(mem, dtype=np.int32, count=4),
                           np.frombuffer(mem, dtype=np.int32, count=n_hist, offset=32),
                           np.frombuffer(mem, dtype=np.float64, count=1, offset=16), mem,
                           int(np.frombuffer(mem, dtype=np.uint8, count=1).ctypes.data))
    return ws.result_host


def queue_status(ws) -> None:
    """Queue the copy of the loop's status, sum(x) and per-iteration frontier sizes (the
    workspace's result block) into pinned memory, read by :func:`loop_outcome` after the
    caller's synchronization."""
    cp = _cupy()
    host_ptr = _status_buffers(ws)[4]
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memcpyAsync(host_ptr, ws.results_ptr, 32 + 4 * int(ws.hist.shape[0]), 2, stream.ptr)


def _status_host(ws):
    st, hist, tot = ws.result_host[:3]
    return st.copy(), hist, float(tot[0])
