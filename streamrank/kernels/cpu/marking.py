"""Which vertices a batch affects (Numba): the starting frontier of DF / DF-P and DT.

Both kernels take the workspace's ``flags`` (all 0) and list ``F`` (room for every vertex, as
:func:`.frontier.frontier_iterate` needs) and return ``nf``: then ``flags[v] == 1`` exactly
for the ``nf`` vertices listed in ``F[:nf]``, in a deterministic order. Work follows the
batch: the cost is the out-degrees of the vertices visited, nothing per vertex of the graph.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_SCANNED = 2  # flags bit: this source's out-neighbours were marked already


# The marking is written out in every loop below: a helper ``nf = mark(flags, F, nf, v)`` (even
# with ``inline="always"``) made a 51-edge batch's initial frontier on sx-mathoverflow take 0.11 ms
# instead of 0.005 ms (about 20 times slower per edge).


@njit(cache=True, nogil=True)
def _mark_out_neighbours_of(g, flags, F, nf, sources):
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    for s0 in sources:
        s = np.uint64(s0)  # unsigned indices: no wraparound code (frontier_order._dense_block)
        if flags[s] & _SCANNED:
            continue
        flags[s] |= _SCANNED
        o = np.uint64(out_off[s])
        for j in range(o, o + np.uint64(out_deg[s])):
            v = np.uint64(out_idx[j])
            if flags[v] & 1 == 0:
                flags[v] |= 1
                F[nf] = v
                nf += 1
    return nf


@njit(cache=True, nogil=True)
def initial_frontier(g, ins_src, del_src, del_dst, selfloop, flags, F):
    """DF / DF-P: out-neighbours (new graph) of the source of every inserted or deleted edge,
    the target of every deleted edge, and in self-loop mode the sources themselves."""
    nf = _mark_out_neighbours_of(g, flags, F, 0, ins_src)
    nf = _mark_out_neighbours_of(g, flags, F, nf, del_src)
    for t in del_dst:
        if flags[t] & 1 == 0:
            flags[t] |= 1
            F[nf] = t
            nf += 1
    for sources in (ins_src, del_src):
        for s in sources:
            flags[s] &= 1
            if selfloop and flags[s] == 0:
                flags[s] = 1
                F[nf] = s
                nf += 1
    return nf


@njit(cache=True, nogil=True)
def reachable_frontier(g, ins_src, ins_dst, del_src, del_dst, flags, F):
    """DT: every vertex reachable along out-edges (new graph) from the endpoints of changed
    edges, the endpoints included (breadth-first order)."""
    out_off, out_deg, out_idx = g[3], g[4], g[5]
    nf = 0
    for ends in (ins_src, ins_dst, del_src, del_dst):
        for v in ends:
            if flags[v] == 0:
                flags[v] = 1
                F[nf] = v
                nf += 1
    head = 0
    while head < nf:
        v = F[head]
        head += 1
        o = out_off[v]
        for j in range(o, o + out_deg[v]):
            w = out_idx[j]
            if flags[w] == 0:
                flags[w] = 1
                F[nf] = w
                nf += 1
    return nf
