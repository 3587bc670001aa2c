"""Standard-form sweeps over every vertex on the device (Static's first phase, ``warm``, and
``auto``'s warm part), with the kernels of ``kernels/cuda/sweep.cu``.

A sweep is one launch of ``sweep``: some blocks take the vertices below the "big" in-degree
(:data:`_BIG`, 1024) in four degree buckets with 1, 4, 16 or 32 lanes per
vertex, the others a block per vertex at or above it; the last block runs the convergence test.
``partition_buckets`` splits the vertices once per call; the sweeps get their own argument struct,
whose switch degree is the big degree. :data:`_KERNEL` ``"rank"`` runs the older
``rank_small``/``rank_large`` of ``pagerank.cu`` instead (``run_fixed_sweeps(kernel="rank")``
measures them against the sweeps; the tests compare both).

``RankConfig.sweep_contributions == "float32"`` stores the gathered contributions as float while
the iterate, its sums and the test stay in ``config.dtype``: half the bytes of the random
gathers. The float sweeps run to a tolerance no tighter than :data:`_F32_TOL` (1e-9; float
rounding puts a floor under the achievable change), then the contributions are recomputed
in ``config.dtype`` and sweeps go on to ``config.tol``: the result meets the same criterion as
float64 sweeps, usually in one or two more full-precision sweeps.
"""

from __future__ import annotations

import dataclasses

from ...config import RankConfig
from ...errors import InvalidArgumentError
from ...kernels.cuda.launch import launch
from ...kernels.cuda.loader import get_kernel
from .iterations import _Iterations
from .state import (_CTYPE, _THREADS, WEIGHTED_OPTIONS, _as_prev, _init, _pack_args, _partition, _restart,
                    _workspace, is_weighted)

_SWEEP_CU = "sweep.cu"
_KERNELS = ("buckets", "rank")
#: The sweeps' kernels: ``buckets`` (``sweep.cu``) or ``rank`` (``pagerank.cu``'s older ones).
_KERNEL = "buckets"
#: In-degree from which a vertex takes a block of its own in a sweep.
_BIG = 1024
#: Resident blocks per multiprocessor the compiler is asked for (registers per thread): 5 caps
#: the sweep at 48 registers, 62% of the warps resident instead of 37% at 3 (78 registers). A
#: sweep is bound by its gathers' L2 traffic; more warps keep more of them in flight (R-MAT 24,
#: H200: 1.82 against 2.06 ms with float32 contributions, 2.05 against 2.27 with float64).
_MIN_BLOCKS = 5
#: Float-contribution sweeps stop at this tolerance at the tightest, and after this many sweeps.
_F32_TOL = 1e-9
_F32_MAX_ITER = 100
#: The warm sweeps (``warm``, ``auto``'s warm part) read and write one contribution buffer (1,
#: the default): a vertex gathers whatever value each in-neighbour holds when it reads it, this
#: sweep's where that one was updated already (asynchronous relaxation: the same fixed point and
#: the same test on each sweep's changes), instead of the previous sweep's only (0, Jacobi, two
#: buffers). It takes fewer sweeps (R-MAT 24: 4 / 5 / 8 against 5 / 6 / 11 at 1e-6 / 1e-4 /
#: 1e-2 batches); the last bits of the result then depend on the order in which the
#: device ran the blocks, so two runs agree to the tolerance, not bit for bit. Static from
#: scratch stays Jacobi (two runs of it give the same bits); float32 contributions keep two
#: buffers. False runs every sweep as Jacobi (tests/test_gpu_sweeps.py compares both).
_IN_PLACE = True


def _sweep_names(vt: str) -> tuple:
    names = [f"partition_buckets<int, {vt}>"]
    for ct in sorted({vt, "float"}):
        for s in (0, 1):
            names += [f"sweep<int, {vt}, {ct}, {s}>", f"contributions_as<int, {vt}, {ct}, {s}>"]
    return tuple(names)


