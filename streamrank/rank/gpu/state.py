"""Device state of one GPU rank computation: kernels of ``pagerank.cu``, the per-graph workspace
(contribution buffers, frontier lists, counters, block results, pinned staging), the argument
struct ``RankArgs`` and its upload, and the small launch helpers every algorithm shares (start of
the iterate, degree partition, marking, clearing).

Private to :mod:`streamrank.rank.gpu.pagerank` and the other ``rank_gpu`` modules.
"""

from __future__ import annotations

import struct

import numpy as np

from ...errors import InvalidArgumentError
from ...kernels.cuda.launch import launch, sm_count
from ...store.gpu import GpuGraph
from ...kernels.cuda.loader import get_kernel
from ..result import RankResult

_CU = "pagerank.cu"
_CTYPE = {"float64": "double", "float32": "float"}
_NULL = np.uint64(0)  # a null pointer argument
_THREADS = 256  # thread-per-item kernels (SR_SMALL_THREADS in pagerank.cu)
#: Threads of a block of the block-per-vertex kernels (rank_large, mark_large): a block of 256
#: finishes a hub sooner than a smaller one would keep more large vertices in flight.
_BLOCK_THREADS = 256
_MARK_THREADS = 256  # block-per-vertex marking of the initial marks and DT's traversal
_FINISH_THREADS = 1024
#: Counter offsets of the list pairs of a workspace: A, B, flags, C (the cooperative loop's four
#: frontier pairs are A, B, C and flags: frontier_loop._LOOP_PAIRS); cnt[6] is the launch
#: sequence's ticket.
_PAIR_CNT = (0, 2, 4, 8)

_ARGS_FORMAT = "<25Q4dq4i"  # RankArgs<I, V> in rank_common.cuh: 25 pointers, 4 doubles, 1 long long, 4 ints
#: The NVRTC option of the weighted build of the rank kernels (rank_common.cuh, SR_WEIGHTED): the
#: same sources and kernel names, a weight per edge; the unweighted build loads none.
WEIGHTED_OPTIONS = ("-DSR_WEIGHTED=1",)
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


def _kernel(dtype: str, name: str, weighted: bool = False):
    """A kernel of ``pagerank.cu``; ``weighted``: of its weighted build (the kernels that compute
    values differ; the others are the same in both)."""
    return get_kernel(_CU, name, _names(_CTYPE[dtype]), WEIGHTED_OPTIONS if weighted else ())


def is_weighted(graph) -> bool:
    """Whether ``graph`` keeps a weight per edge (its rank kernels are the weighted build)."""
    return bool(getattr(graph, "weighted", False))


