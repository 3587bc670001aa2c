"""The CPU frontier loop's workspace: per-vertex arrays kept from one batch to the next.

DT, DF and DF-P touch a few thousand vertices per batch on a graph of any size. Allocating,
filling and summing whole-graph arrays per batch (flags, the frontier lists, the iterate and
the contributions ``c = x / outdeg``) would cost O(|V|) per batch, more than the frontier's
work on a large graph. A :class:`FrontierWorkspace` keeps them between batches instead, grown
(doubling) only when the graph grows, and kept current by the batch's own changes
(:mod:`.cpu_kernels.workspace`): the vertices a batch adds and the sources whose out-degree it
changed. The frontier loop (:mod:`.cpu_kernels.frontier`) works on these arrays in place and
leaves them as the next batch expects (every flag 0, ``c`` matching ``x``).

A weighted graph (:class:`streamrank.store.cpu_weighted.WeightedCpuGraph`) runs in a workspace
made with ``weighted=True``: ``inv`` holds ``1 / W`` (the out-weights), ``loops`` (and the
mirror's ``loopsp``) the self-loops' weights, and the mirror keeps its rows' weights (``m_wt``).
A reweighted edge counts as an insertion: its source's out-weight and its target's in-row changed.

The workspace continues from its own previous result only: when the vector handed in is not
the one it returned last for this graph, or the graph changed in between by more than the
batch at hand, or the dangling mode differs, it loads everything afresh (one O(|V|) pass).
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from ...store.changes import AppliedChanges
from .threads import ThreadChooser
from ...kernels.cpu import workspace as upkeep
from ...kernels.cpu.common import find_loops, nchunks, refresh_loops
from ...kernels.cpu.frontier import PARTS_F, PARTS_I
from ...kernels.cpu import frontier_order as mirror
from ...kernels.cpu import mirror_upkeep

#: The running ``sum(x)`` is replaced by an exact sum every this many batches (it drifts by
#: rounding: one addition per iteration).
RESYNC_BATCHES = 256
#: ``last_spread`` stamps are int32: the clock restarts (with every stamp reset) past this.
CLOCK_LIMIT = 1 << 30


class FrontierWorkspace:
    """Per-vertex state of the CPU frontier loop (DT, DF, DF-P), reused across batches.

    Use one per engine (:class:`streamrank.engine.Engine` does): pass it to
    :func:`streamrank.rank.cpu.pagerank.update_pagerank`. The ``x`` of the results it produces is a
    view of its own iterate, advanced in place by the next batch it runs.

    Parameters
    ----------
    weighted : bool, default False
        Whether it serves a weighted graph store (one with ``weighted = True``); an unweighted
        workspace holds no weight array.
    """

    def __init__(self, weighted: bool = False):
        if not isinstance(weighted, bool):
            raise InvalidArgumentError(f"weighted must be a bool, got {type(weighted).__name__}")
        self.weighted = weighted
        self.cap = 0
        self.n = 0
        self.total = 0.0
        self.clock = 0
        self._graph = None
        self._version = -1
        self._selfloop = None
        self._gs = None
        self._x_view = None
        self._batches = 0
        self._order, self._pos = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32)
        self._starts = np.zeros(1, dtype=np.int64)  # the store's block starts (sweep_blocks)
        self._order_version = -1
        self.threads = ThreadChooser()  # one thread or all, per batch (a busy machine)
        self.cand = np.empty(0, dtype=np.int32)
        self._allocate(0)

    # ------------------------------------------------------------------ arrays
    def _allocate(self, cap: int):
        """Fresh arrays for ``cap`` vertices (flags 0, no stamps)."""
        self.x, self.c, self.inv = np.empty(cap), np.empty(cap), np.empty(cap)
        self.cprev = np.empty(cap)  # c as the iteration began (Gauss-Seidel: read across blocks)
        self.owner = np.full(cap, -1, dtype=np.int64)  # Gauss-Seidel: block codes
        # explicit self-loops (divided out of their vertex's equation): flags, or weights when weighted
        loop_type = np.float64 if self.weighted else np.uint8
        self.loops = np.zeros(cap, dtype=loop_type)
        self.xnew, self.cnew = np.empty(cap), np.empty(cap)
        self.flags = np.zeros(cap, dtype=np.uint8)
        self.keep2 = np.zeros(cap, dtype=np.uint8)
        self.status = np.zeros(cap, dtype=np.uint8)
        self.F = np.empty(cap, dtype=np.int32)
        self.Fnext = np.empty(cap, dtype=np.int32)
        self.pulled = np.empty(cap, dtype=np.int32)
        self.last_spread = np.full(cap, -2, dtype=np.int32)
        chunks = max(nchunks(cap), 1)
        self.parts_f = np.zeros((PARTS_F, chunks))
        self.parts_i = np.zeros((PARTS_I, chunks), dtype=np.int64)
        # the sweep-order mirror of the Gauss-Seidel dense passes (kernels.cpu.frontier_order),
        # invalid until the first dense pass builds it
        self.m_off, self.m_end = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
        self.m_idx = np.empty(0, dtype=np.int32)
        self.m_wt = np.empty(0) if self.weighted else None  # the rows' weights beside m_idx
        self.mstate = np.array([-1, 0, 0, 0], dtype=np.int64)  # mirror.BUILT, USED, LIVE, END
        self.cprevp, self.invp = np.empty(cap), np.empty(cap)
        self.cpn, self.cprevpn = np.empty(cap), np.empty(cap)  # the dense passes' spare pair (frontier_order.dense_pass)
        self.loopsp = np.empty(cap, dtype=loop_type)
        self.outdp = np.empty(cap, dtype=np.int64)
        self.cap = cap

    def _grow(self, n: int):
        """Room for ``n`` vertices (capacity doubles), keeping the state of the first ``self.n``."""
        if n <= self.cap:
            return
        names = ("x", "c", "cprev", "inv", "last_spread", "owner", "loops")
        kept = [getattr(self, name) for name in names]
        self._allocate(max(n, 2 * self.cap, 1024))
        m = self.n
        for new, old in zip((getattr(self, name) for name in names), kept):
            new[:m] = old[:m]

    # ------------------------------------------------------------------ one batch
    def begin(self, graph, changes: AppliedChanges, x_prev, selfloop: bool, gauss_seidel: bool):
        """Make ``x``, ``c``, ``cprev``, ``inv`` current for ``graph`` (after ``changes``) from
        ``x_prev``, the iterate before the batch (not modified unless it is this workspace's own).
        ``gauss_seidel``: the update order of the batch (the Jacobi loop does not keep ``cprev``,
        so a change of order reloads)."""
        weighted = bool(getattr(graph, "weighted", False))
        if weighted != self.weighted:
            raise InvalidArgumentError(f"this workspace is for {'weighted' if self.weighted else 'unweighted'} graphs, "
                                       f"the graph is {'weighted' if weighted else 'unweighted'}")
        n = graph.num_vertices
        n_before = changes.num_vertices_before
        wt = graph.in_weights if weighted else None
        denominators = graph.out_weight if weighted else graph.out_degree
        continues = (x_prev is self._x_view and graph is self._graph and selfloop == self._selfloop
                     and gauss_seidel == self._gs and self.n == n_before and changes.num_vertices_after == n
                     and graph.version == self._version + (not changes.empty))
        self._order, self._pos = graph.sweep_order  # the store's (kernels index them by id and position)
        self._starts = graph.sweep_blocks
        if not continues:
            self.n = 0
            self._grow(n)
            self.flags[:n] = 0
            self.total = upkeep.load(np.ascontiguousarray(x_prev, dtype=np.float64), n, denominators,
                                     selfloop, self.x, self.c, self.cprev, self.inv)
            find_loops(graph.in_offset, graph.in_degree, graph.kernel_arrays()[2], n, self.loops, wt)
            self._graph, self._selfloop, self._gs, self._batches = graph, selfloop, gauss_seidel, 0
            self.mstate[mirror.BUILT] = -1
        else:
            self._grow(n)
            if graph.order_version != self._order_version:  # the store laid itself out afresh
                self.mstate[mirror.BUILT] = -1
            ins_src, ins_dst, del_src, del_dst = changed_edges(changes)
            self.total += upkeep.admit(n_before, n, denominators, selfloop, ins_src, del_src,
                                       self.x, self.c, self.cprev, self.inv)
            if weighted:  # the loops' weights afresh where the batch touched a loop, and at new vertices
                self.loops[n_before:n] = 0.0
                ends = np.concatenate([ins_src[ins_src == ins_dst], del_src[del_src == del_dst]])
                refresh_loops(graph.in_offset, graph.in_degree, graph.kernel_arrays()[2], wt, ends, self.loops)
            else:
                upkeep.admit_loops(n_before, n, ins_src, ins_dst, del_src, del_dst, self.loops)
            if self.mstate[mirror.BUILT] >= 0:  # keep the mirror exact (else the next dense pass builds it)
                mirror_upkeep.admit(n_before, n, graph.kernel_arrays(), self.inv, self.loops, ins_src, ins_dst,
                                    del_src, del_dst, self.mirror(), wt, self.m_wt)
        self._order_version = graph.order_version
        self.mstate[mirror.END] = graph.sweep_end  # where the dense passes stop
        if self.m_idx.shape[0] < graph.num_edges:  # room for the mirror's rows (rebuilt when it runs out)
            self.m_idx = np.empty(mirror.ROOM * graph.num_edges + 1024, dtype=np.int32)
            if weighted:
                self.m_wt = np.empty(self.m_idx.shape[0])
            self.mstate[mirror.BUILT] = -1
        self.n = n

    def arrays(self) -> tuple:
        """The tuple the frontier loop takes (:func:`.cpu_kernels.frontier.frontier_iterate`)."""
        return (self.x, self.c, self.inv, self.flags, self.F, self.Fnext, self.xnew, self.status, self.last_spread,
                self.pulled, self.cnew, self.keep2, self.cand, self.parts_f, self.parts_i, self.cprev, self.owner,
                self.loops, self.mirror(), self.cpn, self.cprevpn)

    def weights(self, graph) -> tuple:
        """The weight arguments of the frontier loop for ``graph``: ``(in-edge weights, the
        mirror's weights)`` of a weighted workspace, ``()`` of an unweighted one (the kernels'
        unweighted version)."""
        return (graph.in_weights, self.m_wt) if self.weighted else ()

    def mirror(self) -> tuple:
        """The sweep-order mirror's arrays (:mod:`.cpu_kernels.frontier_order`)."""
        return (self._order, self._pos, self.m_off, self.m_end, self.m_idx, self.mstate, self.cprevp, self.invp,
                self.loopsp, self.outdp, self._starts)

    def finish(self, graph, iterations: int, total: float, cand):
        """Record the loop's outcome; returns the iterate (a view of the workspace's ``x``)."""
        self.cand = cand
        self.total = total
        self._batches += 1
        if self._batches % RESYNC_BATCHES == 0:
            self.total = float(self.x[: self.n].sum())
        self.clock += int(iterations) + 2
        if self.clock > CLOCK_LIMIT:
            self.last_spread.fill(-2)
            self.owner.fill(-1)  # Gauss-Seidel block codes are built from the stamps
            self.clock = 0
        self._version = graph.version
        self._x_view = self.x[: self.n]
        return self._x_view


def changed_edges(changes: AppliedChanges) -> tuple:
    """``(ins_src, ins_dst, del_src, del_dst)`` of a batch as int64 arrays, a weighted batch's
    reweighted edges among the insertions (their source's out-weight changed, so every
    contribution it sends, and their target's in-row)."""
    ins_src, ins_dst = changes.ins_src, changes.ins_dst
    if changes.reweighted_src is not None and len(changes.reweighted_src):
        ins_src = np.concatenate([np.asarray(ins_src, dtype=np.int64), np.asarray(changes.reweighted_src, dtype=np.int64)])
        ins_dst = np.concatenate([np.asarray(ins_dst, dtype=np.int64), np.asarray(changes.reweighted_dst, dtype=np.int64)])
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (ins_src, ins_dst, changes.del_src, changes.del_dst))
