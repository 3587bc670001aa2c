"""The weighted CPU store's plan of a small batch in one compiled call (Numba).

:meth:`streamrank.store.cpu_weighted.WeightedCpuGraph.apply` works out what a batch changes
under its ``set`` or ``sum`` rule: the records grouped by pair in arrival order, each pair's
stored weight, the fold of its records (:func:`.weighted_csr.fold_pairs`), which pairs appear,
go or change weight, and the internal ids of the new pairs' endpoints with the new ones
numbered. In NumPy that is some thirty array operations per batch, each paying Python's
dispatch (about half of a 50-edge batch's graph update on sx-mathoverflow);
:func:`plan_weighted_batch` does the same in one call, with the same arrays and counts, for a
batch of at most :data:`.batch_plan.MAX_EDGES` edges, as :func:`.batch_plan.plan_batch` does
for the unweighted store. :func:`sorted_sides` and :func:`sum_touched` are the commit's sorts
and out-weight sums, also in one call each.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .batch_plan import argsort_stable, _by_pair, _lookup, number_ids
from .weighted_csr import fold_record, stored_weight, sum_weights


@njit(cache=True, nogil=True)
def plan_weighted_batch(src, dst, insert, weight, summing, keys, vals, new_keys, new_vals, n_before, off, deg, idx,
                        wt):
    """What a weighted batch changes, as ``WeightedCpuGraph.apply`` plans it.

    Parameters
    ----------
    src, dst : int64 arrays
        External ids in arrival order (at most :data:`.batch_plan.MAX_EDGES`).
    insert : bool array
    weight : float64 array
        Each record's weight, checked (NaN on a deletion without one).
    summing : bool
        The ``sum`` rule (else ``set``).
    keys, vals, new_keys, new_vals : int64 arrays
        The id map's tables (:meth:`streamrank.ids.cpu.IdMap.tables`).
    n_before : int
        Vertices in the store.
    off, deg, idx, wt : arrays
        The store's weighted out-CSR.

    Returns
    -------
    tuple
        ``(duplicates, present_insertions, absent_deletions, del_src, del_dst, internal, fresh,
        uniq, rank, ins_w, rew_src, rew_dst, rew_w)``: the drop counts; the pairs that go
        (internal ids); the id plan of the new pairs' interleaved endpoints (their insertions are
        ``internal[0::2] -> internal[1::2]`` of weights ``ins_w``); the pairs present before and
        after with another weight, and that weight. Pairs in (src, dst) order of the external
        ids, as the NumPy plan lists them.
    """
    n = src.shape[0]
    # records by pair, then arrival: stable sorts by dst, then by src
    o1 = argsort_stable(dst)
    o2 = argsort_stable(src[o1])
    order = o1[o2]
    starts = np.empty(n + 1, dtype=np.int64)
    npairs = 0
    for i in range(n):
        a = order[i]
        if i == 0 or src[a] != src[order[i - 1]] or dst[a] != dst[order[i - 1]]:
            starts[npairs] = i
            npairs += 1
    starts[npairs] = n
    kind = np.empty(npairs, dtype=np.int8)  # 0 same, 1 new, 2 gone, 3 reweighted
    after = np.empty(npairs)
    u_of = np.empty(npairs, dtype=np.int64)
    v_of = np.empty(npairs, dtype=np.int64)
    n_new = n_gone = n_rew = present = absent = 0
    for p in range(npairs):
        a = order[starts[p]]
        u = _lookup(keys, vals, new_keys, new_vals, src[a])
        v = _lookup(keys, vals, new_keys, new_vals, dst[a])
        u_of[p] = u
        v_of[p] = v
        before = stored_weight(off, deg, idx, wt, u, v)
        w = before
        for r in range(starts[p], starts[p + 1]):  # the fold (weighted_csr.fold_pairs)
            w = fold_record(w, insert[order[r]], weight[order[r]], summing)
        after[p] = w
        was, now = not np.isnan(before), not np.isnan(w)
        if now and not was:
            kind[p] = 1
            n_new += 1
        elif was and not now:
            kind[p] = 2
            n_gone += 1
        elif was and now and w != before:
            kind[p] = 3
            n_rew += 1
        else:
            kind[p] = 0
            if insert[order[starts[p + 1] - 1]]:
                present += 1
            else:
                absent += 1
    del_src = np.empty(n_gone, dtype=np.int64)
    del_dst = np.empty(n_gone, dtype=np.int64)
    rew_src = np.empty(n_rew, dtype=np.int64)
    rew_dst = np.empty(n_rew, dtype=np.int64)
    rew_w = np.empty(n_rew)
    both = np.empty(2 * n_new, dtype=np.int64)
    ins_w = np.empty(n_new)
    kd = kr = ki = 0
    for p in range(npairs):
        k = kind[p]
        if k == 1:
            a = order[starts[p]]
            both[2 * ki] = src[a]
            both[2 * ki + 1] = dst[a]
            ins_w[ki] = after[p]
            ki += 1
        elif k == 2:
            del_src[kd] = u_of[p]
            del_dst[kd] = v_of[p]
            kd += 1
        elif k == 3:
            rew_src[kr] = u_of[p]
            rew_dst[kr] = v_of[p]
            rew_w[kr] = after[p]
            kr += 1
    internal, fresh, uniq, rank = number_ids(both, keys, vals, new_keys, new_vals, n_before)
    return (n - npairs, present, absent, del_src, del_dst, internal, fresh, uniq, rank, ins_w, rew_src, rew_dst,
            rew_w)


@njit(cache=True, nogil=True)
def _by_pair_weighted(own, nbr, w):
    """``(own, nbr, w)`` of distinct pairs of internal ids (below ``2**31``) sorted by (own, nbr)."""
    order = argsort_stable((own << 31) | nbr)
    return own[order], nbr[order], w[order]


@njit(cache=True, nogil=True)
def sorted_sides(del_src, del_dst, ins_src, ins_dst, ins_w):
    """A weighted batch's deletions and insertions (distinct edges, internal ids) sorted for the
    out-CSR, by (src, dst), and for the in-CSR, by (dst, src), the insertions with their
    weights: ``(out deletions' src, dst, in deletions' dst, src, out insertions' src, dst,
    weight, in insertions' dst, src, weight)``, what ``lexsort`` gives for distinct pairs."""
    a, b = _by_pair(del_src, del_dst)
    c, d = _by_pair(del_dst, del_src)
    e, f, g = _by_pair_weighted(ins_src, ins_dst, ins_w)
    h, i, j = _by_pair_weighted(ins_dst, ins_src, ins_w)
    return a, b, c, d, e, f, g, h, i, j


@njit(cache=True, nogil=True)
def sum_touched(off, deg, wt, a, b, c, out):
    """``out[v]`` = the sum of ``v``'s stored weights (in list order) for every ``v`` in ``a``,
    ``b`` or ``c`` (internal ids), once per vertex."""
    na, nb = a.shape[0], b.shape[0]
    both = np.empty(na + nb + c.shape[0], dtype=np.int64)
    both[:na] = a
    both[na:na + nb] = b
    both[na + nb:] = c
    both = both[argsort_stable(both)]
    keep = np.empty(both.shape[0], dtype=np.bool_)
    for i in range(both.shape[0]):
        keep[i] = i == 0 or both[i - 1] != both[i]
    sum_weights(off, deg, wt, both[keep], out)
