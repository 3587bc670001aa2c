"""The weighted graph store on the device: :class:`~streamrank.store.gpu.GpuGraph` with a weight per edge.

Both directions keep a float64 ``wt`` beside ``idx`` (:mod:`.gpu_weighted_lists`), and each
vertex its out-weight ``W[v]`` (the sum of its out-edges' weights, summed afresh on the device
for every vertex a batch touches, so it never drifts). Only ``Engine(weighted=True)`` creates
this store; the unweighted store has no weight array and runs its own code unchanged.

A batch takes one of three paths. A host batch of up to ``fast.max_edges`` (2,048) edges takes
the fused path (:mod:`.gpu_weighted_fast`): the records folded per pair on the device, the pairs
that appear or go applied by the unweighted store's fused kernels (their commit moving the
weights with the slots, within the room kept reserved ahead), the new and changed weights
written after, one wait. Where that room does not hold the batch, a small host batch is planned
on the host with one round trip to the device (:mod:`.gpu_weighted_small`), any other on the
device. On the device the batch is sorted by pair
and arrival, each pair's stored weight looked up (a warp per pair scanning the source's list) and its records folded in arrival order under
``set`` or ``sum`` (``fold_pairs`` in ``kernels/cuda/graph_weights.cu``, the CPU store's rule).
A pair absent before and present after is an insertion, present before and absent after a
deletion, present both times with another weight a *reweight*
(:attr:`~streamrank.store.changes.AppliedChanges.reweighted_src`), which the rank update treats
like an insertion at its source. The lists are then updated as the unweighted slow path does
(groups per vertex, overflowing lists moved to reserved room at the end of ``idx``, compaction
when the garbage passes the live edges), the weights moved along. The cost is O(batch + degrees
of the touched vertices) device work and a handful of small synchronizing copies.
"""

from __future__ import annotations

import numpy as np

from ..batch import EdgeBatch, check_weights
from ..config import MULTI_EDGES
from ..errors import InvalidArgumentError
from ..ids.gpu import GpuIdMap
from ..kernels.cpu.weighted_csr import ZERO_REL
from ..kernels.cuda.launch import BLOCK, _cupy, grid_for_warps, launch
from .changes import AppliedChanges
from .gpu import GpuGraph
from .gpu_fast import FastUpdate, PendingFast
from .gpu_lists import MASK32, MAX_VERTICES, count_flags
from .gpu_weighted_lists import WeightedDirection, fold_pairs, weights_kernel
from .gpu_weighted_fast import WeightedFastUpdater
from .gpu_weighted_small import apply_small, host_records, is_small
from .memory import is_out_of_memory, mib, out_of_memory

#: Device bytes of a weighted batch's per-edge temporaries (sorts, keys, weights, plans).
TEMP_BYTES_PER_EDGE = 400


