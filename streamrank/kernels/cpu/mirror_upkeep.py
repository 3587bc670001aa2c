"""Keeping the Gauss-Seidel mirror (:mod:`.frontier_order`) exact across batches (Numba).

A batch's new vertices get their rows whole; every old vertex whose in-edges it inserted,
deleted or reweighted gets its row rewritten once, from the first entry that changed on (the
store's rows are sorted by neighbour, so the entries before the smallest changed neighbour are
the ones the mirror holds: a hub's long row costs its tail, not its length). A row that grew moves
to the end of the used part of ``m_idx``; when the rows left behind take more than
``1 / COMPACT`` of it, the rows are laid out afresh (:func:`compact`); when ``m_idx`` has no room,
the mirror becomes invalid and the next dense pass builds it (:func:`.frontier_order.build`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .batch_plan import argsort_stable
from .frontier_order import BUILT, LIVE, USED
from .gapped_csr import lower_bound

#: A batch that leaves more than ``1 / COMPACT`` of the used part of ``m_idx`` to rows moved away
#: lays the rows out afresh (:func:`compact`). A compaction copies every row, and a
#: packed row moves as soon as it gains an entry, so the copies cost about ``COMPACT`` times the
#: rows a batch grows, per batch: at 32, 506-line batches of sx-mathoverflow (about 10,000 entries
#: of grown rows each) compacted at every batch, 1.1-1.3 ms of a 10-13 ms batch on two cores
#: (2.2 ms with weights); at 4, 0.23-0.37 ms, with the dense passes' time unchanged
#: (docs/benchmarks.md, design measurements).
COMPACT = 4


@njit(cache=True, inline="always")
def _rewrite(v, first, g, pos, m_off, m_end, m_idx, mstate, wt=None, mw=None):
    """Vertex ``v``'s mirror row from the store, its entries before ``first`` unchanged (they
    are copied when the row moves, not looked up again); False when ``m_idx`` has no room."""
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    p = pos[v]
    d = in_deg[v]
    o = m_off[p]
    mstate[LIVE] += d - (m_end[p] - o)
    if d > m_end[p] - o:  # it grew: to the end of the used part
        to = mstate[USED]
        if to + d > m_idx.shape[0]:
            return False
        mstate[USED] = to + d
        m_off[p] = to
        for j in range(first):
            m_idx[to + j] = m_idx[o + j]
            if mw is not None:
                mw[to + j] = mw[o + j]
        o = to
    for j in range(first, d):
        m_idx[o + j] = pos[in_idx[in_off[v] + j]]
        if wt is not None:
            mw[o + j] = wt[in_off[v] + j]
    m_end[p] = o + d
    return True


@njit(cache=True, nogil=True)
def _changed_rows(n_before, g, ins_src, ins_dst, del_src, del_dst):
    """The rows a batch changed: ``(targets, firsts)``, each old vertex whose in-edges it
    inserted, deleted or reweighted once, with the position in its store row of the first entry
    that changed (the entry of its smallest changed source: the rows are sorted, so every entry
    before it is the one the mirror holds)."""
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    ni = ins_dst.shape[0]
    k = ni + del_dst.shape[0]
    key = np.empty(k, dtype=np.int64)
    for i in range(ni):
        key[i] = (np.int64(ins_dst[i]) << 31) | np.int64(ins_src[i])
    for i in range(del_dst.shape[0]):
        key[ni + i] = (np.int64(del_dst[i]) << 31) | np.int64(del_src[i])
    key = key[argsort_stable(key)]
    targets = np.empty(k, dtype=np.int64)
    firsts = np.empty(k, dtype=np.int64)
    m = 0
    for i in range(k):
        v = key[i] >> 31
        if v >= n_before or (i > 0 and (key[i - 1] >> 31) == v):
            continue  # a new vertex's row is written whole; a target once, at its smallest source
        src = key[i] & 0x7FFFFFFF
        targets[m] = v
        firsts[m] = lower_bound(in_idx, in_off[v], in_off[v] + in_deg[v], src) - in_off[v]  # the first entry >= src
        m += 1
    return targets[:m], firsts[:m]


@njit(cache=True, nogil=True)
def compact(n, mv, mw=None):
    """Lay the mirror rows of the first ``n`` positions out afresh in position order, leaving no
    room between them: a copy of the rows (they hold positions already), no read of the store."""
    m_off, m_end, m_idx, mstate = mv[2], mv[3], mv[4], mv[5]
    total = 0
    for p in range(n):
        total += m_end[p] - m_off[p]
    tmp = np.empty(total, dtype=m_idx.dtype)
    tmpw = np.empty(total if mw is not None else 0)
    e = 0
    for p in range(n):
        o = m_off[p]
        d = m_end[p] - o
        m_off[p] = e
        for j in range(d):
            tmp[e + j] = m_idx[o + j]
            if mw is not None:
                tmpw[e + j] = mw[o + j]
        e += d
        m_end[p] = e
    for j in range(e):
        m_idx[j] = tmp[j]
        if mw is not None:
            mw[j] = tmpw[j]
    mstate[USED] = e
    mstate[LIVE] = e


@njit(cache=True, nogil=True)
def admit(n_before, n_after, g, inv, loops, ins_src, ins_dst, del_src, del_dst, mv, wt=None, mw=None):
    """Keep the mirror exact after a batch (see the module docstring; ``inv`` and ``loops``
    already updated). Nothing while it is invalid (the next dense pass builds it). A weighted
    graph's reweighted edges count as insertions here (their rows' weights and their sources'
    ``inv`` changed)."""
    out_deg = g[4]
    order, pos, m_off, m_end, m_idx, mstate, cprevp, invp, loopsp, outdp, starts = mv
    if mstate[BUILT] < 0:
        return
    for p in range(n_before, n_after):  # the store put them at positions equal to their ids, or moved
        m_off[p] = 0  # them to its sweep end in exchange for vertices without edges (admit_live)
        m_end[p] = 0
    ok = True
    for v in range(n_before, n_after):
        ok &= _rewrite(v, 0, g, pos, m_off, m_end, m_idx, mstate, wt, mw)
    targets, firsts = _changed_rows(n_before, g, ins_src, ins_dst, del_src, del_dst)
    for i in range(targets.shape[0]):
        ok &= _rewrite(targets[i], firsts[i], g, pos, m_off, m_end, m_idx, mstate, wt, mw)
    if not ok:
        mstate[BUILT] = -1
        return
    mstate[BUILT] = n_after
    if mstate[USED] - mstate[LIVE] > mstate[USED] // COMPACT:
        compact(n_after, mv, mw)
    for ends in (ins_src, ins_dst, del_src, del_dst):
        for v in ends:
            p = pos[v]
            invp[p] = inv[v]
            loopsp[p] = loops[v]
            outdp[p] = out_deg[v]
    for p in range(n_before, n_after):  # new vertices, or vertices without edges swapped here (admit_live)
        v = order[p]
        invp[p] = inv[v]
        loopsp[p] = loops[v]
        outdp[p] = out_deg[v]
