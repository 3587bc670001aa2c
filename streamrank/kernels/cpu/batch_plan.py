"""The CPU graph store's plan of a small batch in one compiled call (Numba).

:meth:`streamrank.store.cpu.CpuGraph.apply` first works out what a batch changes: the last op of
every (src, dst) pair (:func:`streamrank.store.normalize.collapse_last_op`), which deletions hit a
stored edge, the internal ids of the insertions' endpoints with the new ones numbered
(:meth:`streamrank.ids.cpu.IdMap.plan_add`), and which insertions are not stored yet. Written
with NumPy that is about thirty array operations on a few dozen edges, each paying Python's
dispatch, and right after a rank step, which leaves the interpreter's own data out of cache:
0.17 ms per 51-edge batch of sx-mathoverflow in the replay. :func:`plan_batch` does the same
in one call, with the same results (arrays and counts) as the NumPy code, for a batch of at
most :data:`MAX_EDGES` edges: its at most ``2 * MAX_EDGES`` new ids are numbered by first
appearance, as :func:`streamrank.ids.plan.plan_new_ids` numbers an addition of at most
:data:`streamrank.ids.plan.DEGREE_ORDER_MIN` ids.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .gapped_csr import lower_bound

#: Largest batch :func:`plan_batch` takes: half of :data:`streamrank.ids.plan.DEGREE_ORDER_MIN`,
#: so that its at most ``2 * MAX_EDGES`` new ids stay within first-appearance numbering
#: (tests/test_graph_batch_plan.py holds the two together).
MAX_EDGES = 2048


@njit(cache=True, nogil=True)
def argsort_stable(a):
    """Stable argsort of the int64 ``a`` (bottom-up merge sort): the order ``np.argsort(a,
    kind="mergesort")`` gives. Written out because Numba's sorts cost seconds of compile time on a
    cold cache (about 4 s for this module's five), for batches of a few dozen edges."""
    n = a.shape[0]
    idx = np.arange(n)
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if a[idx[j]] < a[idx[i]]:  # ties keep the left run first: stable
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
        idx, tmp = tmp, idx
        width *= 2
    return idx


@njit(cache=True, inline="always")
def _find(keys, vals, x):
    """``vals`` at the position of ``x`` in the sorted ``keys``; -1 where absent."""
    lo = lower_bound(keys, 0, keys.shape[0], x)
    if lo < keys.shape[0] and keys[lo] == x:
        return vals[lo]
    return -1


@njit(cache=True, inline="always")
def _lookup(keys, vals, new_keys, new_vals, x):
    """The internal id of external ``x`` in the id map's two sorted tables; -1 where unknown."""
    v = _find(keys, vals, x)
    if v < 0:
        v = _find(new_keys, new_vals, x)
    return v


@njit(cache=True, inline="always")
def _stored(off, deg, idx, u, w):
    """Whether the out-CSR stores ``u -> w`` (binary search in ``u``'s sorted segment)."""
    end = off[u] + deg[u]
    lo = lower_bound(idx, off[u], end, w)
    return lo < end and idx[lo] == w


@njit(cache=True, nogil=True)
def number_ids(both, keys, vals, new_keys, new_vals, n_before):
    """The id plan of the external ids ``both`` (at most ``2 * MAX_EDGES``) against the id map's
    tables: ``(internal, fresh, uniq, rank)`` as :class:`streamrank.ids.plan.IdPlan` holds them,
    the unknown ids numbered from ``n_before`` by first appearance."""
    nb = both.shape[0]
    internal = np.empty(nb, dtype=np.int64)
    missing = 0
    for i in range(nb):
        internal[i] = _lookup(keys, vals, new_keys, new_vals, both[i])
        missing += internal[i] < 0
    new_ids = np.empty(missing, dtype=np.int64)
    k = 0
    for i in range(nb):
        if internal[i] < 0:
            new_ids[k] = both[i]
            k += 1
    # the new ids: sorted and unique (uniq), numbered by first appearance (rank)
    srt = argsort_stable(new_ids)
    uniq = np.empty(missing, dtype=np.int64)
    first = np.empty(missing, dtype=np.int64)
    group = np.empty(missing, dtype=np.int64)  # new_ids[i] == uniq[group[i]]
    nu = 0
    for i in range(missing):
        j = srt[i]
        if nu == 0 or new_ids[j] != uniq[nu - 1]:
            uniq[nu] = new_ids[j]
            first[nu] = j  # the stable sort puts a value's first appearance first
            nu += 1
        group[j] = nu - 1
    uniq, first = uniq[:nu], first[:nu]
    by_first = argsort_stable(first)
    rank = np.empty(nu, dtype=np.int64)
    for r in range(nu):
        rank[by_first[r]] = r
    fresh = uniq[by_first]
    k = 0
    for i in range(nb):
        if internal[i] < 0:
            internal[i] = n_before + rank[group[k]]
            k += 1
    return internal, fresh, uniq, rank


@njit(cache=True, nogil=True)
def plan_batch(src, dst, insert, keys, vals, new_keys, new_vals, n_before, off, deg, idx):
    """What a batch changes, as :meth:`streamrank.store.cpu.CpuGraph.apply` plans it.

    Parameters
    ----------
    src, dst : int64 arrays
        External ids in arrival order (at most :data:`MAX_EDGES`).
    insert : bool array
    keys, vals, new_keys, new_vals : int64 arrays
        The id map's main and side tables (:meth:`streamrank.ids.cpu.IdMap.tables`).
    n_before : int
        Vertices in the store.
    off, deg, idx : arrays
        The store's out-CSR.

    Returns
    -------
    tuple
        ``(duplicates, del_src, del_dst, absent_deletions, internal, fresh, uniq, rank, ins_src,
        ins_dst, present_insertions)``: the collapsed duplicates; the deletions of stored edges
        (internal ids, in (src, dst) order) and the count of the others; the id plan of the
        insertions' interleaved endpoints (:class:`streamrank.ids.plan.IdPlan`'s ``internal``,
        ``fresh``, ``uniq``, ``rank``); the insertions of edges not stored (internal ids, in
        (src, dst) order of the external ids) and the count of the others.
    """
    n = src.shape[0]
    # the last op of each pair: stable sorts by dst, then by src, give (src, dst, arrival) order
    o1 = argsort_stable(dst)
    o2 = argsort_stable(src[o1])
    order = o1[o2]
    m = 0
    n_ins = 0
    n_del = 0
    last = np.empty(n, dtype=np.int64)  # positions (in arrival order) of the surviving ops
    for i in range(n):
        a = order[i]
        if i + 1 < n:
            b = order[i + 1]
            if src[b] == src[a] and dst[b] == dst[a]:
                continue
        last[m] = a
        m += 1
        if insert[a]:
            n_ins += 1
        else:
            n_del += 1
    # deletions: both endpoints known and the edge stored
    del_src = np.empty(n_del, dtype=np.int64)
    del_dst = np.empty(n_del, dtype=np.int64)
    k = 0
    for i in range(m):
        a = last[i]
        if insert[a]:
            continue
        u = _lookup(keys, vals, new_keys, new_vals, src[a])
        w = _lookup(keys, vals, new_keys, new_vals, dst[a])
        if u >= 0 and w >= 0 and _stored(off, deg, idx, u, w):
            del_src[k] = u
            del_dst[k] = w
            k += 1
    absent = n_del - k
    del_src, del_dst = del_src[:k], del_dst[:k]
    # insertions: the interleaved endpoints (src before dst per edge) and their internal ids
    both = np.empty(2 * n_ins, dtype=np.int64)
    k = 0
    for i in range(m):
        a = last[i]
        if insert[a]:
            both[2 * k] = src[a]
            both[2 * k + 1] = dst[a]
            k += 1
    internal, fresh, uniq, rank = number_ids(both, keys, vals, new_keys, new_vals, n_before)
    # insertions of edges not stored (an edge with a new endpoint is new)
    ins_src = np.empty(n_ins, dtype=np.int64)
    ins_dst = np.empty(n_ins, dtype=np.int64)
    k = 0
    for i in range(n_ins):
        u = internal[2 * i]
        w = internal[2 * i + 1]
        if u >= n_before or w >= n_before or not _stored(off, deg, idx, u, w):
            ins_src[k] = u
            ins_dst[k] = w
            k += 1
    return (n - m, del_src, del_dst, absent, internal, fresh, uniq, rank, ins_src[:k], ins_dst[:k], n_ins - k)


@njit(cache=True, nogil=True)
def insert_sorted(keys, vals, add_keys, add_vals):
    """``(keys, vals)`` with the sorted ``add_keys`` (none of them in ``keys``) and their
    ``add_vals`` merged in, as new arrays: what ``np.insert`` at ``np.searchsorted(keys,
    add_keys)`` gives, in one call (the id map's side table, :meth:`streamrank.ids.cpu.IdMap.commit_add`)."""
    n, k = keys.shape[0], add_keys.shape[0]
    out_k = np.empty(n + k, dtype=keys.dtype)
    out_v = np.empty(n + k, dtype=vals.dtype)
    i = 0
    j = 0
    for w in range(n + k):
        if j < k and (i >= n or add_keys[j] <= keys[i]):
            out_k[w] = add_keys[j]
            out_v[w] = add_vals[j]
            j += 1
        else:
            out_k[w] = keys[i]
            out_v[w] = vals[i]
            i += 1
    return out_k, out_v


@njit(cache=True, nogil=True)
def _by_pair(own, nbr):
    """``(own, nbr)`` of distinct pairs of internal ids (below ``2**31``) sorted by (own, nbr)."""
    key = (own << 31) | nbr
    key = key[argsort_stable(key)]
    return key >> 31, key & 0x7FFFFFFF


@njit(cache=True, nogil=True)
def sorted_sides(del_src, del_dst, ins_src, ins_dst):
    """The deletions and insertions of a batch (distinct edges, internal ids) sorted for the
    out-CSR, by (src, dst), and for the in-CSR, by (dst, src): ``(out deletions' src, dst,
    out insertions' src, dst, in deletions' dst, src, in insertions' dst, src)``, what
    ``lexsort`` gives for distinct pairs, in one call."""
    a, b = _by_pair(del_src, del_dst)
    c, d = _by_pair(ins_src, ins_dst)
    e, f = _by_pair(del_dst, del_src)
    g, h = _by_pair(ins_dst, ins_src)
    return a, b, c, d, e, f, g, h
