"""The frontier loop of DT, DF and DF-P (Numba): a batch's whole iteration loop in one call.

One iteration (docs/ARCHITECTURE.md): the marked vertices get new values from their
in-neighbours' contributions (Jacobi: reads of the previous iterate only); with pruning, a
vertex whose relative change is at most ``prune_tol`` is unmarked; with growth, the
out-neighbours of a vertex whose relative change exceeds ``frontier_tol`` are marked for the
next iteration. Two representations of the frontier, chosen per iteration by the work they
read (both give the same values, iterations and frontier sizes):

* sparse: a list ``F`` of the marked vertices; the work follows the list (rank, commit,
  pruning); marking pushes from the spreaders' out-edges, or (when it reads fewer edges) only
  from the vertices that began to spread, re-pulling the vertices pruned in this iteration
  (:func:`_mark_sparse`);
* dense: per-vertex flags ``keep`` (marked and not pruned), and the sign bit of each vertex's
  contribution ``c`` set when it spread in the previous iteration; one sequential pass over all
  vertices finds the frontier and updates it at once: a vertex is in the frontier when it is
  kept or one of its in-neighbours spread, which it sees while summing its in-edges. This is a
  full sweep's memory pattern, used while the frontier covers a large part of the graph (the
  first iterations after a batch on a small graph), where it is cheaper than following lists.

Chunks of ``CHUNK`` items run in parallel when a step reads about ``PARALLEL_EDGES`` edges;
per-chunk partials are combined in chunk order and lists are merged in chunk order, so the
result is the same for any thread count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .common import CHUNK, PARALLEL_EDGES, closed_form, inverse_degrees, nchunks

#: Frontier status bits written by the sparse rank step: pruned, spreads, spreads but did
#: not in the previous iteration.
PRUNE = 1
SPREAD = 2
NEW = 4
#: The next iteration runs dense when the kept vertices' in-edges plus the spreaders'
#: out-edges exceed ``DENSE_WEIGHT`` times all edges: a dense pass reads every edge once, a
#: sparse one the frontier's in-edges and the edges its marking needs.
DENSE_WEIGHT = 0.5


# ------------------------------------------------------------------------------ sparse step
@njit(cache=True)
def _rank_range(lo, hi, k, F, g, c, x, xnew, status, last_spread, it, alpha, selfloop, ftol, ptol, grow, prune,
                parts):
    """New values of ``F[lo:hi]`` into ``xnew``, their status bits, partials into slot ``k``.

    The relative change ``|new - old| / max(new, old)`` is compared by multiplying the
    tolerances instead (ranks are positive): no division per vertex.
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
        v = F[i]
        acc = 0.0
        o = in_off[v]
        for j in range(o, o + in_deg[v]):
            acc += c[in_idx[j]]
        new = closed_form(acc, 1.0, alpha, selfloop, out_deg, v)
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
            if last_spread[v] != it - 1:
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


@njit(cache=True)
def _commit_range(lo, hi, F, inv, c, x, xnew, status, flags, last_spread, it):
    """Write the new values (after every read of the iteration), unmark the pruned, stamp the
    spreaders' ``last_spread``."""
    for i in range(lo, hi):
        v = F[i]
        val = xnew[i]
        x[v] = val
        c[v] = val * inv[v]
        st = status[i]
        if st & PRUNE:
            flags[v] = 0
        if st & SPREAD:
            last_spread[v] = it


@njit(cache=True, parallel=True)
def _sparse_par(nch, nf, F, g, inv, c, x, xnew, status, flags, last_spread, it, alpha, selfloop, ftol,
                ptol, grow, prune, parts):
    for k in prange(nch):
        lo = k * CHUNK
        _rank_range(lo, min(lo + CHUNK, nf), k, F, g, c, x, xnew, status, last_spread, it, alpha, selfloop, ftol,
                    ptol, grow, prune, parts)
    for k in prange(nch):
        lo = k * CHUNK
        _commit_range(lo, min(lo + CHUNK, nf), F, inv, c, x, xnew, status, flags, last_spread, it)


