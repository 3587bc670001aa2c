"""Static, Naive-dynamic, Dynamic Traversal, DF and DF-P PageRank on the device.

Same functions, arguments and semantics as :mod:`streamrank.pagerank_cpu` (docs/ARCHITECTURE.md,
"Rank contract"), for a :class:`streamrank.graph_gpu.GpuGraph`: local form ``x``, Jacobi
iterations, convergence ``max|dx| / sum(x) < tol``, DF/DF-P marking rules, self-loop closed
form. The iterations run the kernels of ``kernels/pagerank.cu`` (docs/GPU.md explains the
design):

- vertices to process are kept as compacted lists split by in-degree (thread-per-vertex kernel
  ``rank_small`` below ``config.switch_degree``, block-per-vertex kernel ``rank_large`` at or
  above), rebuilt every iteration on the device by warp-aggregated appends; flagged vertices are
  listed the same way split by out-degree for the two marking kernels (``post_small``,
  ``mark_large``); so per-iteration work follows the frontier;
- every pointer and constant sits in one device struct (``RankArgs``) uploaded once per call; a
  launch passes two scalars; list lengths stay on the device (grid-stride loops over a fixed
  grid), so the host never waits to size a launch;
- convergence is decided on the device (block results, then the last block of the iteration's
  last launch reduces them); the host reads a 16-byte status once per chunk of iterations, one
  chunk late, so the device never idles waiting for the host (queued launches after
  convergence return at once).

Static iterates the standard form (few iterations), converts to the local form and finishes
with local-form sweeps until the contract's criterion holds; ND, DT, DF and DF-P iterate the
local form. Passes over all vertices that remain per call (docs/GPU.md): ``init_state`` (copy
``x_prev`` into the new ``x``, every contribution and sum(x): about 25 bytes per vertex), and
for Static/ND the work itself.
"""

from __future__ import annotations

import functools
import os
import struct
import time

import numpy as np

from .config import RankConfig, check_algorithm
from .errors import InvalidArgumentError, KernelError, StreamrankError
from .gpu_launch import _cupy, launch, sm_count
from .graph_gpu import GpuGraph
from .kernels.loader import get_kernel, resident_blocks
from .result import RankResult

_CU = "pagerank.cu"
_CTYPE = {"float64": "double", "float32": "float"}
_NULL = np.uint64(0)  # a null pointer argument
_THREADS = 256  # thread-per-item kernels (SR_SMALL_THREADS in pagerank.cu)
#: Threads of a block of the block-per-vertex kernels (rank_large, mark_large): 64 to 256.
#: Fewer keep more large vertices in flight; more finish a hub sooner (tuning knob,
#: environment variable STREAMRANK_LARGE_THREADS).
_BLOCK_THREADS = int(os.environ.get("STREAMRANK_LARGE_THREADS", "256"))
#: Static/ND/DT lists ordered by in-degree (less divergence, scattered rows) instead of by id
#: (tuning knob, STREAMRANK_SORTED_PARTITION=1).
_SORTED = os.environ.get("STREAMRANK_SORTED_PARTITION", "0") == "1"
_MARK_THREADS = 256  # block-per-vertex marking of the initial marks and DT's traversal
_FINISH_THREADS = 1024
_MODES = {"static": 3, "nd": 0, "dt": 0, "df": 1, "dfp": 2}
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
#: ``auto``: DF-P hands over to warm sweeps when its frontier exceeds this share of the vertices
#: (and the loop's hand-over size). Knob STREAMRANK_AUTO_FLOOD.
_AUTO_FLOOD = float(os.environ.get("STREAMRANK_AUTO_FLOOD", "0.05"))
#: Why the cooperative loop is not used in this process (set at its first failure).
loop_unavailable: str | None = None
#: Counter offsets of the list pairs of a workspace: A, B, flags, C (the loop's third frontier
#: pair), flags 2 (the loop's second flag pair); cnt[6] is the launch sequence's ticket.
_PAIR_CNT = (0, 2, 4, 8, 10)
#: Set to a dict to accumulate per-stage wall times (ms) of the dynamic updates; each stage then
#: ends with a device synchronization, so profile only outside timed runs.
STAGE_MS = None
#: Set to a device uint64 array of at least max_iter + 1 entries to have the frontier loop write
#: the device clock (ns) at the start of each iteration and at its end (profiling).
LOOP_TICKS = None
_T = [0.0]


