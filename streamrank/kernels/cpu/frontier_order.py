"""The Gauss-Seidel dense pass in the sweep order (Numba): a position-space mirror of the in-edges.

A dense pass reads every in-edge, vertex after vertex. In id order its cost is not the edges but
the vertices: the inner loop's trip count (the in-degree) changes from one vertex to the next, so
its exit mispredicts about once per vertex, and the in-edges of the gapped store
(:mod:`.gapped_csr`) lie in segments with room between them. The Gauss-Seidel entries therefore
run their dense passes over a *mirror*: the vertices in the *sweep order* (:mod:`.sweep_order`:
descending in-degree, capped at ``ORDER_BUCKETS - 1``, ties by id: runs of equal trip counts,
which the predictor learns; on a graph of several blocks the last block gets the vertices whose
stale reads of the other blocks cost least), each vertex's in-neighbours renamed to their positions in that order, rows
``m_idx[m_off[p] : m_end[p]]`` laid out in position order, and the per-vertex arrays the pass
reads in position order: ``invp``, ``loopsp``, ``outdp`` kept with the mirror, the iterate, the
contributions and the kept flags gathered (:func:`enter`) when a run of dense passes starts and
scattered back (:func:`leave_to_sparse`, :func:`leave_settled`) when it ends. Everything outside the dense passes stays in id
space.

The mirror is built (:func:`build`, one pass over the in-edges of the vertices before the store's
sweep end, in chunks on Numba's threads on a large graph) by the first dense pass after a reload
and whenever it is invalid. A weighted graph's mirror has its weights beside ``m_idx`` (``mw``,
float64, built and moved with the rows; the kernels take ``wt``, the store's in-edge weights,
and ``mw`` as optional last arguments, :mod:`.common`). A batch keeps it exact
(:func:`.mirror_upkeep.admit`): a vertex it adds takes the position equal to its id; the rows of
the vertices whose in-edges it changed (from their first changed entry on), and of the new ones,
are rewritten, in place when they do not grow, else at the end of the used part of ``m_idx``;
when the rows left behind take more than ``1 / mirror_upkeep.COMPACT`` of its used part (scattered rows slow
the pass), the rows are laid out afresh in position order (:func:`.mirror_upkeep.compact`: a
copy of the rows, no read of the store); when it runs out of room (``m_idx`` has room for twice the
edges), the mirror becomes invalid and the next dense pass builds it. So a batch that stays sparse
pays only its own rows, and a batch that grows many rows (500-edge batches of sx-mathoverflow:
about one batch in five) a copy of the rows, not the build (which reads the store's rows and
maps every in-neighbour to its position).

The pass is the Gauss-Seidel pass of :mod:`.frontier_gs` with ids replaced by positions: the
store's blocks of positions (their starts ``mv[10]``: :attr:`streamrank.store.cpu.CpuGraph.
sweep_blocks`, cut at equal work by :mod:`.sweep_order`), one thread per block, ``cprevp`` for
other blocks' values. The sweep
order is part of the result (Gauss-Seidel reads the values updated before it): it depends on
the store's layouts only, never on the thread count or the workspace. The in-sum is taken in four
interleaved partial sums and minima (two in the blocks that read two arrays): a chain of
dependent additions takes 4 cycles per step, so two chains bounded the pass at 2 cycles per
in-edge; a rounding difference from the id-order pass only. The pass compiles with ``error_model="numpy"`` (no
zero-division check: the denominator of :func:`.common.solved_value` is at least ``1 - alpha``)
and takes its maxima with ``max``: the machine code then has no branch on the data (a branch on
whether the new value exceeds the old one mispredicted about every other vertex).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .common import CHUNK, nchunks, solved_value
from .frontier_dense import to_sparse
from .positions import gather_all, scatter_all, sort_ids

#: ``m_idx`` gets room for this many times the edges (rows a batch grows move to its end).
ROOM = 2
#: ``mstate`` slots: vertices the mirror holds (-1: the mirror is invalid), end of the used part
#: of ``m_idx``, entries of its rows (the edges), and the positions the dense passes visit (the
#: store's :attr:`~streamrank.store.cpu.CpuGraph.sweep_end`: past it only vertices without edges,
#: which no pass changes; the workspace sets it per batch).
BUILT, USED, LIVE, END = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _build_rows(lo, hi, g, inv, loops, mv, wt=None, mw=None):
    """The mirror rows of positions ``[lo, hi)`` (their offsets set) and their per-vertex values."""
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    order, pos, m_off, m_idx, invp, loopsp, outdp = mv[0], mv[1], mv[2], mv[4], mv[7], mv[8], mv[9]
    for p in range(np.uint64(lo), np.uint64(hi)):
        v = np.uint64(order[p])  # unsigned indices: no wraparound code (_dense_block)
        e = np.uint64(m_off[p])
        o = np.uint64(in_off[v])
        for j in range(np.uint64(in_deg[v])):
            m_idx[e + j] = pos[np.uint64(in_idx[o + j])]
            if wt is not None:
                mw[e + j] = wt[o + j]
        invp[p] = inv[v]
        loopsp[p] = loops[v]
        outdp[p] = out_deg[v]


@njit(cache=True, nogil=True, parallel=True)
def _build_par(nch, live, g, inv, loops, mv, wt=None, mw=None):
    for k in prange(nch):  # k is unsigned here: cast, so that the serial loop's compiled chunk serves
        lo = np.int64(k) * CHUNK
        _build_rows(lo, min(lo + CHUNK, live), g, inv, loops, mv, wt, mw)


@njit(cache=True, nogil=True)
def build(n, g, inv, loops, mv, par=False, wt=None, mw=None):
    """The mirror rows of ``n`` vertices in the sweep order and the per-vertex values kept with
    them. Only the positions before the sweep end (``mstate[END]``) hold edges: past it the rows
    are set empty and the per-vertex values are left unset (no pass reads them; a vertex that
    gains an edge moves before the end, and :func:`.mirror_upkeep.admit` writes its values). ``par``: the rows
    are filled in chunks on Numba's threads (each chunk writes its own range)."""
    in_deg = g[1]
    order, m_off, m_end, mstate = mv[0], mv[2], mv[3], mv[5]
    live = min(mstate[END], n)
    e = 0
    for p in range(np.uint64(live)):
        m_off[p] = e
        e += in_deg[np.uint64(order[p])]
        m_end[p] = e
    for p in range(live, n):
        m_off[p] = e
        m_end[p] = e
    nch = nchunks(live)
    if par and nch > 1:
        _build_par(nch, live, g, inv, loops, mv, wt, mw)
    else:
        _build_rows(0, live, g, inv, loops, mv, wt, mw)
    mstate[BUILT] = n
    mstate[USED] = e
    mstate[LIVE] = e


