"""The weighted graph store on the CPU: :class:`~streamrank.store.cpu.CpuGraph` with a weight per edge.

Each direction's gapped CSR gets a float64 array ``wt`` beside its neighbour ids ``idx`` (slot
for slot: the weight of the edge stored in ``idx[j]`` is ``wt[j]``), so the in-direction's pull
reads its weights where it reads its neighbours, and each vertex keeps its out-weight ``W[v]``
(the sum of its out-edges' weights, summed afresh in list order for every vertex a batch
touches, so that it never drifts). Only the engine's ``weighted=True`` creates this store; the
unweighted store has no weight array and runs its own code unchanged.

A batch is folded per pair in arrival order (:func:`streamrank.kernels.cpu.weighted_csr.fold_pairs`,
``set`` or ``sum``, docs/api.md) from the pair's stored weight. Then a pair absent before and
present after is an insertion, present before and absent after a deletion, present both times
with another weight a *reweight* (:attr:`AppliedChanges.reweighted_src`), which the rank update
treats like an insertion at its source: the source's out-weight, so every contribution it
sends, changed.
"""

from __future__ import annotations

import numpy as np

from ..batch import EdgeBatch, check_weights
from ..config import MULTI_EDGES
from ..errors import InvalidArgumentError
from ..ids.cpu import IdMap
from ..ids.plan import IdPlan
from ..kernels.cpu import batch_plan
from ..kernels.cpu import gapped_csr as csr
from ..kernels.cpu import weighted_csr as wcsr
from ..kernels.cpu import weighted_plan
from .changes import AppliedChanges
from .cpu import MAX_VERTICES, SLACK_ADD, SLACK_NUM, CpuGraph, _Side
from .memory import check_fits


class _WeightedSide(_Side):
    """One direction's gapped CSR with a weight per slot (``wt`` beside ``idx``)."""

    SLOT_BYTES = 12

    def __init__(self, vcap: int):
        super().__init__(vcap)
        self.wt = np.zeros(1)

    def lay_out(self, n, own, nbr, w):
        """Replace the contents with the edges ``own -> nbr`` of weights ``w`` (sorted by (own, nbr))."""
        self.off, self.deg, self.cap, self.idx, self.wt, self.end = wcsr.layout_sorted(
            n, self.off.shape[0], own, nbr, w, SLACK_NUM, SLACK_ADD)
        self.garbage = 0

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self.wt.nbytes)

    def update(self, n, plan, d_own, d_nbr, i_own, i_nbr, i_wt):
        """Apply sorted deletions and weighted insertions as planned by :meth:`plan_update`."""
        if plan.compact:
            self.off, self.cap, self.idx, self.wt, self.end = wcsr.compact(n, self.off, self.deg, self.idx, self.wt,
                                                                           SLACK_NUM, SLACK_ADD)
            self.garbage = 0
        length = plan.grow_to
        if plan.compact:
            need = csr.room_needed(self.cap, plan.touched, plan.new_deg)
            if self.end + need > (length or self.idx.shape[0]):
                length = max(length or 0, 2 * self.idx.shape[0], self.end + need)
        if length is not None and length != self.idx.shape[0]:
            idx = np.empty(length, dtype=np.int32)
            idx[: self.end] = self.idx[: self.end]
            wt = np.empty(length)
            wt[: self.end] = self.wt[: self.end]
            self.idx, self.wt = idx, wt
        self.end, garbage = wcsr.update(self.off, self.deg, self.cap, self.idx, self.wt, self.end, plan.touched,
                                        plan.new_deg, d_own, d_nbr, i_own, i_nbr, i_wt)
        self.garbage += garbage

    def weights_of(self, own, nbr):
        """Stored weights of ``own[i] -> nbr[i]`` (internal ids, -1 allowed), NaN where absent."""
        return wcsr.edge_weights(self.off, self.deg, self.idx, self.wt, own, nbr)


def _sorted(own, nbr, w):
    """``(own, nbr, w)`` sorted by (own, nbr)."""
    order = np.lexsort((nbr, own))
    return own[order], nbr[order], w[order]


def _empty():
    return np.zeros(0, dtype=np.int64)


