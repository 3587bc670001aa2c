"""The sparse step of the frontier loop (Numba): the frontier as a list ``F`` of marked vertices.

The work follows the list: new values of the listed vertices (Jacobi: reads of the previous
iterate only), their commit, pruning, and the marking of the next list: pushing from the
spreaders' out-edges, or (when it reads fewer edges) only from the vertices that began to
spread, re-pulling the vertices pruned in this iteration (:func:`mark_sparse`).

``stamp`` is the iteration's number on a clock that runs on across batches
(:class:`streamrank.rank.cpu.workspace.FrontierWorkspace`): ``last_spread[v] == stamp - 1`` says
that ``v`` spread in the previous iteration, whatever batch an older stamp came from.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, add_lookaheads, looks_ahead, solved_value

#: Frontier status bits written by the sparse rank step: pruned, spreads, spreads but did
#: not in the previous iteration.
PRUNE = 1
SPREAD = 2
NEW = 4


@njit(cache=True, nogil=True)
def rank_range(lo, hi, k, F, g, inv, loops, c, x, xnew, status, last_spread, stamp, alpha, selfloop, ftol, ptol, grow, prune,
                parts, wt=None):
    """New values of ``F[lo:hi]`` into ``xnew``, their status bits, partials into slot ``k``.

    An explicit self-loop of ``v`` (``loops[v]``) is divided out of its own equation
    (:func:`.common.solved_value`): a Jacobi step with the diagonal solved, as the GPU's rank
    kernels do. DF/DF-P in uniform mode read an in-neighbour of out-degree 1 one step ahead
    (:func:`.common.add_lookaheads`), as the GPU's do.

    The relative change ``|new - old| / max(new, old)`` is compared by multiplying the
    tolerances instead (ranks are positive): no division per vertex. ``wt``: the in-edges'
    weights of a weighted graph (:mod:`.common`).
    """
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    part_max, part_sum, part_keep_in, part_push, part_new_push, part_pruned_in = parts
    m = 0.0
    s = 0.0
    keep_in = 0
    push = 0
    new_push = 0
    pruned_in = 0
    for i in range(lo, hi):
        v = np.uint64(F[i])  # unsigned indices: no wraparound code (frontier_order._dense_block)
        acc = 0.0
        o = np.uint64(in_off[v])
        later = False
        for j in range(o, o + np.uint64(in_deg[v])):
            u = np.uint64(in_idx[j])
            if grow and not selfloop and looks_ahead(u, v, out_deg):  # constants: DF/DF-P, uniform
                later = True
            elif wt is not None:
                acc += c[u] * wt[j]
            else:
                acc += c[u]
        if later:  # the lookahead candidates, after the plain values
            acc = add_lookaheads(acc, in_off, in_deg, in_idx, out_deg, c, v, alpha, wt)
        loop = np.float64(loops[v])
        new = solved_value(acc - loop * c[v], loop, alpha, selfloop, inv[v])  # the sum read v's own c
        old = x[v]
        xnew[i] = new
        d = new - old
        ad = abs(d)
        top = max(new, old)
        st = np.uint8(0)
        if prune and ad <= ptol * top:
            st |= PRUNE
            pruned_in += in_deg[v]
        else:
            keep_in += in_deg[v]
        if grow and ad > ftol * top:
            st |= SPREAD
            push += out_deg[v]
            if last_spread[v] != stamp - 1:
                st |= NEW
                new_push += out_deg[v]
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
def commit_range(lo, hi, F, inv, c, x, xnew, status, flags, last_spread, stamp):
    """Write the new values (after every read of the iteration), unmark the pruned, stamp the
    spreaders' ``last_spread``."""
    for i in range(lo, hi):
        v = np.uint64(F[i])
        val = xnew[i]
        x[v] = val
        c[v] = val * inv[v]
        st = status[i]
        if st & PRUNE:
            flags[v] = 0
        if st & SPREAD:
            last_spread[v] = stamp


@njit(cache=True, nogil=True, parallel=True)
def sparse_par(nch, nf, F, g, inv, loops, c, x, xnew, status, flags, last_spread, stamp, alpha, selfloop, ftol,
                ptol, grow, prune, parts, wt=None):
    for k in prange(nch):
        lo = k * CHUNK
        rank_range(lo, min(lo + CHUNK, nf), k, F, g, inv, loops, c, x, xnew, status, last_spread, stamp, alpha, selfloop, ftol,
                    ptol, grow, prune, parts, wt)
    for k in prange(nch):
        lo = k * CHUNK
        commit_range(lo, min(lo + CHUNK, nf), F, inv, c, x, xnew, status, flags, last_spread, stamp)