@njit(cache=True)
def _push_marks(lo, hi, F, g, status, sel, flags, out, p, claim):
    """The unmarked out-neighbours of ``F[i]`` for ``i`` in ``[lo, hi)`` with status bit ``sel``,
    appended to ``out`` from ``p``; ``claim`` marks them (else the caller merges)."""
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    for i in range(lo, hi):
        if status[i] & sel:
            v = F[i]
            o = out_off[v]
            for j in range(o, o + out_deg[v]):
                w = out_idx[j]
                if flags[w] == 0:
                    if claim:
                        flags[w] = 1
                    out[p] = w
                    p += 1
    return p


@njit(cache=True)
def _repull_pruned(lo, hi, F, g, status, flags, last_spread, it, out, p, claim):
    """The vertices pruned in this iteration (``F[i]``, ``i`` in ``[lo, hi)``) that are unmarked
    and have an in-neighbour that spread in it, appended to ``out`` from ``p``."""
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    for i in range(lo, hi):
        if status[i] & PRUNE:
            w = F[i]
            if flags[w] != 0:
                continue
            o = in_off[w]
            for j in range(o, o + in_deg[w]):
                if last_spread[in_idx[j]] == it:
                    if claim:
                        flags[w] = 1
                    out[p] = w
                    p += 1
                    break
    return p