class WeightedCpuGraph(CpuGraph):
    """Dynamic directed graph with a positive weight per edge (self-loops allowed) on the host.

    Parameters
    ----------
    multi_edges : {"set", "sum"}
        How a repeated pair combines (docs/api.md): ``"set"`` replaces the weight, ``"sum"``
        adds insertions' weights and subtracts deletions' (a deletion without a weight removes
        the edge).
    max_bytes : int, optional
        As for :class:`~streamrank.store.cpu.CpuGraph`.

    Notes
    -----
    A batch without weights means weight 1 for its insertions and whole-edge removal for its
    deletions.
    """

    weighted = True

    def __init__(self, *, multi_edges: str = "set", max_bytes: int | None = None):
        if multi_edges not in MULTI_EDGES:
            raise InvalidArgumentError(f"multi_edges must be one of {MULTI_EDGES}, got {multi_edges!r}")
        super().__init__(max_bytes=max_bytes)
        self.multi_edges = multi_edges
        self._out = _WeightedSide(0)
        self._in = _WeightedSide(0)
        self._w_out = np.zeros(0)

    @classmethod
    def from_edges(cls, src, dst, weight=None, *, multi_edges: str = "set",
                   max_bytes: int | None = None) -> "WeightedCpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` of weights ``weight`` (default 1),
        external ids, repeated pairs combined by ``multi_edges``."""
        g = cls(multi_edges=multi_edges, max_bytes=max_bytes)
        w = np.ones(len(src)) if weight is None else weight
        g.apply(EdgeBatch.from_arrays(np.asarray(src), np.asarray(dst), weight=w))
        return g

    # ------------------------------------------------------------------ views
    @property
    def out_weight(self):
        """Per vertex the sum of its out-edges' weights (float64; 0 for a dangling vertex)."""
        return self._w_out[: self.num_vertices]

    @property
    def in_weights(self):
        """Weights beside :attr:`in_indices` (float64): ``in_weights[j]`` belongs to ``in_indices[j]``."""
        return self._in.wt

    @property
    def out_weights(self):
        """Weights beside :attr:`out_indices`."""
        return self._out.wt

    def edge_weights(self):
        """The weight of every edge, in the order of :meth:`edges`."""
        return wcsr.weight_list(self.num_vertices, self._out.off, self._out.deg, self._out.wt, self._num_edges)

    def weights_of(self, src, dst):
        """Stored weights of internal ``src[i] -> dst[i]`` (NaN where absent)."""
        return self._out.weights_of(np.ascontiguousarray(src, dtype=np.int64), np.ascontiguousarray(dst, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self._w_out.nbytes)

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch) -> AppliedChanges:
        """Apply a batch under the store's ``multi_edges`` rule and return what really changed.

        Returns
        -------
        AppliedChanges
            With :attr:`~AppliedChanges.reweighted_src` / ``reweighted_dst`` set: the edges
            present before and after whose weight changed.

        Raises
        ------
        BatchFormatError
            For a bad weight (as :meth:`EdgeBatch.from_arrays` would have), before anything changes.
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        batch = batch.to(np)
        received = len(batch)
        n_before = self.num_vertices
        if 0 < received <= batch_plan.MAX_EDGES and batch.id_kind == "int":  # one compiled call, the same plan
            plan, dels, inss, rews, dropped = self._plan_weighted_small(batch, n_before)
        else:
            plan, dels, inss, rews, dropped = self._plan_weighted(batch, n_before)
        del_src, del_dst = dels
        ins_src, ins_dst, ins_w = inss
        rew_src, rew_dst, rew_w = rews
        n_after = n_before + plan.count
        if n_after > MAX_VERTICES:
            raise InvalidArgumentError(f"the CPU graph store holds at most {MAX_VERTICES} vertices")

        what = f"a batch of {received:,} edges ({plan.count:,} new vertices)"
        id_bytes = self.ids.growth_bytes(plan.count)
        held = self.nbytes if self._max_bytes is not None else 0
        check_fits(id_bytes + self._rows_bytes(n_after), xp=np, held=held, limit=self._max_bytes, what=what)
        self._grow_vertices(n_after)
        changed = del_src.shape[0] or ins_src.shape[0]
        rebuild = changed and ins_src.shape[0] + del_src.shape[0] > max(self._num_edges // 4, 1024)
        if rebuild:
            lists = 3 * self._rebuild_bytes(n_after, int(ins_src.shape[0]))  # ids and weights
        elif changed:
            sides = weighted_plan.sorted_sides(del_src, del_dst, ins_src, ins_dst, ins_w)  # as lexsort (distinct)
            out_d, in_d, out_i, in_i = sides[0:2], sides[2:4], sides[4:7], sides[7:10]
            plan_out = self._out.plan_update(n_after, out_d[0], out_i[0])
            plan_in = self._in.plan_update(n_after, in_d[0], in_i[0])
            lists = plan_out.nbytes + plan_in.nbytes
        else:
            lists = 0
        held = self.nbytes if self._max_bytes is not None else 0
        check_fits(id_bytes + lists, xp=np, held=held, limit=self._max_bytes, what=what)

        # Commit.
        self.ids.commit_add(plan)
        if n_after > n_before:
            self._order[n_before:n_after] = self._pos[n_before:n_after] = np.arange(n_before, n_after, dtype=np.int32)
        if rew_src.shape[0]:  # present before and after: no slot moves, so set them first
            wcsr.set_weights(self._out.off, self._out.deg, self._out.idx, self._out.wt, rew_src, rew_dst, rew_w)
            wcsr.set_weights(self._in.off, self._in.deg, self._in.idx, self._in.wt, rew_dst, rew_src, rew_w)
        if rebuild:
            self._rebuild_weighted(del_src, del_dst, ins_src, ins_dst, ins_w)
        elif changed:
            self._out.update(n_after, plan_out, out_d[0], out_d[1], out_i[0], out_i[1], out_i[2])
            self._in.update(n_after, plan_in, in_d[0], in_d[1], in_i[0], in_i[1], in_i[2])
            self._num_edges += int(ins_src.shape[0]) - int(del_src.shape[0])
        if not rebuild:  # the touched sources' out-weights afresh; the sweep end
            weighted_plan.sum_touched(self._out.off, self._out.deg, self._out.wt, ins_src, del_src, rew_src, self._w_out)
            self._keep_sweep_end(ins_src, ins_dst)
        if changed or rew_src.shape[0] or n_after > n_before:
            self.version += 1
            self._arrays = None
        return AppliedChanges(ins_src, ins_dst, del_src, del_dst, n_before, n_after, received, dropped,
                              rew_src, rew_dst)

    def _plan_weighted_small(self, batch, n_before):
        """:meth:`_plan_weighted` of a batch of at most ``batch_plan.MAX_EDGES`` edges in one
        compiled call (:func:`~streamrank.kernels.cpu.weighted_plan.plan_weighted_batch`): the
        same arrays and counts."""
        ins = np.ascontiguousarray(batch.insert)
        # a batch built by the constructor was not validated: a bad weight must not reach the ranks
        w = np.where(ins, 1.0, np.nan) if batch.weight is None else check_weights(np, batch.weight, ins)
        (dups, present, absent, del_src, del_dst, internal, fresh, uniq, rank, ins_w, rew_src, rew_dst,
         rew_w) = weighted_plan.plan_weighted_batch(
            np.ascontiguousarray(batch.src, dtype=np.int64), np.ascontiguousarray(batch.dst, dtype=np.int64), ins,
            np.ascontiguousarray(w, dtype=np.float64), self.multi_edges == "sum", *self.ids.tables(), n_before,
            self._out.off, self._out.deg, self._out.idx, self._out.wt)
        dropped = {"duplicate": int(dups), "present_insertion": int(present), "absent_deletion": int(absent)}
        inss = (internal[0::2].copy(), internal[1::2].copy(), ins_w)
        return IdPlan(internal, fresh, uniq, rank, n_before), (del_src, del_dst), inss, (rew_src, rew_dst, rew_w), dropped

    def _plan_weighted(self, batch, n_before):
        """``(id plan, deletions, insertions, reweights, dropped)`` of a batch: what it changes."""
        n = len(batch)
        src, dst, ins = np.asarray(batch.src, dtype=np.int64), np.asarray(batch.dst, dtype=np.int64), batch.insert
        # a batch built by the constructor was not validated: a bad weight must not reach the ranks
        w = np.where(ins, 1.0, np.nan) if batch.weight is None else check_weights(np, batch.weight, ins)
        order = np.lexsort((np.arange(n), dst, src))  # by pair, then arrival
        s, d, ins, w = src[order], dst[order], np.ascontiguousarray(ins[order]), w[order]
        first = np.ones(n, dtype=bool)
        first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
        starts = np.append(np.flatnonzero(first), n).astype(np.int64)
        ps, pd = s[starts[:-1]], d[starts[:-1]]
        is_, id_ = self.ids.lookup(ps), self.ids.lookup(pd)
        before = self._out.weights_of(np.ascontiguousarray(is_, dtype=np.int64), np.ascontiguousarray(id_, dtype=np.int64))
        after = wcsr.fold_pairs(starts, ins, w, before, self.multi_edges == "sum")
        was, now = ~np.isnan(before), ~np.isnan(after)
        new, gone = now & ~was, was & ~now
        rew = was & now & (after != before)
        last_insert = ins[starts[1:] - 1]
        same = ~(new | gone | rew)
        dropped = {"duplicate": n - int(ps.shape[0]), "present_insertion": int((same & last_insert).sum()),
                   "absent_deletion": int((same & ~last_insert).sum())}
        both = np.empty(2 * int(new.sum()), dtype=np.int64)
        both[0::2], both[1::2] = ps[new], pd[new]
        plan = self.ids.plan_add(both)
        dels = (is_[gone].astype(np.int64), id_[gone].astype(np.int64))
        inss = (np.asarray(plan.internal[0::2], dtype=np.int64), np.asarray(plan.internal[1::2], dtype=np.int64),
                after[new])
        rews = (is_[rew].astype(np.int64), id_[rew].astype(np.int64), after[rew])
        return plan, dels, inss, rews, dropped

    def _grow_vertices(self, n: int):
        super()._grow_vertices(n)
        vcap = self._out.off.shape[0]
        if self._w_out.shape[0] < vcap:
            w = np.zeros(vcap)
            w[: self._w_out.shape[0]] = self._w_out
            self._w_out = w

    def _rows_bytes(self, n: int) -> int:
        vcap = self._out.off.shape[0]
        return super()._rows_bytes(n) + (8 * max(n, 2 * vcap, 64) if n > vcap else 0)

    def _rebuild_weighted(self, del_src, del_dst, ins_src, ins_dst, ins_w):
        """Lay both directions out afresh from the current weighted edges and the batch."""
        s, d = self.edges()
        w = self.edge_weights()
        if del_src.shape[0]:
            keys = (s << np.int64(32)) | d
            gone = np.isin(keys, (del_src << np.int64(32)) | del_dst)
            s, d, w = s[~gone], d[~gone], w[~gone]
        self._lay_out_weighted(np.concatenate([s, ins_src]), np.concatenate([d, ins_dst]), np.concatenate([w, ins_w]))

    def _lay_out(self, s, d):  # the unweighted layout (restores without weights): weight 1 everywhere
        self._lay_out_weighted(s, d, np.ones(s.shape[0]))

    def _lay_out_weighted(self, s, d, w):
        n = self.num_vertices
        self._out.lay_out(n, *_sorted(s, d, w))
        self._in.lay_out(n, *_sorted(d, s, w))
        self._w_out[:] = 0.0
        wcsr.sum_weights(self._out.off, self._out.deg, self._out.wt, np.arange(n, dtype=np.int64), self._w_out)
        self._finish_layout(s, d)

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly: :meth:`CpuGraph.state` plus ``weight``
        (float64, one per edge in the order of ``src``/``dst``)."""
        st = super().state()
        st["weight"] = self.edge_weights()
        return st

    @classmethod
    def from_state(cls, state: dict, *, multi_edges: str = "set", max_bytes: int | None = None) -> "WeightedCpuGraph":
        """Rebuild a graph saved by :meth:`state`; a state without weights (saved by an unweighted
        store) restores with weight 1 on every edge.

        Raises
        ------
        InvalidArgumentError
            For weights that are not one finite positive value per edge.
        """
        src = np.asarray(state["src"], dtype=np.int64)
        weight = state.get("weight")
        w = np.ones(src.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
        if w.shape != src.shape or (w.size and not bool(np.all((w > 0) & np.isfinite(w)))):
            raise InvalidArgumentError("state['weight'] is not one finite positive weight per edge")
        g = cls(multi_edges=multi_edges, max_bytes=max_bytes)
        g.ids = IdMap.from_external(np.asarray(state["external"]), np)
        g._grow_vertices(len(g.ids))
        g._lay_out_weighted(src, np.asarray(state["dst"], dtype=np.int64), w)
        g._restore_order(state)
        return g
