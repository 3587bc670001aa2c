"""Gauss-Seidel steps of the frontier loop (Numba): updates in place, in fixed blocks.

``update_order="gauss-seidel"`` (:class:`streamrank.config.RankConfig`): the frontier (the list
``F`` in the sparse step, the vertex ids in the dense pass) is cut into as few blocks of equal
size as blocks of at most ``block`` entries need (:func:`block_size`: whole chunks of ``CHUNK``;
it depends on the frontier's size, never on the thread count). One thread runs a
block from start to end, writing each new value into ``x`` and ``c`` at once, so a vertex reads
the new values of the in-neighbours its block updated before it. A vertex of another block is
read from ``cprev``, which holds every vertex's ``c`` as it was when the iteration began (the
workspace keeps ``cprev == c`` between iterations). The result depends on the block size and
on the data only: bitwise the same for any number of threads.

Membership of an in-neighbour ``u`` in the reading block: in the dense pass a block is a range
of ids, tested by comparison; in the sparse step the block writes its code into ``owner[u]``
for each of its vertices before it starts (``code = stamp * MAX_BLOCKS + block``, unique over
the workspace's life; other blocks only ever compare ``owner`` with their own code, so the
race between one block's writes and another's reads cannot change what they read). A frontier
of one block needs neither test: it is plain sequential Gauss-Seidel.

Marking is as in the Jacobi steps (out-neighbours of the spreaders are marked for the next
iteration, also those later in the block that read the new value already: a superset, never a
missed vertex), and the next list puts the newly marked before the kept (:func:`marked_first`).
In the dense pass a vertex is updated when it is kept or an in-neighbour spread in its latest
update: the sign bit of ``c`` read live in the block (this iteration's update for the ones
before it) or from ``cprev`` (the previous iteration). Every vertex reads its in-neighbours in
every dense pass, so from the second pass of a dense run on that is exactly "an input changed
since this vertex last read it". In the first pass (``sticky``) the sign bits come from the
sparse iteration before, whose readers have not all looked yet: a vertex updated in that pass
keeps its sign bit (a spreader that updates again must not hide its earlier change from the
readers after it in its block); a reader that saw it already may update once more in the
second pass, a superset again.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .common import CHUNK, block_size, nchunks, solved_value
from .frontier_sparse import NEW, PRUNE, SPREAD

#: Blocks per iteration that codes in ``owner`` can tell apart (``code = stamp * MAX_BLOCKS + b``).
MAX_BLOCKS = 1 << 24


# ---------------------------------------------------------------------------- sparse step
@njit(cache=True)
def _sparse_range(lo, hi, k, multi, code, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                  alpha, selfloop, ftol, ptol, grow, prune, parts):
    """Update ``F[lo:hi]`` in place (partials into slot ``k``), status bits as the Jacobi step
    (:func:`.frontier_sparse.rank_range`), pruned vertices unmarked, spreaders stamped."""
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    part_max, part_sum, part_keep_in, part_push, part_new_push, part_pruned_in = parts
    m = 0.0
    s = 0.0
    keep_in = 0
    push = 0
    new_push = 0
    pruned_in = 0
    for i in range(lo, hi):
        v = F[i]
        acc = 0.0
        o = in_off[v]
        if multi:
            for j in range(o, o + in_deg[v]):
                u = in_idx[j]
                acc += c[u] if owner[u] == code else cprev[u]
        else:
            for j in range(o, o + in_deg[v]):
                acc += c[in_idx[j]]
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


@njit(cache=True)
def _sparse_block(b, block, nf, multi, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                  alpha, selfloop, ftol, ptol, grow, prune, parts):
    lo = b * block
    hi = min(lo + block, nf)
    code = code0 + b
    if multi:
        for i in range(lo, hi):
            owner[F[i]] = code
    for k in range(lo // CHUNK, nchunks(hi)):
        _sparse_range(k * CHUNK, min(k * CHUNK + CHUNK, hi), k, multi, code, F, g, inv, c, cprev, owner, loops, x,
                      status, flags, last_spread, stamp, alpha, selfloop, ftol, ptol, grow, prune, parts)


@njit(cache=True, parallel=True)
def _sparse_par(nb, block, nf, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp, alpha,
                selfloop, ftol, ptol, grow, prune, parts):
    for b in prange(nb):
        _sparse_block(b, block, nf, True, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                      stamp, alpha, selfloop, ftol, ptol, grow, prune, parts)


@njit(cache=True)
def sparse_gs(nf, block, par, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp, alpha, selfloop,
              ftol, ptol, grow, prune, parts):
    """One Gauss-Seidel iteration over ``F[:nf]`` in blocks of ``block`` entries; partials per
    chunk of ``CHUNK`` entries (``nchunks(nf)`` slots), as the Jacobi step writes them."""
    block = block_size(nf, block)
    nb = (nf + block - 1) // block
    code0 = np.int64(stamp) * MAX_BLOCKS
    if nb <= 1:
        _sparse_block(0, block, nf, False, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                      stamp, alpha, selfloop, ftol, ptol, grow, prune, parts)
        return
    if par:
        _sparse_par(nb, block, nf, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                    alpha, selfloop, ftol, ptol, grow, prune, parts)
    else:
        for b in range(nb):
            _sparse_block(b, block, nf, True, code0, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread,
                          stamp, alpha, selfloop, ftol, ptol, grow, prune, parts)
    for i in range(nf):  # on one thread: a copy is cheap next to the blocks, and a parallel loop costs compile time
        v = F[i]
        cprev[v] = c[v]


# ---------------------------------------------------------------------------- list order, marking
@njit(cache=True)
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


# ---------------------------------------------------------------------------- dense pass
@njit(cache=True)
def _dense_range(k, blo, bhi, multi, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow,
                 prune, parts, part_count):
    """The vertices of chunk ``k`` (inside the block of ids ``[blo, bhi)``; ``multi``: there are
    other blocks), in place; as the Jacobi pass (:func:`.frontier_dense._dense_range`) otherwise."""
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    part_max, part_sum, part_keep_in, part_push = parts[0], parts[1], parts[2], parts[3]
    m = 0.0
    s = 0.0
    keep_in = 0
    push = 0
    count = 0
    prune_i = np.int64(prune)
    grow_i = np.int64(grow)
    width = np.uint64(bhi - blo)
    for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
        o = in_off[v]
        acc = 0.0
        sp = np.int64(keep[v])
        low = 0.0  # an in-neighbour has out-edges, so its c is > 0, or < 0 when it spread
        if multi:
            for j in range(o, o + in_deg[v]):
                u = in_idx[j]
                cu = c[u] if np.uint64(u - blo) < width else cprev[u]
                acc += abs(cu)
                low = min(low, cu)
        else:
            for j in range(o, o + in_deg[v]):
                cu = c[in_idx[j]]
                acc += abs(cu)
                low = min(low, cu)
        sp |= np.int64(low < 0.0)
        # The sum read v's own value where v has a loop (its sign bit, if it spread, activates v:
        # one update); loop * |c[v]| takes it off again before the loop is solved for.
        loop = np.float64(loops[v])
        new = solved_value(acc - loop * abs(c[v]), loop, alpha, selfloop, inv[v])
        a = np.int64(sp != 0)
        old = x[v]
        val = new if a != 0 else old
        x[v] = val
        d = val - old
        ad = abs(d)
        top = max(val, old)
        kept = a & (1 - (prune_i & np.int64(ad <= ptol * top)))
        spreads = a & grow_i & np.int64(ad > ftol * top)
        keep[v] = np.uint8(kept)
        cv = val * inv[v]
        if sticky and math.copysign(1.0, c[v]) < 0.0:
            spreads = 1  # for the readers after v in its block (module docstring)
        c[v] = -cv if spreads != 0 else cv
        count += a
        keep_in += in_deg[v] * kept
        push += out_deg[v] * spreads
        m = max(m, ad)
        s += d
    part_max[k] = m
    part_sum[k] = s
    part_keep_in[k] = keep_in
    part_push[k] = push
    part_count[k] = count


@njit(cache=True)
def _dense_block(b, block, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow, prune,
                 parts, part_count):
    blo = b * block
    bhi = min(blo + block, n)
    for k in range(blo // CHUNK, nchunks(bhi)):
        _dense_range(k, blo, bhi, bhi - blo < n, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol,
                     ptol, grow, prune, parts, part_count)


@njit(cache=True, parallel=True)
def _dense_par(nb, block, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow, prune,
               parts, part_count):
    for b in prange(nb):
        _dense_block(b, block, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow, prune,
                     parts, part_count)


@njit(cache=True)
def dense_gs(n, block, par, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow, prune,
             parts, part_count):
    """One Gauss-Seidel pass over all vertices in blocks of ``block`` ids (see the module
    docstring); ``keep`` (the kept flags), ``x`` and ``c`` (sign bits: spread) in place."""
    block = block_size(n, block)
    nb = (n + block - 1) // block
    if par and nb > 1:
        _dense_par(nb, block, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow, prune,
                   parts, part_count)
    else:
        for b in range(nb):
            _dense_block(b, block, n, g, inv, c, cprev, loops, x, keep, sticky, alpha, selfloop, ftol, ptol, grow,
                         prune, parts, part_count)
    for v in range(n):  # on one thread (see sparse_gs)
        cprev[v] = c[v]