@njit(cache=True, parallel=True)
def _candidates_par(nch, nf, F, g, status, sel, flags, last_spread, it, incremental, cand, cand_start, cand_count,
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
            pulled_count[k] = _repull_pruned(lo, hi, F, g, status, flags, last_spread, it, pulled, lo, False) - lo


@njit(cache=True)
def _mark_sparse(nf, F, Fnext, g, status, flags, last_spread, it, par, nch, parts, cand, cand_start, cand_count,
                 pulled, pulled_count):
    """Next frontier list: the processed vertices still marked (in order), then the newly
    marked vertices. Those are the unmarked out-neighbours of the spreaders, found either by
    pushing from every spreader, or (incremental, when it reads fewer edges) by pushing only
    from the spreaders that did not spread in the previous iteration (the others' out-neighbours
    are all marked already, except those pruned just now) and pulling for the pruned: a
    pruned vertex is marked again when an in-neighbour spread. Returns ``(size, cand)``."""
    m = 0
    for i in range(nf):
        if status[i] & PRUNE == 0:
            Fnext[m] = F[i]
            m += 1
    push = 0
    new_push = 0
    pruned_in = 0
    for k in range(nch):
        push += parts[3][k]
        new_push += parts[4][k]
        pruned_in += parts[5][k]
    if push == 0:
        return m, cand
    incremental = new_push + pruned_in < push
    sel = NEW if incremental else SPREAD
    if not par:
        m = _push_marks(0, nf, F, g, status, sel, flags, Fnext, m, True)
        if incremental:
            m = _repull_pruned(0, nf, F, g, status, flags, last_spread, it, Fnext, m, True)
        return m, cand
    start = 0
    for k in range(nch):
        cand_start[k] = start
        start += parts[4][k] if incremental else parts[3][k]
    if cand.shape[0] < start:
        cand = np.empty(max(start, 2 * cand.shape[0]), dtype=np.int32)
    _candidates_par(nch, nf, F, g, status, sel, flags, last_spread, it, incremental, cand, cand_start, cand_count,
                    pulled, pulled_count)
    for k in range(nch):
        for j in range(cand_start[k], cand_start[k] + cand_count[k]):
            w = cand[j]
            if flags[w] == 0:
                flags[w] = 1
                Fnext[m] = w
                m += 1
        for j in range(k * CHUNK, k * CHUNK + pulled_count[k]):
            w = pulled[j]
            if flags[w] == 0:
                flags[w] = 1
                Fnext[m] = w
                m += 1
    return m, cand


# ------------------------------------------------------------------------------ dense step
@njit(cache=True)
def _dense_range(k, n, g, inv, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                 part_count):
    """One dense iteration over the vertices of chunk ``k`` (see the module docstring).

    In dense mode a vertex that spread in the previous iteration carries its contribution with
    the sign bit set (``-c``; ``-0.0`` for a dangling one), so one read per in-edge gives both
    the sum (of ``|c|``) and whether a spreader points here. Branch-free per vertex: a vertex
    outside the frontier keeps its value (its change is exactly 0), so the partial sums and
    maxima are those of the frontier alone. (An early exit at the first spreader reads fewer
    edges but mispredicts a branch per vertex: slower.)
    """
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    part_max, part_sum, part_keep_in, part_push = parts[0], parts[1], parts[2], parts[3]
    m = 0.0
    s = 0.0
    keep_in = 0
    push = 0
    count = 0
    prune_i = np.int64(prune)
    grow_i = np.int64(grow)
    for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
        o = in_off[v]
        acc = 0.0
        sp = np.int64(keep[v])
        for j in range(o, o + in_deg[v]):
            cu = c[in_idx[j]]
            acc += abs(cu)
            sp |= np.int64(math.copysign(1.0, cu) < 0.0)
        a = np.int64(sp != 0)
        old = x[v]
        new = closed_form(acc, 1.0, alpha, selfloop, out_deg, v)
        val = new if a != 0 else old
        xnew[v] = val
        d = val - old
        ad = abs(d)
        top = max(val, old)
        kept = a & (1 - (prune_i & np.int64(ad <= ptol * top)))
        spreads = a & grow_i & np.int64(ad > ftol * top)
        keep2[v] = np.uint8(kept)
        cv = val * inv[v]
        cnew[v] = -cv if spreads != 0 else cv
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


@njit(cache=True, parallel=True)
def _dense_par(nch, n, g, inv, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
               part_count):
    for k in prange(nch):
        _dense_range(k, n, g, inv, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                     part_count)


@njit(cache=True)
def _dense_serial(nch, n, g, inv, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                  part_count):
    for k in range(nch):
        _dense_range(k, n, g, inv, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                     part_count)


@njit(cache=True)
def _to_sparse(n, g, flags, c, last_spread, it, F):
    """After dense iteration ``it``: the frontier list (kept vertices in id order, then the
    unmarked out-neighbours of the spreaders), ``last_spread`` of the spreaders, and ``c``
    without the spreaders' sign bits. Returns its size."""
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    m = 0
    for v in range(n):
        if flags[v]:
            F[m] = v
            m += 1
    for v in range(n):
        if math.copysign(1.0, c[v]) < 0.0:
            c[v] = -c[v]
            last_spread[v] = it
            for j in range(out_off[v], out_off[v] + out_deg[v]):
                w = out_idx[j]
                if flags[w] == 0:
                    flags[w] = 1
                    F[m] = w
                    m += 1
    return m


# ------------------------------------------------------------------------------ the loop
@njit(cache=True)
def frontier_iterate(g, num_edges, x, flags, F, nf, alpha, selfloop, tol, ftol, ptol, grow, prune,
                     max_iter, affected):
    """Iterate from the marked vertices ``F[:nf]`` (``flags[v] == 1`` exactly for them).

    The loop ends when ``max|dx| / sum(x) < tol`` over the processed vertices, when the
    frontier is empty (both: converged), or after ``max_iter`` iterations. ``F`` has room for
    every vertex; ``x``, ``flags`` and ``F`` are overwritten. Returns ``(x, iterations,
    converged)`` with ``x`` the final local-form vector (``x`` itself or a buffer of the same
    size); ``affected[i]`` is the frontier size of iteration i.

    Call it through :data:`FRONTIER`, whose entries pass ``selfloop``, ``grow`` and ``prune``
    as constants: each combination then gets its own machine code with the other branches
    removed, which makes an iteration about 1.6 times faster.
    """
    n = x.shape[0]
    nch_max = nchunks(n)
    parts = (np.zeros(nch_max), np.zeros(nch_max), np.zeros(nch_max, dtype=np.int64),
             np.zeros(nch_max, dtype=np.int64), np.zeros(nch_max, dtype=np.int64), np.zeros(nch_max, dtype=np.int64))
    pulled_count = np.zeros(nch_max, dtype=np.int64)
    part_count = np.zeros(nch_max, dtype=np.int64)
    cand_start = np.zeros(nch_max, dtype=np.int64)
    cand_count = np.zeros(nch_max, dtype=np.int64)
    big = num_edges + n >= PARALLEL_EDGES
    inv = inverse_degrees(g[4], n, selfloop, big)
    c = np.empty(n)
    total = 0.0
    for v in range(n):
        c[v] = x[v] * inv[v]
        total += x[v]
    xnew = np.empty(n)
    status = np.zeros(n, dtype=np.uint8)
    last_spread = np.full(n, -2, dtype=np.int32)
    Fnext = np.empty(n, dtype=F.dtype)
    cand = np.empty(0, dtype=np.int32)
    pulled = np.empty(n, dtype=np.int32)
    # dense-mode buffers, made on first use
    cnew = np.empty(0)
    keep2 = np.empty(0, dtype=np.uint8)
    mean_degree = num_edges / max(n, 1)
    dense = False
    iterations = 0
    converged = False
    for it in range(max_iter):
        if not dense and nf == 0:
            converged = True
            break
        if dense:
            if cnew.shape[0] == 0:
                cnew = np.empty(n)
                keep2 = np.empty(n, dtype=np.uint8)
            nch = nch_max
            if big:
                _dense_par(nch, n, g, inv, c, x, cnew, xnew, flags, keep2, alpha, selfloop, ftol, ptol, grow, prune,
                           parts, part_count)
            else:
                _dense_serial(nch, n, g, inv, c, x, cnew, xnew, flags, keep2, alpha, selfloop, ftol, ptol, grow,
                              prune, parts, part_count)
            x, xnew = xnew, x
            c, cnew = cnew, c
            flags, keep2 = keep2, flags
            count = 0
            for k in range(nch):
                count += part_count[k]
            if count == 0:
                converged = True
                break
        else:
            count = nf
            par = nf > CHUNK and nf * mean_degree >= PARALLEL_EDGES
            nch = nchunks(nf) if par else 1
            if par:
                _sparse_par(nch, nf, F, g, inv, c, x, xnew, status, flags, last_spread, it, alpha,
                            selfloop, ftol, ptol, grow, prune, parts)
            else:
                _rank_range(0, nf, 0, F, g, c, x, xnew, status, last_spread, it, alpha, selfloop, ftol, ptol, grow,
                            prune, parts)
                _commit_range(0, nf, F, inv, c, x, xnew, status, flags, last_spread, it)
        err = 0.0
        dsum = 0.0
        keep_in = 0
        push = 0
        for k in range(nch):
            err = max(err, parts[0][k])
            dsum += parts[1][k]
            keep_in += parts[2][k]
            push += parts[3][k]
        total += dsum
        affected[it] = count
        iterations = it + 1
        if err / total < tol:
            converged = True
            break
        next_dense = grow and keep_in + push > DENSE_WEIGHT * num_edges
        if next_dense:
            if not dense:  # flags hold the kept vertices; the spreaders' sign bits go into c
                for i in range(nf):
                    if status[i] & SPREAD:
                        v = F[i]
                        c[v] = -c[v]
            dense = True
        elif dense:
            nf = _to_sparse(n, g, flags, c, last_spread, it, F)
            dense = False
        else:
            m, cand = _mark_sparse(nf, F, Fnext, g, status, flags, last_spread, it, par, nch, parts, cand,
                                   cand_start, cand_count, pulled, pulled_count)
            F, Fnext = Fnext, F
            nf = m
    return x, iterations, converged


# One entry point per (self-loop mode, algorithm): the constants reach every kernel below as
# compile-time literals (Numba specializes a call on literal arguments).
@njit(cache=True)
def _dt_uniform(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, False, tol, ftol, ptol, False, False,
                            max_iter, affected)


@njit(cache=True)
def _dt_selfloop(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, True, tol, ftol, ptol, False, False,
                            max_iter, affected)


@njit(cache=True)
def _df_uniform(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, False, tol, ftol, ptol, True, False,
                            max_iter, affected)


@njit(cache=True)
def _df_selfloop(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, True, tol, ftol, ptol, True, False,
                            max_iter, affected)


@njit(cache=True)
def _dfp_uniform(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, False, tol, ftol, ptol, True, True,
                            max_iter, affected)


@njit(cache=True)
def _dfp_selfloop(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol, max_iter, affected):
    return frontier_iterate(g, num_edges, x, flags, F, nf, alpha, True, tol, ftol, ptol, True, True,
                            max_iter, affected)


#: ``(algorithm, selfloop) -> kernel(g, num_edges, x, flags, F, nf, alpha, tol, ftol, ptol,
#: max_iter, affected) -> (x, iterations, converged)``
FRONTIER = {("dt", False): _dt_uniform, ("dt", True): _dt_selfloop,
            ("df", False): _df_uniform, ("df", True): _df_selfloop,
            ("dfp", False): _dfp_uniform, ("dfp", True): _dfp_selfloop}