@njit(cache=True, nogil=True)
def enter(n, g, inv, loops, mv, x, c, flags, xp, cp, keepp, par=False, wt=None, mw=None):
    """Start a run of dense passes over the first ``n`` positions: build the mirror if it is
    invalid (of every vertex: ``mv``'s ``order`` holds them all), then gather the iterate, the
    contributions (``cprevp == cp``) and the kept flags into position order. ``par``: both in
    chunks on Numba's threads."""
    order, mstate, cprevp = mv[0], mv[5], mv[6]
    if mstate[BUILT] < 0:
        build(order.shape[0], g, inv, loops, mv, par, wt, mw)
    gather_all(n, order, x, c, flags, xp, cp, cprevp, keepp, par)


@njit(cache=True, nogil=True)
def leave_to_sparse(n, g, mv, xp, cp, keepp, x, c, cprev, flags, last_spread, stamp, F, spread, tmp, par=False):
    """End a run of dense passes over the first ``n`` positions into a sparse iteration (the
    scatter back and :func:`.frontier_dense.to_sparse` in one walk of the positions): ``x``,
    ``c`` and ``cprev`` back in id order without sign bits, the kept flags, ``last_spread`` of
    the spreaders, and the frontier list ``F``: the kept vertices, then the unmarked
    out-neighbours of the spreaders, both taken in id order as ``to_sparse`` takes them (the
    walk collects them in position order, :func:`sort_ids` sorts them; ``spread`` and ``tmp``:
    scratch of a vertex each), so the iterations are those of a walk over every id. Returns the
    list's size and the number of kept vertices at its head. Work: the positions before the
    sweep end and the frontier, never the ids past it; where they are fewer than the vertices
    past the end, ``to_sparse`` itself (the same list, cheaper than sorting it). ``par``: the
    scatter in chunks on Numba's threads (the lists are collected after it, in position order)."""
    order = mv[0]
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    un = np.uint64(n)
    if order.shape[0] <= 2 * n:
        # few ids past the end: the walk over every id (to_sparse) costs less than the sorts
        scatter_all(n, order, xp, cp, keepp, x, c, cprev, flags, True, False, par)
        return to_sparse(order.shape[0], g, flags, c, cprev, True, last_spread, stamp, F)
    scatter_all(n, order, xp, cp, keepp, x, c, cprev, flags, False, False, par)
    m = 0
    ns = 0
    for p in range(un):  # sequential reads of the position-space arrays
        if keepp[p]:
            F[m] = order[p]
            m += 1
        if math.copysign(1.0, cp[p]) < 0.0:
            spread[ns] = order[p]
            ns += 1
    kept = m
    sort_ids(F, kept, tmp)
    sort_ids(spread, ns, tmp)
    for i in range(ns):
        v = np.uint64(spread[i])
        last_spread[v] = stamp
        o = np.uint64(out_off[v])
        for j in range(o, o + np.uint64(out_deg[v])):
            w = np.uint64(out_idx[j])
            if flags[w] == 0:
                flags[w] = 1
                F[m] = w
                m += 1
    return m, kept


