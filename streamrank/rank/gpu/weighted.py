"""Static and dynamic PageRank of weighted graphs on the GPU (``kernels/cuda/weighted_rank.cu``).

The same algorithms and interface as :mod:`.pagerank` (``static``, ``nd``, ``dt``, ``df``,
``dfp``, ``warm``, ``auto``) for a :class:`~streamrank.store.gpu_weighted.WeightedGpuGraph`, with
the semantics of the CPU's weighted code (:mod:`streamrank.rank.cpu.weighted`): a vertex's
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
#: Blocks per multiprocessor of the cooperative loop (capped by what is resident).
BLOCKS_PER_SM = 2
#: Device bytes per vertex of one call's buffers (x, c, the new values, 1 / W, flags, three lists).
BYTES_PER_VERTEX = 3 * 8 + 8 + 4 + 3 * 4
#: Loop modes of the kernel.
_FIXED, _GROW, _PRUNE = 0, 1, 2


def _plain(name: str):
    return get_kernel(_CU, name, _PLAIN)


def _loop(dtype: str, mode: int):
    k = get_kernel(_CU, f"w_loop<{_CTYPES[dtype]}, {mode}>", _LOOPS, cooperative=True)
    return k, max(1, min(resident_blocks(k, BLOCK), BLOCKS_PER_SM * sm_count()))


def rank_headroom(graph, n_after: int, dtype: str) -> int:
    """Device bytes a rank update may allocate on ``graph`` grown to ``n_after`` vertices."""
    return BYTES_PER_VERTEX * int(n_after) + 4 * 1024


def _check(graph, x_prev, config):
    if not getattr(graph, "weighted", False) or getattr(graph, "backend_name", "") != "gpu":
        raise InvalidArgumentError("the weighted GPU rank code takes a WeightedGpuGraph")
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    if x_prev is not None:
        if x_prev.ndim != 1 or x_prev.shape[0] > graph.num_vertices:
            raise InvalidArgumentError(f"x_prev has shape {x_prev.shape}, graph has {graph.num_vertices} vertices")


class _Call:
    """One call's device buffers."""

    def __init__(self, cp, n: int, dtype: str, max_iter: int):
        m = max(n, 1)
        self.inv = cp.empty(m, dtype=cp.float64)
        self.c = cp.empty(m, dtype=dtype)
        self.xnew = cp.empty(m, dtype=dtype)
        self.flags = cp.zeros(m, dtype=cp.int32)
        self.lists = [cp.empty(m, dtype=cp.int32) for _ in range(3)]
        self.cnt = cp.zeros(4, dtype=cp.int32)
        self.acc = cp.zeros(4, dtype=cp.float64)
        self.status = cp.zeros(4, dtype=cp.int32)
        self.total = cp.zeros(1, dtype=cp.float64)
        self.hist = cp.zeros(max_iter, dtype=cp.int32)


def _start(graph, x_prev, config):
    """``(x, call)``: the iterate (``x_prev`` extended by ones, a new array of the config's dtype)
    and the call's buffers with ``1 / W``, the contributions and ``sum(x)`` prepared."""
    cp = graph.xp
    n = graph.num_vertices
    x = cp.ones(n, dtype=config.dtype)
    if x_prev is not None and x_prev.shape[0]:
        x[: x_prev.shape[0]] = cp.asarray(x_prev)
    call = _Call(cp, n, config.dtype, int(config.max_iter))
    if n:
        self_loop = np.int32(config.dangling == "self-loop")
        launch(_plain(f"w_prepare<{_CTYPES[config.dtype]}>"), grid_for_threads(n), BLOCK,
               (np.int64(n), graph.out_weight, self_loop, x, call.c, call.inv, call.total))
    return x, call


def _mark_ids(call, ids) -> None:
    m = int(ids.shape[0])
    if m:
        launch(_plain("w_mark_ids<int>"), grid_for_threads(m), BLOCK,
               (ids, np.int64(m), call.flags, call.lists[0], call.cnt))