class WeightedGpuGraph(GpuGraph):
    """Dynamic directed graph with a positive weight per edge (self-loops allowed) on the device.

    Parameters
    ----------
    multi_edges : {"set", "sum"}
        How a repeated pair combines (docs/api.md).
    max_bytes : int, optional
        As for :class:`~streamrank.store.gpu.GpuGraph`.

    fast_update : FastUpdate, optional
        As for :class:`~streamrank.store.gpu.GpuGraph`: the fused path's settings and room.

    Notes
    -----
    A batch without weights means weight 1 for its insertions and whole-edge removal for its
    deletions.
    """

    weighted = True
    #: Host batches of up to ``fast.max_edges`` edges take the fused path
    #: (:mod:`.gpu_weighted_fast`: one wait) while the reserved room holds them.
    fused = True
    #: Other small host batches are planned on the host (:mod:`.gpu_weighted_small`: one round trip
    #: to the device); False plans them on the device (the reference the tests compare with).
    host_planning = True

    def __init__(self, *, multi_edges: str = "set", max_bytes: int | None = None, fast_update=None):
        if multi_edges not in MULTI_EDGES:
            raise InvalidArgumentError(f"multi_edges must be one of {MULTI_EDGES}, got {multi_edges!r}")
        if fast_update is not None and not isinstance(fast_update, FastUpdate):
            raise InvalidArgumentError(f"fast_update must be a FastUpdate, got {type(fast_update).__name__}")
        super().__init__(fast_update=FastUpdate(enabled=False), max_bytes=max_bytes)  # (no room for lists replaced below)
        cp = self.xp
        self.multi_edges = multi_edges
        self._out = WeightedDirection(cp, 0)
        self._in = WeightedDirection(cp, 0)
        self._w_out = cp.zeros(0, dtype=cp.float64)
        self.fast = FastUpdate() if fast_update is None else fast_update
        self._ensure_room()

    @classmethod
    def from_edges(cls, src, dst, weight=None, *, multi_edges: str = "set",
                   max_bytes: int | None = None) -> "WeightedGpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` of weights ``weight`` (default 1),
        external ids, repeated pairs combined by ``multi_edges``."""
        cp = _cupy()
        g = cls(multi_edges=multi_edges, max_bytes=max_bytes)
        s, d = cp.asarray(src), cp.asarray(dst)
        w = cp.ones(s.shape[0]) if weight is None else cp.asarray(weight, dtype=cp.float64)
        g.apply(EdgeBatch.from_arrays(s, d, weight=w, xp=cp))
        return g

    # ------------------------------------------------------------------ views
    @property
    def out_weight(self):
        """Per vertex the sum of its out-edges' weights (float64; 0 for a dangling vertex)."""
        return self._w_out[: self.num_vertices]

    @property
    def in_weights(self):
        """Weights beside :attr:`in_indices`."""
        return self._in.wt

    @property
    def out_weights(self):
        """Weights beside :attr:`out_indices`."""
        return self._out.wt

    @property
    def nbytes(self) -> int:
        return super().nbytes + int(self._w_out.nbytes)

    def edges_weighted(self):
        """All edges as internal ``(src, dst, weight)``, sorted by (src, dst)."""
        cp = self.xp
        s, d, w = self._out.gather_weighted(self.num_vertices, self.num_edges)
        order = cp.argsort((s << 32) | d)
        return s[order], d[order], w[order]

    def edge_weights(self):
        """The weight of every edge, in the order of :meth:`edges`."""
        return self.edges_weighted()[2]

    def weights_of(self, src, dst):
        """Stored weights of internal ``src[i] -> dst[i]`` (NaN where absent)."""
        cp = self.xp
        return self._out.weights_of(cp.asarray(src, dtype=cp.int64), cp.asarray(dst, dtype=cp.int64))

    def _pair_info(self, pairs, npairs: int):
        """For the host planning (:mod:`.gpu_weighted_small`): of the distinct pairs ``pairs[p] ->
        pairs[npairs + p]`` (host int64, external ids) the internal ids, stored weights and row
        sizes, read back in one copy (``pair_info`` in graph_weights.cu; 7 ``npairs`` int64)."""
        cp = self.xp
        q = cp.asarray(pairs)
        info = cp.empty(7 * npairs, dtype=cp.int64)
        ids, out, inn = self.ids, self._out, self._in
        launch(weights_kernel("pair_info<int>"), grid_for_warps(npairs), BLOCK,
               (ids.keys, ids.vals, ids.mask, q, np.int64(npairs), out.off, out.deg, out.cap, out.idx, out.wt,
                inn.deg, inn.cap, info))
        return info.get()  # sync: the one round trip of a small batch

    # ------------------------------------------------------------------ room
    def _rows_bytes(self, vcap: int) -> int:
        return super()._rows_bytes(vcap) + (8 * int(vcap) if vcap > self._w_out.shape[0] else 0)

    def _grow_vertices(self, vcap: int) -> None:
        super()._grow_vertices(vcap)
        cp = self.xp
        if self._w_out.shape[0] < self._vcap:
            w = cp.zeros(self._vcap, dtype=cp.float64)
            w[: self._w_out.shape[0]] = self._w_out
            self._w_out = w

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch, *, fast: bool = True, headroom=None) -> AppliedChanges:
        """Apply a batch under the store's ``multi_edges`` rule and return what really changed.

        ``fast`` (default True) lets a host batch of up to ``fast.max_edges`` edges take the
        fused path (:mod:`.gpu_weighted_fast`); ``headroom`` as for :meth:`GpuGraph.apply` (not
        checked on the fused path, as on the unweighted store's). Another host batch of at most
        :data:`~streamrank.store.gpu_weighted_small.SMALL_MAX` edges is planned on the host.

        Returns
        -------
        AppliedChanges
            Device arrays of internal ids, with :attr:`~AppliedChanges.reweighted_src` /
            ``reweighted_dst`` set: the edges present before and after whose weight changed.

        Raises
        ------
        BatchFormatError
            For a bad weight, before anything changes.
        GraphCapacityError
            When the batch's growth does not fit (nothing changed).
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        cp = self.xp
        try:
            if fast and isinstance(batch.src, np.ndarray) and self.fast_eligible(len(batch)):
                changes = self._apply_fused(batch)
                if changes is not None:
                    return changes
            if self.host_planning and is_small(batch):
                changes = apply_small(self, batch, headroom)
            else:
                changes = self._apply_weighted(batch.to(cp), headroom)
            if self.fused:
                self._ensure_room()  # the fused path's room, for the next batches
            return changes
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"applying a batch of {len(batch):,} edges to a graph store of "
                                f"{mib(self.nbytes)}", held=self.nbytes,
                                changed="nothing was changed (apply smaller batches)") from exc

    def launch_fast(self, batch: EdgeBatch, *, replay=None) -> PendingFast:
        """Queue the fused path for ``batch`` (:meth:`fast_eligible`; its weights checked here,
        before anything is queued) without waiting, as :meth:`GpuGraph.launch_fast` does: work
        queued after it reads the counters at :attr:`PendingFast.counters_ptr`, the batch's
        reweighted pairs listed after its applied insertions (their count in counter slot 12).
        ``replay``: replay the update from a captured graph (as for :meth:`GpuGraph.launch_fast`;
        nothing is staged ahead by :meth:`upkeep`)."""
        cp = self.xp
        src, dst, ins, w = host_records(batch if isinstance(batch.src, np.ndarray) else batch.to(np))
        fu = self._fast
        if fu is None:
            fu = self._fast = WeightedFastUpdater(cp)
        n = len(self.ids)
        buf, ptr = fu.launch_weighted(src, dst, ins, w, self.ids, self._out, self._in, n, self._fast_room(n),
                                      self._w_out, self.multi_edges == "sum", replay=replay)
        return PendingFast(n, int(src.shape[0]), buf, ptr, fu.counters_ptr)

    def finish_fast(self, pending: PendingFast):
        """Complete :meth:`launch_fast` once the stream has been synchronized: the changes (with
        their reweighted pairs), or None when the batch did not fit the reserved room (nothing
        changed)."""
        fu = self._fast
        (overflow, new, inserted, deleted, _, _, _, out_end, in_end,
         duplicate, present, absent, reweighted) = fu.weighted_counts()
        # the drop counts of the weighted rule (the fused update's are of the structural batch)
        changes = self._took_fast(pending, overflow, new, inserted, deleted, duplicate, present, absent, out_end,
                                  in_end)
        if changes is None:
            return None
        # the reweighted pairs: views of the batch's own changes buffer, where the update listed
        # them after the applied insertions (no copy; the next batch writes another buffer)
        if reweighted:
            buf, m = pending.changes, pending.received
            changes.reweighted_src = buf[inserted:inserted + reweighted]
            changes.reweighted_dst = buf[m + inserted:m + inserted + reweighted]
        else:
            changes.reweighted_src = changes.reweighted_dst = fu.no_reweights
        return changes

    def upkeep(self, *, replay=None) -> None:
        """As :meth:`GpuGraph.upkeep`; ``replay`` is not used (nothing staged ahead)."""
        super().upkeep(replay=None)

    def rehearse_fast(self, batch: EdgeBatch) -> None:
        """Nothing to rehearse: no host batch is staged ahead for a weighted store."""

    def _apply_fused(self, batch: EdgeBatch):
        """A host batch through the fused path (one wait); None when it did not fit the reserved
        room (then nothing changed)."""
        pending = self.launch_fast(batch)
        self.xp.cuda.get_current_stream().synchronize()  # sync: the batch's counters (one wait)
        return self.complete_fast(pending)

    def fast_eligible(self, m: int) -> bool:
        """Whether a batch of ``m`` edges takes the fused path (:attr:`fused` and the unweighted
        store's rule)."""
        return self.fused and super().fast_eligible(m)

    def _apply_weighted(self, batch: EdgeBatch, headroom) -> AppliedChanges:
        cp = self.xp
        received = len(batch)
        n_before = self.num_vertices
        what = f"a batch of {received:,} edges"
        temp = TEMP_BYTES_PER_EDGE * received
        self._check(0, what, scratch=temp)
        src = cp.asarray(batch.src, dtype=cp.int64)
        dst = cp.asarray(batch.dst, dtype=cp.int64)
        ins = cp.asarray(batch.insert, dtype=bool)
        if batch.weight is None:
            w = cp.where(ins, 1.0, cp.nan)
        else:  # a batch built by the constructor was not validated: a bad weight must not reach the ranks
            w = check_weights(cp, batch.weight, ins)
        if received == 0:
            return self._no_change(n_before, received)

        # Pairs in arrival order: one stable sort by (src, dst, arrival), a fold per pair.
        order = cp.lexsort(cp.stack((cp.arange(received, dtype=cp.int64), dst, src)))
        s, d, ins, w = src[order], dst[order], cp.ascontiguousarray(ins[order]), cp.ascontiguousarray(w[order])
        first = cp.ones(received, dtype=bool)
        first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
        starts = cp.append(cp.flatnonzero(first), received).astype(cp.int64)  # sync: the pair count
        npairs = int(starts.shape[0]) - 1
        ps, pd = s[starts[:-1]], d[starts[:-1]]
        is_, id_ = self.ids.lookup(ps), self.ids.lookup(pd)
        before = self._out.weights_of(is_, id_)
        after = fold_pairs(cp, starts, ins, w, before, self.multi_edges == "sum", ZERO_REL)
        was, now = ~cp.isnan(before), ~cp.isnan(after)
        new, gone = now & ~was, was & ~now
        rew = was & now & (after != before)
        same = ~(new | gone | rew)
        last_insert = ins[starts[1:] - 1]
        counted = cp.zeros(6, dtype=cp.int64)
        count_flags(cp, new, gone, counted[0:2])
        count_flags(cp, rew, same & last_insert, counted[2:4])
        count_flags(cp, same & ~last_insert, None, counted[4:6])
        n_new, n_gone, n_rew, present, absent, _ = (int(v) for v in counted.get())  # sync: the sizes
        dropped = {"duplicate": received - npairs, "present_insertion": present, "absent_deletion": absent}

        sel_new, sel_gone, sel_rew = (cp.flatnonzero(m) for m in (new, gone, rew))
        both = cp.empty(2 * n_new, dtype=cp.int64)
        both[0::2], both[1::2] = ps[sel_new], pd[sel_new]
        plan = self.ids.plan_add(both)  # syncs once
        n_after = n_before + plan.count
        if n_after > MAX_VERTICES:
            raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
        what = f"a batch of {received:,} edges ({plan.count:,} new vertices)"
        if headroom is not None:
            temp += int(headroom(n_after))
        id_bytes = self.ids.growth_bytes(plan.count)
        vcap = max(n_after, 2 * self._vcap, 16) if n_after > self._vcap else self._vcap
        self._check(id_bytes + self._rows_bytes(vcap), what, scratch=temp)
        self._grow_vertices(vcap)

        i_s, i_d = cp.ascontiguousarray(plan.internal[0::2]), cp.ascontiguousarray(plan.internal[1::2])
        i_w = after[sel_new]
        ikey, iw = _sorted_keys(cp, i_s, i_d, i_w)
        rikey, riw = _sorted_keys(cp, i_d, i_s, i_w)
        d_s, d_d = is_[sel_gone], id_[sel_gone]
        dkey = cp.sort((d_s << 32) | d_d)
        rdkey = cp.sort((d_d << 32) | d_s)
        r_s, r_d, r_w = is_[sel_rew], id_[sel_rew], after[sel_rew]
        plan_out = self._out.plan_insertions(ikey)
        plan_in = self._in.plan_insertions(rikey)
        extra = cp.stack((plan_out[3], plan_in[3])).get()  # sync: the slots to reserve
        extra_out, extra_in = int(extra[0]), int(extra[1])
        self._check(id_bytes + self._out.reserve_bytes(extra_out) + self._in.reserve_bytes(extra_in), what,
                    scratch=temp)
        self.ids.reserve(plan.count)
        self._out.reserve(extra_out)
        self._in.reserve(extra_in)
        touched = cp.unique(cp.concatenate([i_s, d_s, r_s]))

        # Commit (nothing below allocates but the small results).
        self.ids.commit_add(plan)
        if n_rew:  # present before and after: no slot moves
            self._out.set_weights(r_s, r_d, r_w)
            self._in.set_weights(r_d, r_s, r_w)
        self._out.delete_weighted(dkey, n_gone)
        self._in.delete_weighted(rdkey, n_gone)
        self._out.insert_weighted(ikey, iw, n_new, plan_out)
        self._in.insert_weighted(rikey, riw, n_new, plan_in)
        self._out.end += extra_out
        self._in.end += extra_in
        self._num_edges += n_new - n_gone
        self._out.row_sums(touched, self._w_out)
        self.version += 1
        changes = AppliedChanges(ikey >> 32, ikey & MASK32, dkey >> 32, dkey & MASK32, n_before, n_after,
                                 received, dropped, r_s, r_d)
        self.last_changes = changes
        self._maybe_compact()
        return changes

    def _no_change(self, n: int, received: int) -> AppliedChanges:
        cp = self.xp
        e = cp.zeros(0, dtype=cp.int64)
        changes = AppliedChanges(e, e, e, e, n, n, received,
                                 {"duplicate": 0, "present_insertion": 0, "absent_deletion": 0}, e, e)
        self.version += 1
        self.last_changes = changes
        return changes

    # ------------------------------------------------------------------ builds and checkpoints
    def _build_keys(self, keys, n: int) -> None:
        """Unweighted builds (a restore without weights): weight 1 on every edge."""
        self._build_weighted(keys, self.xp.ones(keys.shape[0], dtype=self.xp.float64), n)

    def _build_weighted(self, keys, w, n: int) -> None:
        """Both directions from distinct internal keys ``src << 32 | dst`` and their weights."""
        cp = self.xp
        order = cp.argsort(keys)
        keys, w = keys[order], cp.ascontiguousarray(w[order])
        super()._build_keys(keys.copy(), n)  # lays the lists out (consumes its copy of the keys)
        self._out = WeightedDirection.adopt(self._out)
        self._in = WeightedDirection.adopt(self._in)
        self._out.fill(n, keys, w, reverse=False)
        self._in.fill(n, keys, w, reverse=True)
        self._w_out = cp.zeros(self._vcap, dtype=cp.float64)
        self._out.row_sums(None, self._w_out, n)

    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly: :meth:`GpuGraph.state` plus ``weight``
        (float64, one per edge in the order of ``src``/``dst``)."""
        s, d, w = self.edges_weighted()
        return {"external": self.ids.external.get(), "src": s.get(), "dst": d.get(), "weight": w.get()}

    @classmethod
    def from_state(cls, state: dict, *, multi_edges: str = "set", max_bytes: int | None = None,
                   fast_update=None) -> "WeightedGpuGraph":
        """Rebuild a graph saved by :meth:`state` (of either backend, weighted or not); a state
        without weights restores with weight 1 on every edge.

        Raises
        ------
        InvalidArgumentError
            For weights that are not one finite positive value per edge.
        GraphCapacityError
            When the graph does not fit the free device memory or ``max_bytes``.
        """
        cp = _cupy()
        src = np.asarray(state["src"], dtype=np.int64)
        if np.shape(state["dst"]) != src.shape:
            raise InvalidArgumentError("state src and dst differ in length")
        weight = state.get("weight")
        w = np.ones(src.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
        if w.shape != src.shape or (w.size and not bool(np.all((w > 0) & np.isfinite(w)))):
            raise InvalidArgumentError("state['weight'] is not one finite positive weight per edge")
        g = cls(multi_edges=multi_edges, max_bytes=max_bytes, fast_update=fast_update)
        try:
            g.ids = GpuIdMap.from_external(cp.asarray(np.asarray(state["external"])), cp)
            n = len(g.ids)
            if n > MAX_VERTICES:
                raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
            e = int(src.shape[0])
            g._check(3 * gpu_bytes(n, e), f"restoring a graph of {n:,} vertices and {e:,} edges")
            s = cp.asarray(src)
            d = cp.asarray(np.asarray(state["dst"], dtype=np.int64))
            g._build_weighted((s << 32) | d, cp.asarray(w), n)
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"restoring a graph of {len(src):,} edges",
                                held=g.nbytes, changed="no graph was built") from exc
        return g


def gpu_bytes(n: int, e: int) -> int:
    """A bound of the unweighted build's bytes (:mod:`.gpu_build`); a weighted build takes about
    three times as much (weights beside both index arrays, the sorted keys and weights)."""
    from . import gpu_build

    return gpu_build.store_bytes(n, e) + gpu_build.WORK_BYTES_PER_EDGE * int(e)


def _sorted_keys(cp, own, nbr, w):
    """``(own << 32 | nbr, w)`` sorted by the key."""
    keys = (own << 32) | nbr
    order = cp.argsort(keys)
    return keys[order], cp.ascontiguousarray(w[order])
