"""The host-planned path of :meth:`streamrank.store.gpu_weighted.WeightedGpuGraph.apply`: a small host batch.

A batch of at most :data:`SMALL_MAX` edges whose arrays are on the host is planned on the host,
with one round trip to the device: the batch is sorted by pair and arrival (NumPy), the pairs'
internal ids, stored weights and the rows' degrees and capacities are looked up on the device
by one launch and read back in one copy (``WeightedGpuGraph._pair_info``), the records are folded in arrival order (the CPU store's Numba fold,
:func:`streamrank.kernels.cpu.weighted_csr.fold_pairs`), new ids are numbered by the rule of both
id maps (:func:`streamrank.ids.plan.plan_new_ids`), and the sorted keys, the insertion groups and
the relocation plan (``plan_groups`` in ``graph_update.cu``, computed here from the degrees read
back) go up in three copies. The commit is then the same kernels as the device-planned path
(:mod:`.gpu_weighted`): weights set in place, deletions, insertions, the touched vertices'
out-weights. Larger batches, and batches already on the device, take the device-planned path.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..batch import check_weights
from ..ids.plan import plan_new_ids
from ..kernels.cpu import weighted_csr as wcsr
from .changes import AppliedChanges
from .gpu_lists import MAX_VERTICES
from ..errors import InvalidArgumentError

#: Host batches of at most this many edges are planned on the host.
SMALL_MAX = 4096


def is_small(batch) -> bool:
    """Whether ``batch`` takes the host-planned path (a host batch of at most :data:`SMALL_MAX` edges)."""
    return 0 < len(batch) <= SMALL_MAX and isinstance(batch.src, np.ndarray) and isinstance(batch.dst, np.ndarray)


def _groups(keys, deg, cap, end: int):
    """The grouping and relocation plan of sorted keys ``u << 32 | t`` (host; ``plan_groups`` and
    :meth:`Direction.plan_insertions`): per key the end of its group, per group leader the new
    offset (else -1) and capacity of a list that overflows, and the slots to reserve. ``deg`` and
    ``cap`` are the rows of each key's ``u`` before the batch."""
    m = keys.shape[0]
    if m == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z.astype(np.int32), 0
    u = keys >> 32
    lead = np.ones(m, dtype=bool)
    lead[1:] = u[1:] != u[:-1]
    starts = np.flatnonzero(lead)
    ends = np.append(starts[1:], m)
    gend = np.repeat(ends, ends - starts).astype(np.int64)
    k = ends - starts
    d, c = deg[starts].astype(np.int64), cap[starts].astype(np.int64)
    need_g = np.where(d + k > c, np.maximum(2 * (d + k), 4), 0)
    need = np.zeros(m, dtype=np.int64)
    need[starts] = need_g
    csum = np.cumsum(need)
    new_off = np.where(need > 0, end + csum - need, -1).astype(np.int64)
    return gend, new_off, need.astype(np.int32), int(csum[-1])


def host_records(batch) -> tuple:
    """``(src, dst, insert, weight)`` of a host batch as NumPy arrays (int64, int64, bool,
    float64): weight 1 on an insertion and NaN on a deletion of an unweighted batch, the weights
    checked otherwise (a batch built by the constructor was not validated: a bad weight must not
    reach the ranks)."""
    src = np.asarray(batch.src, dtype=np.int64)
    dst = np.asarray(batch.dst, dtype=np.int64)
    ins = np.asarray(batch.insert, dtype=bool)
    w = np.where(ins, 1.0, np.nan) if batch.weight is None else check_weights(np, batch.weight, ins)
    return src, dst, ins, w


