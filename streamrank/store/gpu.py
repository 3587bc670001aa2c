"""The dynamic graph store on the device: out- and in-direction gapped CSR kept current by batches.

Each direction holds, per vertex ``u``, an offset ``off[u]`` (int64), a degree ``deg[u]`` and a
capacity ``cap[u]`` (int32) into one int32 array ``idx``: the neighbours are
``idx[off[u] : off[u] + deg[u]]`` and the slots up to ``off[u] + cap[u]`` are free (DESIGN.md,
"Where the time goes"). A batch is applied without touching the rest of the graph:

- normalization (collapse to the last op per pair, id lookup, membership tests) works on the
  batch only; membership is answered by one warp per queried edge scanning the shorter of
  ``out(u)`` and ``in(v)`` (``edge_find`` in ``kernels/cuda/graph_update.cu``);
- a deletion removes the edge from its vertex's list by compacting that list in place (one warp
  per source vertex, all of its deleted targets at once), so order inside a list is not kept;
- an insertion goes into a gap; a vertex whose list would overflow is moved to the end of ``idx``
  with twice the room (the host reserves those slots), and a compaction (a pass over all edges)
  runs when the garbage left behind passes the live edges.

The batch costs O(batch + degrees of the vertices it touches) device work; the graph never
travels to the host. A batch of up to ``FastUpdate.max_edges`` edges (2048) takes the fast path
(:mod:`streamrank.store.gpu_fast`): one fused kernel launch and one small synchronizing copy,
using room reserved ahead (vertex rows, id map, the tail of each ``idx``); when that room does
not suffice the kernel writes nothing and the slow path below (a few dozen launches and a
handful of small synchronizing copies, each commented) applies the batch and re-plans. Internal
ids are dense and below 2**31 - 1, assigned by the device id map
(:class:`streamrank.ids.gpu.GpuIdMap`) in the same order as the CPU store, so both stores give
a batch the same internal ids and drop counts.
"""

from __future__ import annotations

import time

import numpy as np

from ..batch import EdgeBatch
from .changes import AppliedChanges, SectionChanges
from .memory import check_max_bytes, is_out_of_memory, mib, out_of_memory
from ..errors import InvalidArgumentError
from ..kernels.cuda.launch import BLOCK, _cupy, grid_for_warps, launch
from .gpu_fast import FastUpdate, FastUpdater, PendingFast

from .gpu_lists import MASK32 as _MASK32
from .gpu_lists import MAX_VERTICES, Direction, update_kernel
from .gpu_load import BulkLoading
from .gpu_room import RoomKeeping
from .gpu_slow import apply_slow
from ..ids.gpu import GpuIdMap


