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

from .errors import InvalidArgumentError

__all__ = ["PREFIX", "Setting", "CPU_THREADS", "CUDF", "CUDA_GRAPHS", "SETTINGS", "cpu_threads", "cudf",
           "cuda_graphs", "daemon_values"]

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
    """

    name: str
    default: str
    choices: tuple
    why: str

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

#: Every engine setting (the rows of docs/settings.md, with ``STREAMRANK_<SETTING>`` for the daemon).
SETTINGS = (CPU_THREADS, CUDF, CUDA_GRAPHS)


def cpu_threads(environ: Mapping[str, str] | None = None) -> str:
    """``"auto"`` or ``"all"`` (:data:`CPU_THREADS`)."""
    return CPU_THREADS.raw(environ)


def cudf(environ: Mapping[str, str] | None = None) -> bool:
    """Whether cuDF may be used where it is installed (:data:`CUDF`)."""
    return CUDF.raw(environ) == "1"


def cuda_graphs(environ: Mapping[str, str] | None = None) -> bool:
    """Whether small GPU batches replay captured CUDA graphs (:data:`CUDA_GRAPHS`)."""
    return CUDA_GRAPHS.raw(environ) == "1"


def daemon_values(environ: Mapping[str, str] | None = None) -> dict:
    """``{setting: value}`` of every ``STREAMRANK_<SETTING>`` variable but the engine settings
    (:data:`SETTINGS`), the setting's name in lower case; which settings exist, and their types,
    is :mod:`streamrank.daemon.config`'s to decide."""
    env = os.environ if environ is None else environ
    own = {s.name for s in SETTINGS}
    return {k[len(PREFIX):].lower(): v for k, v in env.items() if k.startswith(PREFIX) and k not in own}
