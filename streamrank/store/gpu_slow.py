"""The slow path of :meth:`streamrank.store.gpu.GpuGraph.apply`: any batch, in a few dozen launches.

Taken by batches larger than the fast path's maximum and by those whose growth the fast path's
reserved room cannot hold (docs/architecture.md). The batch is planned first
(collapse, id lookup, new ids numbered without being added, membership, sorted keys, the
relocation plan), its growth is checked against the free device memory and the store's
``max_bytes`` (:func:`streamrank.store.memory.check_fits`), room is reserved (spare capacity
only), and only then is the batch committed, by steps that allocate nothing. A batch that does
not fit raises :class:`~streamrank.errors.GraphCapacityError` with the graph as it was.
"""

from __future__ import annotations

from ..batch import EdgeBatch
from .changes import AppliedChanges
from ..errors import InvalidArgumentError
from .gpu_lists import MASK32, MAX_VERTICES, NO_KEY, count_flags, ids_fit_31_bits
from .normalize import collapse_last_op

#: Device bytes of the slow path's per-edge temporaries (keys, sorts, plans), counted when a
#: batch's growth is checked against the free memory.
TEMP_BYTES_PER_EDGE = 320
#: Batches larger than this collapse by one sort of packed keys when their ids fit 31 bits (the
#: check costs a sync, about what the packed sort saves on a few thousand edges).
PACKED_COLLAPSE_MIN = 4096


def apply_slow(g, batch: EdgeBatch, *, headroom=None) -> AppliedChanges:
    """Apply ``batch`` (device arrays) to the :class:`~streamrank.store.gpu.GpuGraph` ``g``;
    ``headroom(n_after)``: bytes the caller allocates after the batch, checked with its growth.

    Raises
    ------
    GraphCapacityError
        When the growth does not fit; nothing changed but spare capacity.
    """
    cp = g.xp
    g._stage("")
    received = len(batch)
    n_before = g.num_vertices
    what = f"a batch of {received:,} edges"
    temp = TEMP_BYTES_PER_EDGE * received + n_before // 4  # + the deletions' target masks
    g._check(0, what, scratch=temp)  # the planning below allocates before the growth is known
    # One small sync chooses the collapse's sort (one radix sort of packed keys when every id
    # fits 31 bits, else a three-key lexsort); collapse_last_op syncs once (nonzero) to size
    # the collapsed batch.
    packed = received > PACKED_COLLAPSE_MIN and ids_fit_31_bits(cp, batch.src, batch.dst)
    src, dst, ins, dups = collapse_last_op(cp, batch.src, batch.dst, batch.insert, packed=packed)
    dropped = {"duplicate": int(dups), "present_insertion": 0, "absent_deletion": 0}
    g._stage("collapse")

    # Deletions first, then insertions, each in collapsed order: one stable sort of the flags and
    # one sync for the count (four boolean selections would sync four times).
    n_req = int(src.shape[0])
    order = cp.argsort(ins.astype(cp.int32))  # CuPy's sorts are stable
    counted = cp.zeros(2, dtype=cp.int64)
    count_flags(cp, ins, None, counted)
    n_ins_req = int(counted[0].get())  # sync: the split's sizes
    n_del_req = n_req - n_ins_req
    src, dst = src[order], dst[order]
    dsrc, ddst = src[:n_del_req], dst[:n_del_req]
    isrc, idst = src[n_del_req:], dst[n_del_req:]

    # Deletions: unknown endpoints (-1) are absent; edge_find reads the graph before the batch.
    ds, dd = g.ids.lookup(dsrc), g.ids.lookup(ddst)
    found = g._find(ds, dd)
    g._stage("deletions: lookup + membership")

    # Insertions: new ids grow the graph (first appearance: src before dst per edge; by degree
    # in the batch when it brings more than id_plan.DEGREE_ORDER_MIN new ids). Up to the
    # commit below nothing changes but spare capacity: a batch that does not fit raises
    # GraphCapacityError with the graph as it was.
    both = cp.empty(2 * n_ins_req, dtype=cp.int64)
    both[0::2], both[1::2] = isrc, idst
    plan = g.ids.plan_add(both)  # syncs once when new ids arrive
    g._stage("insertions: id map")
    n_after = n_before + plan.count
    if n_after > MAX_VERTICES:
        raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
    what = f"a batch of {received:,} edges ({plan.count:,} new vertices)"
    if headroom is not None:
        temp += int(headroom(n_after))
    id_bytes = g.ids.growth_bytes(plan.count)
    vcap = max(n_after, 2 * g._vcap, 16) if n_after > g._vcap else g._vcap
    g._check(id_bytes + g._rows_bytes(vcap), what, scratch=temp)
    g._grow_vertices(vcap)  # zero rows past the vertex count: no vertex or edge changes
    is_, id_ = plan.internal[0::2], plan.internal[1::2]
    new = ~g._find(is_, id_)  # a new vertex's row is empty: its edges are new
    g._stage("insertions: membership")

    dkey = cp.sort(cp.where(found, (ds << 32) | dd, NO_KEY))
    rdkey = cp.sort(cp.where(found, (dd << 32) | ds, NO_KEY))
    ikey = cp.sort(cp.where(new, (is_ << 32) | id_, NO_KEY))
    rikey = cp.sort(cp.where(new, (id_ << 32) | is_, NO_KEY))
    plan_out = g._out.plan_insertions(ikey)
    plan_in = g._in.plan_insertions(rikey)
    # The one sync that sizes everything: applied counts and slots to reserve. The flags are
    # counted by one kernel for every size (count_flags), not by CuPy's sum, whose reductions
    # compile a specialization per size class mid-stream.
    sizing = cp.zeros(4, dtype=cp.int64)
    count_flags(cp, found, new, sizing)
    sizing[2], sizing[3] = plan_out[3], plan_in[3]
    counts = sizing.get()
    n_del, n_ins, extra_out, extra_in = (int(v) for v in counts)
    g._stage("sort + plan + count")
    dropped["absent_deletion"] = n_del_req - n_del
    dropped["present_insertion"] = n_ins_req - n_ins
    g._check(id_bytes + g._out.reserve_bytes(extra_out) + g._in.reserve_bytes(extra_in), what,
                scratch=temp)
    # Room first (spare capacity: nothing visible changes), and the deletion groups and the
    # changes' arrays, so that the commit allocates nothing.
    g.ids.reserve(plan.count)
    g._out.reserve(extra_out)
    g._in.reserve(extra_in)
    del_out = g._out.plan_deletions(dkey, n_del, n=n_before)  # deleted edges join old vertices
    del_in = g._in.plan_deletions(rdkey, n_del, n=n_before)
    changes = AppliedChanges(
        ikey[:n_ins] >> 32, ikey[:n_ins] & MASK32, dkey[:n_del] >> 32, dkey[:n_del] & MASK32,
        n_before, n_after, received, dropped,
    )

    # Commit.
    g.ids.commit_add(plan)
    g._out.delete(dkey, n_del, del_out)
    g._in.delete(rdkey, n_del, del_in)
    g._out.insert(ikey, n_ins, plan_out)
    g._in.insert(rikey, n_ins, plan_in)
    g._out.end += extra_out
    g._in.end += extra_in
    g._num_edges += n_ins - n_del
    g.version += 1
    g.last_changes = changes
    g._stage("list kernels")
    g._maybe_compact()
    g._ensure_room()
    return changes
