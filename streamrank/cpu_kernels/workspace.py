"""Upkeep of the frontier workspace (Numba): the per-vertex state a batch changes outside its
frontier.

Between batches the workspace holds, for every vertex ``v``, the iterate ``x[v]``, the inverse
degree ``inv[v]`` of the dangling mode and the contribution ``c[v] = x[v] * inv[v]``. A batch
changes ``inv`` (and so ``c``) only at the sources of its inserted and deleted edges, and adds
new vertices at ``x = 1``: :func:`admit` updates exactly those, so the upkeep follows the batch.
:func:`load` fills everything from a vector the workspace did not produce.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _inverse(deg, selfloop):
    d = deg + 1 if selfloop else deg
    return 1.0 / d if d > 0 else 0.0


@njit(cache=True)
def load(x_prev, n, out_deg, selfloop, x, c, inv):
    """``x`` = ``x_prev`` grown to ``n`` vertices (new ones at 1), ``inv`` and ``c`` for all of
    them. Returns ``sum(x)``."""
    m = x_prev.shape[0]
    total = 0.0
    for v in range(n):
        xv = x_prev[v] if v < m else 1.0
        iv = _inverse(out_deg[v], selfloop)
        x[v] = xv
        inv[v] = iv
        c[v] = xv * iv
        total += xv
    return total


@njit(cache=True)
def admit(n_before, n_after, out_deg, selfloop, ins_src, del_src, x, c, inv):
    """The vertices ``n_before .. n_after - 1`` at ``x = 1``, and ``inv``, ``c`` of the sources
    of changed edges (their out-degree changed). Returns how much ``sum(x)`` grew."""
    for v in range(n_before, n_after):
        iv = _inverse(out_deg[v], selfloop)
        x[v] = 1.0
        inv[v] = iv
        c[v] = iv
    for sources in (ins_src, del_src):
        for s in sources:
            iv = _inverse(out_deg[s], selfloop)
            inv[s] = iv
            c[s] = x[s] * iv
    return float(n_after - n_before)
