"""The dense step of the frontier loop (Numba): one fused pass over all vertices.

Per-vertex flags ``keep`` (marked and not pruned), and the sign bit of each vertex's
contribution ``c`` set when it spread in the previous iteration: one sequential pass over all
vertices finds the frontier and updates it at once. A vertex is in the frontier when it is kept
or one of its in-neighbours spread, which it sees while summing its in-edges. This is a full
sweep's memory pattern, used while the frontier covers a large part of the graph (the first
iterations after a batch on a small graph), where it is cheaper than following lists.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .common import CHUNK, add_lookaheads, looks_ahead, solved_value


@njit(cache=True, nogil=True)
def _dense_range(k, n, g, inv, loops, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                 part_count, wt=None):
    """One dense iteration over the vertices of chunk ``k`` (see the module docstring).

    In dense mode a vertex that spread in the previous iteration carries its contribution with
    the sign bit set (``-c``; ``-0.0`` for a dangling one), so one read per in-edge gives both
    the sum (of ``|c|``) and whether a spreader points here. Branch-free per vertex: a vertex
    outside the frontier keeps its value (its change is exactly 0), so the partial sums and
    maxima are those of the frontier alone. (An early exit at the first spreader reads fewer
    edges but mispredicts a branch per vertex: slower.) An explicit self-loop (``loops[v]``) is
    taken off the sum again and divided out of the vertex's own equation
    (:func:`.common.solved_value`). DF/DF-P in uniform mode read an in-neighbour of out-degree 1
    one step ahead (:func:`.common.add_lookaheads`), as the sparse step does.
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
        o = np.uint64(in_off[v])  # unsigned indices: no wraparound code (frontier_order._dense_block)
        acc = 0.0
        sp = np.int64(keep[v])
        later = False
        for j in range(o, o + np.uint64(in_deg[v])):
            u = np.uint64(in_idx[j])
            cu = c[u]
            if grow and not selfloop and looks_ahead(u, np.uint64(v), out_deg):  # constants: DF/DF-P, uniform
                later = True
            elif wt is not None:
                acc += abs(cu) * wt[j]
            else:
                acc += abs(cu)
            sp |= np.int64(math.copysign(1.0, cu) < 0.0)
        if later:  # the lookahead candidates, after the plain values
            acc = add_lookaheads(acc, in_off, in_deg, in_idx, out_deg, c, np.uint64(v), alpha, wt)
        a = np.int64(sp != 0)
        old = x[v]
        loop = np.float64(loops[v])
        new = solved_value(acc - loop * abs(c[v]), loop, alpha, selfloop, inv[v])
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


@njit(cache=True, nogil=True, parallel=True)
def dense_par(nch, n, g, inv, loops, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
               part_count, wt=None):
    for k in prange(nch):
        _dense_range(k, n, g, inv, loops, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                     part_count, wt)


@njit(cache=True, nogil=True)
def dense_serial(nch, n, g, inv, loops, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                  part_count, wt=None):
    for k in range(nch):
        _dense_range(k, n, g, inv, loops, c, x, cnew, xnew, keep, keep2, alpha, selfloop, ftol, ptol, grow, prune, parts,
                     part_count, wt)


@njit(cache=True, nogil=True)
def to_sparse(n, g, flags, c, cprev, gs, last_spread, stamp, F):
    """After the dense iteration stamped ``stamp``: the frontier list (kept vertices in id order, then the
    unmarked out-neighbours of the spreaders), ``last_spread`` of the spreaders, and ``c``
    (with ``gs`` also its copy ``cprev``) without the spreaders' sign bits. Returns its size and
    the number of kept vertices at its head."""
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    m = 0
    for v in range(n):
        if flags[v]:
            F[m] = v
            m += 1
    kept = m
    for v in range(n):
        if math.copysign(1.0, c[v]) < 0.0:
            c[v] = -c[v]
            if gs:
                cprev[v] = c[v]
            last_spread[v] = stamp
            o = np.uint64(out_off[v])  # unsigned indices: no wraparound code
            for j in range(o, o + np.uint64(out_deg[v])):
                w = np.uint64(out_idx[j])
                if flags[w] == 0:
                    flags[w] = 1
                    F[m] = w
                    m += 1
    return m, kept
