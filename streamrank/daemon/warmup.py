"""Compile the engine's kernels before the daemon reads its first record.

Every CUDA kernel module is compiled (or loaded from CuPy's disk cache) at its first use, and
every Numba kernel of the CPU engine at its first call (or loaded from Numba's cache). On a fresh
GPU machine a module takes 4 to 5 s: a daemon that meets its first warm sweep, its first
slow-path deletion or its first checkpoint in the middle of a stream stalls that long, and the
records behind it wait (seen on a 16-core H100 host; docs/daemon.md).
:func:`warm_up` runs a throwaway engine with the daemon's device and rank settings through
batches that take those paths, before the first poll, and the daemon logs how long it took.
With warm caches it takes well under a second.
"""

from __future__ import annotations

import time

import numpy as np

from ..batch import EdgeBatch
from ..config import RankConfig
from ..engine import Engine
from ..errors import InvalidArgumentError
from .config import WARM_UP_MODES


def wants_warm_up(mode: str, device: str) -> bool:
    """Whether ``mode`` (one of :data:`WARM_UP_MODES`) warms up an engine on ``device``
    (``"cpu"`` or ``"gpu"``, the resolved backend)."""
    if mode not in WARM_UP_MODES:
        raise InvalidArgumentError(f"--warm-up must be one of {WARM_UP_MODES}, got {mode!r}")
    return mode == "on" or (mode == "auto" and device == "gpu")


def warm_up(device: str, *, config: RankConfig, seed: int = 0, weighted: bool = False,
            multi_edges: str = "set") -> float:
    """Run a throwaway engine on ``device`` through every path a daemon's batches take.

    The paths: a bulk load (the slow graph update and Static's sweeps), small batches with
    deletions (the fused graph update and the DF-P loop), a large batch that floods the frontier
    (the slow path with deletions, ``auto``'s hand-over to warm sweeps), growth past the reserved
    room, the GPU store's compaction (which a stream meets once the garbage of relocated lists
    passes the live edges; its first use compiles CuPy kernels, seconds on a fresh machine),
    ``warm`` and ``static`` directly, and a checkpoint's state and restore. The daemon's own
    engine is not touched.

    Parameters
    ----------
    device : {"cpu", "gpu"}
        The daemon engine's (resolved) backend.
    config : RankConfig
        The daemon's rank settings (dangling mode, dtype, contributions pick the kernels).
    seed : int, optional
        Seed of the random batches.
    weighted, multi_edges : optional
        The daemon engine's weighting (a weighted engine runs its own store and kernel builds).

    Returns
    -------
    float
        Seconds it took.
    """
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n = 4096
    eng = Engine(device, "auto", config=config, weighted=weighted, multi_edges=multi_edges)

    def weights(m: int):
        return rng.uniform(0.5, 2.0, m) if weighted else None

    eng.load_edges(rng.integers(0, n, 40_000), rng.integers(0, n, 40_000), weight=weights(40_000))
    for size, share_del, hi in ((300, 0.2, n), (30_000, 0.2, n), (1000, 0.5, n), (20_000, 0.0, 4 * n)):
        src, dst = eng.edges_external()
        k = int(share_del * size)
        pick = rng.integers(0, src.shape[0], k)
        batch = EdgeBatch.from_arrays(
            np.concatenate([src[pick], rng.integers(0, hi, size - k)]),
            np.concatenate([dst[pick], rng.integers(0, hi, size - k)]),
            np.concatenate([np.zeros(k, dtype=bool), np.ones(size - k, dtype=bool)]), weight=weights(size))
        eng.apply(batch)
    if device == "gpu":
        eng.graph.compact()  # GpuGraph: what _maybe_compact runs mid-stream
    for algorithm in ("warm", "static", "dfp"):
        other = Engine.from_state(eng.state(), device=device, algorithm=algorithm, config=config)
        other.apply(EdgeBatch.from_arrays(rng.integers(0, n, 500), rng.integers(0, n, 500), weight=weights(500)))
    eng.backend.synchronize()  # the last launches have run (and so were compiled) before we return
    return time.perf_counter() - t0
