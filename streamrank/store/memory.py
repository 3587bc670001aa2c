"""Device memory: what is free before the graph store grows, and the peak a run used.

Two concerns share this module because they read the same two numbers: the device's free and
total bytes (``cudaMemGetInfo``, which counts every process and the CUDA context) and the bytes
CuPy's memory pool holds (``used``: live arrays of this process; ``total``: used plus the freed
blocks the pool keeps for reuse, which the device counts as taken but this process can reuse).

- :func:`check_fits` is called by the graph stores before any growth (new vertex rows, a larger
  neighbour array, a bigger id map, a re-layout): it raises :class:`GraphCapacityError` when the
  bytes an operation will allocate exceed the free device memory (device free + pool free) or
  the store's own limit (``max_bytes``), so a batch that cannot fit fails before it changes
  anything.
- :class:`DeviceMemoryTracker` samples those numbers after each stage of a benchmark and keeps
  the peaks (``peak_bytes``); on the CPU backend it reports None.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import GraphCapacityError, InvalidArgumentError

_MIB = float(1 << 20)


@dataclass(frozen=True)
class DeviceMemory:
    """One reading of the device and of CuPy's memory pool (bytes).

    Attributes
    ----------
    device_total, device_free : int
        ``cudaMemGetInfo``: the whole device, all processes.
    pool_used, pool_total : int
        CuPy's default pool: bytes in live arrays, and bytes the pool holds (used + cached free).
    """

    device_total: int
    device_free: int
    pool_used: int
    pool_total: int

    @property
    def device_used(self) -> int:
        """Bytes taken on the device (all processes, CUDA contexts, CuPy's cached blocks)."""
        return self.device_total - self.device_free

    @property
    def pool_free(self) -> int:
        """Bytes the pool holds but no array uses (reusable by this process)."""
        return max(0, self.pool_total - self.pool_used)

    @property
    def available(self) -> int:
        """Bytes this process can still allocate: free on the device plus free in the pool."""
        return self.device_free + self.pool_free


def read_device_memory(xp) -> DeviceMemory:
    """The current :class:`DeviceMemory` of the current device (``xp`` is :mod:`cupy`)."""
    free, total = xp.cuda.runtime.memGetInfo()
    pool = xp.get_default_memory_pool()
    return DeviceMemory(int(total), int(free), int(pool.used_bytes()), int(pool.total_bytes()))


def check_max_bytes(value) -> int | None:
    """Validate a store's ``max_bytes``: a positive integer, or None (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise InvalidArgumentError(f"max_bytes must be a positive integer or None, got {value!r}")
    return int(value)


def _is_numpy(xp) -> bool:
    return getattr(xp, "__name__", "") == "numpy"


def mib(nbytes: int) -> str:
    """``nbytes`` as a short MiB string for messages."""
    return f"{nbytes / _MIB:,.1f} MiB"


def check_fits(needed: int, *, xp, held: int, limit: int | None, what: str, scratch: int = 0) -> None:
    """Raise :class:`GraphCapacityError` unless ``needed`` more bytes can be allocated.

    Parameters
    ----------
    needed : int
        Bytes the operation will allocate (new arrays; the arrays they replace are freed only
        after the copy, so they are not subtracted).
    xp : module
        The store's array module; for :mod:`numpy` only ``limit`` applies (host memory is not
        probed), for :mod:`cupy` also the free device memory (:attr:`DeviceMemory.available`).
    held : int
        Bytes the store holds now (for ``limit``).
    limit : int or None
        The store's ``max_bytes``: ``held + needed`` may not exceed it. None: no limit.
    what : str
        The operation, for the message (``"a batch of 3,000 edges"``).
    scratch : int
        Temporary bytes the operation also allocates and frees (checked against the free device
        memory only, not against ``limit``).

    Raises
    ------
    GraphCapacityError
        With ``needed`` and ``available`` set, and a message saying what to do.
    """
    needed, held, scratch = int(needed), int(held), max(0, int(scratch))
    if needed + scratch <= 0:
        return
    if limit is not None and needed > 0 and held + needed > int(limit):
        avail = max(0, int(limit) - held)
        raise GraphCapacityError(
            f"{what} needs {mib(needed)} more for the graph store, which holds {mib(held)} of its "
            f"limit of {mib(int(limit))} ({mib(avail)} left); nothing was changed. Raise the limit "
            f"(max_bytes / --max-graph-bytes), or apply smaller batches", needed=needed, available=avail)
    if _is_numpy(xp):
        return
    mem = read_device_memory(xp)
    needed += scratch
    if needed > mem.available:
        raise GraphCapacityError(
            f"{what} needs {mib(needed)} of device memory but only {mib(mem.available)} is free "
            f"({mib(mem.device_free)} on the device + {mib(mem.pool_free)} cached by CuPy's pool; the "
            f"graph store holds {mib(held)} of the device's {mib(mem.device_total)}); nothing was "
            f"changed. Use a device with more memory, free memory held by other processes, or run "
            f"on the CPU (--device cpu)", needed=needed, available=mem.available)


class DeviceMemoryTracker:
    """Peak device memory over a run, sampled after each stage.

    ``track = DeviceMemoryTracker(backend)``, then ``track.sample("build")`` after each stage
    (graph built, batch applied, ranks updated...); ``track.peak_bytes`` is the highest device
    usage seen (``cudaMemGetInfo``: total - free, which includes the CUDA context, libraries'
    workspaces and CuPy's cached blocks, so it is what the run needs the device to have), and
    ``track.peak_pool_used_bytes`` the highest bytes in live CuPy arrays. Divide by the graph's
    edges for bytes per edge. Sampling reads two counters (no device synchronization), so a
    transient allocation freed between two samples is not seen: sample after the stages whose
    arrays stay alive. On the CPU backend every reading and peak is None.

    Parameters
    ----------
    backend : streamrank.backend.Backend
    """

    def __init__(self, backend):
        if not hasattr(backend, "is_gpu") or not hasattr(backend, "xp"):
            raise InvalidArgumentError(f"backend must be a Backend, got {type(backend).__name__}")
        self.backend = backend
        self.samples = 0
        self.last: DeviceMemory | None = None
        self.peak_bytes: int | None = None
        self.peak_pool_used_bytes: int | None = None
        self.peak_pool_total_bytes: int | None = None
        #: Stage name -> highest device usage seen when sampled with that name.
        self.peak_by_stage: dict = {}

    def sample(self, stage: str | None = None) -> DeviceMemory | None:
        """Read the device now and update the peaks; returns the reading (None on the CPU)."""
        if not self.backend.is_gpu:
            return None
        mem = read_device_memory(self.backend.xp)
        self.samples += 1
        self.last = mem
        self.peak_bytes = max(self.peak_bytes or 0, mem.device_used)
        self.peak_pool_used_bytes = max(self.peak_pool_used_bytes or 0, mem.pool_used)
        self.peak_pool_total_bytes = max(self.peak_pool_total_bytes or 0, mem.pool_total)
        if stage is not None:
            self.peak_by_stage[stage] = max(self.peak_by_stage.get(stage, 0), mem.device_used)
        return mem

    def per_edge(self, num_edges: int) -> float | None:
        """``peak_bytes / num_edges`` (None on the CPU, before a sample, or without edges)."""
        if self.peak_bytes is None or int(num_edges) <= 0:
            return None
        return self.peak_bytes / int(num_edges)

    def report(self, num_edges: int | None = None) -> dict:
        """The peaks as a JSON-ready dict (values None on the CPU)."""
        out = {"peak_device_bytes": self.peak_bytes, "peak_pool_used_bytes": self.peak_pool_used_bytes,
               "peak_pool_total_bytes": self.peak_pool_total_bytes, "samples": self.samples}
        if num_edges is not None:
            out["peak_device_bytes_per_edge"] = self.per_edge(num_edges)
        return out
