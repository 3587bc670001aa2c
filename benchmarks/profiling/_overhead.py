"""The fixed cost of a frontier-loop iteration, estimated from iteration times and frontier sizes
(loop_phases.py prints it; docs/architecture.md).

An iteration's time is its fixed cost (the grid barrier, the decision, the first round trips of
any chain) plus what its frontier's work adds. Least squares of ``time = a + b * frontier`` over
the iterations under a frontier size gives ``a``, the time an iteration would take with no
frontier work, and ``b``, the time each further vertex adds; a bootstrap over the iterations gives
an interval for ``a``. Runs anywhere with NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The frontier-size bins the loop's profiling scripts report by (vertices, [lo, hi)).
FRONTIER_BINS = ((0, 100), (100, 1000), (1000, 10000), (10000, 10**9))
#: The frontier size the fixed cost is fitted under: the latency target's "frontier under 10,000 vertices".
FIT_BELOW = 10_000


def bins(frontier):
    """(lo, hi, mask) of each of :data:`FRONTIER_BINS` that holds an iteration of ``frontier``."""
    frontier = np.asarray(frontier)
    for lo, hi in FRONTIER_BINS:
        m = (frontier >= lo) & (frontier < hi)
        if m.any():
            yield lo, hi, m


@dataclass(frozen=True)
class FixedCostFit:
    """The least-squares line of iteration time against frontier size.

    Attributes
    ----------
    intercept_us : float
        ``a``: the fitted time of an iteration with an empty frontier (us).
    slope_us_per_1000 : float
        ``b`` per 1,000 frontier vertices (us).
    low_us, high_us : float
        The 2.5% and 97.5% quantiles of ``a`` over bootstrap resamples of the iterations.
    iterations : int
        The iterations fitted (frontier under ``below``).
    """

    intercept_us: float
    slope_us_per_1000: float
    low_us: float
    high_us: float
    iterations: int


def _line(n: np.ndarray, t: np.ndarray) -> tuple:
    """(a, b) of the least-squares line t = a + b n."""
    design = np.column_stack([np.ones_like(n), n])
    (a, b), *_ = np.linalg.lstsq(design, t, rcond=None)
    return float(a), float(b)


def fit_fixed_cost(frontier, time_us, *, below: int = FIT_BELOW, draws: int = 1000, seed: int = 0) -> FixedCostFit:
    """Fit ``time_us = a + b * frontier`` over the iterations whose frontier is under ``below``.

    Parameters
    ----------
    frontier : array_like
        Each iteration's frontier size (vertices).
    time_us : array_like
        Each iteration's time (us), same length.
    below : int, optional
        Only iterations with ``frontier < below`` are fitted (default :data:`FIT_BELOW`).
    draws : int, optional
        Bootstrap resamples for the interval of ``a`` (default 1,000).
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    FixedCostFit

    Raises
    ------
    ValueError
        If the arrays differ in length, or fewer than 3 iterations (or fewer than 2 distinct
        frontier sizes) fall under ``below``.
    """
    n = np.asarray(frontier, dtype=float)
    t = np.asarray(time_us, dtype=float)
    if n.shape != t.shape or n.ndim != 1:
        raise ValueError(f"frontier and time_us must be 1-d arrays of one length, got {n.shape} and {t.shape}")
    if below <= 0 or draws <= 0:
        raise ValueError("below and draws must be positive")
    keep = n < below
    n, t = n[keep], t[keep]
    if n.size < 3 or np.unique(n).size < 2:
        raise ValueError(f"{n.size} iterations under {below} vertices: too few (or one frontier size) to fit a line")
    a, b = _line(n, t)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(draws):
        pick = rng.integers(0, n.size, n.size)
        if np.unique(n[pick]).size >= 2:
            boot.append(_line(n[pick], t[pick])[0])
    low, high = np.quantile(boot, [0.025, 0.975])
    return FixedCostFit(a, 1000.0 * b, float(low), float(high), int(n.size))
