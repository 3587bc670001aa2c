"""The dynamic graph store on the CPU: out-CSR and in-CSR kept current under batches.

Each direction is a gapped CSR (:mod:`.cpu_kernels.gapped_csr`): per vertex an offset, a degree
and a room, neighbours kept sorted inside the room. A batch touches only the vertices it
changes (compiled merge per vertex; a vertex that outgrows its room moves to the end of the
arrays with twice the room), so its cost follows the batch, not the graph: no pass over all
edges or vertices per batch. When the arrays fill up they are compacted (if over a quarter
is garbage) or doubled. A batch that carries more edges than a quarter of the graph (the base
graph, a bulk load) rebuilds the layout instead.

Both stores (this one and :class:`streamrank.store.gpu.GpuGraph`) expose a vertex's neighbours
as ``indices[offset[v] : offset[v] + degree[v]]`` for the out- and in-direction, so that the
rank code reads either the same way. Internal ids are below 2**31.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..batch import EdgeBatch
from .changes import AppliedChanges
from ..kernels.cpu import batch_plan
from ..kernels.cpu import gapped_csr as csr
from ..kernels.cpu import common as kernel_common
from ..kernels.cpu.sweep_order import admit_live, block_count, live_count, live_end, recut, sweep_order
from .memory import check_fits, check_max_bytes
from ..errors import InvalidArgumentError
from ..ids.plan import IdPlan
from ..ids.cpu import IdMap
from .normalize import collapse_last_op

MAX_VERTICES = 2**31 - 1
_SHIFT = np.int64(32)
_MASK = np.int64(0xFFFFFFFF)
#: Room of a freshly laid-out vertex: ``deg + deg * SLACK_NUM / 8 + SLACK_ADD``.
SLACK_NUM, SLACK_ADD = 2, 2


class _Side:
    """One direction's gapped CSR (arrays sized for ``vcap`` vertices)."""

    #: Bytes per neighbour slot (an int32 id; the weighted store adds a float64 weight).
    SLOT_BYTES = 4

    def __init__(self, vcap: int):
        self.off = np.zeros(vcap, dtype=np.int64)
        self.deg = np.zeros(vcap, dtype=np.int64)
        self.cap = np.zeros(vcap, dtype=np.int64)
        self.idx = np.zeros(1, dtype=np.int32)
        self.end = 0
        self.garbage = 0

    def grow_vertices(self, vcap: int):
        for name in ("off", "deg", "cap"):
            old = getattr(self, name)
            new = np.zeros(vcap, dtype=np.int64)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def lay_out(self, n, own, nbr):
        """Replace the contents with the edges ``own -> nbr`` (sorted by (own, nbr))."""
        self.off, self.deg, self.cap, self.idx, self.end = csr.layout_sorted(
            n, self.off.shape[0], own, nbr, SLACK_NUM, SLACK_ADD)
        self.garbage = 0

    @property
    def nbytes(self) -> int:
        return int(self.off.nbytes + self.deg.nbytes + self.cap.nbytes + self.idx.nbytes)

    def plan_update(self, n, d_own, i_own) -> "_SidePlan":
        """What :meth:`update` with these sorted owners will do, without changing anything:
        whether it compacts, how long ``idx`` becomes, and the bytes it allocates."""
        touched, new_deg = csr.net_changes(self.deg, d_own, i_own)
        need = csr.room_needed(self.cap, touched, new_deg)
        length = self.idx.shape[0]
        if self.end + need <= length:
            return _SidePlan(touched, new_deg, False, None, 0)
        compact, nbytes, end = False, 0, self.end
        if self.garbage * 4 > self.end:
            # a compaction gives every vertex the room of a fresh layout (csr._rooms)
            compact = True
            deg = self.deg[:n]
            end = int((deg + deg * SLACK_NUM // 8 + SLACK_ADD).sum())
            length = max(end, 1)
            nbytes += 2 * self.off.nbytes + self.SLOT_BYTES * length
            d = self.deg[touched]
            fresh_cap = d + d * SLACK_NUM // 8 + SLACK_ADD
            over = new_deg > fresh_cap
            need = int(np.maximum(csr.MIN_ROOM, 2 * new_deg[over]).sum())
        grow_to = None
        if end + need > length:
            grow_to = max(2 * length, end + need)
            nbytes += self.SLOT_BYTES * grow_to
        return _SidePlan(touched, new_deg, compact, grow_to, nbytes)

    def update(self, n, plan, d_own, d_nbr, i_own, i_nbr):
        """Apply sorted deletions and insertions as planned by :meth:`plan_update`."""
        if plan.compact:
            self.off, self.cap, self.idx, self.end = csr.compact(n, self.off, self.deg, self.idx,
                                                                 SLACK_NUM, SLACK_ADD)
            self.garbage = 0
        length = plan.grow_to
        if plan.compact:  # the plan predicted the rooms compaction gives; the kernel must not overrun
            need = csr.room_needed(self.cap, plan.touched, plan.new_deg)
            if self.end + need > (length or self.idx.shape[0]):
                length = max(length or 0, 2 * self.idx.shape[0], self.end + need)
        if length is not None and length != self.idx.shape[0]:
            idx = np.empty(length, dtype=np.int32)
            idx[: self.end] = self.idx[: self.end]
            self.idx = idx
        self.end, garbage = csr.update(self.off, self.deg, self.cap, self.idx, self.end, plan.touched,
                                       plan.new_deg, d_own, d_nbr, i_own, i_nbr)
        self.garbage += garbage


@dataclass(frozen=True)
class _SidePlan:
    """One direction's part of a batch (:meth:`_Side.plan_update`)."""

    touched: np.ndarray
    new_deg: np.ndarray
    compact: bool
    grow_to: int | None
    nbytes: int




def _sorted_pairs(own, nbr):
    """``(own, nbr)`` sorted by (own, nbr), as int64 arrays."""
    order = np.lexsort((nbr, own))
    return own[order], nbr[order]


class CpuGraph:
    """Dynamic directed graph (set semantics, self-loops allowed) on the host.

    Attributes
    ----------
    ids : IdMap
        External <-> internal vertex ids.
    out_degree, in_degree : ndarray of int64
        Per internal vertex.
    version : int
        Grows by one with every change (edges or vertices); caches key on it.

    Parameters
    ----------
    max_bytes : int, optional
        Most bytes the store may hold while it grows (:attr:`max_bytes`); default no limit.
    """

    backend_name = "cpu"
    xp = np
    #: Whether edges carry weights (:class:`streamrank.store.cpu_weighted.WeightedCpuGraph`).
    weighted = False

    def __init__(self, *, max_bytes: int | None = None):
        self._max_bytes = check_max_bytes(max_bytes)
        self.ids = IdMap(np)
        self._out = _Side(0)
        self._in = _Side(0)
        self._num_edges = 0
        self.version = 0
        self._arrays = None
        # the sweep order of the CPU Gauss-Seidel dense passes (kernels.cpu.frontier_order):
        # position -> id and id -> position, set by each layout, new vertices appended
        self._order = np.empty(0, dtype=np.int32)
        self._pos = np.empty(0, dtype=np.int32)
        self._starts = np.zeros(1, dtype=np.int64)  # its blocks' first positions (sweep_blocks)
        self._end = 0  # positions from here on hold isolated vertices only (sweep_end)
        self.order_version = 0

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, src, dst, *, max_bytes: int | None = None) -> "CpuGraph":
        """A graph holding the edges ``src[i] -> dst[i]`` (external ids; duplicates collapse);
        ``max_bytes`` as for the constructor."""
        g = cls(max_bytes=max_bytes)
        g.apply(EdgeBatch.from_arrays(np.asarray(src), np.asarray(dst)))
        return g

    # ------------------------------------------------------------------ sizes and views
    @property
    def num_vertices(self) -> int:
        return len(self.ids)

    @property
    def num_edges(self) -> int:
        return self._num_edges

    @property
    def out_offset(self):
        return self._out.off[: self.num_vertices]

    @property
    def out_degree(self):
        return self._out.deg[: self.num_vertices]

    @property
    def out_indices(self):
        return self._out.idx

    @property
    def in_offset(self):
        return self._in.off[: self.num_vertices]

    @property
    def in_degree(self):
        return self._in.deg[: self.num_vertices]

    @property
    def in_indices(self):
        return self._in.idx

    def kernel_arrays(self) -> tuple:
        """``(in_offset, in_degree, in_indices, out_offset, out_degree, out_indices)`` as the
        compiled kernels take them (cached until the next change)."""
        if self._arrays is None:
            self._arrays = (self.in_offset, self.in_degree, self._in.idx,
                            self.out_offset, self.out_degree, self._out.idx)
        return self._arrays

    @property
    def sweep_order(self):
        """``(order, pos)``: the vertices in the sweep order of the CPU Gauss-Seidel dense passes
        (position -> id) and its inverse (int32; :mod:`.cpu_kernels.frontier_order`). Each layout
        (a bulk load, a rebuild, a restore without a saved order) sorts the vertices by descending
        in-degree, ties by id (on a graph of several Gauss-Seidel blocks the last block gets the
        vertices whose stale reads cost least: :mod:`.cpu_kernels.sweep_order`), and increments
        :attr:`order_version`; a vertex added later takes the position equal to its id. A
        property of the store, so that the ranks do not depend on which workspace computed
        them."""
        n = self.num_vertices
        return self._order[:n], self._pos[:n]

    @property
    def sweep_blocks(self):
        """The first position of each block of the CPU Gauss-Seidel dense passes in
        :attr:`sweep_order` (int64, ``[0, ...]``, whole chunks; the last block ends at
        :attr:`sweep_end`): as many blocks as blocks of at most ``GS_BLOCK`` vertices need, cut at equal work
        (:func:`.cpu_kernels.sweep_order.work`, never by the thread count). Set by each layout
        with the order; a batch that adds vertices keeps it unless the block count changes, when
        the kept order is cut afresh (:func:`.cpu_kernels.sweep_order.recut`)."""
        return self._starts

    @property
    def sweep_end(self) -> int:
        """Positions of :attr:`sweep_order` from this one on hold only vertices without edges,
        which no dense pass needs to visit (:mod:`.cpu_kernels.sweep_order`: a layout puts them
        last); the last block of :attr:`sweep_blocks` ends here. A batch that gives an edge to a
        vertex at or past it moves that vertex to this position, swapped with the vertex without
        edges there, and the end one further (never back: a vertex left without edges by
        deletions stays inside): the end stays at the vertices with edges, whatever their ids."""
        return self._end

    def edges(self):
        """All edges as internal ``(src, dst)`` int64 arrays, sorted by (src, dst)."""
        return csr.edge_list(self.num_vertices, self._out.off, self._out.deg, self._out.idx, self._num_edges)

    def edges_external(self):
        """All edges as external ``(src, dst)`` arrays."""
        s, d = self.edges()
        return self.ids.external[s], self.ids.external[d]

    def has_edges(self, src, dst):
        """Whether each internal ``src[i] -> dst[i]`` is present."""
        src = np.ascontiguousarray(src, dtype=np.int64)
        dst = np.ascontiguousarray(dst, dtype=np.int64)
        return csr.has_edges(self._out.off, self._out.deg, self._out.idx, src, dst)

    # ------------------------------------------------------------------ updates
    def apply(self, batch: EdgeBatch) -> AppliedChanges:
        """Apply a batch under set semantics and return what really changed.

        Parameters
        ----------
        batch : EdgeBatch
            Insertions and deletions in arrival order (external ids). A CuPy batch is copied
            to the host.

        Returns
        -------
        AppliedChanges
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        batch = batch.to(np)
        received = len(batch)
        n_before = self.num_vertices
        # Everything up to the commit below only plans: a batch that does not fit changes nothing.
        if 0 < received <= batch_plan.MAX_EDGES and batch.id_kind == "int":  # one compiled call, the same plan
            plan, del_src, del_dst, ins_src, ins_dst, dropped = self._plan_small(batch, n_before)
        else:
            plan, del_src, del_dst, ins_src, ins_dst, dropped = self._plan(batch, n_before)
        n_after = n_before + plan.count
        if n_after > MAX_VERTICES:
            raise InvalidArgumentError(f"the CPU graph store holds at most {MAX_VERTICES} vertices")

        what = f"a batch of {received:,} edges ({plan.count:,} new vertices)"
        id_bytes = self.ids.growth_bytes(plan.count)
        # vertex rows first: longer rows (zero past the vertex count) change no vertex or edge
        held = self.nbytes if self._max_bytes is not None else 0  # host memory: only the limit is checked
        check_fits(id_bytes + self._rows_bytes(n_after), xp=np, held=held, limit=self._max_bytes, what=what)
        self._grow_vertices(n_after)
        changed = del_src.shape[0] or ins_src.shape[0]
        rebuild = changed and ins_src.shape[0] + del_src.shape[0] > max(self._num_edges // 4, 1024)
        if rebuild:
            lists = self._rebuild_bytes(n_after, int(ins_src.shape[0]))
        elif changed:
            sides = batch_plan.sorted_sides(del_src, del_dst, ins_src, ins_dst)  # as _sorted_pairs (distinct)
            out_pairs, in_pairs = sides[:4], sides[4:]
            plan_out = self._out.plan_update(n_after, out_pairs[0], out_pairs[2])
            plan_in = self._in.plan_update(n_after, in_pairs[0], in_pairs[2])
            lists = plan_out.nbytes + plan_in.nbytes
        else:
            lists = 0
        held = self.nbytes if self._max_bytes is not None else 0  # the rows may have grown
        check_fits(id_bytes + lists, xp=np, held=held, limit=self._max_bytes, what=what)

        # Commit.
        self.ids.commit_add(plan)
        if n_after > n_before:  # new vertices: positions equal to their ids (a layout below may redo them)
            self._order[n_before:n_after] = self._pos[n_before:n_after] = np.arange(n_before, n_after, dtype=np.int32)
        if rebuild:
            self._rebuild(del_src, del_dst, ins_src, ins_dst)
        elif changed:
            self._out.update(n_after, plan_out, *out_pairs)
            self._in.update(n_after, plan_in, *in_pairs)
            self._num_edges += int(ins_src.shape[0]) - int(del_src.shape[0])
        if not rebuild:
            self._keep_sweep_end(ins_src, ins_dst)
        if changed or n_after > n_before:
            self.version += 1
            self._arrays = None
        return AppliedChanges(ins_src, ins_dst, del_src, del_dst, n_before, n_after, received, dropped)

    def _keep_sweep_end(self, ins_src, ins_dst) -> None:
        """After inserting ``ins_src -> ins_dst`` in place: their endpoints lie before the sweep end."""
        if not ins_src.shape[0]:
            return
        # an endpoint past the end swaps places with the vertex without edges at the end
        end = admit_live(self._order, self._pos, self._end, ins_src, ins_dst)
        if end != self._end:
            self._end = end
            if block_count(end, kernel_common.GS_BLOCK) != self._starts.shape[0]:
                self._starts = recut(self._in.deg, self._order, end, kernel_common.GS_BLOCK)

    def _plan(self, batch, n_before):
        """``(id plan, del_src, del_dst, ins_src, ins_dst, dropped)`` of a batch: what it changes."""
        src, dst, ins, dups = collapse_last_op(np, batch.src, batch.dst, batch.insert)
        dropped = {"duplicate": dups, "present_insertion": 0, "absent_deletion": 0}

        # Deletions: only edges whose endpoints are known can be present.
        ds, dd = self.ids.lookup(src[~ins]), self.ids.lookup(dst[~ins])
        known = (ds >= 0) & (dd >= 0)
        ds, dd = ds[known], dd[known]
        present = self.has_edges(ds, dd)
        del_src, del_dst = ds[present], dd[present]
        dropped["absent_deletion"] = int((~ins).sum()) - int(del_src.shape[0])

        # Insertions: new ids grow the graph (first-appearance order: src before dst per edge; by
        # degree in the batch when it brings more than id_plan.DEGREE_ORDER_MIN new ids).
        isrc, idst = src[ins], dst[ins]
        both = np.empty(2 * isrc.shape[0], dtype=np.int64)
        both[0::2], both[1::2] = isrc, idst
        plan = self.ids.plan_add(both)
        is_, id_ = plan.internal[0::2], plan.internal[1::2]
        new = np.ones(is_.shape[0], dtype=bool)  # an edge with a new endpoint is new
        old = (is_ < n_before) & (id_ < n_before)
        new[old] = ~self.has_edges(is_[old], id_[old])
        ins_src, ins_dst = is_[new], id_[new]
        dropped["present_insertion"] = int(ins.sum()) - int(ins_src.shape[0])
        return plan, del_src, del_dst, ins_src, ins_dst, dropped

    def _plan_small(self, batch, n_before):
        """:meth:`_plan` of a batch of at most ``batch_plan.MAX_EDGES`` edges in one compiled
        call (:mod:`.cpu_kernels.batch_plan`): the same arrays and counts."""
        (dups, del_src, del_dst, absent, internal, fresh, uniq, rank, ins_src, ins_dst,
         present) = batch_plan.plan_batch(np.ascontiguousarray(batch.src), np.ascontiguousarray(batch.dst),
                                          np.ascontiguousarray(batch.insert), *self.ids.tables(), n_before,
                                          self._out.off, self._out.deg, self._out.idx)
        dropped = {"duplicate": int(dups), "present_insertion": int(present), "absent_deletion": int(absent)}
        return IdPlan(internal, fresh, uniq, rank, n_before), del_src, del_dst, ins_src, ins_dst, dropped

    @property
    def nbytes(self) -> int:
        """Bytes of the store's arrays (id map and both directions, gaps and spare rows included)."""
        return self.ids.nbytes + self._out.nbytes + self._in.nbytes + self._order.nbytes + self._pos.nbytes

    @property
    def max_bytes(self) -> int | None:
        """Most bytes the store may hold while it grows (its arrays plus the arrays a growth step
        allocates before it frees the old ones); None: no limit. A batch that would pass it
        raises :class:`~streamrank.errors.GraphCapacityError` and changes nothing."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value) -> None:
        self._max_bytes = check_max_bytes(value)

    def _rows_bytes(self, n: int) -> int:
        """Bytes :meth:`_grow_vertices` allocates to hold ``n`` vertices."""
        vcap = self._out.off.shape[0]
        return (2 * 3 * 8 + 2 * 4) * max(n, 2 * vcap, 64) if n > vcap else 0

    def _rebuild_bytes(self, n: int, insertions: int) -> int:
        """Upper bound of the bytes :meth:`_rebuild` allocates (a fresh layout of both sides)."""
        e = self._num_edges + insertions
        vcap = self._out.off.shape[0]
        edges = 16 * self._num_edges + 16 * e + 24 * e  # current edges, with the batch, sorted copies
        side = 4 * 8 * vcap + 4 * (e + e * SLACK_NUM // 8 + SLACK_ADD * n + 1)
        return edges + 2 * side

    def _grow_vertices(self, n: int):
        vcap = self._out.off.shape[0]
        if n > vcap:
            vcap = max(n, 2 * vcap, 64)
            self._out.grow_vertices(vcap)
            self._in.grow_vertices(vcap)
            for name in ("_order", "_pos"):
                old = getattr(self, name)
                new = np.empty(vcap, dtype=np.int32)
                new[: old.shape[0]] = old
                setattr(self, name, new)

    def _rebuild(self, del_src, del_dst, ins_src, ins_dst):
        """Lay both directions out afresh from the current edges and the batch (bulk loads)."""
        s, d = self.edges()
        if del_src.shape[0]:
            keys = (s << _SHIFT) | d
            gone = np.isin(keys, (del_src << _SHIFT) | del_dst)
            s, d = s[~gone], d[~gone]
        self._lay_out(np.concatenate([s, ins_src]), np.concatenate([d, ins_dst]))

    def _lay_out(self, s, d):
        n = self.num_vertices
        self._out.lay_out(n, *_sorted_pairs(s, d))
        self._in.lay_out(n, *_sorted_pairs(d, s))
        self._finish_layout(s, d)

    def _finish_layout(self, s, d):
        """After a layout of the edges ``s -> d``: the edge count and a fresh sweep order."""
        n = self.num_vertices
        self._num_edges = int(s.shape[0])
        loops = np.zeros(n, dtype=np.uint8)
        loops[s[s == d]] = 1
        self._starts = sweep_order(self._in.deg, self._out.deg, loops, n, kernel_common.GS_BLOCK, self._order,
                                   self._pos)
        self._end = live_count(self._in.deg, self._out.deg, n)  # the layout put the isolated last
        self.order_version += 1

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays that rebuild this graph exactly (internal ids preserved)."""
        s, d = self.edges()  # fresh arrays: no copy needed
        return {"external": self.ids.external.copy(), "src": s, "dst": d,
                "sweep_order": self._order[: self.num_vertices].copy(), "sweep_blocks": self._starts.copy(),
                "sweep_end": np.array([self._end], dtype=np.int64)}

    @classmethod
    def from_state(cls, state: dict, *, max_bytes: int | None = None) -> "CpuGraph":
        """Rebuild a graph saved by :meth:`state`; ``max_bytes`` applies to later batches."""
        g = cls(max_bytes=max_bytes)
        g.ids = IdMap.from_external(np.asarray(state["external"]), np)
        g._grow_vertices(len(g.ids))
        g._lay_out(np.asarray(state["src"], dtype=np.int64), np.asarray(state["dst"], dtype=np.int64))
        g._restore_order(state)
        return g

    def _restore_order(self, state: dict) -> None:
        """Take the sweep order and blocks saved in ``state``, when it holds them."""
        order = state.get("sweep_order")
        if order is not None:  # the saved order: the restored store ranks as the saved one did
            order = np.asarray(order, dtype=np.int32)
            n = self.num_vertices
            if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
                raise InvalidArgumentError("state['sweep_order'] is not a permutation of the vertices")
            self._order[:n] = order
            self._pos[order] = np.arange(n, dtype=np.int32)
            # the saved end, so that later batches move the same vertices to it; a state saved
            # without one keeps every position inside, as the version that saved it did (no batch
            # then moves a vertex, and the passes visit what that version's did)
            end = state.get("sweep_end")
            self._end = n if end is None else int(np.asarray(end, dtype=np.int64).reshape(-1)[0])
            if not live_end(self._in.deg, self._out.deg, self._order, n) <= self._end <= n:
                raise InvalidArgumentError("state['sweep_end'] leaves a vertex with edges past the sweep end")
            starts = state.get("sweep_blocks")
            if starts is None:  # saved before the blocks were kept: cut the saved order afresh
                self._starts = recut(self._in.deg, self._order, self._end, kernel_common.GS_BLOCK)
            else:
                starts = np.asarray(starts, dtype=np.int64)
                if (starts.ndim != 1 or starts.shape[0] < 1 or starts[0] != 0 or np.any(starts % kernel_common.CHUNK)
                        or np.any(np.diff(starts) <= 0) or (n > 0 and starts[-1] >= n)):
                    raise InvalidArgumentError("state['sweep_blocks'] is not a list of block starts of the sweep order")
                if starts[-1] > 0 and starts[-1] >= self._end:
                    raise InvalidArgumentError("state['sweep_blocks'] starts a block past the sweep end")
                self._starts = starts.copy()
