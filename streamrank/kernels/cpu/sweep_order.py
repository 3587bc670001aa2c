"""The sweep order of the Gauss-Seidel dense passes (Numba): which vertex a pass visits when.

The dense pass (:mod:`.frontier_order`) visits the vertices by descending in-degree, capped at
``ORDER_BUCKETS - 1``, ties by id: runs of equal trip counts, which the branch predictor learns.
It cuts the positions into as many blocks as blocks of at most ``block`` vertices need, of equal
*work* (:func:`work`: a vertex costs about as much as :data:`VERTEX_WORK` in-edges), at whole
chunks; one thread runs a block, and a vertex reads the other blocks' values as they were when
the pass began. (Blocks of equal vertex counts put most in-edges into the first block, the one
with the high in-degrees: on sx-mathoverflow 191 k of 218 k, and the second thread waited about
a third of every pass.) Within one block that is plain sequential Gauss-Seidel, where a vertex
reads fresh values from the positions before it. A second block makes the edges from the first
block into it stale: a cycle through both blocks then takes two passes per round trip instead of
one (a 2-cycle converges at ``alpha`` per pass instead of ``alpha**2``), and the iterations grow
(sx-mathoverflow: 20 instead of 17 per batch with two blocks cut from the plain order).

So when the vertices fill more than one block, the *last* block gets the vertices whose stale
reads cost least, up to its share of the work, in this rank: the vertices without out-edges to
other vertices (*sinks*: no cycle passes through them, a stale read only delays them by one
pass), then those without in-edges from other vertices (they read nothing that changes), then
the fewest in-edges from other vertices first; ties by id. Within the last block the sinks go
last (they then read the block's fresh values); every block is in the plain order otherwise.
On sx-mathoverflow (two blocks of equal vertex counts) this took 17 iterations per batch
(median) instead of 20; with blocks of equal work the first block holds 8.7 k of the 22 k
vertices and 186 k of the 218 k in-edges, the last 13.4 k and 32 k, and the iterations are 19
(1.93-2.01 ms per batch against 2.03-2.10). A graph within one
block keeps the plain order.

Vertices without any edge (*isolated*: the ids a graph creates up front, the published
protocol's padding) go after all others, in id order, outside every block: no batch reaches them
until it gives them an edge, so the dense passes stop at the end of the others
(:attr:`streamrank.store.cpu.CpuGraph.sweep_end`) and a padded graph costs what its edges cost,
not what its ids do. A batch that gives such a vertex an edge moves it to the end
(:func:`admit_live`). The blocks are cut over the other vertices only.

The order and the block starts are a function of the degrees, the self-loop flags and ``block``
only (never of the thread count); the store computes them at each layout
(:meth:`streamrank.store.cpu.CpuGraph.sweep_order`, :attr:`~streamrank.store.cpu.CpuGraph.sweep_blocks`)
and, when a batch adds vertices that change the block count, cuts the kept order afresh
(:func:`recut`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .common import CHUNK

#: In-degrees from ``ORDER_BUCKETS - 1`` on share the sweep order's first bucket (long loops
#: mispredict their exit once per many edges).
ORDER_BUCKETS = 64


#: The work of a vertex in a dense pass, in in-edges: the per-vertex part of the pass (the closed
#: form's division, the flags, the partials) against the gather of one in-edge. sx-mathoverflow's
#: two blocks cut at equal vertex counts (block 0: 11,264 vertices and 190 k in-edges, 150-165 us
#: per pass; block 1: 10,828 and 28 k, 80-105 us) fit about 7.5 ns per vertex and 0.4 per in-edge
#: (20 in-edges); the replay measured 20, 30, 40, 60 and 80: 30-40 fastest (the cut also moves
#: vertices into the last block, whose stale reads add iterations: 19 per batch instead of 17),
#: 80 and 20 slower.
VERTEX_WORK = 40


@njit(cache=True, inline="always")
def work(d):
    """The work of a vertex of in-degree ``d`` in a dense pass (:data:`VERTEX_WORK`)."""
    return VERTEX_WORK + d


@njit(cache=True, nogil=True)
def block_count(n, block):
    """The blocks of ``n`` vertices: as many as blocks of at most ``block`` vertices need (``block``
    a multiple of ``CHUNK``), at most one per chunk, so that every block but the last can hold
    whole chunks and the last at least one vertex."""
    return min(max((n + block - 1) // block, 1), max((n + CHUNK - 1) // CHUNK, 1))


@njit(cache=True, inline="always")
def _bucket(d):
    return ORDER_BUCKETS - 1 - min(d, ORDER_BUCKETS - 1)  # descending in-degree


@njit(cache=True, nogil=True)
def sweep_order(in_deg, out_deg, loops, n, block, order, pos):
    """The sweep order of ``n`` vertices into ``order`` (position -> id) and ``pos`` (its inverse)
    and the starts of its blocks (returned: int64, ``starts[0] == 0``, whole chunks): descending
    in-degree, capped at ``ORDER_BUCKETS - 1``, ties by id; when the vertices with edges exceed
    ``block``, as many blocks as blocks of at most ``block`` of them need, cut at equal work
    (:func:`work`), the last block's vertices chosen as the module docstring says; the isolated
    vertices last, by id (:func:`live_count` of them precede). ``loops[v]`` is 1 where ``v`` has
    an explicit self-loop."""
    nl = live_count(in_deg, out_deg, n)
    nb = block_count(nl, block)
    starts = np.zeros(nb, dtype=np.int64)
    # 0: the blocks before the last, 1: last block, 2: its sinks, 3: the isolated (after every block)
    group = np.zeros(n, dtype=np.int64)
    for v in range(n):
        if in_deg[v] == 0 and out_deg[v] == 0:
            group[v] = 3
    if nb > 1:
        total = 0
        for v in range(n):
            if group[v] != 3:
                total += work(in_deg[v])
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
            if group[v] != 3:
                count[key[v] + 1] += 1
        for k in range(top + 1):
            count[k + 1] += count[k]
        ranked = np.empty(nl, dtype=np.int64)  # the vertices with edges by key, ties by id
        for v in range(n):
            if group[v] != 3:
                ranked[count[key[v]]] = v
                count[key[v]] += 1
        # the last block: the ranked vertices up to its share of the work, whole chunks
        share = total // nb
        acc = 0
        tail = 0
        while tail < nl and acc < share:
            acc += work(in_deg[ranked[tail]])
            tail += 1
        last = (nl - tail) // CHUNK * CHUNK
        last = max(last, (nb - 1) * CHUNK)
        for i in range(nl - last):
            v = ranked[i]
            group[v] = 2 if key[v] == 0 else 1
        starts[nb - 1] = last
    start = np.zeros(4 * ORDER_BUCKETS + 1, dtype=np.int64)
    for v in range(n):
        start[group[v] * ORDER_BUCKETS + _bucket(in_deg[v]) + 1] += 1
    for b in range(4 * ORDER_BUCKETS):
        start[b + 1] += start[b]
    for v in range(n):
        b = group[v] * ORDER_BUCKETS + _bucket(in_deg[v])
        p = start[b]
        start[b] = p + 1
        order[p] = v
        pos[v] = p
    if nb > 2:
        cut_blocks(in_deg, order, starts[nb - 1], starts[: nb - 1])
    return starts


@njit(cache=True, nogil=True)
def live_count(in_deg, out_deg, n):
    """The vertices among the first ``n`` with an edge (in or out)."""
    nl = 0
    for v in range(n):
        if in_deg[v] != 0 or out_deg[v] != 0:
            nl += 1
    return nl


@njit(cache=True, nogil=True)
def admit_live(order, pos, end, ins_src, ins_dst):
    """After a batch: the endpoints of inserted edges at or past the sweep end ``end`` move, in
    the order of their positions (new vertices: of their ids), to positions ``end, end + 1, ...``,
    each swapped with the vertex there (past the end: one without edges); returns the new end.
    Both swapped vertices had no edges before the batch, so the position-space mirror of the
    frontier loop (:mod:`.frontier_order`) holds the same empty row and per-vertex values at both
    positions: its own upkeep of the batch's endpoints keeps it exact."""
    m = 0
    for ends in (ins_src, ins_dst):
        for v in ends:
            if pos[v] >= end:
                m += 1
    if m == 0:
        return end
    past = np.empty(m, dtype=np.int64)
    m = 0
    for ends in (ins_src, ins_dst):
        for v in ends:
            if pos[v] >= end:
                past[m] = pos[v]
                m += 1
    past.sort()
    last = -1
    for i in range(m):
        p = past[i]
        if p == last:  # an endpoint of several edges
            continue
        last = p
        v = order[p]
        w = order[end]  # no edges (or v itself): the earlier moves left their vertices before it
        order[p] = w
        pos[w] = p
        order[end] = v
        pos[v] = end
        end += 1
    return end


