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
  the peaks (``peak_bytes``); on the CPU backend it reports None. :class:`PoolPeak` records the
  exact high-water mark of CuPy's pool over a stretch of work (every allocation, thrust's sort
  buffers included, goes through it), where sampling between stages would miss a transient peak.
- :func:`set_device_limit` caps the device memory the process may use (CuPy's pool limit, which
  every array of the engine and the sorts' scratch go through); :func:`apply_device_limit_setting`
  sets it from ``STREAMRANK_GPU_MEMORY_LIMIT`` / ``--gpu-memory-limit``. :func:`check_fits` counts
  the cap as the end of the device.
- :func:`out_of_memory` turns an out-of-memory error raised anyway deep inside CuPy
  (``cupy.cuda.memory.OutOfMemoryError``, or ``MemoryError: std::bad_alloc`` from thrust) into a
  :class:`GraphCapacityError` with the same advice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import GraphCapacityError, InvalidArgumentError
from ..settings import gpu_memory_limit, parse_bytes

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
    pool_limit : int
        The pool's cap (:func:`set_device_limit`); 0: none.
    """

    device_total: int
    device_free: int
    pool_used: int
    pool_total: int
    pool_limit: int = 0

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
        """Bytes this process can still allocate: free on the device plus free in the pool, and
        no more than the pool's cap leaves (the cap minus the bytes in live arrays)."""
        free = self.device_free + self.pool_free
        if self.pool_limit > 0:
            free = min(free, max(0, self.pool_limit - self.pool_used))
        return free


def read_device_memory(xp) -> DeviceMemory:
    """The current :class:`DeviceMemory` of the current device (``xp`` is :mod:`cupy`)."""
    free, total = xp.cuda.runtime.memGetInfo()
    pool = xp.get_default_memory_pool()
    limit = pool.get_limit() if hasattr(pool, "get_limit") else 0
    return DeviceMemory(int(total), int(free), int(pool.used_bytes()), int(pool.total_bytes()), int(limit))


def set_device_limit(xp, nbytes) -> int | None:
    """Cap the device memory this process may use at ``nbytes`` (None or 0: no cap).

    The cap is CuPy's default memory pool's limit: every array of the graph store, the ranks and
    the builds' sort buffers is allocated through that pool, so no allocation passes it (the CUDA
    context, loaded kernels and library handles, some hundreds of MiB, lie outside it).
    :func:`check_fits` treats the cap as the end of the device, so a load or a batch that would
    pass it raises :class:`GraphCapacityError` before changing anything. Returns the cap set.
    """
    limit = parse_bytes(nbytes, name="the device memory limit")
    if _is_numpy(xp):
        return limit
    xp.get_default_memory_pool().set_limit(size=int(limit or 0))
    return limit


def device_limit(xp) -> int | None:
    """The cap :func:`set_device_limit` set (None: none, or the CPU)."""
    if _is_numpy(xp):
        return None
    pool = xp.get_default_memory_pool()
    return int(pool.get_limit()) or None


def apply_device_limit_setting(xp, value=None) -> int | None:
    """Set the cap from ``value`` (a flag's text or bytes) or, when None, from
    ``STREAMRANK_GPU_MEMORY_LIMIT`` (:data:`streamrank.settings.GPU_MEMORY_LIMIT`); an unset
    setting leaves the cap as it is. Returns the cap in force."""
    if value is None:
        text = gpu_memory_limit()
        if text == "none":
            return device_limit(xp)
        value = text
    return set_device_limit(xp, value)


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
        raise GraphCapacityError(f"{what} needs {mib(needed)} of device memory but only {_free_text(mem, held)}; "
                                 f"nothing was changed. {ADVICE}", needed=needed, available=mem.available)


#: What to do when the device is too small (the end of every device-memory message).
ADVICE = ("Use a GPU with more memory (or raise --gpu-memory-limit / STREAMRANK_GPU_MEMORY_LIMIT, or free "
          "memory other processes hold), a graph with fewer vertices and edges, or the CPU (--device cpu); "
          "graphs beyond one GPU need the multi-GPU engine of docs/architecture.md")


def _free_text(mem: DeviceMemory, held: int) -> str:
    cap = f", capped at {mib(mem.pool_limit)} by the device memory limit" if mem.pool_limit else ""
    return (f"{mib(mem.available)} is free ({mib(mem.device_free)} on the device + {mib(mem.pool_free)} "
            f"cached by CuPy's pool{cap}; the graph store holds {mib(held)} of the device's "
            f"{mib(mem.device_total)})")


def is_out_of_memory(exc: BaseException, xp) -> bool:
    """Whether ``exc`` is a device allocation failure: CuPy's ``OutOfMemoryError``, or the
    ``MemoryError`` (``std::bad_alloc``) thrust raises through CuPy when its scratch does not fit;
    never a :class:`GraphCapacityError` (already the package's error)."""
    if isinstance(exc, GraphCapacityError):
        return False
    oom = getattr(getattr(getattr(xp, "cuda", None), "memory", None), "OutOfMemoryError", None)
    return isinstance(exc, MemoryError) or (oom is not None and isinstance(exc, oom))


def out_of_memory(exc: BaseException, *, xp, what: str, held: int = 0, changed: str = "nothing was changed",
                  error=GraphCapacityError):
    """The ``error`` (:class:`GraphCapacityError`, or :class:`~streamrank.errors.DeviceMemoryError`
    where state may have changed) for an allocation failure ``exc`` raised inside ``what`` (raise
    it ``from exc``). ``changed`` says what state the failure left."""
    try:
        mem = read_device_memory(xp)
        free = _free_text(mem, held)
        avail = mem.available
    except Exception:  # reading the counters must not hide the real error
        free, avail = "the free memory could not be read", 0
    detail = str(exc) or type(exc).__name__
    # CuPy's message ("allocating N bytes") and RMM's ("failed to allocate N bytes") name the request
    asked = re.search(r"allocat(?:ing|e) ([\d,]+) bytes", detail)
    needed = int(asked.group(1).replace(",", "")) if asked else 0
    return error(f"{what} ran out of device memory ({detail}); now {free}; {changed}. {ADVICE}",
                 needed=needed, available=avail)


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


class PoolPeak:
    """The high-water mark of CuPy's pool over a block of work: ``with PoolPeak(xp) as peak: ...``,
    then ``peak.bytes`` (most bytes in live arrays at once, what the block needed the device to
    hold for this process) and ``peak.start_bytes``.

    Every device allocation of CuPy, thrust's sort buffers included, goes through the current
    allocator, which this replaces for the block by one that reads the pool's used bytes after
    each allocation: exact, where sampling between stages misses a transient peak. On the CPU
    (``xp`` is NumPy) both stay None.
    """

    def __init__(self, xp):
        self.xp = xp
        self.bytes: int | None = None
        self.start_bytes: int | None = None
        self._previous = None

    def __enter__(self) -> "PoolPeak":
        xp = self.xp
        if _is_numpy(xp):
            return self
        pool = xp.get_default_memory_pool()
        self.start_bytes = self.bytes = int(pool.used_bytes())
        self._previous = xp.cuda.memory.get_allocator()

        def allocate(size):
            mem = pool.malloc(size)
            used = pool.used_bytes()
            if used > self.bytes:
                self.bytes = int(used)
            return mem

        xp.cuda.memory.set_allocator(allocate)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            self.xp.cuda.memory.set_allocator(self._previous)
            self._previous = None
