"""The frontier loop of DT, DF and DF-P (Numba): a batch's whole iteration loop in one call.

One iteration (docs/architecture.md): the marked vertices get new values from their
in-neighbours' contributions (Jacobi: reads of the previous iterate only); with pruning, a
vertex whose relative change is at most ``prune_tol`` is unmarked; with growth, the
out-neighbours of a vertex whose relative change exceeds ``frontier_tol`` are marked for the
next iteration. Two representations of the frontier, chosen per iteration by the work they
read (both give the same values, iterations and frontier sizes): a list of the marked vertices
(:mod:`.frontier_sparse`), or per-vertex flags and one fused pass over all vertices
(:mod:`.frontier_dense`), used while the frontier covers a large part of the graph.

The loop works in place on the per-vertex arrays of a
:class:`streamrank.rank.cpu.workspace.FrontierWorkspace`, which live from batch to batch: a
batch that stays sparse touches only its frontier, never every vertex. Between batches the
workspace holds ``x`` and ``c = x * inv`` of every vertex, all flags 0.

Chunks of ``CHUNK`` items run in parallel when a step reads about ``PARALLEL_EDGES`` edges;
per-chunk partials are combined in chunk order and lists are merged in chunk order, so the
result is the same for any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .common import CHUNK, PARALLEL_EDGES, nchunks
from .frontier_dense import dense_par, dense_serial, to_sparse
from .frontier_gs import marked_first, sparse_gs
from .frontier_order import END, dense_pass, enter, leave_settled, leave_to_sparse, spread_out_edges
from .frontier_sparse import SPREAD, commit_range, mark_sparse, rank_range, sparse_par

#: The next iteration runs dense when the kept vertices' in-edges plus the spreaders'
#: out-edges exceed ``DENSE_WEIGHT`` times all edges: a dense pass reads every edge once, a
#: sparse one the frontier's in-edges and the edges its marking needs. (0.2 for the
#: Gauss-Seidel order made one-thread batches on the 2-core host up to 1.4 times faster, but
#: changes the ranks' rounding: a restore of earlier checkpoints, which replays their batch logs,
#: must give the earlier ranks bit for bit, tests/test_checkpoint_compat.py.)
DENSE_WEIGHT = 0.5
#: Rows of the workspace's per-chunk arrays: float partials (max, sum) and integer ones.
PARTS_F, PARTS_I = 2, 9


@njit(cache=True, nogil=True)
def frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, selfloop, tol, ftol, ptol, grow, prune, block,
                     jacobi, max_iter, affected, wt=None, mw=None):
    """Iterate from the marked vertices ``F[:nf]`` (``flags[v] == 1`` exactly for them).

    ``ws`` is the workspace tuple ``(x, c, inv, flags, F, Fnext, xnew, status, last_spread,
    pulled, cnew, keep2, cand, parts_f, parts_i, cprev, owner, loops, mv, cpn, cprevpn)``; the per-vertex arrays have room
    for at least ``n`` vertices, ``parts_*`` for ``nchunks(n)`` chunks; ``mv`` is the sweep-order
    mirror of the Gauss-Seidel dense passes (:mod:`.frontier_order`), which run on ``xnew``,
    ``cnew`` and ``keep2`` in position order. On entry ``x`` is the
    previous iterate, ``c = x * inv`` (``inv``: inverse out-degrees of the mode), ``total =
    sum(x)``; stamps in ``last_spread`` are below ``clock``; with ``gs``, ``cprev == c``,
    ``owner`` holds no code of a stamp from ``clock`` on and ``loops`` flags the vertices with an
    explicit self-loop. On return ``x`` and ``c`` (the same
    arrays) hold the new iterate (and ``cprev`` with ``gs``), every flag is 0 again; the other
    arrays are scratch.

    The update order: ``block`` an int and ``jacobi`` ``None``: Gauss-Seidel, the sparse steps in
    blocks of at most ``block`` entries (:mod:`.frontier_gs`), the dense passes in the store's
    sweep blocks; ``block`` ``None`` and ``jacobi`` ``True``: Jacobi.
    Numba removes a branch on ``arg is not None`` for an argument typed ``None`` before it types
    the function, so each order compiles only its own steps (half the compile time).

    The loop ends when ``max|dx| / sum(x) < tol`` over the processed vertices, when the
    frontier is empty (both: converged), or after ``max_iter`` iterations. Returns
    ``(iterations, converged, total, cand)``: ``total`` the running ``sum(x)``, ``cand`` the
    candidate buffer (grown when needed). ``affected[i]`` is the frontier size of iteration i.

    A weighted graph passes its in-edges' weights ``wt`` and the mirror's ``mw`` (the workspace's
    ``inv`` then holds ``1 / W``, ``loops`` the self-loops' weights: :mod:`.common`); without
    them Numba compiles the weight lines away.

    Call it through :data:`FRONTIER`, whose entries pass ``selfloop``, ``grow``, ``prune`` and the
    order (``block``, ``jacobi``) as constants: each combination then gets its own machine code
    with the other branches removed, which makes an iteration about 1.6 times faster.
    """
    gs = block is not None
    (x, c, inv, flags, F, Fnext, xnew, status, last_spread, pulled, cnew, keep2, cand, parts_f, parts_i, cprev, owner,
     loops, mv, cpn, cprevpn) = ws
    # the Gauss-Seidel dense passes' c and cprevp in position order, and a spare pair: a pass of two
    # blocks leaves its values in the spare pair, which becomes the current one (dense_pass)
    cp0, cpn0, cprevp0, cprevpn0 = cnew, cpn, mv[6], cprevpn
    cp, cprevp = cp0, cprevp0
    x0, c0, flags0 = x, c, flags
    parts = (parts_f[0], parts_f[1], parts_i[0], parts_i[1], parts_i[2], parts_i[3])
    pulled_count, part_count, cand_start, cand_count = parts_i[4], parts_i[5], parts_i[6], parts_i[7]
    # Gauss-Seidel dense passes visit the positions before the store's sweep end only (past it:
    # vertices without edges, which no pass changes); the Jacobi ones every id
    nd = mv[5][END] if gs else n
    nch_max = nchunks(nd)
    big = num_edges + nd >= PARALLEL_EDGES
    mean_degree = num_edges / max(nd, 1)  # of the vertices with edges (Gauss-Seidel: before the sweep end)
    dense = False
    dense_ran = False
    # typed bool, never a literal: a literal False here made Numba compile the Gauss-Seidel dense
    # pass once more, for Literal[bool](False), while it inferred the loop's types (compile time)
    not_sticky = n < 0
    sticky = not_sticky
    swapped = False  # x, c, flags are the spare buffers (an odd number of dense iterations)
    iterations = 0
    converged = False
    for it in range(max_iter):
        stamp = clock + it
        if not dense and nf == 0:
            converged = True
            break
        if dense:
            nch = nch_max
            if block is not None:  # removed before typing in the Jacobi entries (block None)
                # in the sweep order, on the position-space arrays (xnew, cnew, keep2: frontier_order)
                if dense_pass(nd, big, g, mv, cp, cprevp, cpn, cprevpn, xnew, keep2, sticky, alpha, selfloop,
                              ftol, ptol, grow, prune, parts, part_count, mw):
                    cp, cpn = cpn, cp
                    cprevp, cprevpn = cprevpn, cprevp
                sticky = not_sticky
            if jacobi is not None:  # removed before typing in the Gauss-Seidel entries (jacobi None)
                if big:
                    dense_par(nch, n, g, inv, loops, c, x, cnew, xnew, flags, keep2, alpha, selfloop, ftol, ptol, grow, prune,
                              parts, part_count, wt)
                else:
                    dense_serial(nch, n, g, inv, loops, c, x, cnew, xnew, flags, keep2, alpha, selfloop, ftol, ptol, grow,
                                 prune, parts, part_count, wt)
                x, xnew = xnew, x
                c, cnew = cnew, c
                flags, keep2 = keep2, flags
                swapped = not swapped
            dense_ran = True
            count = 0
            for k in range(nch):
                count += part_count[k]
            if count == 0:
                converged = True
                break
        else:
            count = nf
            # threads only where the step reads enough edges to repay a fork and join; a frontier
            # within one Gauss-Seidel block (SPARSE_BLOCK) runs on the calling thread either way
            par = nf > CHUNK and nf * mean_degree >= PARALLEL_EDGES
            nch = nchunks(nf) if par or gs else 1
            if block is not None:
                sparse_gs(nf, block, par, F, g, inv, c, cprev, owner, loops, x, status, flags, last_spread, stamp,
                          alpha, selfloop, ftol, ptol, grow, prune, parts, wt)
            if jacobi is not None:
                if par:
                    sparse_par(nch, nf, F, g, inv, loops, c, x, xnew, status, flags, last_spread, stamp, alpha,
                               selfloop, ftol, ptol, grow, prune, parts, wt)
                else:
                    rank_range(0, nf, 0, F, g, inv, loops, c, x, xnew, status, last_spread, stamp, alpha, selfloop, ftol, ptol,
                               grow, prune, parts, wt)
                    commit_range(0, nf, F, inv, c, x, xnew, status, flags, last_spread, stamp)
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
        if block is not None and dense and grow and keep_in <= DENSE_WEIGHT * num_edges:
            push = spread_out_edges(nd, mv, cp)  # the Gauss-Seidel dense pass leaves push to this
        next_dense = grow and keep_in + push > DENSE_WEIGHT * num_edges
        if next_dense:
            if not dense:  # flags hold the kept vertices; the spreaders' sign bits go into c
                for i in range(nf):
                    if status[i] & SPREAD:
                        v = np.uint64(F[i])
                        c[v] = -c[v]
                        if gs:
                            cprev[v] = c[v]
                sticky = not not_sticky  # Gauss-Seidel: the first pass keeps these sign bits (frontier_gs)
                if block is not None:
                    cp, cpn, cprevp, cprevpn = cp0, cpn0, cprevp0, cprevpn0  # enter fills cp0, cprevp0
                    enter(nd, g, inv, loops, mv, x, c, flags, xnew, cp, keep2, big, wt, mw)
            dense = True
        elif dense:
            if block is not None:
                nf, kept = leave_to_sparse(nd, g, mv, xnew, cp, keep2, x, c, cprev, flags, last_spread, stamp, F,
                                           Fnext, pulled, big)
                marked_first(F, Fnext, kept, nf)
            if jacobi is not None:
                nf, kept = to_sparse(n, g, flags, c, cprev, gs, last_spread, stamp, F)
            dense = False
        else:
            m, kept, cand = mark_sparse(nf, F, Fnext, g, status, flags, last_spread, stamp, par, nch, parts, cand,
                                        cand_start, cand_count, pulled, pulled_count)
            F, Fnext = Fnext, F
            nf = m
            if gs:
                marked_first(F, Fnext, kept, nf)
    if block is not None and dense:  # the positions before the sweep end back in id order, unsigned, flags 0
        leave_settled(nd, mv, xnew, cp, x, c, cprev, flags, big)
    else:
        # O(n) only when a Jacobi loop ran a dense iteration (its buffers swapped); a Gauss-Seidel
        # loop that left its dense passes has x, c and cprev current and unsigned already
        # (leave_to_sparse) and flags only on F[:nf]
        _settle(n, x, c, flags, F, nf, x0, c0, flags0, cprev, gs, dense_ran and not gs)
    return iterations, converged, total, cand


@njit(cache=True, nogil=True)
def _settle(n, x, c, flags, F, nf, x0, c0, flags0, cprev, gs, dense):
    """Leave the workspace as the next batch expects it: the iterate in ``x0`` and ``c0``
    (without sign bits; with ``gs`` also in ``cprev``), every flag in ``flags0`` 0. With
    ``dense`` False (a batch that never went dense, or a Gauss-Seidel one whose last iteration
    was sparse) it clears only the last frontier's flags; else it has read every edge, and pays
    O(n) here."""
    if not dense:
        for i in range(nf):
            flags[np.uint64(F[i])] = 0
        return
    for v in range(n):
        x0[v] = x[v]
        c0[v] = abs(c[v])
        flags0[v] = 0
        if gs:
            cprev[v] = c0[v]


# One entry point per (algorithm, self-loop mode, update order): the constants reach every
# kernel below as compile-time literals (Numba specializes a call on literal arguments). Only
# the entries used are compiled.

@njit(cache=True, nogil=True)
def _dt_uniform_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, False, False,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dt_uniform_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, False, False,
                            block, None, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dt_selfloop_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, False, False,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dt_selfloop_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, False, False,
                            block, None, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _df_uniform_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, True, False,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _df_uniform_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, True, False,
                            block, None, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _df_selfloop_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, True, False,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _df_selfloop_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, True, False,
                            block, None, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dfp_uniform_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, True, True,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dfp_uniform_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, False, tol, ftol, ptol, True, True,
                            block, None, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dfp_selfloop_jacobi(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, True, True,
                            None, True, max_iter, affected, wt, mw)


@njit(cache=True, nogil=True)
def _dfp_selfloop_gs(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol, ptol, block, max_iter, affected, wt=None, mw=None):
    return frontier_iterate(g, num_edges, n, ws, nf, total, clock, alpha, True, tol, ftol, ptol, True, True,
                            block, None, max_iter, affected, wt, mw)


#: ``(algorithm, selfloop, gauss_seidel) -> kernel(g, num_edges, n, ws, nf, total, clock, alpha, tol, ftol,
#: ptol, block, max_iter, affected[, wt, mw]) -> (iterations, converged, total, cand)`` (``wt``, ``mw``:
#: a weighted graph's in-edge and mirror weights)
FRONTIER = {("dt", False, False): _dt_uniform_jacobi,
            ("dt", False, True): _dt_uniform_gs,
            ("dt", True, False): _dt_selfloop_jacobi,
            ("dt", True, True): _dt_selfloop_gs,
            ("df", False, False): _df_uniform_jacobi,
            ("df", False, True): _df_uniform_gs,
            ("df", True, False): _df_selfloop_jacobi,
            ("df", True, True): _df_selfloop_gs,
            ("dfp", False, False): _dfp_uniform_jacobi,
            ("dfp", False, True): _dfp_uniform_gs,
            ("dfp", True, False): _dfp_selfloop_jacobi,
            ("dfp", True, True): _dfp_selfloop_gs}
