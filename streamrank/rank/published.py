"""The ranks the engine publishes, from its local-form iterate ``x`` (DESIGN.md, "Local form").

Uniform mode (standard PageRank): ``p = x / sum(x)``.

Self-loop mode: the exact solution's total is known, ``sum(x*) = n / (1 - alpha)`` (every vertex
has out-degree at least 1, so ``alpha P^T`` keeps the mass it is given), and a vertex with no
in-edges has its exact ``x`` in closed form, ``1 / (1 - alpha / d)`` (which the local-form updates
write; the GPU's static standard-form sweeps leave it within their 1e-10 criterion).
Such a vertex is published exactly, ``x (1 - alpha) / n``; the other vertices share the rest of
the mass, ``1 - sum`` of those, in proportion to ``x``. The result sums to 1 and equals
``x / sum(x)`` at the fixed point. Before it (DF-P's propagation is truncated by its frontier
and prune tolerances), ``x / sum(x)`` spreads the iterate's deficit or surplus in ``sum(x)``
over every vertex, the exact ones too: on the published protocol's padded graph (92% of the
vertices isolated) that doubled the L1 error, and the reference's form ``x (1 - alpha) / n``
(which leaves the deficit where it is) had half of it. Publishing the exact vertices exactly and
renormalizing the rest had the least error of the three on both the padded and the unpadded
graph (``benchmarks/l1_normalization.py``).

In uniform mode the total depends on the dangling vertices' ranks, which are not exact before the
fixed point, so the plain normalization stays.
"""

from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..config import DANGLING_MODES
from ..errors import InvalidArgumentError


def published_ranks(x, in_degree, *, alpha: float, dangling: str) -> np.ndarray:
    """The published ranks ``p`` (host float64, sums to 1) of the local-form iterate ``x``.

    Parameters
    ----------
    x : array
        The local-form iterate (host or device array), one entry per vertex.
    in_degree : array or None
        In-degree of each vertex in the stored graph (its real in-edges; an explicit self-loop
        counts; host or device array). Read (and copied to the host) in self-loop mode only; may
        be None in uniform mode.
    alpha : float
        Damping factor, in (0, 1).
    dangling : {"uniform", "self-loop"}
        The rank semantics (:class:`streamrank.config.RankConfig`).

    Returns
    -------
    numpy.ndarray
        ``x / sum(x)`` in uniform mode; in self-loop mode the vertices without in-edges at
        ``x (1 - alpha) / n`` and the others scaled to the remaining mass (``x / sum(x)`` when
        every vertex is without in-edges, or when the iterate is too far from the fixed point
        for the split to hold: pinned mass at least 1, or no mass left on the others).

    Raises
    ------
    InvalidArgumentError
        For an unknown ``dangling`` mode, ``alpha`` outside (0, 1), a missing or mis-sized
        ``in_degree`` in self-loop mode, or a non-finite or non-positive ``sum(x)``.
    """
    x = np.asarray(to_host(x), dtype=np.float64)  # device-to-host copy on the GPU
    if dangling == "self-loop" and in_degree is not None:
        in_degree = np.asarray(to_host(in_degree))  # device-to-host copy on the GPU
    return _published(np, x, in_degree, alpha=alpha, dangling=dangling)


def published_ranks_on(xp, x, in_degree, *, alpha: float, dangling: str):
    """:func:`published_ranks` computed where ``x`` lives (``xp``: :mod:`numpy` or :mod:`cupy`),
    returned there: no copy of ``x`` leaves the device. Same rules and errors."""
    return _published(xp, xp.asarray(x, dtype=xp.float64), in_degree, alpha=alpha, dangling=dangling)


def _published(xp, x, in_degree, *, alpha: float, dangling: str):
    return apply_form(x, published_form(xp, x, in_degree, alpha=alpha, dangling=dangling))


def published_form(xp, x, in_degree, *, alpha: float, dangling: str) -> tuple:
    """How the published ranks follow from the iterate ``x`` (on ``xp``'s backend):
    ``(divide, f0, f1, exact)``, where ``p = x / f0`` when ``divide``, else ``p = x * f0`` with
    the vertices of the mask ``exact`` at ``x * f1`` (:func:`apply_form`). ``exact`` is the mask
    of the vertices without in-edges in self-loop mode (whether or not ``divide``), else None.
    Same rules and errors as :func:`published_ranks`."""
    if dangling not in DANGLING_MODES:
        raise InvalidArgumentError(f"dangling must be one of {DANGLING_MODES}, got {dangling!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    if x.ndim != 1:
        raise InvalidArgumentError(f"x must be one-dimensional, got shape {x.shape}")
    n = x.shape[0]
    if n == 0:
        return True, 1.0, 0.0, None
    total = float(x.sum())
    if not (np.isfinite(total) and total > 0.0):
        raise InvalidArgumentError(f"sum(x) must be finite and positive, got {total}")
    if dangling != "self-loop":
        return True, total, 0.0, None
    if in_degree is None:
        raise InvalidArgumentError("self-loop mode needs in_degree")
    deg = in_degree
    if deg.shape != (n,):
        raise InvalidArgumentError(f"in_degree has shape {deg.shape}, x has {n} entries")
    exact = deg == 0
    f1 = (1.0 - float(alpha)) / n
    pinned_mass = float((x[exact] * f1).sum())
    rest = float(x[~exact].sum())
    if not (rest > 0.0 and pinned_mass < 1.0):
        return True, total, 0.0, exact  # all vertices without in-edges, or far from the fixed point
    return False, (1.0 - pinned_mass) / rest, f1, exact


def apply_form(x, form: tuple):
    """The published ranks of ``x`` under ``form`` (:func:`published_form`), on ``x``'s backend."""
    divide, f0, f1, exact = form
    if divide:
        return x / f0
    p = x * f0
    p[exact] = x[exact] * f1
    return p
