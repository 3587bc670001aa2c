"""Upkeep of the frontier workspace (Numba): the per-vertex state a batch changes outside its
frontier.

Between batches the workspace holds, for every vertex ``v``, the iterate ``x[v]``, the inverse
degree ``inv[v]`` of the dangling mode and the contribution ``c[v] = x[v] * inv[v]`` (and its
copy ``cprev[v]``, which the Gauss-Seidel steps read across blocks). A batch
changes ``inv`` (and so ``c``) only at the sources of its inserted and deleted edges, and adds
new vertices at ``x = 1``: :func:`admit` updates exactly those, so the upkeep follows the batch.
:func:`load` fills everything from a vector the workspace did not produce. The flags ``loops[v]``
(``v`` has an explicit self-loop, which the Gauss-Seidel steps divide out) are filled by
:func:`.common.find_loops` on a reload and kept by :func:`admit_loops`.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _inverse(deg, selfloop):
    d = deg + 1 if selfloop else deg
    return 1.0 / d if d > 0 else 0.0


@njit(cache=True, nogil=True)
def load(x_prev, n, out_deg, selfloop, x, c, cprev, inv):
    """``x`` = ``x_prev`` grown to ``n`` vertices (new ones at 1), ``inv``, ``c`` and ``cprev``
    for all of them. Returns ``sum(x)``."""
    m = x_prev.shape[0]
    total = 0.0
    for v in range(n):
        xv = x_prev[v] if v < m else 1.0
        iv = _inverse(out_deg[v], selfloop)
        x[v] = xv
        inv[v] = iv
        c[v] = xv * iv
        cprev[v] = xv * iv
        total += xv
    return total


@njit(cache=True, nogil=True)
def admit(n_before, n_after, out_deg, selfloop, ins_src, del_src, x, c, cprev, inv):
    """The vertices ``n_before .. n_after - 1`` at ``x = 1``, and ``inv``, ``c``, ``cprev`` of
    the sources of changed edges (their out-degree changed). Returns how much ``sum(x)`` grew."""
    for v in range(n_before, n_after):
        iv = _inverse(out_deg[v], selfloop)
        x[v] = 1.0
        inv[v] = iv
        c[v] = iv
        cprev[v] = iv
    for sources in (ins_src, del_src):
        for s in sources:
            iv = _inverse(out_deg[s], selfloop)
            inv[s] = iv
            c[s] = x[s] * iv
            cprev[s] = c[s]
    return float(n_after - n_before)


@njit(cache=True, nogil=True)
def admit_loops(n_before, n_after, ins_src, ins_dst, del_src, del_dst, loops):
    """``loops`` after a batch: the new vertices, then the self-loops it inserted and deleted."""
    for v in range(n_before, n_after):
        loops[v] = 0
    for i in range(ins_src.shape[0]):
        if ins_src[i] == ins_dst[i]:
            loops[ins_src[i]] = 1
    for i in range(del_src.shape[0]):
        if del_src[i] == del_dst[i]:
            loops[del_src[i]] = 0