@njit(cache=True, nogil=True)
def live_end(in_deg, out_deg, order, n):
    """One past the last position of ``order[:n]`` that holds a vertex with an edge (0: none)."""
    for p in range(n - 1, -1, -1):
        v = order[p]
        if in_deg[v] != 0 or out_deg[v] != 0:
            return p + 1
    return 0


@njit(cache=True, nogil=True)
def cut_blocks(in_deg, order, end, starts):
    """Cut the positions ``[0, end)`` of ``order`` into ``starts.shape[0]`` blocks of equal work
    (:func:`work`) at whole chunks: ``starts[b]`` the first position of block ``b`` (``starts[0]
    == 0``), the first chunk boundary where the work before it reaches ``b / nb`` of the total;
    every block at least one chunk (``end`` must leave room: ``(nb - 1) * CHUNK < end``)."""
    nb = starts.shape[0]
    starts[0] = 0
    total = 0
    for p in range(end):
        total += work(in_deg[order[p]])
    acc = 0
    b = 1
    for p in range(end):
        if (b < nb and p % CHUNK == 0 and p >= starts[b - 1] + CHUNK
                and p <= end - 1 - (nb - 1 - b) * CHUNK and acc * nb >= total * b):
            starts[b] = p
            b += 1
        acc += work(in_deg[order[p]])
    while b < nb:  # the work asked for a later start than room allows: one chunk each
        starts[b] = starts[b - 1] + CHUNK
        b += 1


@njit(cache=True, nogil=True)
def recut(in_deg, order, n, block):
    """The block starts of the first ``n`` positions of the sweep order ``order`` kept from an
    earlier layout (vertices added since at the end; ``n``: the store's sweep end): as many blocks
    as blocks of at most ``block`` vertices need, equal work (:func:`cut_blocks`), the order
    unchanged."""
    starts = np.zeros(block_count(n, block), dtype=np.int64)
    cut_blocks(in_deg, order, n, starts)
    return starts
