"""Static and dynamic PageRank of weighted graphs on the GPU (``kernels/cuda/weighted_rank.cu``).

The same algorithms and interface as :mod:`.pagerank` (``static``, ``nd``, ``dt``, ``df``,
``dfp``, ``warm``, ``auto``) for a :class:`~streamrank.store.gpu_weighted.WeightedGpuGraph`, with
the semantics of the CPU's rank code on weighted graphs (:mod:`streamrank.rank.cpu.pagerank`): a vertex's
out-weight replaces its out-degree, the local form with the vertex's own loops solved, Jacobi
iterations, ``max|dx| / sum(x) < tol``. A batch's reweighted edges count as insertions at their
source. ``auto`` runs DF-P; ``warm`` runs ND's local-form sweeps over every vertex from the
previous ranks (the same fixed point as the CPU's standard-form warm iteration).

A call prepares ``1 / W`` and the contributions (one pass over the vertices), marks the starting
frontier (DF/DF-P: out-neighbours of the changed edges' sources and the deleted edges' targets;
DT: everything reachable from the changed edges' endpoints, a launch and a small copy per
level), runs its whole iteration loop in one cooperative launch, and waits once for its
outcome. The unweighted rank code (its kernels, the one-wait batch, captured CUDA graphs, the
armed loop) is not used for weighted graphs: the engine applies a weighted batch and then calls
:func:`update_pagerank`.
"""

from __future__ import annotations

import functools

import numpy as np

from ...config import RankConfig, check_algorithm
from ...errors import DeviceMemoryError, InvalidArgumentError, KernelError, StreamrankError
from ...kernels.cuda.launch import BLOCK, _cupy, grid_for_threads, grid_for_warps, launch, sm_count
from ...kernels.cuda.loader import get_kernel, resident_blocks
from ...store.changes import AppliedChanges
from ...store.memory import is_out_of_memory, out_of_memory
from ..result import RankResult

_CU = "weighted_rank.cu"
_CTYPES = {"float64": "double", "float32": "float"}
_PLAIN = ("w_prepare<double>", "w_prepare<float>", "w_mark_ids<int>", "w_mark_out<int>")
_LOOPS = tuple(f"w_loop<{t}, {m}>" for t in ("double", "float") for m in (0, 1, 2))
#: Blocks per multiprocessor of the cooperative loop over a frontier, and over every vertex
#: (capped by what is resident).
BLOCKS_PER_SM = 2
EVERY_BLOCKS_PER_SM = 4
#: Device bytes per vertex of the workspace (c, the new values, 1 / W, flags, three lists).
BYTES_PER_VERTEX = 2 * 8 + 8 + 4 + 3 * 4
#: Loop modes of the kernel.
_FIXED, _GROW, _PRUNE = 0, 1, 2


def _plain(name: str):
    return get_kernel(_CU, name, _PLAIN)


@functools.lru_cache(maxsize=None)
def _loop(dtype: str, mode: int, every: bool):
    """``(kernel, grid)`` of the cooperative loop (more blocks for a pass over every vertex)."""
    k = get_kernel(_CU, f"w_loop<{_CTYPES[dtype]}, {mode}>", _LOOPS, cooperative=True)
    per_sm = EVERY_BLOCKS_PER_SM if every else BLOCKS_PER_SM
    return k, max(1, min(resident_blocks(k, BLOCK), per_sm * sm_count()))


