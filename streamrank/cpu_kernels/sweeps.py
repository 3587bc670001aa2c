"""Full sweeps (Numba): Static, ND and the standard-form "warm" iteration, one call per update.

Every sweep is pull-based over all vertices, in fixed chunks whose partial sums are combined in
chunk order: the result is bitwise the same for any thread count. Jacobi sweeps read the
previous iterate only; Gauss-Seidel sweeps of the local form (``update_order="gauss-seidel"``,
Static and ND) run blocks of vertex ids in place as the frontier loop's dense pass does
(:mod:`.frontier_gs`): within a block a vertex reads the values updated before it, across
blocks the values of the sweep's start (``cprev``), and an explicit self-loop is divided out.
The standard form (``warm``) is always Jacobi: its ``base`` follows the whole iterate.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, PARALLEL_EDGES, block_size, closed_form, find_loops, gs_value, inverse_degrees, nchunks


@njit(cache=True)
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


@njit(cache=True, parallel=True)
def _contrib_par(nch, n, out_deg, inv, x, c, part_sum, part_dangling):
    for k in prange(nch):
        _contrib_chunk(k, n, out_deg, inv, x, c, part_sum, part_dangling)


@njit(cache=True)
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


@njit(cache=True)
def _sweep_chunk(k, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum):
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    lo = k * CHUNK
    hi = min(lo + CHUNK, n)
    m = 0.0
    s = 0.0
    for v in range(lo, hi):
        acc = 0.0
        o = in_off[v]
        for j in range(o, o + in_deg[v]):
            acc += c[in_idx[j]]
        val = closed_form(acc, base, alpha, selfloop, out_deg, v)
        xnew[v] = val
        d = abs(val - x[v])
        if d > m:
            m = d
        s += val
    part_max[k] = m
    part_sum[k] = s


@njit(cache=True, parallel=True)
def _sweep_par(nch, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum):
    for k in prange(nch):
        _sweep_chunk(k, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum)


@njit(cache=True)
def _gs_block(b, block, n, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum):
    """Gauss-Seidel sweep of the block ``b`` of vertex ids, in place on ``x`` and ``c``."""
    in_off, in_deg, in_idx, out_deg = g[0], g[1], g[2], g[4]
    blo = b * block
    bhi = min(blo + block, n)
    multi = bhi - blo < n
    width = np.uint64(bhi - blo)
    for k in range(blo // CHUNK, nchunks(bhi)):
        m = 0.0
        s = 0.0
        for v in range(k * CHUNK, min(k * CHUNK + CHUNK, bhi)):
            acc = 0.0
            o = in_off[v]
            if multi:
                for j in range(o, o + in_deg[v]):
                    u = in_idx[j]
                    acc += c[u] if np.uint64(u - blo) < width else cprev[u]
            else:
                for j in range(o, o + in_deg[v]):
                    acc += c[in_idx[j]]
            own = loops[v] != 0
            if own:
                acc -= c[v]
            val = gs_value(acc, own, alpha, selfloop, inv, out_deg, v)
            d = abs(val - x[v])
            if d > m:
                m = d
            s += val
            x[v] = val
            c[v] = val * inv[v]
        part_max[k] = m
        part_sum[k] = s


@njit(cache=True, parallel=True)
def _gs_par(nb, block, n, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum):
    for b in prange(nb):
        _gs_block(b, block, n, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum)
    for k in prange(nchunks(n)):
        for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
            cprev[v] = c[v]


@njit(cache=True)
def gs_sweep(n, block, par, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum):
    """One Gauss-Seidel sweep of the local form over all vertices (``c == cprev == x * inv`` on
    entry and on return); partials per chunk."""
    block = block_size(n, block)
    nb = (n + block - 1) // block
    if par and nb > 1:
        _gs_par(nb, block, n, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum)
        return
    for b in range(nb):
        _gs_block(b, block, n, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum)
    if nb > 1:
        for v in range(n):
            cprev[v] = c[v]


@njit(cache=True)
def gs_iterate(g, num_edges, x, alpha, selfloop, block, tol, max_iter, affected):
    """Gauss-Seidel sweeps of the local form from ``x`` until ``max|dx| / sum(x_new) < tol``.

    Returns ``(x, iterations, converged, total, 1.0)`` as :func:`sweep_iterate` does.
    """
    n = x.shape[0]
    nch = nchunks(n)
    par = num_edges + n >= PARALLEL_EDGES and nch > 1
    out_deg = g[4]
    inv = inverse_degrees(out_deg, n, selfloop, par)
    loops = np.empty(n, dtype=np.uint8)
    find_loops(g[0], g[1], g[2], n, loops)
    x = x.copy()
    c = x * inv
    cprev = c.copy()
    part_max = np.zeros(nch)
    part_sum = np.zeros(nch)
    iterations = 0
    converged = False
    total = 0.0
    for it in range(max_iter):
        gs_sweep(n, block, par, g, inv, loops, c, cprev, x, alpha, selfloop, part_max, part_sum)
        err = 0.0
        total = 0.0
        for k in range(nch):
            err = max(err, part_max[k])
            total += part_sum[k]
        affected[it] = n
        iterations = it + 1
        if err / total < tol:
            converged = True
            break
    return x, iterations, converged, total, 1.0


@njit(cache=True)
def sweep_iterate(g, num_edges, x, alpha, selfloop, standard, tol, max_iter, affected):
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
    out_deg = g[4]
    inv = inverse_degrees(out_deg, n, selfloop, par)
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
            _sweep_par(nch, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum)
        else:
            for k in range(nch):
                _sweep_chunk(k, n, g, c, x, xnew, base, alpha, selfloop, part_max, part_sum)
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


# One entry point per (form, self-loop mode, update order): the constants reach the sweep
# kernels as compile-time literals (Numba specializes a call on literal arguments), which
# removes the per-vertex branches on them.
@njit(cache=True)
def _local_uniform(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return sweep_iterate(g, num_edges, x, alpha, False, False, tol, max_iter, affected)


@njit(cache=True)
def _local_selfloop(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return sweep_iterate(g, num_edges, x, alpha, True, False, tol, max_iter, affected)


@njit(cache=True)
def _local_uniform_gs(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return gs_iterate(g, num_edges, x, alpha, False, block, tol, max_iter, affected)


@njit(cache=True)
def _local_selfloop_gs(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return gs_iterate(g, num_edges, x, alpha, True, block, tol, max_iter, affected)


@njit(cache=True)
def _standard_uniform(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return sweep_iterate(g, num_edges, x, alpha, False, True, tol, max_iter, affected)


@njit(cache=True)
def _standard_selfloop(g, num_edges, x, alpha, tol, block, max_iter, affected):
    return sweep_iterate(g, num_edges, x, alpha, True, True, tol, max_iter, affected)


#: ``(standard form, selfloop, gauss_seidel) -> kernel(g, num_edges, x, alpha, tol, block, max_iter,
#: affected) -> (x, iterations, converged, total, base)``; the standard form has no Gauss-Seidel entry.
SWEEPS = {(False, False, False): _local_uniform, (False, True, False): _local_selfloop,
          (False, False, True): _local_uniform_gs, (False, True, True): _local_selfloop_gs,
          (True, False, False): _standard_uniform, (True, True, False): _standard_selfloop}