def apply_small(g, batch, headroom=None) -> AppliedChanges:
    """Apply the host batch ``batch`` (:func:`is_small`) to the weighted store ``g``."""
    cp = g.xp
    received = len(batch)
    n_before = g.num_vertices
    src, dst, ins, w = host_records(batch)
    order = np.lexsort((np.arange(received), dst, src))
    s, d, ins, w = src[order], dst[order], np.ascontiguousarray(ins[order]), w[order]
    first = np.ones(received, dtype=bool)
    first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
    starts = np.append(np.flatnonzero(first), received).astype(np.int64)
    ps, pd = s[starts[:-1]], d[starts[:-1]]
    npairs = int(ps.shape[0])

    # One round trip: internal ids, stored weights, and the rows of both endpoints.
    info = g._pair_info(np.concatenate([ps, pd]), npairs).reshape(7, npairs)
    is_, id_ = info[0], info[1]
    before = np.ascontiguousarray(info[2]).view(np.float64)
    out_deg, out_cap, in_deg, in_cap = info[3], info[4], info[5], info[6]

    after = wcsr.fold_pairs(starts, ins, w, before, g.multi_edges == "sum")
    was, now = ~np.isnan(before), ~np.isnan(after)
    new, gone = now & ~was, was & ~now
    rew = was & now & (after != before)
    last_insert = ins[starts[1:] - 1]
    same = ~(new | gone | rew)
    dropped = {"duplicate": received - npairs, "present_insertion": int((same & last_insert).sum()),
               "absent_deletion": int((same & ~last_insert).sum())}

    both = np.empty(2 * int(new.sum()), dtype=np.int64)
    both[0::2], both[1::2] = ps[new], pd[new]
    known = np.empty_like(both)
    known[0::2], known[1::2] = is_[new], id_[new]
    plan = plan_new_ids(np, both, known, n_before)
    n_after = n_before + plan.count
    if n_after > MAX_VERTICES:
        raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
    what = f"a batch of {received:,} edges ({plan.count:,} new vertices)"
    temp = int(headroom(n_after)) if headroom is not None else 0
    id_bytes = g.ids.growth_bytes(plan.count)
    vcap = max(n_after, 2 * g._vcap, 16) if n_after > g._vcap else g._vcap

    i_s, i_d, i_w = plan.internal[0::2], plan.internal[1::2], after[new]
    o = np.lexsort((i_d, i_s))
    ikey, iw, o_deg, o_cap = (i_s[o] << 32) | i_d[o], i_w[o], out_deg[new][o], out_cap[new][o]
    r = np.lexsort((i_s, i_d))
    rikey, riw, r_deg, r_cap = (i_d[r] << 32) | i_s[r], i_w[r], in_deg[new][r], in_cap[new][r]
    d_s, d_d = is_[gone], id_[gone]
    dkey = np.sort((d_s << 32) | d_d)
    rdkey = np.sort((d_d << 32) | d_s)
    r_s, r_d, r_w = is_[rew], id_[rew], after[rew]
    gend_o, off_o, cap_o, extra_out = _groups(ikey, o_deg, o_cap, g._out.end)
    gend_i, off_i, cap_i, extra_in = _groups(rikey, r_deg, r_cap, g._in.end)
    needed = id_bytes + g._rows_bytes(vcap) + g._out.reserve_bytes(extra_out) + g._in.reserve_bytes(extra_in)
    if needed or n_after > n_before:  # (no growth: the rank update reuses what the last one freed)
        g._check(needed, what, scratch=temp)
    g._grow_vertices(vcap)
    g.ids.reserve(plan.count)
    g._out.reserve(extra_out)
    g._in.reserve(extra_in)

    # Three copies up: the int64 parts, the weights, the new capacities.
    n_ins, n_del, n_rew = int(ikey.shape[0]), int(dkey.shape[0]), int(r_s.shape[0])
    zeros = np.zeros(dkey.shape[0], dtype=np.int64)
    gend_d, gend_rd = _groups(dkey, zeros, zeros, 0)[0], _groups(rdkey, zeros, zeros, 0)[0]
    parts = [ikey, rikey, dkey, rdkey, gend_o, gend_i, off_o, off_i, r_s, r_d,
             ikey >> 32, ikey & 0xFFFFFFFF, dkey >> 32, dkey & 0xFFFFFFFF, np.concatenate([i_s, d_s, r_s]),
             gend_d, gend_rd]
    up = cp.asarray(np.concatenate(parts).astype(np.int64))
    views, at = [], 0
    for p in parts:
        views.append(up[at:at + p.shape[0]])
        at += p.shape[0]
    (ikey_d, rikey_d, dkey_d, rdkey_d, gend_o_d, gend_i_d, off_o_d, off_i_d, r_s_d, r_d_d,
     ins_src, ins_dst, del_src, del_dst, touched, gend_d_d, gend_rd_d) = views
    wts = cp.asarray(np.concatenate([iw, riw, r_w]))
    iw_d, riw_d, r_w_d = wts[:n_ins], wts[n_ins:2 * n_ins], wts[2 * n_ins:]
    caps = cp.asarray(np.concatenate([cap_o, cap_i]))
    cap_o_d, cap_i_d = caps[:n_ins], caps[n_ins:]

    # Commit.
    if plan.count:
        g.ids.commit_add(dataclasses.replace(plan, fresh=cp.asarray(plan.fresh)))
    if n_rew:  # present before and after: no slot moves
        g._out.set_weights(r_s_d, r_d_d, r_w_d)
        g._in.set_weights(r_d_d, r_s_d, r_w_d)
    g._out.delete_weighted(dkey_d, n_del, gend_d_d)
    g._in.delete_weighted(rdkey_d, n_del, gend_rd_d)
    g._out.insert_weighted(ikey_d, iw_d, n_ins, (gend_o_d, off_o_d, cap_o_d, None))
    g._in.insert_weighted(rikey_d, riw_d, n_ins, (gend_i_d, off_i_d, cap_i_d, None))
    g._out.end += extra_out
    g._in.end += extra_in
    g._num_edges += n_ins - n_del
    g._out.row_sums(touched, g._w_out)
    g.version += 1
    changes = AppliedChanges(ins_src, ins_dst, del_src, del_dst, n_before, n_after, received, dropped,
                             r_s_d, r_d_d)
    g.last_changes = changes
    g._maybe_compact()
    return changes
