"""The environment variables streamrank reads, in one place (docs/settings.md lists them).

Each engine setting is a :class:`Setting`: its variable, its default, the values it takes and
why a user would change it. A value outside those raises :class:`InvalidArgumentError` naming
the variable. The daemon's settings (``streamrank serve``) are read as ``STREAMRANK_<SETTING>``
for every setting of :class:`streamrank.daemon.config.DaemonConfig` (docs/daemon.md);
:func:`daemon_values` hands them over, without the engine settings below.

Values are read when they are used (each call reads the environment), so a process may change
them between engines; tests and tools set them through the environment too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .errors import InvalidArgumentError

__all__ = ["PREFIX", "Setting", "CPU_THREADS", "CUDF", "CUDA_GRAPHS", "GPU_MEMORY_LIMIT", "SETTINGS",
           "cpu_threads", "cudf", "cuda_graphs", "gpu_memory_limit", "parse_bytes", "daemon_values"]

#: Prefix of every variable streamrank reads.
PREFIX = "STREAMRANK_"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Setting:
    """One environment variable.

    Attributes
    ----------
    name : str
        The variable, ``STREAMRANK_...``.
    default : str
        Its value when unset or empty.
    choices : tuple of str
        The values it takes (compared without case and surrounding blanks); ``("0", "1")`` also
        takes ``false/true``, ``no/yes`` and ``off/on``.
    why : str
        One line: why a user would change it.
    parse : callable, optional
        For a setting that takes a quantity rather than one of :attr:`choices` (which then only
        describe it): ``parse(text)`` validates the value and raises ``InvalidArgumentError``.
    """

    name: str
    default: str
    choices: tuple
    why: str
    parse: object = None

    @property
    def is_switch(self) -> bool:
        """Whether the setting is on/off (``0`` or ``1``)."""
        return self.choices == ("0", "1")

    def raw(self, environ: Mapping[str, str] | None = None) -> str:
        """The validated value, lower case (the default when unset or empty).

        Raises
        ------
        InvalidArgumentError
            When the value is not one of :attr:`choices`.
        """
        env = os.environ if environ is None else environ
        value = str(env.get(self.name, "")).strip().lower() or self.default
        if self.parse is not None:
            if value in self.choices:
                return value
            try:
                self.parse(value)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(f"{self.name}: {exc}") from None
            return value
        if self.is_switch:
            if value in _TRUE:
                return "1"
            if value in _FALSE:
                return "0"
        elif value in self.choices:
            return value
        allowed = "0 or 1" if self.is_switch else " or ".join(self.choices)
        raise InvalidArgumentError(f"{self.name} must be {allowed}, got {env.get(self.name)!r}")


#: Threads of the CPU backend's frontier loop per batch.
CPU_THREADS = Setting(
    "STREAMRANK_CPU_THREADS", "auto", ("auto", "all"),
    "auto picks one thread or all of Numba's per batch by measured speed (a loaded machine makes "
    "joins slow); all uses every Numba thread on every batch (a dedicated machine, repeatable timings)")
#: cuDF for Arrow tables on the GPU backend.
CUDF = Setting(
    "STREAMRANK_CUDF", "1", ("0", "1"),
    "0 moves Arrow edge tables to the GPU through NumPy even where cuDF is installed (a cuDF that "
    "does not match the driver, or to compare)")
#: Captured CUDA graphs for small GPU batches.
CUDA_GRAPHS = Setting(
    "STREAMRANK_CUDA_GRAPHS", "1", ("0", "1"),
    "0 queues a small GPU batch's launches call by call instead of replaying captured CUDA graphs: "
    "for debuggers and profilers that follow single launches; slower on the host")


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
          "tib": 1 << 40}


def parse_bytes(text, *, name: str = "value") -> int | None:
    """A byte count from ``text``: an integer or a number with a binary unit (``8G``, ``512MiB``,
    ``1.5g``; K, M, G and T are powers of 1024); ``none``, ``0`` or empty: None (no cap).

    Raises
    ------
    InvalidArgumentError
        For anything else, naming ``name``.
    """
    if text is None:
        return None
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        if int(text) < 0:
            raise InvalidArgumentError(f"{name} must be a byte count >= 0, got {text!r}")
        return int(text) or None
    raw = str(text).strip().lower().replace("_", "")
    if raw in ("", "none", "0"):
        return None
    num = raw.rstrip("kmgtib")
    unit = raw[len(num):].strip()
    try:
        value = float(num)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or not 0 < value < 2.0**63:
        raise InvalidArgumentError(f"{name} must be a byte count such as 8G, 512M or 2000000000 (or none), "
                                   f"got {text!r}")
    return max(1, int(value * _UNITS[unit]))


def _byte_count(text: str) -> None:
    parse_bytes(text, name="the value")


#: Cap of the device memory the GPU backend may use (CuPy's pool limit).
GPU_MEMORY_LIMIT = Setting(
    "STREAMRANK_GPU_MEMORY_LIMIT", "none", ("none", "a byte count: 40G, 512M, 2000000000"),
    "caps the device memory the GPU backend takes (every array and sort buffer goes through CuPy's "
    "pool, capped there): a GPU shared with other processes, or to test what fits a smaller GPU; a load "
    "or batch that would pass it stops with GraphCapacityError before changing anything",
    parse=_byte_count)

#: Every engine setting (the rows of docs/settings.md, with ``STREAMRANK_<SETTING>`` for the daemon).
SETTINGS = (CPU_THREADS, CUDF, CUDA_GRAPHS, GPU_MEMORY_LIMIT)


def cpu_threads(environ: Mapping[str, str] | None = None) -> str:
    """``"auto"`` or ``"all"`` (:data:`CPU_THREADS`)."""
    return CPU_THREADS.raw(environ)


def cudf(environ: Mapping[str, str] | None = None) -> bool:
    """Whether cuDF may be used where it is installed (:data:`CUDF`)."""
    return CUDF.raw(environ) == "1"


def cuda_graphs(environ: Mapping[str, str] | None = None) -> bool:
    """Whether small GPU batches replay captured CUDA graphs (:data:`CUDA_GRAPHS`)."""
    return CUDA_GRAPHS.raw(environ) == "1"


def gpu_memory_limit(environ: Mapping[str, str] | None = None) -> str:
    """``"none"`` or the byte count's text (:data:`GPU_MEMORY_LIMIT`; parsed by
    :func:`streamrank.store.memory.parse_bytes`)."""
    return GPU_MEMORY_LIMIT.raw(environ)


def daemon_values(environ: Mapping[str, str] | None = None) -> dict:
    """``{setting: value}`` of every ``STREAMRANK_<SETTING>`` variable but the engine settings
    (:data:`SETTINGS`), the setting's name in lower case; which settings exist, and their types,
    is :mod:`streamrank.daemon.config`'s to decide."""
    env = os.environ if environ is None else environ
    own = {s.name for s in SETTINGS}
    return {k[len(PREFIX):].lower(): v for k, v in env.items() if k.startswith(PREFIX) and k not in own}