def rank_headroom(graph, n_after: int, dtype: str) -> int:
    """Device bytes a rank update may allocate on ``graph`` grown to ``n_after`` vertices: the new
    iterate and, when the workspace is too small, a larger one."""
    n_after = int(n_after)
    need = 8 * n_after
    ws = graph.__dict__.get("_weighted_rank_ws", {}).get(dtype)
    if ws is None or ws.cap < n_after:
        need += BYTES_PER_VERTEX * (n_after + n_after // 4 + 16)
    return need + 8 * 1024


def _check(graph, x_prev, config):
    if not getattr(graph, "weighted", False) or getattr(graph, "backend_name", "") != "gpu":
        raise InvalidArgumentError("the weighted GPU rank code takes a WeightedGpuGraph")
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    if x_prev is not None:
        if x_prev.ndim != 1 or x_prev.shape[0] > graph.num_vertices:
            raise InvalidArgumentError(f"x_prev has shape {x_prev.shape}, graph has {graph.num_vertices} vertices")


class _Workspace:
    """A graph's buffers of the weighted rank calls (one per dtype), kept from call to call and
    grown by a quarter beyond the vertex count when the graph outgrows them. ``flags`` is all
    zero between calls; ``small`` holds the counters (4 int32 as 2 float64) and accumulators
    (4), ``out`` the loop's outcome (:func:`_run`)."""

    def __init__(self, cp, n: int, dtype: str, max_iter: int):
        cap = max(n + n // 4, 16)
        self.cap = cap
        self.inv = cp.empty(cap, dtype=cp.float64)
        self.c = cp.empty(cap, dtype=dtype)
        self.xnew = cp.empty(cap, dtype=dtype)
        self.flags = cp.zeros(cap, dtype=cp.int32)
        self.lists = [cp.empty(cap, dtype=cp.int32) for _ in range(3)]
        self.small = cp.zeros(6, dtype=cp.float64)
        self.cnt = self.small[:2].view(cp.int32)
        self.acc = self.small[2:]
        self.out = cp.zeros(4 + int(max_iter), dtype=cp.float64)

    def reset(self, cp) -> None:
        """Counters, accumulators and the outcome's head to zero (two memsets, no kernel)."""
        stream = cp.cuda.get_current_stream().ptr
        cp.cuda.runtime.memsetAsync(self.small.data.ptr, 0, self.small.nbytes, stream)
        cp.cuda.runtime.memsetAsync(self.out.data.ptr, 0, 32, stream)

    def clear_flags(self, cp, n: int) -> None:
        cp.cuda.runtime.memsetAsync(self.flags.data.ptr, 0, 4 * n, cp.cuda.get_current_stream().ptr)


def _workspace(graph, n: int, dtype: str, max_iter: int) -> _Workspace:
    cp = graph.xp
    spaces = graph.__dict__.setdefault("_weighted_rank_ws", {})
    ws = spaces.get(dtype)
    if ws is None or ws.cap < n or ws.out.shape[0] < 4 + int(max_iter):
        ws = spaces[dtype] = _Workspace(cp, n, dtype, max_iter)
    ws.reset(cp)
    return ws


def _start(graph, x_prev, config):
    """``(x, ws)``: the iterate (``x_prev`` extended by ones, a new array of the config's dtype)
    and the workspace with ``1 / W``, the contributions and ``sum(x)`` prepared (one launch)."""
    cp = graph.xp
    n = graph.num_vertices
    x = cp.empty(n, dtype=config.dtype)
    ws = _workspace(graph, n, config.dtype, int(config.max_iter))
    if n:
        k = 0 if x_prev is None else int(x_prev.shape[0])
        prev = x if k == 0 else cp.ascontiguousarray(cp.asarray(x_prev).astype(config.dtype, copy=False))
        launch(_plain(f"w_prepare<{_CTYPES[config.dtype]}>"), grid_for_threads(n), BLOCK,
               (np.int64(n), np.int64(k), prev, graph.out_weight, np.int32(config.dangling == "self-loop"), x, ws.c,
                ws.inv, ws.out[3:]))
    return x, ws


def _mark_ids(ws, ids) -> None:
    m = int(ids.shape[0])
    if m:
        launch(_plain("w_mark_ids<int>"), grid_for_threads(m), BLOCK,
               (ids, np.int64(m), ws.flags, ws.lists[0], ws.cnt))


def _mark_out(graph, ws, sources=None, lo: int = 0, hi: int = 0) -> None:
    """Mark the out-neighbours of ``sources`` (int64), or of the list's entries ``lo .. hi``."""
    if sources is not None:
        lo, hi = 0, int(sources.shape[0])
    if hi <= lo:
        return
    src = sources if sources is not None else np.uint64(0)
    src32 = np.uint64(0) if sources is not None else ws.lists[0]
    launch(_plain("w_mark_out<int>"), grid_for_warps(hi - lo), BLOCK,
           (src, src32, np.int64(lo), np.int64(hi), graph.out_offset, graph.out_degree, graph.out_indices,
            ws.flags, ws.lists[0], ws.cnt))


def _ids(cp, *arrays):
    parts = [cp.asarray(a, dtype=cp.int64).ravel() for a in arrays if a is not None and a.shape[0]]
    if len(parts) == 1:
        return cp.ascontiguousarray(parts[0])
    return cp.concatenate(parts) if parts else cp.zeros(0, dtype=cp.int64)


def _run(graph, x, ws, config, mode: int, algorithm: str, *, every: bool) -> RankResult:
    """The cooperative loop over every vertex (``every``) or from the marked list, then its outcome
    (one wait, one copy)."""
    cp = graph.xp
    n = graph.num_vertices
    if n == 0:
        return RankResult(x, 0.0, 0, True, [], algorithm, "gpu", 0)
    k, grid = _loop(config.dtype, mode, every)
    lst = ws.lists
    args = (np.int64(n), graph.in_offset, graph.in_degree, graph.in_indices, graph.in_weights, graph.out_offset,
            graph.out_degree, graph.out_indices, x, ws.c, ws.inv, ws.xnew, ws.flags,
            np.uint64(0) if every else lst[0], lst[1], lst[2], ws.cnt, ws.acc, ws.out, np.float64(config.alpha),
            np.int32(config.dangling == "self-loop"), np.float64(config.tol), np.float64(config.frontier_tol),
            np.float64(config.prune_tol), np.int32(config.max_iter))
    try:
        k((grid,), (BLOCK,), args)
    except Exception as exc:  # driver errors (no cooperative launch here) as the package's own
        raise KernelError(f"launching the weighted rank loop failed: {exc}") from exc
    if not every:
        ws.clear_flags(cp, n)  # the loop leaves its last frontier marked
    out = ws.out.get()  # sync: the loop's outcome (one wait per call)
    it = int(out[0])
    hist = [int(h) for h in out[4:4 + it]]
    return RankResult(x, float(out[3]), it, bool(out[1]), hist, algorithm, "gpu", int(out[2]))


def _guarded(fn):
    """CuPy/CUDA errors inside a rank call as KernelError, running out of device memory as
    DeviceMemoryError (as :mod:`.pagerank` does)."""
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except StreamrankError:
            raise
        except Exception as exc:
            cp = _cupy()
            if is_out_of_memory(exc, cp):
                raise out_of_memory(exc, xp=cp, what="the weighted GPU rank update", error=DeviceMemoryError,
                                    changed="the ranks were not updated") from exc
            if type(exc).__module__.startswith("cupy"):
                raise KernelError(f"weighted GPU PageRank failed: {exc}") from exc
            raise

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper


@_guarded
def static_pagerank(graph, *, config: RankConfig | None = None, x0=None, algorithm: str = "static") -> RankResult:
    """Static PageRank of a weighted ``graph``: Jacobi sweeps of the local form over every vertex
    from ``x0`` (default all ones) until ``max|dx| / sum(x) < tol``."""
    config = RankConfig() if config is None else config
    _check(graph, x0, config)
    x, ws = _start(graph, x0, config)
    return _run(graph, x, ws, config, _FIXED, algorithm, every=True)


@_guarded
def update_pagerank(algorithm: str, graph, changes: AppliedChanges, x_prev, *,
                    config: RankConfig | None = None) -> RankResult:
    """Update the ranks of a weighted ``graph`` after ``changes`` (as
    :func:`streamrank.rank.gpu.pagerank.update_pagerank`; ``auto`` runs DF-P).

    Returns
    -------
    RankResult
        ``x`` a new device array of ``config.dtype``.
    """
    check_algorithm(algorithm)
    config = RankConfig() if config is None else config
    if not isinstance(changes, AppliedChanges):
        raise InvalidArgumentError("changes must be the AppliedChanges of the batch")
    _check(graph, x_prev, config)
    if algorithm == "static":
        return static_pagerank(graph, config=config)
    x, ws = _start(graph, x_prev, config)
    if algorithm in ("nd", "warm"):
        return _run(graph, x, ws, config, _FIXED, algorithm, every=True)
    cp = graph.xp
    rew_src, rew_dst = changes.reweighted_src, changes.reweighted_dst
    if algorithm == "dt":
        _mark_ids(ws, _ids(cp, changes.ins_src, changes.ins_dst, rew_src, rew_dst, changes.del_src,
                           changes.del_dst))
        lo, hi = 0, int(ws.cnt[0].get())  # sync per level of the traversal
        while hi > lo:
            _mark_out(graph, ws, lo=lo, hi=hi)
            lo, hi = hi, int(ws.cnt[0].get())
        return _run(graph, x, ws, config, _FIXED, "dt", every=False)
    sources = _ids(cp, changes.ins_src, rew_src, changes.del_src)  # a reweight acts at its source
    _mark_out(graph, ws, sources)
    _mark_ids(ws, _ids(cp, changes.del_dst))
    if config.dangling == "self-loop":
        _mark_ids(ws, sources)
    mode = _GROW if algorithm == "df" else _PRUNE
    return _run(graph, x, ws, config, mode, "dfp" if algorithm == "auto" else algorithm, every=False)


__all__ = ["rank_headroom", "static_pagerank", "update_pagerank"]
