"""Full sweeps (Numba): Static, ND and the standard-form "warm" iteration, one call per update.

Every sweep is pull-based over all vertices, in fixed chunks whose partial sums are combined in
chunk order: the result is bitwise the same for any thread count. Jacobi sweeps read the
previous iterate only; Gauss-Seidel sweeps of the local form (``update_order="gauss-seidel"``,
Static and ND) are the frontier loop's dense pass (:mod:`.frontier_order`) with every vertex
marked: the vertices in the store's sweep order, over a mirror of the in-edges built for the call,
blocks of positions in place, within a block a vertex reads the values updated before it, across
blocks the values of the sweep's start (``cprevp``), and an explicit self-loop is divided out.
The standard form (``warm``) is always Jacobi: its ``base`` follows the whole iterate.
A weighted graph passes its in-edges' weights ``wt`` and its out-weights ``w_out`` (which
replace the out-degrees) as the last arguments (:mod:`.common`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, PARALLEL_EDGES, closed_form, find_loops, inverse_degrees, nchunks
from .frontier_order import build, dense_order


@njit(cache=True, nogil=True)
def _contrib_chunk(k, n, out_deg, inv, x, c, part_sum, part_dangling):
    lo = k * CHUNK
    hi = min(lo + CHUNK, n)
    s = 0.0
    dm = 0.0
    for v in range(lo, hi):
        xv = x[v]
        c[v] = xv * inv[v]
        s += xv
        if out_deg[v] == 0:
            dm += xv
    part_sum[k] = s
    part_dangling[k] = dm


@njit(cache=True, nogil=True, parallel=True)
def _contrib_par(nch, n, out_deg, inv, x, c, part_sum, part_dangling):
    for k in prange(nch):  # k is unsigned here: cast, so that the serial loop's compiled chunk serves
        _contrib_chunk(np.int64(k), n, out_deg, inv, x, c, part_sum, part_dangling)


@njit(cache=True, nogil=True)
def contributions(out_deg, inv, x, c, part_sum, part_dangling, par):
    """``c = x * inv`` for every vertex; returns ``(sum(x), sum of x over dangling vertices)``."""
    n = x.shape[0]
    nch = nchunks(n)
    if par and nch > 1:
        _contrib_par(nch, n, out_deg, inv, x, c, part_sum, part_dangling)
    else:
        for k in range(nch):
            _contrib_chunk(k, n, out_deg, inv, x, c, part_sum, part_dangling)
    s = 0.0
    dm = 0.0
    for k in range(nch):
        s += part_sum[k]
        dm += part_dangling[k]
    return s, dm


@njit(cache=True, nogil=True)
def _sweep_chunk(k, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum, wt=None, w_out=None):
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    lo = k * CHUNK
    hi = min(lo + CHUNK, n)
    m = 0.0
    s = 0.0
    for v in range(lo, hi):
        acc = 0.0
        o = np.uint64(in_off[v])  # unsigned indices: no wraparound code (frontier_order._dense_block)
        for j in range(o, o + np.uint64(in_deg[v])):
            if wt is not None:
                acc += c[np.uint64(in_idx[j])] * wt[j]
            else:
                acc += c[np.uint64(in_idx[j])]
        if w_out is not None:
            val = closed_form(acc, base, alpha, selfloop, w_out, v)
        else:
            val = closed_form(acc, base, alpha, selfloop, out_deg, v)
        xnew[v] = val
        d = abs(val - x[v])
        if d > m:
            m = d
        s += val
    part_max[k] = m
    part_sum[k] = s


@njit(cache=True, nogil=True, parallel=True)
def _sweep_par(nch, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum, wt=None, w_out=None):
    for k in prange(nch):  # k cast as above
        _sweep_chunk(np.int64(k), n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum, wt, w_out)


@njit(cache=True, nogil=True)
def _inverse(g, w_out, n, selfloop, par):
    """``1 / d(v)`` per vertex: the out-degrees, or the out-weights ``w_out`` of a weighted graph."""
    if w_out is not None:
        return inverse_degrees(w_out, n, selfloop, par)
    return inverse_degrees(g[4], n, selfloop, par)


@njit(cache=True, nogil=True)
def gs_iterate(g, num_edges, x, alpha, selfloop, tol, max_iter, affected, order, pos, starts, wt=None, w_out=None):
    """Gauss-Seidel sweeps of the local form from ``x`` until ``max|dx| / sum(x_new) < tol``.

    A sweep is the frontier loop's dense Gauss-Seidel pass (:func:`.frontier_order.dense_order`)
    in the sweep order ``order`` (``pos`` its inverse: the store's :attr:`~streamrank.store.cpu.
    CpuGraph.sweep_order`) with every vertex marked and no pruning or spreading: the same compiled
    code, so Static, ND and DF-P share it (compile time). Returns ``(x, iterations, converged,
    total, 1.0)`` as :func:`sweep_iterate` does.
    """
    n = x.shape[0]
    if wt is not None:  # the self-loops' weights, and the mirror's weights
        return _gs_sweeps(g, num_edges, x, alpha, selfloop, tol, max_iter, affected, order, pos, starts,
                          np.empty(n), np.empty(max(num_edges, 1)), wt, w_out)
    return _gs_sweeps(g, num_edges, x, alpha, selfloop, tol, max_iter, affected, order, pos, starts,
                      np.empty(n, dtype=np.uint8), None)


@njit(cache=True, nogil=True)
def _gs_sweeps(g, num_edges, x, alpha, selfloop, tol, max_iter, affected, order, pos, starts, loops, mw, wt=None,
               w_out=None):
    """:func:`gs_iterate` with its loop flags (or weights) ``loops`` and mirror weights ``mw``
    allocated."""
    n = x.shape[0]
    nch = nchunks(n)
    par = num_edges + n >= PARALLEL_EDGES and nch > 1
    inv = _inverse(g, w_out, n, selfloop, par)
    find_loops(g[0], g[1], g[2], n, loops, wt)
    mstate = np.empty(4, dtype=np.int64)
    mstate[3] = n  # frontier_order.END: a static sweep visits every position
    mv = (order, pos, np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
          np.empty(max(num_edges, 1), dtype=np.int32), mstate, np.empty(n), np.empty(n), np.empty(n, dtype=loops.dtype),
          np.empty(n, dtype=np.int64), starts)
    build(n, g, inv, loops, mv, par, wt, mw)
    cprevp = mv[6]
    xp = np.empty(n)
    cp = np.empty(n)
    for p in range(n):  # in position order
        v = order[p]
        xp[p] = x[v]
        cp[p] = x[v] * inv[v]
        cprevp[p] = cp[p]
    keep = np.ones(n, dtype=np.uint8)
    parts_f = np.zeros((2, max(nch, 1)))
    parts_i = np.zeros((3, max(nch, 1)), dtype=np.int64)
    parts = (parts_f[0], parts_f[1], parts_i[0], parts_i[1], parts_i[0], parts_i[1])
    total = 0.0
    for p in range(n):
        total += xp[p]
    iterations = 0
    converged = False
    for it in range(max_iter):
        dense_order(n, par, g, mv, cp, xp, keep, False, alpha, selfloop, 0.0, 0.0, False, False, parts,
                    parts_i[2], mw)
        err = 0.0
        dsum = 0.0
        for k in range(nch):
            err = max(err, parts_f[0][k])
            dsum += parts_f[1][k]
        total += dsum
        affected[it] = n
        iterations = it + 1
        if err / total < tol:
            converged = True
            break
    x = np.empty(n)
    total = 0.0  # exactly, not the running sum
    for p in range(n):
        x[order[p]] = xp[p]
        total += xp[p]
    return x, iterations, converged, total, 1.0


@njit(cache=True, nogil=True)
def sweep_iterate(g, num_edges, x, alpha, selfloop, standard, tol, max_iter, affected, wt=None, w_out=None):
    """Synchronous sweeps over all vertices until ``max|dx| / sum(x_new) < tol``.

    ``standard=False``: the local form from ``x``. ``standard=True``: the standard form
    ``y <- base + alpha P^T y`` from ``y = x``, ``base = (alpha * D + (1 - alpha) * sum(y)) / n``
    with ``D`` the sum over dangling vertices (none in self-loop mode).

    Returns ``(x, iterations, converged, total, base)``: the last iterate (a new array), its
    sum, and (standard form) the ``base`` of that iterate, so that ``x / base`` is the
    local-form solution; ``base`` is 1 for the local form. ``affected[i]`` is set to ``n``
    for each iteration run.
    """
    n = x.shape[0]
    nch = nchunks(n)
    par = num_edges + n >= PARALLEL_EDGES and nch > 1
    out_deg = g[4]  # dangling: no out-edge, also no out-weight
    inv = _inverse(g, w_out, n, selfloop, par)
    c = np.empty(n)
    x = x.copy()
    xnew = np.empty(n)
    part_max = np.zeros(nch)
    part_sum = np.zeros(nch)
    part_dangling = np.zeros(nch)
    iterations = 0
    converged = False
    total = 0.0
    for it in range(max_iter):
        s, dm = contributions(out_deg, inv, x, c, part_sum, part_dangling, par)
        base = 1.0
        if standard:
            base = ((0.0 if selfloop else alpha * dm) + (1.0 - alpha) * s) / n
        if par:
            _sweep_par(nch, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum, wt, w_out)
        else:
            for k in range(nch):
                _sweep_chunk(k, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum, wt, w_out)
        err = 0.0
        total = 0.0
        for k in range(nch):
            err = max(err, part_max[k])
            total += part_sum[k]
        x, xnew = xnew, x
        affected[it] = n
        iterations = it + 1
        if err / total < tol:
            converged = True
            break
    base = 1.0
    if standard and n > 0:
        s, dm = contributions(out_deg, inv, x, c, part_sum, part_dangling, par)
        base = ((0.0 if selfloop else alpha * dm) + (1.0 - alpha) * s) / n
    return x, iterations, converged, total, base


def _entry(kernel, *modes):
    """``kernel`` with its mode arguments bound, called from Python: the modes reach it as plain
    booleans, so each kernel has one compiled version for every mode (see below)."""
    def call(g, num_edges, x, alpha, tol, *rest):
        return kernel(g, num_edges, x, alpha, *modes, tol, *rest)
    return call


# The Jacobi sweeps are called from Python with their modes as plain (not literal) booleans: one
# compiled version of each kernel serves every mode. (Specializing on literal modes compiled a
# new version of the parallel kernels per mode, possibly in a later process than the first:
# Numba's cache then mixed machine code compiled by two processes, and a run loading both
# crashed. A sweep branches on the mode per vertex, predictably.)
# The Gauss-Seidel sweeps keep literal entries: the dense Gauss-Seidel pass they share with the
# frontier loop runs 1.7 times faster specialized on the dangling mode (Static on CollegeMsg).
@njit(cache=True, nogil=True)
def _local_uniform_gs(g, num_edges, x, alpha, tol, max_iter, affected, order, pos, starts, wt=None, w_out=None):
    return gs_iterate(g, num_edges, x, alpha, False, tol, max_iter, affected, order, pos, starts, wt, w_out)


@njit(cache=True, nogil=True)
def _local_selfloop_gs(g, num_edges, x, alpha, tol, max_iter, affected, order, pos, starts, wt=None, w_out=None):
    return gs_iterate(g, num_edges, x, alpha, True, tol, max_iter, affected, order, pos, starts, wt, w_out)


#: ``(standard form, selfloop, gauss_seidel) -> kernel(g, num_edges, x, alpha, tol, max_iter, affected)
#: -> (x, iterations, converged, total, base)`` (Gauss-Seidel kernels take the store's sweep order
#: ``order, pos`` and its block starts after ``affected``; a weighted graph passes ``wt, w_out`` last);
#: the standard form has no Gauss-Seidel entry.
SWEEPS = {(False, False, False): _entry(sweep_iterate, False, False),
          (False, True, False): _entry(sweep_iterate, True, False),
          (True, False, False): _entry(sweep_iterate, False, True),
          (True, True, False): _entry(sweep_iterate, True, True),
          (False, False, True): _local_uniform_gs,
          (False, True, True): _local_selfloop_gs}
