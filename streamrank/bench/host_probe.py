"""How fast the host runs a batch's kind of Python work right now.

A one-wait GPU batch's graph update is about half host work (Python and small NumPy calls between
``Engine.apply`` and the kernel's launch, then its bookkeeping). The lent GPU machines run that
work at two speeds about 2x apart, from process to process and sometimes
within one, and ``graph_ms`` follows the host's speed. The benchmarks therefore report this probe
beside their figures, so that a slow host can be told from slow code.

The work is the fixed piece ``benchmarks/profiling/graph_update_scale.py`` times before each
batch (``PARTS=1`` or ``PROBE=1``; :func:`fixed_host_work_us`): 20 rounds of a small array copy, an
in-place add and a small dict.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InvalidArgumentError

_A = np.arange(64)


def fixed_host_work() -> None:
    """The probe's fixed piece of host work (see the module docstring)."""
    for _ in range(20):
        b = _A[:32].copy()
        b += 1
        {"k": int(b[0]), "v": (1, 2, 3)}.get("k")


def fixed_host_work_us() -> float:
    """One timed run of :func:`fixed_host_work` (us), with nothing run before it: the host's speed
    as the next batch finds it (the profiling scripts time it just before each batch)."""
    t = time.perf_counter()
    fixed_host_work()
    return (time.perf_counter() - t) * 1e6


def host_probe_us(*, rounds: int = 21) -> float:
    """Median time of :func:`fixed_host_work` over ``rounds`` runs, after one untimed run.

    Parameters
    ----------
    rounds : int
        Timed runs, at least 1.

    Returns
    -------
    float
        Microseconds.

    Raises
    ------
    InvalidArgumentError
        When ``rounds`` is below 1.
    """
    if int(rounds) < 1:
        raise InvalidArgumentError(f"rounds must be >= 1, got {rounds}")
    fixed_host_work()
    return float(np.median([fixed_host_work_us() for _ in range(int(rounds))]))