@njit(cache=True, nogil=True)
def _push_marks(lo, hi, F, g, status, sel, flags, out, p, claim):
    """The unmarked out-neighbours of ``F[i]`` for ``i`` in ``[lo, hi)`` with status bit ``sel``,
    appended to ``out`` from ``p``; ``claim`` marks them (else the caller merges)."""
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    for i in range(lo, hi):
        if status[i] & sel:
            v = np.uint64(F[i])  # unsigned indices: no wraparound code
            o = np.uint64(out_off[v])
            for j in range(o, o + np.uint64(out_deg[v])):
                w = out_idx[j]
                if flags[np.uint64(w)] == 0:
                    if claim:
                        flags[np.uint64(w)] = 1
                    out[p] = w
                    p += 1
    return p


@njit(cache=True, nogil=True)
def _repull_pruned(lo, hi, F, g, status, flags, last_spread, stamp, out, p, claim):
    """The vertices pruned in this iteration (``F[i]``, ``i`` in ``[lo, hi)``) that are unmarked
    and have an in-neighbour that spread in this iteration, appended to ``out`` from ``p``."""
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    for i in range(lo, hi):
        if status[i] & PRUNE:
            w = np.uint64(F[i])
            if flags[w] != 0:
                continue
            o = np.uint64(in_off[w])
            for j in range(o, o + np.uint64(in_deg[w])):
                if last_spread[np.uint64(in_idx[j])] == stamp:
                    if claim:
                        flags[w] = 1
                    out[p] = w
                    p += 1
                    break
    return p


@njit(cache=True, nogil=True, parallel=True)
def _candidates_par(nch, nf, F, g, status, sel, flags, last_spread, stamp, incremental, cand, cand_start, cand_count,
                    pulled, pulled_count):
    """Per chunk of the frontier, its push candidates into its region of ``cand`` and (when
    ``incremental``) its re-pulled pruned vertices into its region of ``pulled``; read-only
    on ``flags`` (the caller merges in chunk order)."""
    for k in prange(nch):
        lo = k * CHUNK
        hi = min(lo + CHUNK, nf)
        cand_count[k] = _push_marks(lo, hi, F, g, status, sel, flags, cand, cand_start[k], False) - cand_start[k]
        pulled_count[k] = 0
        if incremental:
            pulled_count[k] = _repull_pruned(lo, hi, F, g, status, flags, last_spread, stamp, pulled, lo, False) - lo


@njit(cache=True, nogil=True)
def mark_sparse(nf, F, Fnext, g, status, flags, last_spread, stamp, par, nch, parts, cand, cand_start, cand_count,
                 pulled, pulled_count):
    """Next frontier list: the processed vertices still marked (in order), then the newly
    marked vertices. Those are the unmarked out-neighbours of the spreaders, found either by
    pushing from every spreader, or (incremental, when it reads fewer edges) by pushing only
    from the spreaders that did not spread in the previous iteration (the others' out-neighbours
    are all marked already, except those pruned just now) and pulling for the pruned: a
    pruned vertex is marked again when an in-neighbour spread. Returns ``(size, kept, cand)``:
    the first ``kept`` entries are the processed vertices still marked."""
    m = 0
    for i in range(nf):
        if status[i] & PRUNE == 0:
            Fnext[m] = F[i]
            m += 1
    kept = m
    push = 0
    new_push = 0
    pruned_in = 0
    for k in range(nch):
        push += parts[3][k]
        new_push += parts[4][k]
        pruned_in += parts[5][k]
    if push == 0:
        return m, kept, cand
    incremental = new_push + pruned_in < push
    sel = NEW if incremental else SPREAD
    if not par:
        m = _push_marks(0, nf, F, g, status, sel, flags, Fnext, m, True)
        if incremental:
            m = _repull_pruned(0, nf, F, g, status, flags, last_spread, stamp, Fnext, m, True)
        return m, kept, cand
    start = 0
    for k in range(nch):
        cand_start[k] = start
        start += parts[4][k] if incremental else parts[3][k]
    if cand.shape[0] < start:
        cand = np.empty(max(start, 2 * cand.shape[0]), dtype=np.int32)
    _candidates_par(nch, nf, F, g, status, sel, flags, last_spread, stamp, incremental, cand, cand_start, cand_count,
                    pulled, pulled_count)
    for k in range(nch):
        for j in range(cand_start[k], cand_start[k] + cand_count[k]):
            w = np.uint64(cand[j])
            if flags[w] == 0:
                flags[w] = 1
                Fnext[m] = w
                m += 1
        for j in range(k * CHUNK, k * CHUNK + pulled_count[k]):
            w = np.uint64(pulled[j])
            if flags[w] == 0:
                flags[w] = 1
                Fnext[m] = w
                m += 1
    return m, kept, cand
