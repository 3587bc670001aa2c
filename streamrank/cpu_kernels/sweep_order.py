"""The sweep order of the Gauss-Seidel dense passes (Numba): which vertex a pass visits when.

The dense pass (:mod:`.frontier_order`) visits the vertices by descending in-degree, capped at
``ORDER_BUCKETS - 1``, ties by id: runs of equal trip counts, which the branch predictor learns.
It cuts the positions into blocks of ``block_size(n, block)``; one thread runs a block, and a
vertex reads the other blocks' values as they were when the pass began. Within one block that is
plain sequential Gauss-Seidel, where a vertex reads fresh values from the positions before it.
A second block makes the edges from the first block into it stale: a cycle through both blocks
then takes two passes per round trip instead of one (a 2-cycle converges at ``alpha`` per pass
instead of ``alpha**2``), and the iterations grow (sx-mathoverflow: 20 instead of 17 per batch
with two blocks cut from the plain order).

So when the vertices fill more than one block, the *last* block gets the vertices whose stale
reads cost least, in this rank: the vertices without out-edges to other vertices (*sinks*: no
cycle passes through them, a stale read only delays them by one pass), then those without
in-edges from other vertices (they read nothing that changes), then the fewest in-edges from
other vertices first; ties by id. Within the last block the sinks go last (they then read the
block's fresh values); every block is in the plain order otherwise. On sx-mathoverflow (two
blocks) this takes 17 iterations per batch (median) instead of 20. A graph within one block
keeps the plain order.

The order is a function of the degrees, the self-loop flags and ``block`` only (never of the
thread count); the store computes it at each layout (:meth:`streamrank.graph.CpuGraph.sweep_order`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .common import block_size

#: In-degrees from ``ORDER_BUCKETS - 1`` on share the sweep order's first bucket (long loops
#: mispredict their exit once per many edges).
ORDER_BUCKETS = 64


@njit(cache=True, inline="always")
def _bucket(d):
    return ORDER_BUCKETS - 1 - min(d, ORDER_BUCKETS - 1)  # descending in-degree


@njit(cache=True)
def sweep_order(in_deg, out_deg, loops, n, block, order, pos):
    """The sweep order of ``n`` vertices into ``order`` (position -> id) and ``pos`` (its inverse):
    descending in-degree, capped at ``ORDER_BUCKETS - 1``, ties by id; when ``n`` exceeds one
    block of ``block_size(n, block)``, the last block's vertices chosen as the module docstring
    says. ``loops[v]`` is 1 where ``v`` has an explicit self-loop."""
    bs = block_size(n, block)
    nb = max((n + bs - 1) // bs, 1)
    group = np.zeros(n, dtype=np.int64)  # 0: the blocks before the last, 1: last block, 2: its sinks
    if nb > 1:
        tail = n - bs * (nb - 1)
        # rank key: 0 sink, 1 source, 2 + in-edges from others
        key = np.empty(n, dtype=np.int64)
        top = 2
        for v in range(n):
            own = np.int64(loops[v])
            if out_deg[v] - own == 0:
                k = 0
            elif in_deg[v] - own == 0:
                k = 1
            else:
                k = 2 + in_deg[v] - own
            key[v] = k
            top = max(top, k)
        count = np.zeros(top + 2, dtype=np.int64)
        for v in range(n):
            count[key[v] + 1] += 1
        cut = 0  # keys below cut go to the last block whole; then the lowest ids of key cut
        while count[cut + 1] < tail:
            tail -= count[cut + 1]
            cut += 1
        for v in range(n):
            k = key[v]
            if k < cut or (k == cut and tail > 0):
                if k == cut:
                    tail -= 1
                group[v] = 2 if k == 0 else 1
    start = np.zeros(3 * ORDER_BUCKETS + 1, dtype=np.int64)
    for v in range(n):
        start[group[v] * ORDER_BUCKETS + _bucket(in_deg[v]) + 1] += 1
    for b in range(3 * ORDER_BUCKETS):
        start[b + 1] += start[b]
    for v in range(n):
        b = group[v] * ORDER_BUCKETS + _bucket(in_deg[v])
        p = start[b]
        start[b] = p + 1
        order[p] = v
        pos[v] = p