def _stage(cp, name: str) -> None:
    if STAGE_MS is None:
        return
    cp.cuda.Device().synchronize()  # sync: profiling only
    now = time.perf_counter()
    if name:
        STAGE_MS[name] = STAGE_MS.get(name, 0.0) + (now - _T[0]) * 1e3
    _T[0] = now


_ARGS_FORMAT = "<22Q4dq4i"  # RankArgs<I, V> in pagerank.cu: 22 pointers, 4 doubles, 1 long long, 4 ints
_LISTS_FORMAT = "<16Qqq4Q3qQ"  # LoopLists<I, V> in frontier_loop.cu
_LISTS_OFFSET = 256  # where LoopLists sits in the uploaded buffer, after RankArgs
_UPLOAD_BYTES = 512
_UPLOAD_SLOTS = 4


def _names(ctype: str) -> tuple:
    names = [
        "partition_by_degree<int>", "partition_unique<int>", "mark_direct<int>", "mark_block<int>",
        "clear_marks<int>", "copy_pair<int>", "reduce_blocks", f"post_thread<int, {ctype}>", f"linf_blocks<{ctype}>",
        f"start_totals<int, {ctype}>",
    ]
    for mode in (0, 1, 2):
        names.append(f"post_small<int, {ctype}, {mode}>")
    for mode in (1, 2):
        names.append(f"mark_large<int, {ctype}, {mode}>")
    for self_loop in (0, 1):
        names.append(f"init_state<int, {ctype}, {self_loop}>")
        for mode in (0, 1, 2, 3):
            names.append(f"rank_small<int, {ctype}, {self_loop}, {mode}>")
            names.append(f"rank_large<int, {ctype}, {self_loop}, {mode}>")
    return tuple(names)


def _kernel(dtype: str, name: str):
    return get_kernel(_CU, name, _names(_CTYPE[dtype]))


def compile_kernels(dtype: str = "float64") -> None:
    """Compile (once per process) every kernel of ``pagerank.cu`` for ``dtype``."""
    if dtype not in _CTYPE:
        raise InvalidArgumentError(f"dtype must be one of {tuple(_CTYPE)}, got {dtype!r}")
    _kernel(dtype, "reduce_blocks")


# ---------------------------------------------------------------------- workspace
class _Workspace:
    """Per-graph, per-dtype device buffers reused between calls (sized for ``n`` vertices).

    ``aff`` (affected flags) is all zero between calls: every call clears what it set.
    """

    def __init__(self, cp, n: int, dtype: str):
        self.n = n
        self.dtype = dtype
        vt = cp.dtype(dtype)
        self.c = cp.zeros(n, dtype=vt)
        self.cn = cp.zeros(n, dtype=vt)
        self.aff = cp.zeros(n, dtype=cp.int32)
        # list pairs (small, large): A, B, flags, C, flags 2 (the last two: the cooperative loop)
        self.lists = cp.zeros((10, n), dtype=cp.int32)
        self.cnt = cp.zeros(12, dtype=cp.int32)  # A: 0,1  B: 2,3  flags: 4,5  ticket: 6  C: 8,9  flags 2: 10,11
        self.status = cp.zeros(4, dtype=cp.int32)  # done, iterations, converged
        self.scalars = cp.zeros(2, dtype=cp.float64)  # sum of the iterate, base term
        self.gt = 8 * sm_count()  # blocks of the thread-per-vertex kernels (256 threads)
        self.gb = 16 * sm_count()  # blocks of the block-per-vertex kernels (64 threads)
        self.part = cp.zeros(3 * (self.gt + self.gb), dtype=cp.float64)
        self.hist = cp.zeros(1, dtype=cp.int32)
        self._pinned = [cp.cuda.alloc_pinned_memory(16) for _ in range(2)]
        self.host_status = [np.frombuffer(m, dtype=np.int32, count=4) for m in self._pinned]
        self.loop_part = None  # the cooperative loop's block results (sized at its first use)
        self.result_host = None  # pinned (status, frontier sizes, sum) read once per loop
        # argument structs go up through a ring of pinned staging buffers (asynchronous copies);
        # an event per slot guards its reuse
        self.upload_host = [np.frombuffer(cp.cuda.alloc_pinned_memory(_UPLOAD_BYTES), dtype=np.uint8,
                                          count=_UPLOAD_BYTES) for _ in range(_UPLOAD_SLOTS)]
        self.upload_dev = [cp.zeros(_UPLOAD_BYTES, dtype=cp.uint8) for _ in range(_UPLOAD_SLOTS)]
        self.upload_done = [None] * _UPLOAD_SLOTS
        self.upload_next = 0

    def row_ptr(self, row: int) -> int:
        """Device address of list row ``row`` (no array view made: views cost microseconds)."""
        return int(self.lists.data.ptr) + 4 * row * int(self.lists.shape[1])

    def list_pair(self, which: int):
        """(small list, large list, counters view) of pair 0 (A), 1 (B), 2 (flags), 3 (C) or 4
        (flags 2)."""
        c = _PAIR_CNT[which]
        return self.lists[2 * which], self.lists[2 * which + 1], self.cnt[c: c + 2]