@njit(cache=True, nogil=True)
def leave_settled(n, mv, xp, cp, x, c, cprev, flags, par=False):
    """End a run of dense passes over the first ``n`` positions with the batch: ``x``, ``c`` and
    ``cprev`` back in id order without sign bits, every flag 0 (the workspace's state between
    batches). ``par``: in chunks on Numba's threads."""
    scatter_all(n, mv[0], xp, cp, flags, x, c, cprev, flags, False, True, par)


@njit(cache=True, nogil=True, error_model="numpy")
def _dense_block(b, nb, n, g, mv, cp, cprevp, cpn, cprevpn, pp, xp, keepp, sticky, alpha, selfloop, ftol, ptol,
                 grow, prune, parts, part_count, mw=None):
    """Block ``b`` of ``nb`` (positions ``[starts[b], starts[b + 1])``, the last to ``n``), chunk by chunk (partials per chunk), in
    place (as :func:`.frontier_gs._dense_range` with positions for ids).

    Where the values live during a pass of several blocks (``cp == cprevp`` at its start): block 0
    updates ``cp`` in place, the other blocks update ``cprevp`` in place, so that each array keeps
    the pass-start values of the blocks that do not write it. Block 0 then reads ``cp`` alone,
    with no test per in-edge: its own range fresh, the others' from the pass's start (it runs the
    code of a single block, on sx-mathoverflow the larger share of the pass); with two blocks,
    block 1 reads ``cprevp`` alone the same way; with more, a block ``b > 0`` reads ``cprevp`` for
    its own range and block 0's, ``cp`` for the rest. :func:`dense_order` joins the two arrays
    after the pass. The values read are those of the textbook rule (own block fresh, other blocks
    from the pass's start), bit for bit.

    ``pp`` (two blocks only): each block also stores every value it writes into ``cpn`` and
    ``cprevpn``, which nothing reads during the pass; after it both hold every vertex's new value
    and serve as the next pass's ``cp`` and ``cprevp``, so no join runs (:func:`dense_pass`).

    ``mw``: the mirror's weights of a weighted graph (each ``|c|`` read is multiplied by its
    in-edge's weight; the sign bits are read as they are)."""
    order, pos, m_off, m_end, m_idx, mstate, _, invp, loopsp, outdp, starts = mv
    cur = cp if b == 0 else cprevp  # the array this block updates in place
    multi = b > 0 and nb > 2  # reads from two arrays, chosen per in-edge
    part_max, part_sum, part_keep_in, part_push = parts[0], parts[1], parts[2], parts[3]
    blo = starts[b]
    bhi = starts[b + 1] if b + 1 < nb else n
    prune_i = np.int64(prune)
    grow_i = np.int64(grow)
    sticky_i = np.int64(sticky)
    # unsigned indices: Numba adds no negative-index wraparound to their loads (with signed ones
    # it did, about a third of the pass's time)
    ublo = np.uint64(blo)
    width = np.uint64(bhi - blo)
    first = np.uint64(starts[1] if nb > 1 else n)  # block 0's end
    one = np.uint64(1)
    two = np.uint64(2)
    three = np.uint64(3)
    four = np.uint64(4)
    for k in range(blo // CHUNK, nchunks(bhi)):
        m = 0.0
        s = 0.0
        keep_in = 0
        count = 0
        for pi in range(k * CHUNK, min(k * CHUNK + CHUNK, bhi)):
            p = np.uint64(pi)
            sp = np.int64(keepp[p])
            low = 0.0  # an in-neighbour has out-edges, so its c is > 0, or < 0 when it spread
            o = np.uint64(m_off[p])
            e = np.uint64(m_end[p])
            deg = np.int64(e - o)
            a0 = 0.0
            a1 = 0.0
            l1 = 0.0
            j = o
            if multi:
                while j + one < e:
                    q0 = np.uint64(m_idx[j])
                    q1 = np.uint64(m_idx[j + one])
                    c0 = cur[q0] if (q0 - ublo < width) | (q0 < first) else cp[q0]
                    c1 = cur[q1] if (q1 - ublo < width) | (q1 < first) else cp[q1]
                    if mw is not None:
                        a0 += abs(c0) * mw[j]
                        a1 += abs(c1) * mw[j + one]
                    else:
                        a0 += abs(c0)
                        a1 += abs(c1)
                    low = min(low, c0)
                    l1 = min(l1, c1)
                    j += two
                if j < e:
                    q0 = np.uint64(m_idx[j])
                    c0 = cur[q0] if (q0 - ublo < width) | (q0 < first) else cp[q0]
                    if mw is not None:
                        a0 += abs(c0) * mw[j]
                    else:
                        a0 += abs(c0)
                    low = min(low, c0)
            else:
                # four interleaved sums and minima: each is a chain of dependent additions (4 cycles
                # each), so two chains bounded the pass at 2 cycles per in-edge
                a2 = 0.0
                a3 = 0.0
                l2 = 0.0
                l3 = 0.0
                while j + three < e:
                    c0 = cur[np.uint64(m_idx[j])]
                    c1 = cur[np.uint64(m_idx[j + one])]
                    c2 = cur[np.uint64(m_idx[j + two])]
                    c3 = cur[np.uint64(m_idx[j + three])]
                    if mw is not None:
                        a0 += abs(c0) * mw[j]
                        a1 += abs(c1) * mw[j + one]
                        a2 += abs(c2) * mw[j + two]
                        a3 += abs(c3) * mw[j + three]
                    else:
                        a0 += abs(c0)
                        a1 += abs(c1)
                        a2 += abs(c2)
                        a3 += abs(c3)
                    low = min(low, c0)
                    l1 = min(l1, c1)
                    l2 = min(l2, c2)
                    l3 = min(l3, c3)
                    j += four
                while j < e:
                    c0 = cur[np.uint64(m_idx[j])]
                    if mw is not None:
                        a0 += abs(c0) * mw[j]
                    else:
                        a0 += abs(c0)
                    low = min(low, c0)
                    j += one
                a0 += a2
                a1 += a3
                low = min(low, l2)
                l1 = min(l1, l3)
            acc = a0 + a1
            low = min(low, l1)
            sp |= np.int64(low < 0.0)
            # the sum read the own value where the vertex has a loop (frontier_gs._dense_range)
            loop = np.float64(loopsp[p])
            new = solved_value(acc - loop * abs(cur[p]), loop, alpha, selfloop, invp[p])
            a = np.int64(sp != 0)
            old = xp[p]
            val = new if a != 0 else old
            xp[p] = val
            d = val - old
            ad = abs(d)
            top = max(val, old)
            kept = a & (1 - (prune_i & np.int64(ad <= ptol * top)))
            spreads = a & grow_i & np.int64(ad > ftol * top)
            keepp[p] = np.uint8(kept)
            cv = val * invp[p]
            # sticky: a vertex that spread before keeps its sign bit, for the readers after it in its
            # block (frontier_gs's module docstring). Taken into spreads without a branch: an `if
            # sticky` here made LLVM compile the select below to a branch on spreads in the
            # frontier loop's version (sticky a runtime bool), which mispredicted as often as the
            # vertices spread at random (a tenth of the pass); now both are masked moves
            spreads |= sticky_i & np.int64(math.copysign(1.0, cur[p]) < 0.0)
            w = -cv if spreads != 0 else cv
            cur[p] = w
            if pp:
                cpn[p] = w
                cprevpn[p] = w
            count += a
            keep_in += deg * kept
            m = max(m, ad)
            s += d
        part_max[k] = m
        part_sum[k] = s
        part_keep_in[k] = keep_in
        part_push[k] = 0  # the caller sums the spreaders' out-edges when it needs them (spread_out_edges)
        part_count[k] = count


@njit(cache=True, nogil=True)
def spread_out_edges(n, mv, cp):
    """The out-edges of the vertices that spread in the latest dense pass (the sign bits of
    ``cp``, as :func:`dense_order` leaves them). The pass itself does not sum them: their
    out-degree, added where a vertex spread, compiled to a branch that mispredicted (a tenth of
    the pass), and the frontier loop needs the sum only when the kept vertices' in-edges alone
    do not decide the next representation."""
    outdp = mv[9]
    bits = cp.view(np.int64)
    push = 0
    for p in range(n):
        push += outdp[p] & (bits[p] >> 63)  # no branch: the sign bit spread to a mask
    return push


@njit(cache=True, nogil=True, parallel=True)
def _dense_par(nb, n, g, mv, cp, cprevp, cpn, cprevpn, pp, xp, keepp, sticky, alpha, selfloop, ftol, ptol, grow,
               prune, parts, part_count, mw=None):
    for b in prange(nb):  # b is unsigned here: cast, so that both callers share one compiled block
        _dense_block(np.int64(b), nb, n, g, mv, cp, cprevp, cpn, cprevpn, pp, xp, keepp, sticky, alpha, selfloop,
                     ftol, ptol, grow, prune, parts, part_count, mw)


@njit(cache=True, nogil=True)
def dense_pass(n, par, g, mv, cp, cprevp, cpn, cprevpn, xp, keepp, sticky, alpha, selfloop, ftol, ptol, grow,
               prune, parts, part_count, mw=None):
    """One Gauss-Seidel pass over all positions in the blocks starting at ``mv[10]`` (:func:`enter` first), on
    ``cp`` and ``cprevp`` (equal at its start) with ``cpn`` and ``cprevpn`` spare; ``keepp`` and
    ``xp`` in place. Returns True when the pass's values (sign bits: spread) ended in ``cpn`` and
    ``cprevpn`` (two blocks: the caller swaps the pairs), False when in ``cp`` and ``cprevp``
    (one block, or more than two: joined after the pass, as :func:`dense_order`)."""
    nb = mv[10].shape[0]
    pp = nb == 2
    if par and nb > 1:
        _dense_par(nb, n, g, mv, cp, cprevp, cpn, cprevpn, pp, xp, keepp, sticky, alpha, selfloop, ftol, ptol,
                   grow, prune, parts, part_count, mw)
    else:
        for b in range(nb):
            _dense_block(b, nb, n, g, mv, cp, cprevp, cpn, cprevpn, pp, xp, keepp, sticky, alpha, selfloop, ftol,
                         ptol, grow, prune, parts, part_count, mw)
    if nb > 1 and not pp:  # join: block 0's values were updated in cp, the others' in cprevp (_dense_block)
        for p in range(mv[10][1]):
            cprevp[p] = cp[p]
        for p in range(mv[10][1], n):
            cp[p] = cprevp[p]
    return pp


@njit(cache=True, nogil=True)
def dense_order(n, par, g, mv, cp, xp, keepp, sticky, alpha, selfloop, ftol, ptol, grow, prune, parts,
                part_count, mw=None):
    """One Gauss-Seidel pass over all positions in the blocks starting at ``mv[10]`` (:func:`enter` first);
    ``keepp``, ``xp`` and ``cp`` (sign bits: spread) in place, ``cprevp`` = ``cp`` after it
    (:func:`dense_pass` with a join for two blocks as well)."""
    nb = mv[10].shape[0]
    cprevp = mv[6]
    if par and nb > 1:
        _dense_par(nb, n, g, mv, cp, cprevp, cp, cprevp, False, xp, keepp, sticky, alpha, selfloop, ftol, ptol,
                   grow, prune, parts, part_count, mw)
    else:
        for b in range(nb):
            _dense_block(b, nb, n, g, mv, cp, cprevp, cp, cprevp, False, xp, keepp, sticky, alpha, selfloop,
                         ftol, ptol, grow, prune, parts, part_count, mw)
    if nb > 1:  # join: block 0's values were updated in cp, the others' in cprevp (_dense_block)
        for p in range(mv[10][1]):
            cprevp[p] = cp[p]
        for p in range(mv[10][1], n):
            cp[p] = cprevp[p]