def compile_kernels(dtype: str = "float64", *, weighted: bool = False) -> None:
    """Compile (once per process) every kernel of ``pagerank.cu`` for ``dtype`` (``weighted``:
    its weighted build)."""
    if dtype not in _CTYPE:
        raise InvalidArgumentError(f"dtype must be one of {tuple(_CTYPE)}, got {dtype!r}")
    _kernel(dtype, "reduce_blocks", bool(weighted))


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
        # list pairs (small, large): A, B, flags, C (C: the cooperative loop's)
        self.lists = cp.zeros((8, n), dtype=cp.int32)
        self.cnt = cp.zeros(10, dtype=cp.int32)  # A: 0,1  B: 2,3  flags: 4,5  ticket: 6  C: 8,9
        self.resize_results(cp, 1)  # status, scalars, hist
        self.gt = 8 * sm_count()  # blocks of the thread-per-vertex kernels (256 threads)
        self.gb = 16 * sm_count()  # blocks of the block-per-vertex kernels (64 threads)
        self.part = cp.zeros(3 * (self.gt + self.gb), dtype=cp.float64)
        self._pinned = [cp.cuda.alloc_pinned_memory(16) for _ in range(2)]
        self.host_status = [np.frombuffer(m, dtype=np.int32, count=4) for m in self._pinned]
        self.loop_part = None  # the cooperative loop's block results (sized at its first use)
        self.loop_prefix = None  # the loop's LoopLists up to the batch fields, packed
        self.loop_stamp = None  # the loop's frontier stamps, 2 per vertex (sized at its first use)
        self.loop_epoch = 1  # the next batch's stamp epoch (frontier_loop._lists_bytes)
        #: The next one-wait batch's loop packed ahead (an armed_loop.ArmedRank, from
        #: pagerank_gpu.arm_update); dropped by any other loop packed here or a resize of the results.
        self.armed_loop = None
        self.result_host = None  # pinned (status, frontier sizes, sum) read once per loop
        # argument structs go up through a ring of pinned staging buffers (asynchronous copies);
        # an event per slot guards its reuse
        self.upload_host = [np.frombuffer(cp.cuda.alloc_pinned_memory(_UPLOAD_BYTES), dtype=np.uint8,
                                          count=_UPLOAD_BYTES) for _ in range(_UPLOAD_SLOTS)]
        self.upload_dev = [cp.zeros(_UPLOAD_BYTES, dtype=cp.uint8) for _ in range(_UPLOAD_SLOTS)]
        self.upload_host_ptr = [int(h.ctypes.data) for h in self.upload_host]
        self.upload_dev_ptr = [int(d.data.ptr) for d in self.upload_dev]
        self.upload_done = [cp.cuda.Event(disable_timing=True) for _ in range(_UPLOAD_SLOTS)]
        self.upload_next = 0
        # the cooperative loop's argument image: a fixed slot (a captured graph replays its copy)
        self.loop_image_host = np.frombuffer(cp.cuda.alloc_pinned_memory(_UPLOAD_BYTES), dtype=np.uint8,
                                             count=_UPLOAD_BYTES)
        self.loop_image_host_ptr = int(self.loop_image_host.ctypes.data)
        self.loop_image_dev = cp.zeros(_UPLOAD_BYTES, dtype=cp.uint8)
        self.loop_image_dev_ptr = int(self.loop_image_dev.data.ptr)

    def resize_results(self, cp, n_hist: int) -> None:
        """The results a run writes, in one device block so that one copy brings them back:
        ``status`` (int32: done, iterations, converged, hand-over) at byte 0, ``scalars``
        (float64: sum of the iterate, base term) at 16, ``hist`` (int32: frontier size per
        iteration, ``n_hist`` entries) at 32. Only between runs (every run zeroes what it reads)."""
        block = cp.zeros(32 + 4 * int(n_hist), dtype=cp.uint8)
        self.results = block
        self.status = block[:16].view(cp.int32)
        self.scalars = block[16:32].view(cp.float64)
        self.hist = block[32:].view(cp.int32)
        self.results_ptr = int(block.data.ptr)
        self.ws_ptrs = None  # the workspace's part of RankArgs, packed again
        self.armed_loop = None  # its image holds the old addresses

    def row_ptr(self, row: int) -> int:
        """Device address of list row ``row`` (no array view made: views cost microseconds)."""
        return int(self.lists.data.ptr) + 4 * row * int(self.lists.shape[1])

    def list_pair(self, which: int):
        """(small list, large list, counters view) of pair 0 (A), 1 (B), 2 (flags) or 3 (C)."""
        c = _PAIR_CNT[which]
        return self.lists[2 * which], self.lists[2 * which + 1], self.cnt[c: c + 2]


#: Device bytes per workspace vertex beyond the two contribution arrays: affected flags (4), the
#: eight vertex lists (32) and the frontier loop's two stamps (8).
_WS_BYTES_PER_VERTEX = 44


