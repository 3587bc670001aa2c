"""Static, Naive-dynamic, Dynamic Traversal, DF and DF-P PageRank on the device.

Same functions, arguments and semantics as :mod:`streamrank.rank.cpu.pagerank`
(docs/architecture.md), for a :class:`streamrank.store.gpu.GpuGraph` (a
:class:`~streamrank.store.gpu_weighted.WeightedGpuGraph` runs the same code on the weighted build
of the kernels: out-weights for out-degrees, weighted gathers; ``state.WEIGHTED_OPTIONS``): local form ``x``, Jacobi
iterations, convergence ``max|dx| / sum(x) < tol``, DF/DF-P marking rules, self-loop closed
form. The iterations run the kernels of ``kernels/cuda/pagerank.cu`` (DF/DF-P first as one cooperative
launch per batch, ``kernels/cuda/frontier_loop.cu``; Static and warm: ``kernels/cuda/sweep.cu``;
docs/architecture.md explains the design):

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

Static and warm iterate the standard form with the sweep kernels of ``kernels/cuda/sweep.cu``
(:mod:`streamrank.rank.gpu.sweeps`) and convert to the local form at the end; ND, DT, DF and
DF-P iterate the local form. Passes over all vertices that remain per call:
``init_state`` (copy ``x_prev`` into the new ``x``, every contribution and sum(x): about 25
bytes per vertex), and for Static/ND/warm the work itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ...config import RankConfig, check_algorithm
from ...errors import DeviceMemoryError, InvalidArgumentError, KernelError, StreamrankError
from ...store.memory import is_out_of_memory, out_of_memory
from ...kernels.cuda.launch import _cupy, launch, sm_count
from ...store.changes import AppliedChanges
from ...store.gpu import GpuGraph
from . import armed_loop, frontier_loop
from .frontier_loop import _frontier_loop, launch_loop, loop_outcome, pending_batch
from .iterations import _Iterations
from .state import rank_headroom, rank_state_bytes  # noqa: F401  (part of this module's API)
from .state import (_CTYPE, _FINISH_THREADS, _THREADS, _args_bytes, _as_prev, _clear_marks, _grid,
                             _init, _kernel, _mark_direct, _mark_out_neighbours, _partition,
                             _restart, _result, _upload, _workspace, compile_kernels)
from .sweeps import standard_sweeps
from ..result import RankResult

__all__ = ["compile_kernels", "device_linf", "rank_headroom", "rank_state_bytes", "static_pagerank", "update_pagerank", "launch_update", "arm_update",
           "finish_update", "PendingRank"]

log = logging.getLogger(__name__)

_MODES = {"static": 3, "nd": 0, "dt": 0, "df": 1, "dfp": 2}
#: ``auto``: DF-P hands over to warm sweeps when its frontier exceeds this share of the vertices
#: (and the loop's hand-over size).
_AUTO_FLOOD = 0.05
#: The next one-wait batch's loop is packed ahead (:func:`arm_update`) only while its iterate takes
#: at most this many bytes: the packed loop holds its output iterate between batches (one more
#: iterate in device memory), which on a large graph costs more memory than the 20-70 us are worth
#: beside a batch whose passes over every vertex take longer (0: never).
_ARM_MAX_BYTES = 256 << 20
#: Set to a dict to accumulate per-stage wall times (ms) of the dynamic updates; each stage then
#: ends with a device synchronization, so profile only outside timed runs.
STAGE_MS = None
_T = [0.0]


def _stage(cp, name: str) -> None:
    if STAGE_MS is None:
        return
    cp.cuda.Device().synchronize()  # sync: profiling only
    now = time.perf_counter()
    if name:
        STAGE_MS[name] = STAGE_MS.get(name, 0.0) + (now - _T[0]) * 1e3
    _T[0] = now


# ---------------------------------------------------------------------- helpers
def _check(graph, config):
    if not isinstance(graph, GpuGraph):
        raise InvalidArgumentError(f"the GPU backend needs a GpuGraph, got {type(graph).__name__}")
    if config is None:
        config = RankConfig()
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    return config


def _wrap(fn):
    """Run ``fn`` re-raising CuPy/CUDA errors as KernelError, and running out of device memory
    (CuPy's OutOfMemoryError, thrust's MemoryError) as DeviceMemoryError."""
    try:
        return fn()
    except StreamrankError:
        raise
    except Exception as exc:  # cupy.cuda.runtime.CUDARuntimeError, OutOfMemoryError, ...
        if is_out_of_memory(exc, _cupy()):
            raise out_of_memory(exc, xp=_cupy(), what="the GPU rank update", error=DeviceMemoryError,
                                changed="the ranks were not updated") from exc
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
    if standard:
        # Static (from ones) and warm (from x_prev): standard-form sweeps, then x = y / base. The
        # criterion on p = y / sum(y) is the contract's criterion on x / sum(x): no local-form
        # sweep is needed after them.
        return _warm_sweeps(graph, ws, x, config, args, 0, [], algorithm)
    # ND: local-form Jacobi sweeps over every vertex from x_prev until the criterion holds.
    _partition(graph, ws, None, n, graph._in.deg, 0, config)
    its, converged, aff, total, _ = _Iterations(graph, ws, config, 0, args).run()
    return _result(x, its, converged, aff, total, algorithm, n)


def _warm_sweeps(graph, ws, x, config, args, iterations: int, affected: list, algorithm: str):
    """Standard-form sweeps over every vertex (the arguments initialized for the standard form)
    from the current ``x`` until the criterion holds on p;
    then ``x = y / base`` in place (no local-form finishing sweep: the criterion is the same)."""
    its, converged, aff, total, base = standard_sweeps(graph, ws, x, config, args, warm=algorithm != "static")
    x /= x.dtype.type(base)
    return _result(x, iterations + its, converged, affected + aff, total / base, algorithm, graph.num_vertices)



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


def _with_reweights(cp, changes):
    """``changes`` with a weighted batch's reweighted edges among the insertions (sorted by source,
    as the marking expects): a reweight changes its source's contributions as an insertion there
    does. Unchanged when there are none."""
    if not changes.num_reweights:
        return changes
    src = cp.concatenate([cp.asarray(changes.ins_src, dtype=cp.int64), cp.asarray(changes.reweighted_src, dtype=cp.int64)])
    dst = cp.concatenate([cp.asarray(changes.ins_dst, dtype=cp.int64), cp.asarray(changes.reweighted_dst, dtype=cp.int64)])
    order = cp.argsort(src)
    return AppliedChanges(src[order], dst[order], changes.del_src, changes.del_dst, changes.num_vertices_before,
                          changes.num_vertices_after, changes.received, changes.dropped, changes.reweighted_src,
                          changes.reweighted_dst)


def _dynamic(algorithm, graph, changes, x_prev, config):
    cp = graph.xp
    n = graph.num_vertices
    changes = _with_reweights(cp, changes)
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
    if mode in (1, 2) and frontier_loop._LOOP:
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



# ---------------------------------------------------------------------- one sync per batch
@dataclass
class PendingRank:
    """A DF/DF-P update queued behind a pending graph update (:func:`launch_update`)."""

    algorithm: str
    mode: int
    ws: object
    x: object
    args: object
    config: RankConfig
    continued: bool = False  # set by finish_update: the loop handed over, work ran after the wait
    armed: bool = False  # queued from the loop packed ahead (arm_update)


def launch_update(algorithm: str, graph, pending, x_prev, *, config: RankConfig, replay=None) -> PendingRank | None:
    """Queue DF or DF-P for a graph update still on the device, without waiting.

    The cooperative loop reads the batch's sizes (new vertices, applied insertions and
    deletions) from the graph update's counters on the device, so that the batch needs no host
    round trip between the two updates (docs/architecture.md). When
    :func:`arm_update` packed this batch's loop ahead and nothing it packed has changed, only the
    batch's edge sections are written into that image before the replay.

    Parameters
    ----------
    algorithm : {"df", "dfp", "auto"}
    graph : GpuGraph
        The store, before :meth:`~streamrank.store.gpu.GpuGraph.finish_fast` of ``pending``.
    pending : PendingFast
        From :meth:`~streamrank.store.gpu.GpuGraph.launch_fast`.
    x_prev : array
        The ranks before the batch (``pending.num_vertices_before`` entries; not modified).
    config : RankConfig
    replay : BatchGraphs, optional
        Replay the loop from a captured CUDA graph (:mod:`streamrank.rank.gpu.capture`) instead
        of queueing it call by call.

    Returns
    -------
    PendingRank or None
        None when the cooperative loop cannot run here (nothing was queued): use
        :func:`update_pagerank` after the graph update.
    """
    check_algorithm(algorithm)
    if algorithm not in ("df", "dfp", "auto"):
        raise InvalidArgumentError(f"launch_update runs df, dfp or auto, got {algorithm!r}")
    config = _check(graph, config)
    if not frontier_loop._LOOP or frontier_loop.loop_unavailable is not None:
        return None
    armed = _launch_armed(algorithm, graph, pending, x_prev, config, replay)
    if armed is not None:
        return armed
    cp = graph.xp
    n_prev = int(pending.num_vertices_before)
    xp_ = _as_prev(graph, x_prev, config.dtype)
    if xp_ is None or int(xp_.shape[0]) != n_prev:
        raise InvalidArgumentError(f"x_prev must have the {n_prev} entries of the graph before the batch")
    n_max = n_prev + 2 * int(pending.received)  # a batch of m edges brings at most 2m vertices
    mode, flood = _loop_mode(algorithm, n_prev)
    ws = _workspace(graph, config.dtype, n_max)
    x = cp.empty(n_max, dtype=config.dtype)  # sliced to the vertex count after the sync
    args = _wrap(lambda: launch_loop(graph, ws, x, xp_, pending_batch(pending), config, mode, flood, replay))
    if args is None:
        return None
    return PendingRank(algorithm, mode, ws, x, args, config)


def arm_update(previous: PendingRank, graph, *, replay) -> None:
    """Pack the next one-wait batch's loop before that batch arrives (between batches, beside
    ``previous``'s running loop; :func:`frontier_loop.arm_loop`), so that :func:`launch_update`
    only writes the batch's edge sections and replays.

    Parameters
    ----------
    previous : PendingRank
        The batch just queued: its iterate is the next batch's ``x_prev``.
    graph : GpuGraph
        The store after ``previous``'s graph update (:meth:`~streamrank.store.gpu.GpuGraph.finish_fast`)
        and its upkeep.
    replay : BatchGraphs or None
        The captured graphs; None arms nothing.

    The armed loop is taken only while the algorithm, the config object, ``replay``, the store's
    version, the six graph arrays the image points at, the vertex count and ``x_prev``'s address are
    what they are now; otherwise :func:`launch_update` packs the loop as usual. A CUDA error here
    (out of device memory, say) arms nothing: the batch that was applied stays applied. Nothing is
    armed for an iterate of more than :data:`_ARM_MAX_BYTES` (256 MiB) either.
    """
    if replay is None or not frontier_loop._LOOP or frontier_loop.loop_unavailable is not None:
        return
    cp = graph.xp
    config = previous.config
    n = graph.num_vertices
    room = 2 * graph.fast.max_edges  # new vertices a fast batch may bring
    if (n + room) * np.dtype(config.dtype).itemsize > _ARM_MAX_BYTES:
        return  # a large graph: no iterate held between batches (its batches pack as usual)
    mode, flood = _loop_mode(previous.algorithm, n)

    def pack():  # (arm_loop drops any loop packed before on the workspace)
        ws = _workspace(graph, config.dtype, n + room)
        x = cp.empty(n + room, dtype=config.dtype)
        return ws, frontier_loop.arm_loop(graph, ws, x, previous.x[:n], config, mode, flood, replay)

    try:
        ws, armed = _wrap(pack)
    except KernelError as exc:  # out of device memory, say: the next batch packs its loop as usual
        log.debug("the next batch's loop was not packed ahead: %s", exc)
        return
    if armed is not None:
        ws.armed_loop = armed_loop.ArmedRank(previous.algorithm, config, replay, graph.version,
                                             armed_loop.rank_arrays(graph), n, int(previous.x.data.ptr),
                                             frontier_loop.LOOP_TICKS, room, mode, ws, armed)


def _loop_mode(algorithm: str, n_prev: int) -> tuple:
    """The loop's mode for ``algorithm`` (``auto`` runs DF-P) and, for ``auto``, the frontier size
    past which the loop hands a flood over (None otherwise)."""
    mode = _MODES["dfp" if algorithm == "auto" else algorithm]
    return mode, (int(_AUTO_FLOOD * n_prev) if algorithm == "auto" else None)


def _launch_armed(algorithm, graph, pending, x_prev, config, replay) -> PendingRank | None:
    """Queue the loop :func:`arm_update` packed when everything it packed still holds
    (:func:`armed_loop.take`); else None (nothing queued)."""
    held = armed_loop.take(algorithm, graph, pending, x_prev, config, replay)
    if held is None:
        return None
    args = frontier_loop.launch_armed_loop(held.ws, held.loop, pending)
    return PendingRank(algorithm, held.mode, held.ws, held.loop.x, args, config, armed=True)


def finish_update(pending: PendingRank, graph, changes) -> RankResult:
    """Complete :func:`launch_update` once the stream has been synchronized and the graph update
    finished (``changes`` from :meth:`~streamrank.store.gpu.GpuGraph.finish_fast`): the result,
    or, when the loop handed a flooded frontier over, the launch sequence (or warm sweeps for
    ``auto``) finishing the batch."""
    return _wrap(lambda: _finish(pending, graph, changes))


def _finish(p: PendingRank, graph, changes):
    cp = graph.xp
    n = graph.num_vertices
    x = p.x[:n]
    label = "dfp" if p.algorithm == "auto" else p.algorithm
    done = loop_outcome(graph, p.ws, p.config, p.args)
    if done[0] is not None:  # the loop ran to the end
        iterations, converged, affected, total = done
        if changes.empty:  # nothing changed: x is x_prev (the loop's empty first iteration is not one)
            return _result(x, 0, True, [], total, label, 0)
        return _result(x, iterations, converged, affected, total, label, affected[0] if affected else 0)
    # handed over: the continuation reads the vertex count from the arguments, now known
    p.continued = True
    args = _upload(cp, p.ws, [(0, _args_bytes(graph, p.ws, x, p.config, in_place=frontier_loop._LOOP_IN_PLACE))])
    return _continue(graph, p.ws, x, p.config, p.mode, args, p.algorithm, done[1], done[2])


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
