"""The dynamic graph store on the device: out- and in-direction gapped CSR kept current by batches.

Each direction holds, per vertex ``u``, an offset ``off[u]`` (int64), a degree ``deg[u]`` and a
capacity ``cap[u]`` (int32) into one int32 array ``idx``: the neighbours are
``idx[off[u] : off[u] + deg[u]]`` and the slots up to ``off[u] + cap[u]`` are free (DESIGN.md,
"Where the time goes"). A batch is applied without touching the rest of the graph:

- normalization (collapse to the last op per pair, id lookup, membership tests) works on the
  batch only; membership is answered by one warp per queried edge scanning the shorter of
  ``out(u)`` and ``in(v)`` (``edge_find`` in ``kernels/graph_update.cu``);
- a deletion removes the edge from its vertex's list by compacting that list in place (one warp
  per source vertex, all of its deleted targets at once), so order inside a list is not kept;
- an insertion goes into a gap; a vertex whose list would overflow is moved to the end of ``idx``
  with twice the room (the host reserves those slots), and a compaction (a pass over all edges)
  runs when the garbage left behind passes the live edges.

The batch costs O(batch + degrees of the vertices it touches) device work and a handful of small
synchronizing copies (each commented); the graph never travels to the host. Internal ids are
dense and below 2**31 - 1, assigned by :class:`streamrank.idmap.IdMap` on the device in the same
order as the CPU store, so both stores give a batch the same internal ids and drop counts.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from .batch import EdgeBatch
from .changes import AppliedChanges
from .errors import BackendUnavailableError, InvalidArgumentError, KernelError
from .idmap import IdMap
from .kernels.loader import get_kernel
from .normalize import collapse_last_op

MAX_VERTICES = 2**31 - 2
_NO_KEY = np.int64(0x7FFFFFFFFFFFFFFF)
_MASK32 = np.int64(0xFFFFFFFF)
_UPDATE_CU = "graph_update.cu"
_UPDATE_NAMES = (
    "edge_find<int>",
    "delete_grouped<int>",
    "insert_grouped<int>",
    "relocate_all<int>",
    "gather_edges<int>",
    "plan_groups<int>",
    "delete_grouped_block<int>",
)
#: Lists at least this long are compacted by a whole block instead of a warp.
_BIG_LIST = 2048
#: Threads per block of the helper kernels.
BLOCK = 256


# ---------------------------------------------------------------------- launch helpers
def _cupy():
    try:
        import cupy
    except Exception as exc:
        raise BackendUnavailableError(f"the GPU graph store needs CuPy: {exc}") from exc
    return cupy


@functools.lru_cache(maxsize=None)
def sm_count() -> int:
    """Multiprocessors of the current device (queried once)."""
    cp = _cupy()
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def grid_for_threads(items: int, *, block: int = BLOCK, per_sm: int = 16) -> int:
    """Blocks for a grid-stride kernel over ``items`` threads, capped at ``per_sm`` per SM."""
    need = max(1, -(-int(items) // int(block)))
    return int(min(need, per_sm * sm_count()))


def grid_for_warps(items: int, *, block: int = BLOCK, per_sm: int = 16) -> int:
    """Blocks for a grid-stride kernel with one warp per item."""
    return grid_for_threads(int(items) * 32, block=block, per_sm=per_sm)


def launch(fn, grid: int, block: int, args: tuple, *, shared_mem: int = 0) -> None:
    """Launch ``fn`` on the current stream (asynchronous), re-raising CuPy errors as KernelError.

    Scalars in ``args`` must be NumPy scalars of the kernel's parameter types.
    """
    try:
        fn((int(grid),), (int(block),), args, shared_mem=int(shared_mem))
    except Exception as exc:  # cupy.cuda.driver.CUDADriverError, TypeError on bad arguments
        raise KernelError(f"launching {getattr(fn, 'name', fn)} failed: {exc}") from exc


def _update_kernel(name: str):
    return get_kernel(_UPDATE_CU, name, _UPDATE_NAMES)


def _slack(cp, deg):
    """Spare slots given to a vertex of degree ``deg`` at (re)build time."""
    return 2 + (deg >> 3)


def _exclusive_cumsum(cp, a):
    out = cp.empty(a.shape[0] + 1, dtype=cp.int64)
    out[0] = 0
    cp.cumsum(a, out=out[1:])
    return out


# ---------------------------------------------------------------------- one direction
class _Direction:
    """One gapped CSR direction: ``off`` (int64), ``deg``/``cap`` (int32), ``idx`` (int32)."""

    def __init__(self, cp, vcap: int):
        self.cp = cp
        self.off = cp.zeros(vcap, dtype=cp.int64)
        self.deg = cp.zeros(vcap, dtype=cp.int32)
        self.cap = cp.zeros(vcap, dtype=cp.int32)
        self.idx = cp.zeros(1024, dtype=cp.int32)
        self.end = 0  # host copy of the first never-used slot of idx

    @classmethod
    def build(cls, cp, n: int, vcap: int, u, t) -> "_Direction":
        """From edges ``u -> t`` (int64 device arrays, sorted by (u, t), distinct)."""
        d = cls(cp, vcap)
        e = int(u.shape[0])
        deg = cp.bincount(u, minlength=n).astype(cp.int64) if e else cp.zeros(n, cp.int64)
        cap = deg + _slack(cp, deg)
        off = _exclusive_cumsum(cp, cap)
        start = _exclusive_cumsum(cp, deg)
        end = int(off[n].get()) if n else 0  # sync: the host sizes idx
        d.idx = cp.zeros(end + max(1 << 16, end // 4), dtype=cp.int32)
        if e:
            pos = off[u] + (cp.arange(e, dtype=cp.int64) - start[u])
            d.idx[pos] = t.astype(cp.int32)
        d.off[:n] = off[:n]
        d.deg[:n] = deg.astype(cp.int32)
        d.cap[:n] = cap.astype(cp.int32)
        d.end = end
        return d

    def grow_vertices(self, vcap: int) -> None:
        cp = self.cp
        old = self.off.shape[0]
        if vcap <= old:
            return
        for name in ("off", "deg", "cap"):
            a = getattr(self, name)
            b = cp.zeros(vcap, dtype=a.dtype)
            b[:old] = a
            setattr(self, name, b)

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more slots after ``end`` (copies idx when it must grow)."""
        need = self.end + int(extra)
        if need <= self.idx.shape[0]:
            return
        cp = self.cp
        bigger = cp.zeros(max(need + (1 << 16), int(self.idx.shape[0] * 1.5)), dtype=cp.int32)
        bigger[: self.end] = self.idx[: self.end]
        self.idx = bigger

    def compact(self, n: int) -> None:
        """Rewrite idx with every vertex at ``deg + slack`` capacity (a pass over all edges)."""
        cp = self.cp
        deg = self.deg[:n].astype(cp.int64)
        cap = deg + _slack(cp, deg)
        off = _exclusive_cumsum(cp, cap)
        end = int(off[n].get())  # sync: the host sizes the new idx
        new_idx = cp.zeros(end + max(1 << 16, end // 4), dtype=cp.int32)
        if n:
            launch(_update_kernel("relocate_all<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, off, self.idx, new_idx))
        self.idx = new_idx
        self.off[:n] = off[:n]
        self.cap[:n] = cap.astype(cp.int32)
        self.end = end

    def gather(self, n: int, num_edges: int):
        """All ``(u, t)`` pairs of this direction as int64 arrays (unsorted)."""
        cp = self.cp
        start = _exclusive_cumsum(cp, self.deg[:n].astype(cp.int64))
        us = cp.empty(num_edges, dtype=cp.int64)
        ts = cp.empty(num_edges, dtype=cp.int64)
        if n and num_edges:
            launch(_update_kernel("gather_edges<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, start, self.idx, us, ts))
        return us, ts

    def _groups(self, keys):
        """``(gend, need)`` of sorted keys (``plan_groups`` in graph_update.cu, one launch)."""
        cp = self.cp
        m = int(keys.shape[0])
        gend = cp.empty(m, dtype=cp.int64)
        need = cp.empty(m, dtype=cp.int64)
        if m:
            launch(_update_kernel("plan_groups<int>"), grid_for_threads(m), BLOCK,
                   (keys, np.int64(m), self.deg, self.cap, gend, need))
        return gend, need

    def plan_insertions(self, keys):
        """Relocation plan for sorted keys ``u << 32 | t`` (invalid keys = _NO_KEY, at the end).

        Returns ``(gend, new_off, new_cap, total)``: per key the end of its group, and for group
        leaders whose list overflows the new offset (else -1) and capacity; ``total`` is a device
        scalar holding the slots to reserve.
        """
        cp = self.cp
        gend, need = self._groups(keys)
        if keys.shape[0] == 0:
            return gend, need, need.astype(cp.int32), cp.zeros((), dtype=cp.int64)
        csum = cp.cumsum(need)
        new_off = cp.where(need > 0, self.end + csum - need, -1)
        return gend, new_off, need.astype(cp.int32), csum[-1]

    def delete(self, keys, m: int) -> None:
        if m == 0:
            return
        gend, _ = self._groups(keys)
        args = (keys, gend, np.int64(m), self.off, self.deg, self.idx, np.int32(_BIG_LIST))
        launch(_update_kernel("delete_grouped<int>"), grid_for_warps(m), BLOCK, args)
        launch(_update_kernel("delete_grouped_block<int>"), grid_for_threads(m * BLOCK), BLOCK, args)

    def insert(self, keys, m: int, plan) -> None:
        if m == 0:
            return
        gend, new_off, new_cap, _ = plan
        launch(_update_kernel("insert_grouped<int>"), grid_for_warps(m), BLOCK,
               (keys, gend, np.int64(m), new_off, new_cap, self.off, self.deg, self.cap, self.idx))


# ---------------------------------------------------------------------- the store
class GpuGraph:
    """Dynamic directed graph (set semantics, self-loops allowed) on the device.

    Same contract as :class:`streamrank.graph.CpuGraph` (docs/ARCHITECTURE.md, "Graph store
    contract"); arrays are CuPy, degrees int32, offsets int64, and ``*_indices`` hold gaps
    beyond each vertex's degree.

    Attributes
    ----------
    ids : IdMap
        External <-> internal vertex ids, on the device.
    version : int
        Batches applied (bumped by every :meth:`apply`).
    last_changes : AppliedChanges or None
        What the last :meth:`apply` changed.
    """

    backend_name = "gpu"

    def __init__(self):
        cp = _cupy()
        self.xp = cp
        self.ids = IdMap(cp)
        self._vcap = 0
        self._out = _Direction(cp, 0)
        self._in = _Direction(cp, 0)
        self._num_edges = 0
        self.version = 0
        self.last_changes = None
        self.compactions = 0
        #: Set to a dict to accumulate per-stage wall times (ms) of apply(); each stage then ends
        #: with a device synchronization, so profile only outside timed runs.
        self.stage_ms = None
        self._t = 0.0

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
    def from_edges(cls, src, dst) -> "GpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` (external ids; duplicates collapse).

        Internal ids follow the CPU store's rule (first appearance in (src, dst) order). Host or
        device arrays are accepted; the build sorts the edges once on the device.
        """
        cp = _cupy()
        batch = EdgeBatch.from_arrays(cp.asarray(src), cp.asarray(dst), xp=cp)
        g = cls()
        s, d = batch.src, batch.dst
        if s.shape[0] == 0:
            return g
        # Sorted distinct pairs, as collapse_last_op would leave them (all ops are insertions).
        # Packing into one key needs ids below 2**31; otherwise sort by (src, dst) with lexsort.
        hi_id = int(cp.maximum(s.max(), d.max()).get())  # sync: chooses the sort path
        if hi_id < 2**31:
            keys = cp.unique((s << 32) | d)
            s, d = keys >> 32, keys & _MASK32
            del keys
        else:
            s, d, _, _ = collapse_last_op(cp, s, d, cp.ones(s.shape, dtype=bool))
        both = cp.empty(2 * s.shape[0], dtype=cp.int64)
        both[0::2], both[1::2] = s, d
        internal, _ = g.ids.add(both)
        del both
        g._build(internal[0::2], internal[1::2])
        return g

    def _build(self, s, d) -> None:
        """Rebuild both directions from distinct internal edges ``s -> d`` (int64, device)."""
        cp = self.xp
        n = len(self.ids)
        if n > MAX_VERTICES:
            raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
        self._vcap = n + max(16, n // 4)
        keys = cp.sort((s << 32) | d)
        self._out = _Direction.build(cp, n, self._vcap, keys >> 32, keys & _MASK32)
        keys = cp.sort((d << 32) | s)
        self._in = _Direction.build(cp, n, self._vcap, keys >> 32, keys & _MASK32)
        self._num_edges = int(keys.shape[0])

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
            launch(_update_kernel("edge_find<int>"), grid_for_warps(m), BLOCK,
                   (s.astype(cp.int32), d.astype(cp.int32), np.int64(m),
                    self._out.off, self._out.deg, self._out.idx,
                    self._in.off, self._in.deg, self._in.idx, found))
        return found.astype(bool)

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch) -> AppliedChanges:
        """Apply a batch under set semantics on the device and return what really changed.

        Parameters
        ----------
        batch : EdgeBatch
            Insertions and deletions in arrival order (external ids); a host batch is copied to
            the device (the batch only, never the graph).

        Returns
        -------
        AppliedChanges
            Device arrays of internal ids, sorted by (src, dst); drop counts as on the CPU.
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        cp = self.xp
        try:
            return self._apply(batch.to(cp))
        except (InvalidArgumentError, KernelError):
            raise
        except cp.cuda.memory.OutOfMemoryError as exc:
            raise KernelError(f"out of device memory applying a batch: {exc}") from exc

    def _apply(self, batch: EdgeBatch) -> AppliedChanges:
        cp = self.xp
        self._stage("")
        received = len(batch)
        n_before = self.num_vertices
        # collapse_last_op syncs once (nonzero) to size the collapsed batch.
        src, dst, ins, dups = collapse_last_op(cp, batch.src, batch.dst, batch.insert)
        dropped = {"duplicate": int(dups), "present_insertion": 0, "absent_deletion": 0}
        self._stage("collapse")

        # Boolean selections sync to size their outputs (two small syncs).
        dels = ~ins
        dsrc, ddst = src[dels], dst[dels]
        isrc, idst = src[ins], dst[ins]
        n_del_req, n_ins_req = int(dsrc.shape[0]), int(isrc.shape[0])

        # Deletions: unknown endpoints (-1) are absent; edge_find reads the graph before the batch.
        ds, dd = self.ids.lookup(dsrc), self.ids.lookup(ddst)
        found = self._find(ds, dd)
        self._stage("deletions: lookup + membership")

        # Insertions: new ids grow the graph (first appearance: src before dst per edge).
        both = cp.empty(2 * n_ins_req, dtype=cp.int64)
        both[0::2], both[1::2] = isrc, idst
        internal, _ = self.ids.add(both)  # syncs once when new ids arrive
        self._stage("insertions: id map")
        n_after = self.num_vertices
        if n_after > MAX_VERTICES:
            raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
        if n_after > self._vcap:
            self._vcap = max(n_after, 2 * self._vcap, 16)
            self._out.grow_vertices(self._vcap)
            self._in.grow_vertices(self._vcap)
        is_, id_ = internal[0::2], internal[1::2]
        new = ~self._find(is_, id_)
        self._stage("insertions: membership")

        dkey = cp.sort(cp.where(found, (ds << 32) | dd, _NO_KEY))
        rdkey = cp.sort(cp.where(found, (dd << 32) | ds, _NO_KEY))
        ikey = cp.sort(cp.where(new, (is_ << 32) | id_, _NO_KEY))
        rikey = cp.sort(cp.where(new, (id_ << 32) | is_, _NO_KEY))
        plan_out = self._out.plan_insertions(ikey)
        plan_in = self._in.plan_insertions(rikey)
        # The one sync that sizes everything: applied counts and slots to reserve.
        counts = cp.stack([
            found.sum(dtype=cp.int64), new.sum(dtype=cp.int64), plan_out[3], plan_in[3],
        ]).get()
        n_del, n_ins, extra_out, extra_in = (int(v) for v in counts)
        self._stage("sort + plan + count")
        dropped["absent_deletion"] = n_del_req - n_del
        dropped["present_insertion"] = n_ins_req - n_ins

        self._out.reserve(extra_out)
        self._in.reserve(extra_in)
        self._out.delete(dkey, n_del)
        self._in.delete(rdkey, n_del)
        self._out.insert(ikey, n_ins, plan_out)
        self._in.insert(rikey, n_ins, plan_in)
        self._out.end += extra_out
        self._in.end += extra_in
        self._num_edges += n_ins - n_del
        self._stage("list kernels")
        self._maybe_compact()

        changes = AppliedChanges(
            ikey[:n_ins] >> 32, ikey[:n_ins] & _MASK32, dkey[:n_del] >> 32, dkey[:n_del] & _MASK32,
            n_before, n_after, received, dropped,
        )
        self.version += 1
        self.last_changes = changes
        return changes

    def _maybe_compact(self) -> None:
        n = self.num_vertices
        live = self._num_edges + 2 * n
        for d in (self._out, self._in):
            if d.end > 2 * live + (1 << 20):
                d.compact(n)
                self.compactions += 1

    def compact(self) -> None:
        """Compact both directions now (a pass over all edges)."""
        n = self.num_vertices
        self._out.compact(n)
        self._in.compact(n)
        self.compactions += 1

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly (copies the graph to the host)."""
        s, d = self.edges()
        return {"external": self.ids.external.get(), "src": s.get(), "dst": d.get()}

    @classmethod
    def from_state(cls, state: dict) -> "GpuGraph":
        """Rebuild a graph saved by :meth:`state` (of either store)."""
        cp = _cupy()
        g = cls()
        g.ids = IdMap.from_external(cp.asarray(np.asarray(state["external"])), cp)
        s = cp.asarray(np.asarray(state["src"], dtype=np.int64))
        d = cp.asarray(np.asarray(state["dst"], dtype=np.int64))
        if s.shape != d.shape:
            raise InvalidArgumentError("state src and dst differ in length")
        g._build(s, d)
        return g