def rank_headroom(graph: GpuGraph, n_after: int, dtype: str) -> int:
    """Device bytes a rank update of ``dtype`` may allocate on ``graph`` grown to ``n_after``
    vertices: the new iterate and a converted or extended previous one, and a larger workspace
    (:func:`_workspace`: 1.25 times the vertices) when the present one is too small. The engine
    checks them with a batch's growth (:meth:`GpuGraph.apply`'s ``headroom``)."""
    n_after = int(n_after)
    item = np.dtype(dtype).itemsize
    need = 2 * item * n_after
    ws = graph.__dict__.get("_rank_workspaces", {}).get(dtype)
    if ws is None or ws.n < n_after:
        m = max(n_after + n_after // 4, 16)
        need += m * (2 * item + _WS_BYTES_PER_VERTEX)
    return need


def rank_state_bytes(graph: GpuGraph, x=None) -> int:
    """Device bytes of the rank state kept between batches: every workspace of ``graph`` (all
    its device arrays) and the iterate ``x``."""
    cp = graph.xp
    total = int(x.nbytes) if x is not None else 0
    for ws in graph.__dict__.get("_rank_workspaces", {}).values():
        for value in vars(ws).values():
            arrays = value if isinstance(value, (list, tuple)) else (value,)
            total += sum(int(a.nbytes) for a in arrays if isinstance(a, cp.ndarray))
    return total


def _workspace(graph: GpuGraph, dtype: str, n: int | None = None) -> _Workspace:
    """The graph's workspace for ``dtype``, holding at least ``n`` vertices (default: the
    graph's)."""
    cp = graph.xp
    n = graph.num_vertices if n is None else int(n)
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
    ws.upload_done[k].synchronize()  # sync: only waits if this slot's last copy is still queued
    host = ws.upload_host[k]
    end = 0
    for offset, raw in parts:
        host[offset: offset + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        end = max(end, offset + len(raw))
    stream = cp.cuda.get_current_stream()
    cp.cuda.runtime.memcpyAsync(ws.upload_dev_ptr[k], ws.upload_host_ptr[k], end, 1, stream.ptr)
    ws.upload_done[k].record(stream)
    return ws.upload_dev[k]


def _args_bytes(graph, ws, x, config, *, in_place: bool = False) -> bytes:
    """The RankArgs struct of pagerank.cu; ``in_place``: both contribution buffers are ``ws.c``
    (the in-place sweeps of ``rank/gpu/sweeps.py``)."""
    cp = graph.xp
    if ws.hist.shape[0] < config.max_iter + 1:
        ws.resize_results(cp, config.max_iter + 1)
    if ws.ws_ptrs is None:  # the workspace's addresses do not change while it lives
        scal = int(ws.scalars.data.ptr)
        ws.ws_ptrs = ([int(ws.c.data.ptr), int(ws.cn.data.ptr), int(ws.aff.data.ptr)],
                      [ws.row_ptr(r) for r in range(6)]
                      + [int(ws.cnt.data.ptr), int(ws.status.data.ptr), scal, scal + 8, int(ws.part.data.ptr),
                         int(ws.hist.data.ptr)])
    c, cn, aff = ws.ws_ptrs[0]
    g = graph
    ptrs = ([int(a.data.ptr) for a in (g._in.off, g._in.deg, g._in.idx, g._out.off, g._out.deg, g._out.idx, x)]
            + [c, c if in_place else cn, aff] + ws.ws_ptrs[1])
    if is_weighted(g):  # in-slot weights, out-slot weights, out-weights
        ptrs += [int(g._in.wt.data.ptr), int(g._out.wt.data.ptr), int(g._w_out.data.ptr)]
    else:
        ptrs += [0, 0, 0]
    return struct.pack(_ARGS_FORMAT, *ptrs,
                       float(config.alpha), float(config.frontier_tol), float(config.prune_tol),
                       float(config.tol), int(graph.num_vertices), int(config.max_iter),
                       int(config.switch_degree), int(ws.gt), int(ws.gb))


def _pack_args(graph, ws, x, config, *, in_place: bool = False):
    """The RankArgs struct of pagerank.cu as a device buffer (one asynchronous upload)."""
    return _upload(graph.xp, ws, [(0, _args_bytes(graph, ws, x, config, in_place=in_place))])


def _as_prev(graph, x_prev, dtype: str):
    """``x_prev`` as a device array of ``dtype``, no longer than the graph."""
    cp = graph.xp
    if x_prev is None:
        return None
    if isinstance(x_prev, cp.ndarray) and x_prev.ndim == 1 and x_prev.dtype.name == dtype \
            and x_prev.shape[0] <= graph.num_vertices:
        return x_prev  # the engine's own iterate: nothing to convert
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
    launch(_kernel(config.dtype, f"init_state<int, {ct}, {self_loop}>", is_weighted(graph)), blocks, _THREADS,
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


def _restart(graph, ws, args, x, config, *, standard: bool = False) -> None:
    """Recompute contributions, sum (and for the standard form the base term) from ``x`` in
    place and reset the status (lists kept)."""
    self_loop = 1 if config.dangling == "self-loop" else 0
    ct = _CTYPE[config.dtype]
    ws.status.fill(0)
    blocks = int(min(ws.gt, max(1, -(-graph.num_vertices // _THREADS))))
    launch(_kernel(config.dtype, f"init_state<int, {ct}, {self_loop}>", is_weighted(graph)), blocks, _THREADS,
           (args, np.int64(graph.num_vertices), x))
    launch(_kernel(config.dtype, f"start_totals<int, {ct}>"), 1, _FINISH_THREADS,
           (args, np.int32(blocks), np.int32(1 if standard else 0)))

