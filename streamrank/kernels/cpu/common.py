"""Shared pieces of the rank kernels: the graph tuple, chunking and the per-vertex formulas.

The graph is passed as the tuple ``g = (in_off, in_deg, in_idx, out_off, out_deg, out_idx)``
(int64 offsets and degrees, int32 neighbour ids) of the store contract: the in-neighbours of
``v`` are ``in_idx[in_off[v] : in_off[v] + in_deg[v]]``. Ranks are float64.

A weighted graph (:class:`streamrank.store.cpu_weighted.WeightedCpuGraph`) runs the same kernels
with its weights passed along: ``wt`` (float64, beside ``in_idx``: ``wt[j]`` is the weight of the
in-edge ``in_idx[j]``) as an optional last argument, the out-weights ``W`` in place of the
out-degrees where a kernel divides by them, and the self-loops' weights in ``loops``. An in-edge
``j`` of ``v`` then adds ``c[u] * wt[j]``, ``c[u] = x[u] / W[u]``. An unweighted call leaves
``wt`` out (``None``): Numba removes a branch on ``wt is not None`` before it types the function,
so the unweighted machine code has no weight load at all.

Local form (docs/architecture.md): ``x[v] = 1 + alpha * sum_{u in in(v)} c[u]`` with
``c[u] = x[u] / d(u)`` (0 for a dangling ``u`` in uniform mode); in self-loop mode
``d(u) = outdeg(u) + 1`` and the own loop is solved in closed form,
``x[v] = (1 + alpha * S) / (1 - alpha / d(v))``. The standard form used by the "warm"
iteration replaces the 1 by ``base``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: Items per parallel work chunk (fixed: partial sums do not depend on the thread count).
CHUNK = 512
#: Steps reading fewer (estimated) edges than this run on the calling thread.
PARALLEL_EDGES = 1 << 15
#: Gauss-Seidel block of the dense passes: vertex positions updated in order by one thread, a
#: multiple of ``CHUNK`` (:mod:`.frontier_gs`). Fixed, so results do not depend on the thread
#: count; passed to the kernels as an argument. 16,384: a graph of 16-32 k vertices (sx-mathoverflow)
#: runs its dense passes as two blocks, on two threads (:mod:`.sweep_order` chooses the second
#: block's vertices so that the iterations grow little).
GS_BLOCK = 1 << 14
#: Gauss-Seidel block of the sparse steps (frontier-list entries), a multiple of ``CHUNK``. A
#: frontier list of a few thousand vertices (the out-neighbours of a hub) then runs on several
#: threads instead of one: on the 16-core host, sx-mathoverflow's batches took 0.81-0.96 of their
#: time with 16,384-entry blocks (medians of four alternating runs), for the same iterations within
#: one per batch (1,024: no faster).
SPARSE_BLOCK = 1 << 11
#: The Jacobi-order lookahead (:func:`lookahead`) reads through in-neighbours of at most this
#: many in-edges (the GPU's ``SR_LOOK_MAX_IN``, kernels/cuda/rank_gather.cuh: the same rule, so both
#: backends take the same iterations).
LOOK_MAX_IN = 32


@njit(cache=True, inline="always")
def nchunks(n):
    return (n + CHUNK - 1) // CHUNK


@njit(cache=True, nogil=True, parallel=True)
def _inverse_degrees_par(out_deg, selfloop, inv):
    for k in prange(nchunks(inv.shape[0])):
        for v in range(k * CHUNK, min(k * CHUNK + CHUNK, inv.shape[0])):
            d = out_deg[v] + 1 if selfloop else out_deg[v]
            inv[v] = 1.0 / d if d > 0 else 0.0


@njit(cache=True, nogil=True)
def inverse_degrees(out_deg, n, selfloop, par):
    """``1 / d(v)`` per vertex (0 for a dangling vertex in uniform mode)."""
    inv = np.empty(n)
    if par:
        _inverse_degrees_par(out_deg, selfloop, inv)
    else:
        for v in range(n):
            d = out_deg[v] + 1 if selfloop else out_deg[v]
            inv[v] = 1.0 / d if d > 0 else 0.0
    return inv


@njit(cache=True, inline="always")
def closed_form(acc, base, alpha, selfloop, out_deg, v):
    """``base + alpha * acc``, divided by ``1 - alpha / d(v)`` in self-loop mode."""
    val = base + alpha * acc
    if selfloop:
        val /= 1.0 - alpha / (out_deg[v] + 1.0)
    return val


@njit(cache=True, inline="always")
def block_size(count, block):
    """The size of the Gauss-Seidel blocks that cut ``count`` entries: as few blocks as blocks of
    at most ``block`` entries need, of equal sizes (rounded up to whole chunks), so that the
    blocks balance over the threads. Depends on ``count`` and ``block`` only."""
    nb = max((count + block - 1) // block, 1)
    per = (count + nb - 1) // nb
    return max((per + CHUNK - 1) // CHUNK * CHUNK, CHUNK)


@njit(cache=True, inline="always")
def solved_value(acc, loop, alpha, selfloop, inv_v):
    """The local-form value of a vertex from ``acc``, its in-sum without its own explicit
    self-loop, with that loop divided out of its equation: ``(1 + alpha * acc) / (1 - alpha *
    loops / d(v))``, ``loops`` = ``loop`` (1.0 where the vertex has an explicit self-loop, the
    workspace's ``loops`` flag, else 0.0) plus the implicit loop in self-loop mode, ``inv_v`` =
    ``1 / d(v)``. Used by the Jacobi and the Gauss-Seidel steps alike. A vertex whose only out-edge
    is its own loop gets its value in one update, where summing the loop shrinks its error by
    ``alpha`` per iteration. Branch-free (about half the vertices of sx-mathoverflow have a loop,
    so a branch mispredicts); without a loop in uniform mode it is bitwise ``1 + alpha * acc``."""
    diagonal = loop + 1.0 if selfloop else loop
    return (1.0 + alpha * acc) / (1.0 - diagonal * alpha * inv_v)


@njit(cache=True, inline="always")
def in_term(c, in_idx, wt, j):
    """In-edge ``j``'s term of a gather: ``c[u]``, times the edge's weight on a weighted graph
    (``wt`` None: removed before typing, the unweighted term)."""
    if wt is not None:
        return c[np.uint64(in_idx[j])] * wt[j]
    return c[np.uint64(in_idx[j])]


@njit(cache=True, inline="always")
def looks_ahead(u, v, out_deg):
    """Whether in-neighbour ``u`` of ``v`` is a lookahead candidate of the Jacobi-order DF/DF-P
    step in uniform mode: ``u`` has one out-edge (to ``v``, so no self-loop and ``c[u] = x[u]``).
    A step sums its other in-neighbours first, then the candidates' :func:`lookahead` values in
    list order (as the GPU's gathers do, so that their plain loads stay in flight together)."""
    return out_deg[u] == 1 and u != v


@njit(cache=True, inline="always")
def lookahead(in_off, in_deg, in_idx, c, u, alpha, wt=None):
    """The value a candidate ``u`` (:func:`looks_ahead`) adds to its out-neighbour's sum: ``u``'s
    own Jacobi update from the previous iterate, ``1 + alpha * sum |c[w]|`` over its in-neighbours
    ``w`` in list order (``|c|``: the dense step's sign bits), or ``|c[u]|`` when ``u`` has more
    than :data:`LOOK_MAX_IN` in-edges.

    Uniform mode's extra iterations against self-loop mode come from error that returns to a
    vertex through an in-neighbour of out-degree 1 (2-8-vertex frontiers that linger for 10-20
    iterations); reading that in-neighbour one step ahead closes such a loop in half the
    iterations. The fixed point is the same (at it, ``u``'s update equals ``x[u]``); the GPU's
    gathers do the same in the same order (``sr::defer_ahead``, kernels/cuda/rank_gather.cuh)."""
    if in_deg[u] > LOOK_MAX_IN:
        return abs(c[u])
    acc = 0.0
    o = np.uint64(in_off[u])
    for j in range(o, o + np.uint64(in_deg[u])):
        if wt is not None:
            acc += abs(c[np.uint64(in_idx[j])]) * wt[j]
        else:
            acc += abs(c[np.uint64(in_idx[j])])
    return 1.0 + alpha * acc


@njit(cache=True, inline="always")
def add_lookaheads(acc, in_off, in_deg, in_idx, out_deg, c, v, alpha, wt=None):
    """``acc`` plus the :func:`lookahead` values of ``v``'s candidates (:func:`looks_ahead`), in
    list order: the second walk of ``v``'s in-edges, after the plain values (the Jacobi steps of
    :mod:`.frontier_sparse` and :mod:`.frontier_dense`). On a weighted graph a candidate's one
    out-edge carries its whole rank too (``W[u] = w(u, v)``); past :data:`LOOK_MAX_IN` in-edges
    its value is ``|c[u]| w(u, v)``."""
    o = np.uint64(in_off[v])
    for j in range(o, o + np.uint64(in_deg[v])):
        u = np.uint64(in_idx[j])
        if looks_ahead(u, v, out_deg):
            if wt is not None:
                acc += abs(c[u]) * wt[j] if in_deg[u] > LOOK_MAX_IN else lookahead(in_off, in_deg, in_idx, c, u,
                                                                                   alpha, wt)
            else:
                acc += lookahead(in_off, in_deg, in_idx, c, u, alpha)
    return acc


@njit(cache=True, nogil=True)
def find_loops(in_off, in_deg, in_idx, n, loops, wt=None):
    """``loops[v] = 1`` where ``v`` is among its own in-neighbours (an explicit self-loop), else 0:
    one pass over the in-edges. With the weights ``wt``: the loop's weight (``loops`` float64)."""
    for v in range(n):
        loops[v] = 0
        for j in range(in_off[v], in_off[v] + in_deg[v]):
            if in_idx[j] == v:
                if wt is not None:
                    loops[v] = wt[j]
                else:
                    loops[v] = 1
                break


@njit(cache=True, nogil=True)
def refresh_loops(in_off, in_deg, in_idx, wt, vertices, loops):
    """``loops[v]`` (the weight of ``v``'s explicit self-loop, 0.0 without one) afresh from the
    store for each ``v`` of ``vertices``: a weighted batch's self-loops, inserted, deleted or
    reweighted."""
    for v in vertices:
        loops[v] = 0.0
        for j in range(in_off[v], in_off[v] + in_deg[v]):
            if in_idx[j] == v:
                loops[v] = wt[j]
                break
