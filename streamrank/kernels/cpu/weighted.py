"""Rank kernels of weighted graphs (Numba): full sweeps, the warm iteration and the frontier loop.

A weighted graph (:class:`streamrank.store.cpu_weighted.WeightedCpuGraph`) sends ``x[u] w(u, v) /
W[u]`` along ``(u, v)``, ``W[u]`` its out-weight (plus the implicit loop's weight 1 in self-loop
mode). The local form (docs/architecture.md) becomes ``x[v] = 1 + alpha * sum_j c[u_j] wt[j]``
over ``v``'s in-edges ``j``, ``c[u] = x[u] / W[u]`` (``inv`` holds ``1 / W``; 0 for a dangling
vertex in uniform mode), with ``v``'s own loops (an explicit one of weight ``w(v, v)``, the
implicit one) solved in closed form: ``x[v] = (1 + alpha * acc) / (1 - alpha * loops / W[v])``.

These kernels are separate from the unweighted ones (:mod:`.sweeps`, :mod:`.frontier`), which
stay as they are: an unweighted graph never reads a weight. They iterate in Jacobi order (reads
of the previous iterate only), over fixed chunks whose partials combine in chunk order, so the
results do not depend on the thread count; the frontier loop's list work (pruning, marking) is
serial, in list order. The graph tuple ``g`` is the store's ``kernel_arrays()``; ``in_wt`` the
weights beside ``in_idx``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, nchunks

#: A frontier of more than ``1 / _ID_ORDER`` of the vertices is re-listed in id order before an
#: iteration (one pass over the flags): the in-edges are then read in the order they are stored.
_ID_ORDER = 16
#: Frontier status bits: pruned, spreads.
_PRUNE = 1
_SPREAD = 2


@njit(cache=True, nogil=True)
def inverse_weights(out_w, n, selfloop, inv):
    """``inv[v] = 1 / W(v)`` (``W + 1`` in self-loop mode; 0 for a dangling vertex in uniform
    mode) for ``v < n``."""
    for v in range(n):
        d = out_w[v] + 1.0 if selfloop else out_w[v]
        inv[v] = 1.0 / d if d > 0.0 else 0.0


@njit(cache=True, nogil=True)
def refresh(vertices, out_w, selfloop, x, c, inv):
    """``inv`` and ``c = x * inv`` of ``vertices`` after their out-weights changed."""
    for v in vertices:
        d = out_w[v] + 1.0 if selfloop else out_w[v]
        inv[v] = 1.0 / d if d > 0.0 else 0.0
        c[v] = x[v] * inv[v]


@njit(cache=True, inline="always")
def _value(v, in_off, in_deg, in_idx, in_wt, c, inv, alpha, selfloop):
    """The local-form value of ``v`` from the contributions ``c``, its loops solved."""
    acc = 0.0
    loop = 0.0
    for j in range(in_off[v], in_off[v] + in_deg[v]):
        u = in_idx[j]
        if u == v:
            loop += in_wt[j]
        else:
            acc += c[u] * in_wt[j]
    if selfloop:
        loop += 1.0
    return (1.0 + alpha * acc) / (1.0 - alpha * loop * inv[v])


@njit(cache=True, nogil=True)
def _sweep_chunk(k, n, g, in_wt, c, inv, x, xnew, alpha, selfloop, part_max, part_sum):
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    m = 0.0
    s = 0.0
    for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
        val = _value(v, in_off, in_deg, in_idx, in_wt, c, inv, alpha, selfloop)
        xnew[v] = val
        d = abs(val - x[v])
        if d > m:
            m = d
        s += val
    part_max[k] = m
    part_sum[k] = s


@njit(cache=True, nogil=True, parallel=True)
def _sweep_par(nch, n, g, in_wt, c, inv, x, xnew, alpha, selfloop, part_max, part_sum):
    for k in prange(nch):
        _sweep_chunk(np.int64(k), n, g, in_wt, c, inv, x, xnew, alpha, selfloop, part_max, part_sum)


@njit(cache=True, nogil=True)
def local_sweeps(g, in_wt, out_w, x, alpha, tol, max_iter, affected, selfloop, par):
    """Jacobi sweeps of the local form over all vertices from ``x`` (Static, ND) until
    ``max|dx| / sum(x) < tol``. Returns ``(x, iterations, converged, sum(x))``."""
    n = x.shape[0]
    nch = nchunks(n)
    inv = np.empty(n)
    inverse_weights(out_w, n, selfloop, inv)
    c = x * inv
    xnew = np.empty(n)
    part_max = np.zeros(nch)
    part_sum = np.zeros(nch)
    total = x.sum()
    it = 0
    converged = False
    while it < max_iter:
        if par and nch > 1:
            _sweep_par(nch, n, g, in_wt, c, inv, x, xnew, alpha, selfloop, part_max, part_sum)
        else:
            for k in range(nch):
                _sweep_chunk(k, n, g, in_wt, c, inv, x, xnew, alpha, selfloop, part_max, part_sum)
        m = 0.0
        total = 0.0
        for k in range(nch):
            m = max(m, part_max[k])
            total += part_sum[k]
        x, xnew = xnew, x
        for v in range(n):
            c[v] = x[v] * inv[v]
        affected[it] = n
        it += 1
        if m < tol * total:
            converged = True
            break
    return x, it, converged, total


@njit(cache=True, nogil=True)
def _standard_chunk(k, n, g, in_wt, cy, inv, y, ynew, base, alpha, selfloop, part_max, part_sum):
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    m = 0.0
    s = 0.0
    for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
        acc = 0.0
        for j in range(in_off[v], in_off[v] + in_deg[v]):
            acc += cy[in_idx[j]] * in_wt[j]
        if selfloop:
            acc += cy[v]  # the implicit loop, weight 1
        val = base + alpha * acc
        ynew[v] = val
        d = abs(val - y[v])
        if d > m:
            m = d
        s += val
    part_max[k] = m
    part_sum[k] = s


@njit(cache=True, nogil=True, parallel=True)
def _standard_par(nch, n, g, in_wt, cy, inv, y, ynew, base, alpha, selfloop, part_max, part_sum):
    for k in prange(nch):
        _standard_chunk(np.int64(k), n, g, in_wt, cy, inv, y, ynew, base, alpha, selfloop, part_max, part_sum)


@njit(cache=True, nogil=True)
def _base(y, out_w, n, alpha, selfloop):
    """``(alpha * D + (1 - alpha) * sum(y)) / n``, ``D`` the dangling vertices' sum (none in
    self-loop mode)."""
    s = 0.0
    dm = 0.0
    for v in range(n):
        s += y[v]
        if not selfloop and out_w[v] == 0.0:
            dm += y[v]
    return (alpha * dm + (1.0 - alpha) * s) / n


@njit(cache=True, nogil=True)
def standard_sweeps(g, in_wt, out_w, y, alpha, tol, max_iter, affected, selfloop, par):
    """The warm iteration ``y <- base + alpha P^T y`` (standard form, Jacobi) from ``y`` until
    ``max|dy| / sum(y) < tol``. Returns ``(x, iterations, converged, sum(x))`` with the local-form
    ``x = y / base``."""
    n = y.shape[0]
    nch = nchunks(n)
    inv = np.empty(n)
    inverse_weights(out_w, n, selfloop, inv)
    ynew = np.empty(n)
    part_max = np.zeros(nch)
    part_sum = np.zeros(nch)
    it = 0
    converged = False
    while it < max_iter:
        base = _base(y, out_w, n, alpha, selfloop)
        cy = y * inv
        if par and nch > 1:
            _standard_par(nch, n, g, in_wt, cy, inv, y, ynew, base, alpha, selfloop, part_max, part_sum)
        else:
            for k in range(nch):
                _standard_chunk(k, n, g, in_wt, cy, inv, y, ynew, base, alpha, selfloop, part_max, part_sum)
        m = 0.0
        total = 0.0
        for k in range(nch):
            m = max(m, part_max[k])
            total += part_sum[k]
        y, ynew = ynew, y
        affected[it] = n
        it += 1
        if m < tol * total:
            converged = True
            break
    base = _base(y, out_w, n, alpha, selfloop)
    x = y / base
    return x, it, converged, x.sum()


@njit(cache=True, nogil=True)
def _values_chunk(k, nf, F, g, in_wt, c, inv, xnew, alpha, selfloop):
    in_off, in_deg, in_idx = g[0], g[1], g[2]
    for i in range(k * CHUNK, min(k * CHUNK + CHUNK, nf)):
        xnew[i] = _value(F[i], in_off, in_deg, in_idx, in_wt, c, inv, alpha, selfloop)


@njit(cache=True, nogil=True, parallel=True)
def _values_par(nch, nf, F, g, in_wt, c, inv, xnew, alpha, selfloop):
    for k in prange(nch):
        _values_chunk(np.int64(k), nf, F, g, in_wt, c, inv, xnew, alpha, selfloop)


@njit(cache=True, nogil=True)
def frontier_loop(g, in_wt, num_edges, inv, x, c, flags, F, Fnext, xnew, status, nf, total, alpha, selfloop, tol,
                  ftol, ptol, grow, prune, max_iter, affected, par_edges):
    """DT / DF / DF-P from the marked vertices ``F[:nf]`` (``flags[v] == 1`` exactly for them).

    One iteration: new values of the listed vertices (Jacobi, in parallel chunks when the list's
    estimated in-edges reach ``par_edges``; a wide list is put in id order first), then in list order their commit (``x``, ``c = x *
    inv``, the running ``total = sum(x)``), with ``prune`` the unmarking of those whose relative
    change ``|d| / max(new, old)`` is at most ``ptol``, with ``grow`` the marking of the
    out-neighbours of those whose relative change exceeds ``ftol`` (appended in list order).
    DT (neither) keeps its list. Stops when ``max|dx| / sum(x) < tol`` over the listed vertices
    or the list is empty (converged), or after ``max_iter`` iterations. Every flag is 0 again on
    return. Returns ``(iterations, converged, total)``; ``affected[i]`` is iteration i's list size.
    """
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    n = x.shape[0]
    mean_degree = num_edges / max(n, 1)
    it = 0
    converged = False
    while it < max_iter:
        if nf == 0:
            converged = True
            break
        if nf * _ID_ORDER > n:  # a wide frontier: listed in id order, its rows read in storage order
            k = 0
            for v in range(n):
                if flags[v]:
                    F[k] = v
                    k += 1
        nch = nchunks(nf)
        if nch > 1 and nf * mean_degree >= par_edges:
            _values_par(nch, nf, F, g, in_wt, c, inv, xnew, alpha, selfloop)
        else:
            for k in range(nch):
                _values_chunk(k, nf, F, g, in_wt, c, inv, xnew, alpha, selfloop)
        m = 0.0
        for i in range(nf):
            v = F[i]
            new = xnew[i]
            old = x[v]
            d = abs(new - old)
            top = max(new, old)
            st = 0
            if prune and d <= ptol * top:
                st |= _PRUNE
            if grow and d > ftol * top:
                st |= _SPREAD
            status[i] = st
            if d > m:
                m = d
            total += new - old
            x[v] = new
            c[v] = new * inv[v]
        affected[it] = nf
        it += 1
        if m < tol * total:
            converged = True
            break
        if not (grow or prune):
            continue
        k = 0
        for i in range(nf):
            if status[i] & _PRUNE:
                flags[F[i]] = 0
            else:
                Fnext[k] = F[i]
                k += 1
        for i in range(nf):
            if status[i] & _SPREAD:
                u = F[i]
                for j in range(out_off[u], out_off[u] + out_deg[u]):
                    w = out_idx[j]
                    if flags[w] == 0:
                        flags[w] = 1
                        Fnext[k] = w
                        k += 1
        F, Fnext = Fnext, F
        nf = k
    for i in range(nf):
        flags[F[i]] = 0
    return it, converged, total
