"""Gauss-Seidel steps of the frontier loop (Numba): updates in place, in fixed blocks.

``update_order="gauss-seidel"`` (:class:`streamrank.config.RankConfig`): the frontier (the list
``F`` in the sparse step, the positions in the dense pass) is cut into as few blocks of equal
size as blocks of at most ``block`` entries need (:func:`block_size`: whole chunks of ``CHUNK``;
it depends on the frontier's size, never on the thread count; the sparse step's ``block`` is
:data:`.common.SPARSE_BLOCK`, the dense pass's the store's sweep blocks). One thread runs a
block from start to end, writing each new value into ``x`` and ``c`` at once, so a vertex reads
the new values of the in-neighbours its block updated before it. A vertex of another block is
read from ``cprev``, which holds every vertex's ``c`` as it was when the iteration began (the
workspace keeps ``cprev == c`` between iterations). The result depends on the block size and
on the data only: bitwise the same for any number of threads.

This module holds the sparse step; the dense pass is :mod:`.frontier_order` (the same rules in
the store's sweep order, over a mirror of the in-edges). Membership of an in-neighbour ``u`` in
the reading block: in the dense pass a block is a range of positions, tested by comparison; in
the sparse step the block writes its code into ``owner[u]`` for each of its vertices before it
starts (``code = stamp * MAX_BLOCKS + block``, unique over the workspace's life; other blocks
only ever compare ``owner`` with their own code, so the race between one block's writes and
another's reads cannot change what they read). A frontier of one block needs neither test: it
is plain sequential Gauss-Seidel.

Marking is as in the Jacobi steps (out-neighbours of the spreaders are marked for the next
iteration, also those later in the block that read the new value already: a superset, never a
missed vertex), and the next list puts the newly marked before the kept (:func:`marked_first`).
In the dense pass a vertex is updated when it is kept or an in-neighbour spread in its latest
update: the sign bit of its contribution read live in the block (this iteration's update for
the ones before it) or from the copy of the iteration's start (the previous iteration). Every
vertex reads its in-neighbours in every dense pass, so from the second pass of a dense run on that is exactly "an input changed
since this vertex last read it". In the first pass (``sticky``) the sign bits come from the
sparse iteration before, whose readers have not all looked yet: a vertex updated in that pass
keeps its sign bit (a spreader that updates again must not hide its earlier change from the
readers after it in its block); a reader that saw it already may update once more in the
second pass, a superset again.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, block_size, in_term, nchunks, solved_value
from .frontier_sparse import NEW, PRUNE, SPREAD

#: Blocks per iteration that codes in ``owner`` can tell apart (``code = stamp * MAX_BLOCKS + b``).
MAX_BLOCKS = 1 << 24


# ---------------------------------------------------------------------------- sparse step
@njit(cache=True, nogil=True)
def _sparse_range(lo, hi, k, multi, code, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                  alpha, selfloop, ftol, ptol, grow, prune, parts, wt=None):
    """Update ``F[lo:hi]`` in place (partials into slot ``k``), status bits as the Jacobi step
    (:func:`.frontier_sparse.rank_range`), pruned vertices unmarked, spreaders stamped. ``wt``:
    the in-edges' weights of a weighted graph (:mod:`.common`)."""
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    part_max, part_sum, part_keep_in, part_push, part_new_push, part_pruned_in = parts
    m = 0.0
    s = 0.0
    keep_in = 0
    push = 0
    new_push = 0
    pruned_in = 0
    for i in range(np.uint64(lo), np.uint64(hi)):
        v = np.uint64(F[i])  # unsigned indices: no wraparound code (frontier_order._dense_block)
        acc = 0.0
        o = np.uint64(in_off[v])
        if multi:
            for j in range(o, o + np.uint64(in_deg[v])):
                u = np.uint64(in_idx[j])
                if wt is not None:
                    acc += (c[u] if owner[u] == code else cprev[u]) * wt[j]
                else:
                    acc += c[u] if owner[u] == code else cprev[u]
        else:
            # four interleaved sums: one chain of dependent additions took 4 cycles per in-edge
            e = o + np.uint64(in_deg[v])
            j = o
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            while j + np.uint64(3) < e:
                acc += in_term(c, in_idx, wt, j)
                a1 += in_term(c, in_idx, wt, j + np.uint64(1))
                a2 += in_term(c, in_idx, wt, j + np.uint64(2))
                a3 += in_term(c, in_idx, wt, j + np.uint64(3))
                j += np.uint64(4)
            while j < e:
                acc += in_term(c, in_idx, wt, j)
                j += np.uint64(1)
            acc = (acc + a2) + (a1 + a3)
        loop = np.float64(loops[v])
        new = solved_value(acc - loop * c[v], loop, alpha, selfloop, inv[v])  # the sum read v's own c
        old = x[v]
        x[v] = new
        c[v] = new * inv[v]
        if not multi:
            cprev[v] = c[v]  # nobody reads cprev within a single block
        d = new - old
        ad = abs(d)
        top = max(new, old)
        st = np.uint8(0)
        if prune and ad <= ptol * top:
            st |= PRUNE
            pruned_in += in_deg[v]
            flags[v] = 0
        else:
            keep_in += in_deg[v]
        if grow and ad > ftol * top:
            st |= SPREAD
            push += out_deg[v]
            if last_spread[v] != stamp - 1:
                st |= NEW
                new_push += out_deg[v]
            last_spread[v] = stamp
        status[i] = st
        if ad > m:
            m = ad
        s += d
    part_max[k] = m
    part_sum[k] = s
    part_keep_in[k] = keep_in
    part_push[k] = push
    part_new_push[k] = new_push
    part_pruned_in[k] = pruned_in


