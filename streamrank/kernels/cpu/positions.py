"""Moves between id order and the sweep order (Numba): the gather into position order when a run
of Gauss-Seidel dense passes starts and the scatter back when it ends (:mod:`.frontier_order`).

Position ``p`` holds vertex ``order[p]`` (the store's sweep order, a permutation), so every
position reads or writes entries of its own vertex only: chunks of ``CHUNK`` positions run on
Numba's threads in any order with the same result. The sweep order visits the ids at random;
each walk prefetches the id-space entries of the vertex :data:`PREFETCH_AHEAD` positions ahead
(:mod:`.prefetch`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, nchunks
from .prefetch import prefetch

#: The walks prefetch the id-space entries of the vertex this many positions ahead.
PREFETCH_AHEAD = 16


@njit(cache=True, nogil=True)
def _gather(lo, hi, order, x, c, flags, xp, cp, cprevp, keepp):
    ahead = np.uint64(PREFETCH_AHEAD)
    uhi = np.uint64(hi)
    for p in range(np.uint64(lo), uhi):
        v = np.uint64(order[p])  # unsigned indices: no wraparound code (frontier_order._dense_block)
        if p + ahead < uhi:
            w = np.uint64(order[p + ahead])
            prefetch(x, w)
            prefetch(c, w)
            prefetch(flags, w)
        xp[p] = x[v]
        cp[p] = c[v]
        cprevp[p] = c[v]
        keepp[p] = flags[v]


@njit(cache=True, nogil=True, parallel=True)
def _gather_par(nch, n, order, x, c, flags, xp, cp, cprevp, keepp):
    for k in prange(nch):
        lo = np.int64(k) * CHUNK
        _gather(lo, min(lo + CHUNK, n), order, x, c, flags, xp, cp, cprevp, keepp)


@njit(cache=True, nogil=True)
def gather_all(n, order, x, c, flags, xp, cp, cprevp, keepp, par):
    """The first ``n`` positions' iterate, contributions (also into ``cprevp``) and flags, from id
    order into position order; ``par``: in chunks on Numba's threads."""
    nch = nchunks(n)
    if par and nch > 1:
        _gather_par(nch, n, order, x, c, flags, xp, cp, cprevp, keepp)
    else:
        _gather(0, n, order, x, c, flags, xp, cp, cprevp, keepp)


@njit(cache=True, nogil=True)
def _scatter(lo, hi, order, xp, cp, keepp, x, c, cprev, flags, signed, clear):
    """Positions ``[lo, hi)`` back in id order: ``x``, ``c`` and ``cprev`` (``signed``: with the
    sign bits, else without), ``flags`` the kept flags (``clear``: 0)."""
    ahead = np.uint64(PREFETCH_AHEAD)
    uhi = np.uint64(hi)
    for p in range(np.uint64(lo), uhi):
        v = np.uint64(order[p])
        if p + ahead < uhi:
            w = np.uint64(order[p + ahead])
            prefetch(x, w)
            prefetch(c, w)
            prefetch(cprev, w)
            prefetch(flags, w)
        x[v] = xp[p]
        cv = cp[p] if signed else abs(cp[p])
        c[v] = cv
        cprev[v] = cv
        flags[v] = 0 if clear else keepp[p]


@njit(cache=True, nogil=True, parallel=True)
def _scatter_par(nch, n, order, xp, cp, keepp, x, c, cprev, flags, signed, clear):
    for k in prange(nch):
        lo = np.int64(k) * CHUNK
        _scatter(lo, min(lo + CHUNK, n), order, xp, cp, keepp, x, c, cprev, flags, signed, clear)


@njit(cache=True, nogil=True)
def scatter_all(n, order, xp, cp, keepp, x, c, cprev, flags, signed, clear, par):
    """:func:`_scatter` of the first ``n`` positions; ``par``: in chunks on Numba's threads."""
    nch = nchunks(n)
    if par and nch > 1:
        _scatter_par(nch, n, order, xp, cp, keepp, x, c, cprev, flags, signed, clear)
    else:
        _scatter(0, n, order, xp, cp, keepp, x, c, cprev, flags, signed, clear)


@njit(cache=True, nogil=True)
def sort_ids(a, m, tmp):
    """Sort the vertex ids ``a[:m]`` (int32, non-negative) in place: a least-significant-digit
    radix sort, three passes of 11 bits, ``tmp`` scratch of at least ``m`` entries. O(m + 2048)
    per pass: the frontier, not the graph."""
    if m < 2:
        return
    count = np.empty(2049, dtype=np.int64)
    src, dst = a, tmp
    for shift in (0, 11, 22):
        count[:] = 0
        for i in range(m):
            count[((src[i] >> shift) & 2047) + 1] += 1
        for k in range(2048):
            count[k + 1] += count[k]
        for i in range(m):
            d = (src[i] >> shift) & 2047
            dst[count[d]] = src[i]
            count[d] += 1
        src, dst = dst, src
    for i in range(m):  # three passes: the sorted ids ended in tmp
        a[i] = src[i]