def _mark_out(graph, call, sources=None, lo: int = 0, hi: int = 0) -> None:
    """Mark the out-neighbours of ``sources`` (int64), or of the list's entries ``lo .. hi``."""
    if sources is not None:
        lo, hi = 0, int(sources.shape[0])
    if hi <= lo:
        return
    src = sources if sources is not None else np.uint64(0)
    src32 = np.uint64(0) if sources is not None else call.lists[0]
    launch(_plain("w_mark_out<int>"), grid_for_warps(hi - lo), BLOCK,
           (src, src32, np.int64(lo), np.int64(hi), graph.out_offset, graph.out_degree, graph.out_indices,
            call.flags, call.lists[0], call.cnt))


def _ids(cp, *arrays):
    parts = [cp.asarray(a, dtype=cp.int64).ravel() for a in arrays if a is not None]
    return cp.ascontiguousarray(cp.concatenate(parts)) if parts else cp.zeros(0, dtype=cp.int64)


def _run(graph, x, call, config, mode: int, algorithm: str, *, every: bool) -> RankResult:
    """The cooperative loop over every vertex (``every``) or from the marked list, then its outcome (one wait)."""
    cp = graph.xp
    n = graph.num_vertices
    if n == 0:
        return RankResult(x, 0.0, 0, True, [], algorithm, "gpu", 0)
    k, grid = _loop(config.dtype, mode)
    lst = call.lists
    args = (np.int64(n), graph.in_offset, graph.in_degree, graph.in_indices, graph.in_weights, graph.out_offset,
            graph.out_degree, graph.out_indices, x, call.c, call.inv, call.xnew, call.flags,
            np.uint64(0) if every else lst[0], lst[1], lst[2], call.cnt, call.acc, call.status, call.total,
            call.hist, np.float64(config.alpha), np.int32(config.dangling == "self-loop"), np.float64(config.tol),
            np.float64(config.frontier_tol), np.float64(config.prune_tol), np.int32(config.max_iter))
    try:
        k((grid,), (BLOCK,), args)
    except Exception as exc:  # driver errors (no cooperative launch here) as the package's own
        raise KernelError(f"launching the weighted rank loop failed: {exc}") from exc
    status = call.status.get()  # sync: the loop's outcome (one wait per call)
    it = int(status[1])
    total = float(call.total.get()[0])
    hist = call.hist[:it].get().tolist() if it else []
    return RankResult(x, total, it, bool(status[2]), [int(h) for h in hist], algorithm, "gpu", int(status[3]))


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
    x, call = _start(graph, x0, config)
    return _run(graph, x, call, config, _FIXED, algorithm, every=True)


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
    x, call = _start(graph, x_prev, config)
    if algorithm in ("nd", "warm"):
        return _run(graph, x, call, config, _FIXED, algorithm, every=True)
    cp = graph.xp
    rew_src, rew_dst = changes.reweighted_src, changes.reweighted_dst
    if algorithm == "dt":
        _mark_ids(call, _ids(cp, changes.ins_src, changes.ins_dst, rew_src, rew_dst, changes.del_src,
                             changes.del_dst))
        lo, hi = 0, int(call.cnt[0].get())  # sync per level of the traversal
        while hi > lo:
            _mark_out(graph, call, lo=lo, hi=hi)
            lo, hi = hi, int(call.cnt[0].get())
        return _run(graph, x, call, config, _FIXED, "dt", every=False)
    sources = _ids(cp, changes.ins_src, rew_src, changes.del_src)  # a reweight acts at its source
    _mark_out(graph, call, sources)
    _mark_ids(call, _ids(cp, changes.del_dst))
    if config.dangling == "self-loop":
        _mark_ids(call, sources)
    mode = _GROW if algorithm == "df" else _PRUNE
    return _run(graph, x, call, config, mode, "dfp" if algorithm == "auto" else algorithm, every=False)


__all__ = ["rank_headroom", "static_pagerank", "update_pagerank"]