@njit(cache=True, nogil=True)
def _sparse_block(b, block, nf, multi, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                  alpha, selfloop, ftol, ptol, grow, prune, parts, wt=None):
    lo = b * block
    hi = min(lo + block, nf)
    code = code0 + b
    if multi:
        for i in range(lo, hi):
            owner[np.uint64(F[i])] = code
    for k in range(lo // CHUNK, nchunks(hi)):
        _sparse_range(k * CHUNK, min(k * CHUNK + CHUNK, hi), k, multi, code, F, g, inv, c, cprev, owner, loops, x,
                      status, flags, last_spread, stamp, alpha, selfloop, ftol, ptol, grow, prune, parts, wt)


@njit(cache=True, nogil=True, parallel=True)
def _sparse_par(nb, block, nf, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp, alpha,
                selfloop, ftol, ptol, grow, prune, parts, wt=None):
    for b in prange(nb):  # b is unsigned here: cast, so that the serial loop's compiled block serves
        _sparse_block(np.int64(b), block, nf, True, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                      stamp, alpha, selfloop, ftol, ptol, grow, prune, parts, wt)


@njit(cache=True, nogil=True)
def sparse_gs(nf, block, par, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp, alpha, selfloop,
              ftol, ptol, grow, prune, parts, wt=None):
    """One Gauss-Seidel iteration over ``F[:nf]`` in blocks of ``block`` entries; partials per
    chunk of ``CHUNK`` entries (``nchunks(nf)`` slots), as the Jacobi step writes them."""
    block = block_size(nf, block)
    nb = (nf + block - 1) // block
    code0 = np.int64(stamp) * MAX_BLOCKS
    if nb <= 1:
        _sparse_block(0, block, nf, False, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                      stamp, alpha, selfloop, ftol, ptol, grow, prune, parts, wt)
        return
    if par:
        _sparse_par(nb, block, nf, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                    alpha, selfloop, ftol, ptol, grow, prune, parts, wt)
    else:
        for b in range(nb):
            _sparse_block(b, block, nf, True, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                          stamp, alpha, selfloop, ftol, ptol, grow, prune, parts, wt)
    for i in range(nf):  # on one thread: a copy is cheap next to the blocks, and a parallel loop costs compile time
        v = np.uint64(F[i])
        cprev[v] = c[v]


# ---------------------------------------------------------------------------- list order, marking
@njit(cache=True, nogil=True)
def marked_first(F, tmp, kept, m):
    """Reorder ``F[:m]`` (``kept`` processed vertices still marked, then the newly marked) so
    that the newly marked come first (``tmp``: scratch of at least ``kept`` entries).

    The newly marked read the spreaders' new values; the kept vertices, processed last
    iteration, gain from an update only once their inputs change, so they go after. On a
    2-cycle this is what makes Gauss-Seidel converge at ``alpha**2`` per iteration instead of
    ``alpha`` (kept-first, each iteration would update one of the two with unchanged inputs)."""
    if kept == 0 or kept == m:
        return
    for i in range(kept):
        tmp[i] = F[i]
    for i in range(kept, m):
        F[i - kept] = F[i]
    r = m - kept
    for i in range(kept):
        F[r + i] = tmp[i]