def _workspace(graph: GpuGraph, dtype: str) -> _Workspace:
    cp = graph.xp
    n = graph.num_vertices
    cache = graph.__dict__.setdefault("_rank_workspaces", {})
    ws = cache.get(dtype)
    if ws is None or ws.n < n:
        ws = _Workspace(cp, max(n + n // 4, 16), dtype)
        cache[dtype] = ws
    return ws


# ---------------------------------------------------------------------- one run of iterations
def _upload(cp, ws, parts) -> object:
    """``parts`` ((offset, bytes) pairs) into one device buffer of the workspace: one asynchronous
    host-to-device copy from pinned memory, ordered on the stream before the launches that read
    it (no host wait, unless the slot's previous copy has not run yet)."""
    k = ws.upload_next
    ws.upload_next = (k + 1) % _UPLOAD_SLOTS
    if ws.upload_done[k] is not None:
        ws.upload_done[k].synchronize()  # sync: only if this slot's last copy is still queued
    host, dev = ws.upload_host[k], ws.upload_dev[k]
    end = 0
    for offset, raw in parts:
        host[offset: offset + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        end = max(end, offset + len(raw))
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, end, 1, stream.ptr)
    event = cp.cuda.Event(disable_timing=True)
    event.record(stream)
    ws.upload_done[k] = event
    return dev


def _args_bytes(graph, ws, x, config) -> bytes:
    """The RankArgs struct of pagerank.cu."""
    cp = graph.xp
    if ws.hist.shape[0] < config.max_iter + 1:
        ws.hist = cp.zeros(config.max_iter + 1, dtype=cp.int32)
    g = graph
    arrays = [g._in.off, g._in.deg, g._in.idx, g._out.off, g._out.deg, g._out.idx, x, ws.c, ws.cn, ws.aff]
    scal = int(ws.scalars.data.ptr)
    ptrs = ([int(a.data.ptr) for a in arrays] + [ws.row_ptr(r) for r in range(6)]
            + [int(ws.cnt.data.ptr), int(ws.status.data.ptr), scal, scal + 8, int(ws.part.data.ptr),
               int(ws.hist.data.ptr)])
    return struct.pack(_ARGS_FORMAT, *ptrs,
                       float(config.alpha), float(config.frontier_tol), float(config.prune_tol),
                       float(config.tol), int(graph.num_vertices), int(config.max_iter),
                       int(config.switch_degree), int(ws.gt), int(ws.gb))


def _pack_args(graph, ws, x, config):
    """The RankArgs struct of pagerank.cu as a device buffer (one asynchronous upload)."""
    return _upload(graph.xp, ws, [(0, _args_bytes(graph, ws, x, config))])


class _Iterations:
    """Launch sequences of one rank computation (MODE 0: DT/ND; 1: DF; 2: DF-P; 3: Static).

    An iteration is ``rank_small`` + ``rank_large`` (+ ``post_small`` for MODE 0-2, +
    ``mark_large`` for DF/DF-P), each launch taking two scalar arguments.
    """

    def __init__(self, graph: GpuGraph, ws: _Workspace, config: RankConfig, mode: int, args):
        if _BLOCK_THREADS not in (64, 96, 128, 160, 192, 224, 256):
            raise InvalidArgumentError(f"STREAMRANK_LARGE_THREADS must be a multiple of 32 in 64..256, got {_BLOCK_THREADS}")
        self.g, self.ws, self.cfg, self.mode, self.args = graph, ws, config, mode, args
        self_loop = 1 if config.dangling == "self-loop" else 0
        ct = _CTYPE[config.dtype]
        k = lambda name: _kernel(config.dtype, name)  # noqa: E731
        self.seq = [(k(f"rank_small<int, {ct}, {self_loop}, {mode}>"), ws.gt, _THREADS),
                    (k(f"rank_large<int, {ct}, {self_loop}, {mode}>"), ws.gb, _BLOCK_THREADS)]
        if mode != 3:
            self.seq.append((k(f"post_small<int, {ct}, {mode}>"), ws.gt, _THREADS))
        if mode in (1, 2):
            self.seq.append((k(f"mark_large<int, {ct}, {mode}>"), ws.gb, _BLOCK_THREADS))

    def launch(self, it: int) -> None:
        """Queue iteration ``it`` (asynchronous; a no-op on the device once converged)."""
        parity = np.int32(it % 2)
        for fn, grid, block in self.seq:
            launch(fn, grid, block, (self.args, parity))

    def run(self, start: int = 0):
        """Iterate until the device reports convergence or ``max_iter``, from iteration ``start``
        (the device's status already counts that many).

        Returns ``(iterations, converged, affected_per_iteration, total, base)``.
        """
        cp = self.g.xp
        ws = self.ws
        stream = cp.cuda.get_current_stream()
        it, chunk_no = int(start), 0
        prev = None
        while True:
            size = 2 if chunk_no < 2 else (4 if chunk_no < 4 else 8)
            for _ in range(size):
                self.launch(it)
                it += 1
            buf = ws.host_status[chunk_no % 2]
            # Asynchronous 16-byte copy of the status into pinned memory, then an event.
            cp.cuda.runtime.memcpyAsync(buf.ctypes.data, ws.status.data.ptr, 16, 2, stream.ptr)
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
            if prev is not None:
                # Sync: wait for the previous chunk's status while this chunk runs on the device.
                prev[0].synchronize()
                if prev[1][0]:
                    break
            if it > self.cfg.max_iter + 16:  # the device stops at max_iter; never loop forever
                break
            prev = (event, buf)
            chunk_no += 1
        event.synchronize()  # sync: the last status copy (issued after every launch) has landed
        iterations, converged = int(buf[1]), bool(buf[2])
        affected = ws.hist[:iterations].get().tolist()  # sync: small copy
        total, base = (float(v) for v in ws.scalars.get())  # sync: two scalars
        return iterations, converged, affected, total, base


# ---------------------------------------------------------------------- helpers
def _check(graph, config):
    if not isinstance(graph, GpuGraph):
        raise InvalidArgumentError(f"the GPU backend needs a GpuGraph, got {type(graph).__name__}")
    if config is None:
        config = RankConfig()
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    return config


def _as_prev(graph, x_prev, dtype: str):
    """``x_prev`` as a device array of ``dtype``, no longer than the graph."""
    cp = graph.xp
    if x_prev is None:
        return None
    x_prev = cp.asarray(x_prev)
    if x_prev.ndim != 1:
        raise InvalidArgumentError(f"x_prev must be one-dimensional, got shape {x_prev.shape}")
    if x_prev.shape[0] > graph.num_vertices:
        raise InvalidArgumentError(
            f"x_prev has {x_prev.shape[0]} entries but the graph has {graph.num_vertices} vertices")
    return x_prev.astype(dtype, copy=False)


def _init(graph, ws, x, x_prev, config, *, standard: bool):
    """Reset, pack the arguments, then x = x_prev (+ ones for new vertices), c = x / d, total and
    base: one pass over |V|. Returns the packed arguments."""
    ws.status.fill(0)
    ws.cnt.fill(0)
    args = _pack_args(graph, ws, x, config)
    self_loop = 1 if config.dangling == "self-loop" else 0
    ct = _CTYPE[config.dtype]
    n_prev = 0 if x_prev is None else int(x_prev.shape[0])
    blocks = int(min(ws.gt, max(1, -(-graph.num_vertices // _THREADS))))
    launch(_kernel(config.dtype, f"init_state<int, {ct}, {self_loop}>"), blocks, _THREADS,
           (args, np.int64(n_prev), x_prev if n_prev else _NULL))
    launch(_kernel(config.dtype, f"start_totals<int, {ct}>"), 1, _FINISH_THREADS,
           (args, np.int32(blocks), np.int32(1 if standard else 0)))
    return args


def _partition(graph, ws, ids, count: int, degree, which: int, config) -> None:
    """Append ``ids`` (or every vertex when ``ids`` is None) to list pair ``which`` by degree."""
    s, l, cnt = ws.list_pair(which)
    if count == 0:
        return
    launch(_kernel(config.dtype, "partition_by_degree<int>"), _grid(count, ws), _THREADS,
           (ids if ids is not None else _NULL, np.int64(count), degree, np.int32(config.switch_degree),
            s, l, cnt))


def _partition_sorted(graph, ws, ids, count: int, config) -> None:
    """Pair A = ``ids`` (or every vertex) ordered by in-degree: the small list ascending (so a
    warp's 32 threads loop over similar degrees), the large list descending (biggest first).
    Device work only (an argsort, no host sync); used where the list serves many iterations."""
    cp = graph.xp
    if count == 0:
        return
    deg = graph._in.deg
    if ids is None:
        order = cp.argsort(deg[:count]).astype(cp.int32)
    else:
        order = ids[cp.argsort(deg[ids])].astype(cp.int32)
    ws.lists[0][:count] = order
    ws.lists[1][:count] = order[::-1]
    n_small = cp.searchsorted(deg[order], cp.asarray([config.switch_degree], dtype=deg.dtype)).astype(cp.int32)
    ws.cnt[0:1] = n_small
    ws.cnt[1:2] = np.int32(count) - n_small


def _grid(items: int, ws) -> int:
    return int(max(1, min(-(-int(items) // _THREADS), ws.gt)))


def _mark_direct(graph, ws, ids, split_degree, which: int, config) -> None:
    m = int(ids.shape[0])
    if m == 0:
        return
    s, l, cnt = ws.list_pair(which)
    launch(_kernel(config.dtype, "mark_direct<int>"), _grid(m, ws), _THREADS,
           (ids, np.int64(m), ws.aff, split_degree, np.int32(config.switch_degree), s, l, cnt))


def _mark_out_neighbours(graph, ws, flag_pair: int, split_degree, which: int, config) -> None:
    """Mark the out-neighbours of the vertices of list pair ``flag_pair`` into pair ``which``."""
    g = graph
    fs, fl, fcnt = ws.list_pair(flag_pair)
    ns, nl, ncnt = ws.list_pair(which)
    sw = np.int32(config.switch_degree)
    ct = _CTYPE[config.dtype]
    launch(_kernel(config.dtype, f"post_thread<int, {ct}>"), ws.gt, _THREADS,
           (fs, fl, _NULL, ws.cn, ws.c, fs, fcnt, g._out.off, g._out.deg, g._out.idx, split_degree,
            ws.aff, ns, nl, ncnt, sw, ws.status))
    launch(_kernel(config.dtype, "mark_block<int>"), ws.gb, _MARK_THREADS,
           (fl, fcnt, g._out.off, g._out.deg, g._out.idx, split_degree, ws.aff, ns, nl, ncnt, sw,
            ws.status))


def _clear_marks(ws, pairs, config) -> None:
    k = _kernel(config.dtype, "clear_marks<int>")
    for p in pairs:
        s, l, cnt = ws.list_pair(p)
        launch(k, ws.gt, _THREADS, (s, l, cnt, ws.aff))


def _result(x, iterations, converged, affected, total, algorithm, initially) -> RankResult:
    return RankResult(x=x, total=total, iterations=iterations, converged=converged,
                      affected=affected, algorithm=algorithm, device="gpu",
                      initially_affected=int(initially))


def _wrap(fn):
    """Run ``fn`` re-raising CuPy/CUDA errors as KernelError."""
    try:
        return fn()
    except StreamrankError:
        raise
    except Exception as exc:  # cupy.cuda.runtime.CUDARuntimeError, OutOfMemoryError, ...
        if type(exc).__module__.startswith("cupy"):
            raise KernelError(f"GPU PageRank failed: {exc}") from exc
        raise


# ---------------------------------------------------------------------- public API
def static_pagerank(graph, *, config: RankConfig | None = None, x0=None, algorithm: str = "static") -> RankResult:
    """PageRank from scratch (or warm-started from ``x0``) on the device.

    Parameters
    ----------
    graph : GpuGraph
    config : RankConfig, optional
    x0 : array, optional
        Starting ``x`` (length at most ``num_vertices``; missing entries start at 1).
    algorithm : str, optional
        Name recorded in the result (``"nd"`` when called for Naive-dynamic).

    Returns
    -------
    RankResult
        ``x`` is a CuPy array of ``config.dtype``; ``device="gpu"``.
    """
    config = _check(graph, config)
    return _wrap(lambda: _static(graph, config, x0, algorithm))


def _static(graph, config, x0, algorithm):
    cp = graph.xp
    n = graph.num_vertices
    x = cp.ones(n, dtype=config.dtype)
    if n == 0:
        return _result(x, 0, True, [], 0.0, algorithm, 0)
    ws = _workspace(graph, config.dtype)
    standard = algorithm in ("static", "warm")
    args = _init(graph, ws, x, _as_prev(graph, x0, config.dtype), config, standard=standard)
    if _SORTED:
        _partition_sorted(graph, ws, None, n, config)
    else:
        _partition(graph, ws, None, n, graph._in.deg, 0, config)
    if algorithm == "warm":
        return _warm_sweeps(graph, ws, x, config, args, 0, [], algorithm)
    iterations, affected = 0, []
    if standard:
        # Standard form first (few iterations), then back to the local form x = y / base.
        its, _, aff, _, base = _Iterations(graph, ws, config, 3, args).run()
        iterations, affected = its, aff
        x /= x.dtype.type(base)
        _restart(graph, ws, args, x, config)
    # Local-form Jacobi sweeps over every vertex until the contract's criterion holds: ND from
    # x_prev; for Static usually one sweep (exact on acyclic parts, as on the CPU).
    its, converged, aff, total, _ = _Iterations(graph, ws, config, 0, args).run()
    return _result(x, iterations + its, converged, affected + aff, total, algorithm, n)


def _warm_sweeps(graph, ws, x, config, args, iterations: int, affected: list, algorithm: str):
    """Standard-form sweeps over every vertex (list pair A holds them all, the arguments are
    initialized for the standard form) from the current ``x`` until the criterion holds on p;
    then ``x = y / base`` in place (no local-form finishing sweep: the criterion is the same)."""
    its, converged, aff, total, base = _Iterations(graph, ws, config, 3, args).run()
    x /= x.dtype.type(base)
    return _result(x, iterations + its, converged, affected + aff, total / base, algorithm, graph.num_vertices)


def _restart(graph, ws, args, x, config, *, standard: bool = False) -> None:
    """Recompute contributions, sum (and for the standard form the base term) from ``x`` in
    place and reset the status (lists kept)."""
    self_loop = 1 if config.dangling == "self-loop" else 0
    ct = _CTYPE[config.dtype]
    ws.status.fill(0)
    blocks = int(min(ws.gt, max(1, -(-graph.num_vertices // _THREADS))))
    launch(_kernel(config.dtype, f"init_state<int, {ct}, {self_loop}>"), blocks, _THREADS,
           (args, np.int64(graph.num_vertices), x))
    launch(_kernel(config.dtype, f"start_totals<int, {ct}>"), 1, _FINISH_THREADS,
           (args, np.int32(blocks), np.int32(1 if standard else 0)))


def update_pagerank(algorithm: str, graph, changes, x_prev, *, config: RankConfig | None = None) -> RankResult:
    """Update ranks after ``graph.apply`` returned ``changes``.

    Parameters
    ----------
    algorithm : {"static", "nd", "dt", "df", "dfp", "warm", "auto"}
        ``"warm"``: standard-form sweeps over every vertex from ``x_prev``. ``"auto"``: DF-P,
        switching to warm sweeps within the batch when its frontier floods (grows past the
        cooperative loop's hand-over size); the result's ``algorithm`` says what ran
        (``"dfp"`` or ``"dfp>warm"``).
    graph : GpuGraph
        The graph after the batch.
    changes : AppliedChanges
        What the batch changed (device arrays of internal ids).
    x_prev : array
        The previous local-form ranks (length ``changes.num_vertices_before``); not modified.
    config : RankConfig, optional

    Returns
    -------
    RankResult
    """
    check_algorithm(algorithm)
    config = _check(graph, config)
    if algorithm == "static":
        return static_pagerank(graph, config=config)
    if x_prev is None:
        raise InvalidArgumentError(f"{algorithm} needs x_prev")
    if algorithm in ("nd", "warm"):
        return static_pagerank(graph, config=config, x0=x_prev, algorithm=algorithm)
    return _wrap(lambda: _dynamic(algorithm, graph, changes, x_prev, config))


def _dynamic(algorithm, graph, changes, x_prev, config):
    cp = graph.xp
    n = graph.num_vertices
    xp_ = _as_prev(graph, x_prev, config.dtype)
    label = "dfp" if algorithm == "auto" else algorithm
    if changes.empty or n == 0:
        x = cp.ones(n, dtype=config.dtype)
        x[: xp_.shape[0]] = xp_
        return _result(x, 0, True, [], float(x.sum()), label, 0)  # sync: the total
    _stage(cp, "")
    ws = _workspace(graph, config.dtype)
    x = cp.empty(n, dtype=config.dtype)
    mode = _MODES[label]
    if mode in (1, 2) and _LOOP:
        # The whole batch (start, initial marks, iterations) in one cooperative launch.
        flood = int(_AUTO_FLOOD * n) if algorithm == "auto" else None
        done = _frontier_loop(graph, ws, x, xp_, changes, config, mode, flood)
        if done is not None:
            _stage(cp, "start, marks and iterations (one cooperative launch)")
            if done[0] is not None:  # the loop ran to the end
                iterations, converged, affected, total = done
                initially = affected[0] if affected else 0
                return _result(x, iterations, converged, affected, total, label, initially)
            return _continue(graph, ws, x, config, mode, done[3], algorithm, done[1], done[2])
    args = _init(graph, ws, x, xp_, config, standard=False)
    _stage(cp, "init (pass over |V|)")
    self_loop = config.dangling == "self-loop"
    i32 = lambda a: cp.asarray(a).astype(cp.int32)  # noqa: E731
    ins_src, ins_dst = i32(changes.ins_src), i32(changes.ins_dst)
    del_src, del_dst = i32(changes.del_src), i32(changes.del_dst)

    if algorithm == "dt":
        return _dt(graph, ws, x, config, args, cp.concatenate([ins_src, ins_dst, del_src, del_dst]))

    # Initial marking (into list pair A): targets of deletions (and in self-loop mode the sources
    # themselves), then the out-neighbours of every source of a changed edge (sorted on the
    # device; partition_unique takes each distinct source once, so no count comes back).
    direct = [del_dst] + ([ins_src, del_src] if self_loop else [])
    _mark_direct(graph, ws, cp.concatenate(direct), graph._in.deg, 0, config)
    sources = cp.sort(cp.concatenate([ins_src, del_src]))
    m = int(sources.shape[0])
    if m:
        s, l, cnt = ws.list_pair(2)
        launch(_kernel(config.dtype, "partition_unique<int>"), _grid(m, ws), _THREADS,
               (sources, np.int64(m), graph._out.deg, np.int32(config.switch_degree), s, l, cnt))
    _mark_out_neighbours(graph, ws, 2, graph._in.deg, 0, config)
    ws.cnt[4:6] = 0
    _stage(cp, "initial marking")
    return _continue(graph, ws, x, config, mode, args, algorithm, 0, [])


def _continue(graph, ws, x, config, mode, args, algorithm, start, hist):
    """Iterations of the launch sequence from iteration ``start`` (frontier in pair start % 2),
    or, for ``auto`` after the loop handed a flooded frontier over, warm sweeps."""
    cp = graph.xp
    if algorithm == "auto" and start:  # the frontier flooded: warm sweeps finish the batch
        _clear_marks(ws, (start % 2,), config)
        ws.cnt.fill(0)
        _restart(graph, ws, args, x, config, standard=True)
        _partition(graph, ws, None, graph.num_vertices, graph._in.deg, 0, config)
        res = _warm_sweeps(graph, ws, x, config, args, start, hist, "dfp>warm")
        _stage(cp, "warm sweeps")
        res.initially_affected = hist[0] if hist else 0
        return res
    runner = _Iterations(graph, ws, config, mode, args)
    iterations, converged, affected, total, _ = runner.run(start)
    _stage(cp, "iterations")
    _clear_marks(ws, (0, 1), config)
    _stage(cp, "clear marks")
    initially = affected[0] if affected else 0
    label = "dfp" if algorithm == "auto" else algorithm
    return _result(x, iterations, converged, affected, total, label, initially)


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
    try:
        k, grid = _loop_kernel(config.dtype, self_loop, mode)
        handover = int(_LOOP_HANDOVER * grid * _THREADS)
        if flood is not None:
            handover = max(handover, int(flood))
        groups = grid * _THREADS // _LOOP_GROUP
        lists = _lists_bytes(ws, cp, grid, handover, int(_LOOP_WARP_FACTOR * groups), x_prev, changes)
        buf = _upload(cp, ws, [(0, _args_bytes(graph, ws, x, config)), (_LISTS_OFFSET, lists)])
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
                   (f"-DSR_GROUP={_LOOP_GROUP}",), cooperative=True)
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


def _dt(graph, ws, x, config, args, endpoints):
    """Dynamic Traversal: breadth-first marking from the endpoints, then iterate that set."""
    cp = graph.xp
    seeds = cp.unique(endpoints)  # syncs once to size the result
    _mark_direct(graph, ws, seeds, graph._out.deg, 0, config)
    levels = []
    cur = 0
    while True:
        c0, c1 = (int(v) for v in ws.cnt[2 * cur: 2 * cur + 2].get())  # sync: one per BFS level
        if c0 + c1 == 0:
            break
        s, l, _ = ws.list_pair(cur)
        levels += [s[:c0].copy(), l[:c1].copy()]
        nxt = 1 - cur
        ws.cnt[2 * nxt: 2 * nxt + 2] = 0
        _mark_out_neighbours(graph, ws, cur, graph._out.deg, nxt, config)
        cur = nxt
    reached = cp.concatenate(levels)
    ws.aff[reached] = 0
    ws.cnt.fill(0)
    if _SORTED:
        _partition_sorted(graph, ws, reached.astype(cp.int32), int(reached.shape[0]), config)
    else:
        _partition(graph, ws, reached.astype(cp.int32), int(reached.shape[0]), graph._in.deg, 0, config)
    runner = _Iterations(graph, ws, config, 0, args)
    iterations, converged, affected, total, _ = runner.run()
    return _result(x, iterations, converged, affected, total, "dt", int(reached.shape[0]))


def device_linf(a, b) -> float:
    """``max |a - b|`` on the device: block results, then one block over them, one scalar back."""
    cp = _cupy()
    a = cp.asarray(a)
    b = cp.asarray(b, dtype=a.dtype)
    if a.shape != b.shape or a.ndim != 1:
        raise InvalidArgumentError(f"device_linf needs two vectors of one shape, got {a.shape}, {b.shape}")
    if a.dtype.name not in _CTYPE:
        a, b = a.astype(cp.float64), b.astype(cp.float64)
    dtype = a.dtype.name
    n = int(a.shape[0])
    if n == 0:
        return 0.0
    blocks = int(min(-(-n // _THREADS), 8 * sm_count()))
    part = cp.empty(blocks, dtype=cp.float64)
    out = cp.empty(1, dtype=cp.float64)
    launch(_kernel(dtype, f"linf_blocks<{_CTYPE[dtype]}>"), blocks, _THREADS, (a, b, np.int64(n), part))
    launch(_kernel(dtype, "reduce_blocks"), 1, _FINISH_THREADS, (part, np.int32(blocks), out, np.int32(1)))
    return float(out.get()[0])  # sync: the one scalar