def _contributions_as(graph, ws, config: RankConfig, ct: str, args) -> None:
    """Rewrite the contributions in ``cbuf[0]`` (written as ``config.dtype`` by the start of the
    iterate) as C type ``ct``: one pass over |V| (asynchronous)."""
    vt = _CTYPE[config.dtype]
    self_loop = 1 if config.dangling == "self-loop" else 0
    blocks = int(min(ws.gt, max(1, -(-graph.num_vertices // _THREADS))))
    launch(_sweep_kernel(config.dtype, f"contributions_as<int, {vt}, {ct}, {self_loop}>", is_weighted(graph)),
           blocks, _THREADS, (args,))


def _sweep_kernel(dtype: str, name: str, weighted: bool = False):
    """A kernel of ``sweep.cu`` (``weighted``: its weighted build, as ``state._kernel``)."""
    return get_kernel(_SWEEP_CU, name, _sweep_names(_CTYPE[dtype]),
                      (f"-DSR_SWEEP_MIN_BLOCKS={_MIN_BLOCKS}",) + (WEIGHTED_OPTIONS if weighted else ()))


def _check_kernel(kernel: str) -> str:
    if kernel not in _KERNELS:
        raise InvalidArgumentError(f"kernel must be one of {_KERNELS}, got {kernel!r}")
    return kernel


def _sequence(graph, ws, config, ct: str, kernel: str):
    """The launches of one sweep (None: ``_Iterations``' own MODE 3 sequence)."""
    vt = _CTYPE[config.dtype]
    if _check_kernel(kernel) == "rank":
        if ct != vt:
            raise InvalidArgumentError("the rank kernels have no float32 contributions")
        return None
    self_loop = 1 if config.dangling == "self-loop" else 0
    return [(_sweep_kernel(config.dtype, f"sweep<int, {vt}, {ct}, {self_loop}>", is_weighted(graph)), ws.gt + ws.gb,
             _THREADS)]


def _in_place(config, warm: bool) -> bool:
    """Whether sweeps run in place: warm sweeps with float64 contributions (:data:`_IN_PLACE`)."""
    return _IN_PLACE and warm and config.sweep_contributions != "float32"


def _split(graph, ws, x, config, kernel: str, *, warm: bool = False):
    """Split the vertices for the sweep kernels of ``kernel`` (list rows as listed in sweep.cu,
    or pair A by the switch degree for ``rank``); returns the config and argument struct those
    kernels read (for ``buckets`` their switch degree is the big degree; both contribution
    buffers the same one when the sweeps run in place). Device work only."""
    if _check_kernel(kernel) == "rank":
        ws.cnt[0:2] = 0
        _partition(graph, ws, None, graph.num_vertices, graph._in.deg, 0, config)
        return config, None
    sc = dataclasses.replace(config, switch_degree=_BIG)
    args = _pack_args(graph, ws, x, sc, in_place=_in_place(config, warm))
    ws.cnt[0:6] = 0
    blocks = int(min(ws.gt, max(1, -(-graph.num_vertices // _THREADS))))
    launch(_sweep_kernel(config.dtype, f"partition_buckets<int, {_CTYPE[config.dtype]}>"), blocks, _THREADS, (args,))
    return sc, args


def standard_sweeps(graph, ws, x, config, args, *, warm: bool = False):
    """Standard-form sweeps from the state ``args`` was initialized to (``_init`` or ``_restart``
    with ``standard=True``) until ``config``'s criterion holds. List pair A is rewritten to hold
    every vertex split for the sweep kernels (a caller that goes on with other kernels
    re-partitions it). ``warm``: sweeps from previous ranks (``warm``, ``auto``), which run in
    place (:data:`_IN_PLACE`); Static from scratch passes False.

    Returns ``(iterations, converged, affected_per_iteration, total, base)`` like
    ``_Iterations.run``; ``x`` holds the standard-form iterate y (``x = y / base`` is the
    caller's).
    """
    vt = _CTYPE[config.dtype]
    kernel = _KERNEL
    config, own = _split(graph, ws, x, config, kernel, warm=warm)
    args = own if own is not None else args
    if config.sweep_contributions == "float32" and vt == "double":
        # Phase 1: float contributions to a tolerance float can reach (own argument struct).
        # The cap keeps a float iteration that stalls above the tolerance from running long.
        loose = dataclasses.replace(config, tol=max(float(config.tol), _F32_TOL),
                                    max_iter=min(int(config.max_iter), _F32_MAX_ITER))
        args1 = _pack_args(graph, ws, x, loose)
        _contributions_as(graph, ws, config, "float", args1)
        its1, _, aff1, _, _ = _Iterations(graph, ws, loose, 3, args1, seq=_sequence(graph, ws, config, "float", kernel)).run()
        # Phase 2: contributions, sum and base recomputed in full precision from the iterate.
        _restart(graph, ws, args, x, config, standard=True)
        its, converged, aff, total, base = _Iterations(graph, ws, config, 3, args,
                                                       seq=_sequence(graph, ws, config, vt, kernel)).run()
        return its1 + its, converged, aff1 + aff, total, base
    return _Iterations(graph, ws, config, 3, args, seq=_sequence(graph, ws, config, vt, kernel)).run()


def run_fixed_sweeps(graph, x0, config, *, sweeps: int, kernel: str = "buckets"):
    """Exactly ``sweeps`` standard-form sweeps from ``x0`` (no convergence test), contributions in
    ``config.sweep_contributions``: what the benchmark times to report bytes per sweep and the
    achieved bandwidth. Returns the number of sweeps the device ran.

    Parameters
    ----------
    graph : GpuGraph
    x0 : array or None
        Starting iterate (None: ones).
    config : RankConfig
    sweeps : int
        Sweeps to run (>= 1).
    kernel : {"buckets", "rank"}
        ``sweep.cu``'s kernels, or ``pagerank.cu``'s older ``rank_small``/``rank_large``.
    """
    if int(sweeps) < 1:
        raise InvalidArgumentError(f"sweeps must be >= 1, got {sweeps}")
    cp = graph.xp
    n = graph.num_vertices
    fixed = dataclasses.replace(config, tol=0.0, max_iter=int(sweeps))
    ws = _workspace(graph, config.dtype)
    x = cp.empty(n, dtype=config.dtype)
    _check_kernel(kernel)
    args = _init(graph, ws, x, _as_prev(graph, x0, config.dtype), fixed, standard=True)
    fixed, own = _split(graph, ws, x, fixed, kernel)
    args = own if own is not None else args
    vt = _CTYPE[config.dtype]
    ct = "float" if config.sweep_contributions == "float32" and vt == "double" else vt
    if ct != vt:
        _contributions_as(graph, ws, config, ct, args)
    its, _, _, _, _ = _Iterations(graph, ws, fixed, 3, args, seq=_sequence(graph, ws, fixed, ct, kernel)).run()
    return its