# ---------------------------------------------------------------------- the store
class GpuGraph(BulkLoading, RoomKeeping):
    """Dynamic directed graph (set semantics, self-loops allowed) on the device.

    Same contract as :class:`streamrank.store.cpu.CpuGraph` (docs/architecture.md); arrays are
    CuPy, degrees int32, offsets int64, and ``*_indices`` hold gaps beyond each vertex's degree.

    Attributes
    ----------
    ids : GpuIdMap
        External <-> internal vertex ids, on the device.
    version : int
        Batches applied (bumped by every :meth:`apply`).
    last_changes : AppliedChanges or None
        What the last :meth:`apply` changed.
    fast : FastUpdate
        Settings of the fast path.
    fast_batches, fast_fallbacks : int
        Batches applied by the fused kernel, and batches it handed to the slow path for lack of
        reserved room.
    compactions, compactions_skipped, room_skipped : int
        Compactions run, compactions skipped and fast-path reservations skipped because their
        arrays did not fit (free device memory or :attr:`max_bytes`).

    Parameters
    ----------
    fast_update : FastUpdate, optional
        Fast-path settings (``FastUpdate(enabled=False)`` always takes the slow path).
    max_bytes : int, optional
        Most device bytes the store may hold while it grows (:attr:`max_bytes`); default: only
        the free device memory limits it.

    Notes
    -----
    Growth (new vertices, lists outgrowing their room, the id map, compaction) is checked
    against the free device memory (``cudaMemGetInfo`` plus CuPy's cached free blocks) and
    :attr:`max_bytes` before anything changes: a batch that does not fit raises
    :class:`~streamrank.errors.GraphCapacityError` and leaves the graph exactly as it was.
    """

    backend_name = "gpu"

    def __init__(self, *, fast_update: FastUpdate | None = None, max_bytes: int | None = None):
        cp = _cupy()
        if fast_update is not None and not isinstance(fast_update, FastUpdate):
            raise InvalidArgumentError(f"fast_update must be a FastUpdate, got {type(fast_update).__name__}")
        self._max_bytes = check_max_bytes(max_bytes)
        self.xp = cp
        self.fast = FastUpdate() if fast_update is None else fast_update
        self._fast = None  # FastUpdater, made on first use
        self.fast_batches = 0
        self.fast_fallbacks = 0
        self.ids = GpuIdMap(cp)
        self._vcap = 0
        self._out = Direction(cp, 0)
        self._in = Direction(cp, 0)
        self._num_edges = 0
        self.version = 0
        self.last_changes = None
        self.compactions = 0
        self.compactions_skipped = 0
        self.room_skipped = 0
        #: Set to a dict to accumulate per-stage wall times (ms) of apply(); each stage then ends
        #: with a device synchronization, so profile only outside timed runs.
        self.stage_ms = None
        self._t = 0.0
        self._ensure_room()

    def _stage(self, name: str) -> None:
        if self.stage_ms is None:
            return
        self.xp.cuda.Device().synchronize()  # sync: profiling only
        now = time.perf_counter()
        if name:
            self.stage_ms[name] = self.stage_ms.get(name, 0.0) + (now - self._t) * 1e3
        self._t = now

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, src, dst, *, fast_update: FastUpdate | None = None,
                   max_bytes: int | None = None) -> "GpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` (external ids; duplicates collapse).

        Internal ids follow the CPU store's rule (:func:`streamrank.ids.plan.plan_new_ids`: descending
        degree for more than 4,096 vertices, else first appearance in (src, dst) order). Host or
        device arrays are accepted. Dense integer ids (all below ``4 |E| + 2**20``) build with a
        bounded working set (:mod:`streamrank.store.gpu_build`: 16 bytes per edge beyond the
        final store, 25 for an input that is not sorted and distinct), checked against the free
        device memory and ``max_bytes`` before anything is allocated; other ids take the general
        path (sorts of all endpoints). ``fast_update`` and ``max_bytes`` as for the constructor.

        Raises
        ------
        GraphCapacityError
            When the build does not fit the free device memory (or its cap,
            ``STREAMRANK_GPU_MEMORY_LIMIT``) or ``max_bytes``; the message says what it needs,
            what is free and what to do.
        """
        cp = _cupy()
        g = cls(fast_update=fast_update, max_bytes=max_bytes)
        try:
            batch = EdgeBatch.from_arrays(cp.asarray(src), cp.asarray(dst), xp=cp)
            g._from_edges(batch.src, batch.dst)
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"building a graph of {len(src):,} edges", held=g.nbytes,
                                changed="no graph was built") from exc
        return g

    # ------------------------------------------------------------------ sizes and views
    @property
    def num_vertices(self) -> int:
        return len(self.ids)

    @property
    def num_edges(self) -> int:
        return self._num_edges

    @property
    def out_degree(self):
        return self._out.deg[: self.num_vertices]

    @property
    def in_degree(self):
        return self._in.deg[: self.num_vertices]

    @property
    def out_offset(self):
        return self._out.off[: self.num_vertices]

    @property
    def in_offset(self):
        return self._in.off[: self.num_vertices]

    @property
    def out_indices(self):
        return self._out.idx

    @property
    def in_indices(self):
        return self._in.idx

    @property
    def out_capacity(self):
        return self._out.cap[: self.num_vertices]

    @property
    def in_capacity(self):
        return self._in.cap[: self.num_vertices]

    @property
    def slots_used(self) -> tuple:
        """Used slots (live edges + gaps + garbage) of the out- and in-direction."""
        return self._out.end, self._in.end

    def edges(self):
        """All edges as internal ``(src, dst)`` int64 arrays, sorted by (src, dst)."""
        n, e = self.num_vertices, self.num_edges
        s, d = self._out.gather(n, e)
        keys = self.xp.sort((s << 32) | d)
        return keys >> 32, keys & _MASK32

    def edges_external(self):
        """All edges as external ``(src, dst)`` arrays."""
        s, d = self.edges()
        return self.ids.external[s], self.ids.external[d]

    def has_edges(self, src, dst):
        """Whether each internal ``src[i] -> dst[i]`` is present (bool device array)."""
        cp = self.xp
        s = cp.asarray(src, dtype=cp.int64)
        d = cp.asarray(dst, dtype=cp.int64)
        n = self.num_vertices
        ok = (s >= 0) & (s < n) & (d >= 0) & (d < n)
        return self._find(cp.where(ok, s, -1), cp.where(ok, d, -1))

    def _find(self, s, d):
        """Membership of internal edges (negative ids: absent), as a bool device array."""
        cp = self.xp
        m = int(s.shape[0])
        found = cp.zeros(m, dtype=cp.uint8)
        if m and self._num_edges:
            launch(update_kernel("edge_find<int>"), grid_for_warps(m), BLOCK,
                   (s.astype(cp.int32), d.astype(cp.int32), np.int64(m),
                    self._out.off, self._out.deg, self._out.idx,
                    self._in.off, self._in.deg, self._in.idx, found))
        return found.astype(bool)

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch, *, fast: bool = True, headroom=None) -> AppliedChanges:
        """Apply a batch under set semantics on the device and return what really changed.

        Parameters
        ----------
        batch : EdgeBatch
            Insertions and deletions in arrival order (external ids); a host batch is copied to
            the device (the batch only, never the graph).
        fast : bool, optional
            False: skip the fast path (for a batch whose fast launch already reported that it
            does not fit the reserved room).
        headroom : callable, optional
            ``headroom(num_vertices_after)``: device bytes the caller will allocate after the
            batch (the engine's rank update), checked with the batch's own growth on the slow
            path, so that a batch whose rank update would not fit is refused before it changes
            the graph. A fast-path batch (at most 4,096 new vertices, within the reserved room)
            is not checked: the rank update then reuses the blocks the previous one freed.

        Returns
        -------
        AppliedChanges
            Device arrays of internal ids, sorted by (src, dst); drop counts as on the CPU.

        Raises
        ------
        GraphCapacityError
            When the batch's growth does not fit the free device memory or :attr:`max_bytes`;
            raised before anything changes (the graph stays as it was).
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        cp = self.xp
        try:
            if fast and self.fast_eligible(len(batch)):
                changes = self._apply_fast(batch)  # a host batch goes up through pinned staging
                if changes is not None:
                    return changes
            return self._apply_slow(batch.to(cp), headroom)
        except Exception as exc:
            # every allocation of apply() comes before its commit (or only adds spare room), so
            # the graph is as it was before the batch
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"applying a batch of {len(batch):,} edges to a graph store of "
                                f"{mib(self.nbytes)}", held=self.nbytes,
                                changed="nothing was changed (apply smaller batches)") from exc

    def fast_eligible(self, m: int) -> bool:
        """Whether a batch of ``m`` edges takes the fast path (one fused kernel)."""
        fast = self.fast
        return fast.enabled and 0 < m <= fast.max_edges and len(self.ids) + 2 * m <= MAX_VERTICES

    def _apply_fast(self, batch: EdgeBatch):
        """The batch through the fused kernel (one sync); None when it did not fit the reserved
        room (then nothing changed)."""
        self._stage("")
        pending = self.launch_fast(batch)
        self.xp.cuda.get_current_stream().synchronize()  # sync: the fast batch's counters (one round trip)
        self._stage("fast update")
        return self.complete_fast(pending)

    def launch_fast(self, batch: EdgeBatch, *, replay=None) -> PendingFast:
        """Queue the fused kernel of the fast path for ``batch`` (a host or device batch for which
        :meth:`fast_eligible` holds; a host batch goes up through the pinned staging buffer, and
        is replayed from a captured CUDA graph when ``replay``, a
        :class:`~streamrank.rank.gpu.capture.BatchGraphs`, is given: when the last
        :meth:`upkeep` was given it too and the store has not changed since, the header and the
        graph it staged are used, and only the edges are copied) and the copy of its counters,
        without waiting.

        Until :meth:`finish_fast` has run (after a synchronization of the current stream) the
        store's host-side bookkeeping (vertex count, ends of the edge arrays) is that of before
        the batch and no other update may be applied; device work queued after this call on the
        same stream sees the updated arrays, and reads the counters at
        :attr:`PendingFast.counters_ptr` (vertex count, applied insertions and deletions, overflow).
        """
        fu = self._fast
        if fu is None:
            fu = self._fast = FastUpdater(self.xp)
        ids = self.ids
        n = len(ids)
        launched = fu.launch_armed(batch, ids, self._out, self._in, self.version, replay)  # staged by upkeep()
        if launched is None:  # (changes buffer, its address)
            launched = fu.launch(batch, ids, self._out, self._in, n, self._fast_room(n), replay=replay)
        return PendingFast(n, len(batch), *launched, fu.counters_ptr)

    def finish_fast(self, pending: PendingFast):
        """Complete :meth:`launch_fast` once the stream has been synchronized: the changes, or
        None when the batch did not fit the reserved room (then nothing changed and the caller
        applies it through the slow path).

        The graph is then up to date on the host too (vertex and edge counts, ends of ``idx``).
        Call :meth:`upkeep` after an applied batch, before the next fast launch: it keeps the
        room reserved ahead (a launch that finds too little reports an overflow and the slow
        path applies the batch, so a missed upkeep costs time, never a wrong graph)."""
        return self._took_fast(pending, *self._fast.counts())

    def _took_fast(self, pending: PendingFast, overflow, new, inserted, deleted, duplicate, present, absent,
                   out_end, in_end):
        """The bookkeeping of a fast batch from its counters (:meth:`finish_fast`): the changes, or
        None after an overflow."""
        if overflow:
            self.fast_fallbacks += 1
            return None
        n, m = pending.num_vertices_before, pending.received
        self.ids.note_added(new)
        self._out.end, self._in.end = out_end, in_end
        self._num_edges += inserted - deleted
        dropped = {"duplicate": duplicate, "present_insertion": present, "absent_deletion": absent}
        changes = SectionChanges(pending.changes, m, inserted, deleted, n, n + new, m, dropped)
        self.version += 1
        self.last_changes = changes
        self.fast_batches += 1
        return changes

    def complete_fast(self, pending: PendingFast):
        """:meth:`finish_fast`, then :meth:`upkeep` when the batch was applied: the changes, or
        None (nothing changed). For callers that do not time the two apart."""
        changes = self.finish_fast(pending)
        if changes is not None:
            self.upkeep()
        return changes

    def rehearse_fast(self, batch: EdgeBatch) -> None:
        """Re-run the first host steps of a fast launch of ``batch`` without their effects (the
        checks, the staging copies; :meth:`FastUpdater.rehearse`): between batches, after the
        last update has completed (:mod:`streamrank.rank.gpu.rehearsal`)."""
        fu = self._fast
        if fu is not None and self.fast_eligible(len(batch)):
            fu.rehearse(batch, self.ids, self._out, self._in)

    def upkeep(self, *, replay=None) -> None:
        """Get ready for the next fast batch: compact a direction whose garbage passes its live
        edges, keep the room reserved ahead (vertex rows, id map, tails of ``idx``) and the next
        batch's changes buffer allocated; with ``replay`` (the caller's
        :class:`~streamrank.rank.gpu.capture.BatchGraphs`), also stage the next host batch's
        header and look up its captured graph (:meth:`FastUpdater.arm`), so that its
        :meth:`launch_fast` only copies the edges and replays. Host decisions and asynchronous
        device work only (no sync); the one-wait batch runs this beside its rank loop
        (:mod:`streamrank.rank.gpu.step`)."""
        self._maybe_compact()
        self._ensure_room()
        fu = self._fast
        if fu is not None and self.fast.enabled:
            fu.prepare()
            if replay is not None:
                n = len(self.ids)
                fu.arm(self.ids, self._out, self._in, n, self._fast_room(n), replay, self.version)

    def _fast_room(self, n: int) -> int:
        """New vertices the fused kernel may add to a store of ``n`` vertices (rows and id map)."""
        return min(self._vcap - n, self.ids.room)

    def _apply_slow(self, batch: EdgeBatch, headroom=None) -> AppliedChanges:
        return apply_slow(self, batch, headroom=headroom)

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly (copies the graph to the host)."""
        s, d = self.edges()
        return {"external": self.ids.external.get(), "src": s.get(), "dst": d.get()}

    @classmethod
    def from_state(cls, state: dict, *, fast_update: FastUpdate | None = None,
                   max_bytes: int | None = None) -> "GpuGraph":
        """Rebuild a graph saved by :meth:`state` (of either store); ``fast_update`` and
        ``max_bytes`` as for the constructor.

        Raises
        ------
        GraphCapacityError
            When the graph does not fit the free device memory or ``max_bytes``.
        """
        cp = _cupy()
        g = cls(fast_update=fast_update, max_bytes=max_bytes)
        if np.shape(state["src"]) != np.shape(state["dst"]):
            raise InvalidArgumentError("state src and dst differ in length")
        try:
            g.ids = GpuIdMap.from_external(cp.asarray(np.asarray(state["external"])), cp)
            s = cp.asarray(np.asarray(state["src"], dtype=np.int64))
            d = cp.asarray(np.asarray(state["dst"], dtype=np.int64))
            g._build(s, d)
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"restoring a graph of {len(state['src']):,} edges",
                                held=g.nbytes, changed="no graph was built") from exc
        return g
