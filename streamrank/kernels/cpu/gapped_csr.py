"""The CPU graph store's gapped CSR (Numba): O(batch) updates of one direction's adjacency.

One direction (out or in) is ``off``, ``deg``, ``cap`` (int64 per vertex) and ``idx`` (int32):
vertex ``v``'s neighbours are ``idx[off[v] : off[v] + deg[v]]``, kept sorted, with room for
``cap[v]``. An update merges each touched vertex's sorted deletions and insertions into its
segment, in place while it fits, else into a new segment of twice the room at the end of the
used part ``idx[:end]`` (the old room becomes garbage until the next compaction). The caller
checks the room first (:func:`net_changes`, :func:`room_needed`) and grows or compacts the arrays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Room of a relocated segment: twice its new degree, at least this.
MIN_ROOM = 4


@njit(cache=True, inline="always")
def lower_bound(idx, lo, hi, w):
    """First position in the sorted ``idx[lo:hi]`` holding a value >= ``w``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if idx[mid] < w:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def has_edges(off, deg, idx, own, nbr):
    """Whether each ``own[i] -> nbr[i]`` is stored (binary search in the sorted segment)."""
    out = np.zeros(own.shape[0], dtype=np.bool_)
    for i in range(own.shape[0]):
        v = own[i]
        lo = off[v]
        hi = lo + deg[v]
        p = lower_bound(idx, lo, hi, nbr[i])
        out[i] = p < hi and idx[p] == nbr[i]
    return out


@njit(cache=True, nogil=True)
def net_changes(deg, d_own, i_own):
    """The touched vertices (sorted, unique) and their new degrees ``(touched, new_deg)``, from
    the sorted deletion / insertion owners."""
    touched = np.empty(d_own.shape[0] + i_own.shape[0], dtype=np.int64)
    new_deg = np.empty(touched.shape[0], dtype=np.int64)
    p = 0
    q = 0
    t = 0
    while p < d_own.shape[0] or q < i_own.shape[0]:
        if q >= i_own.shape[0] or (p < d_own.shape[0] and d_own[p] <= i_own[q]):
            v = d_own[p]
        else:
            v = i_own[q]
        nd = deg[v]
        while p < d_own.shape[0] and d_own[p] == v:
            nd -= 1
            p += 1
        while q < i_own.shape[0] and i_own[q] == v:
            nd += 1
            q += 1
        touched[t] = v
        new_deg[t] = nd
        t += 1
    return touched[:t], new_deg[:t]


@njit(cache=True, nogil=True)
def room_needed(cap, touched, new_deg):
    """Slots past the used end that :func:`update` will take (relocated segments), for the
    :func:`net_changes` of the update and the rooms ``cap`` it will find."""
    need = 0
    for t in range(touched.shape[0]):
        if new_deg[t] > cap[touched[t]]:
            need += max(MIN_ROOM, 2 * new_deg[t])
    return need


@njit(cache=True, nogil=True)
def update(off, deg, cap, idx, end, touched, new_deg, d_own, d_nbr, i_own, i_nbr, wt=None, i_wt=None):
    """Delete ``d_own[i] -> d_nbr[i]`` (all stored) and insert ``i_own[i] -> i_nbr[i]`` (none
    stored), both sorted by (own, nbr); ``(touched, new_deg)`` is their :func:`net_changes`.
    ``idx`` must have :func:`room_needed` slots past ``end``. Returns ``(new end, garbage slots
    left behind)``. A weighted store passes its weights ``wt`` (moved with their edges) and the
    insertions' ``i_wt``; without them Numba compiles the weight lines away. A row that stays in
    place is rewritten from its first changed position on (the neighbours below the smallest
    one inserted or deleted stay where they are): a hub's long row costs its tail, not its
    length."""
    maxdeg = 0
    for t in range(touched.shape[0]):
        maxdeg = max(maxdeg, deg[touched[t]])
    old = np.empty(maxdeg, dtype=idx.dtype)
    oldw = np.empty(maxdeg if wt is not None else 0)
    garbage = 0
    p = 0
    q = 0
    for t in range(touched.shape[0]):
        v = touched[t]
        o = off[v]
        dv = deg[v]
        target = o
        start = 0  # the old neighbours before it are kept in place
        if new_deg[t] > cap[v]:
            garbage += cap[v]
            target = end
            cap[v] = max(MIN_ROOM, 2 * new_deg[t])
            end += cap[v]
            off[v] = target
        else:
            has_ins = q < i_own.shape[0] and i_own[q] == v
            has_del = p < d_own.shape[0] and d_own[p] == v
            if has_ins and has_del:
                start = lower_bound(idx, o, o + dv, min(i_nbr[q], d_nbr[p])) - o
            elif has_ins:
                start = lower_bound(idx, o, o + dv, i_nbr[q]) - o
            elif has_del:
                start = lower_bound(idx, o, o + dv, d_nbr[p]) - o
        old[: dv - start] = idx[o + start: o + dv]
        if wt is not None:
            oldw[: dv - start] = wt[o + start: o + dv]
        # three-way merge: old neighbours minus deletions, plus insertions, sorted
        w = target + start
        i = start
        while i < dv or (q < i_own.shape[0] and i_own[q] == v):
            if q < i_own.shape[0] and i_own[q] == v and (i >= dv or i_nbr[q] < old[i - start]):
                idx[w] = i_nbr[q]
                if wt is not None:
                    wt[w] = i_wt[q]
                w += 1
                q += 1
            else:
                if p < d_own.shape[0] and d_own[p] == v and d_nbr[p] == old[i - start]:
                    p += 1
                else:
                    idx[w] = old[i - start]
                    if wt is not None:
                        wt[w] = oldw[i - start]
                    w += 1
                i += 1
        deg[v] = w - target
    return end, garbage


@njit(cache=True, nogil=True)
def _rooms(n, deg, vcap, slack_num, slack_add):
    """Offsets and rooms of a fresh layout of the first ``n`` vertices in id order, room
    ``deg + deg * slack_num // 8 + slack_add`` each (arrays for ``vcap`` vertices, zero past
    ``n``): ``(off, cap, end)``."""
    off = np.zeros(vcap, dtype=np.int64)
    cap = np.zeros(vcap, dtype=np.int64)
    end = 0
    for v in range(n):
        off[v] = end
        cap[v] = deg[v] + deg[v] * slack_num // 8 + slack_add
        end += cap[v]
    return off, cap, end


@njit(cache=True, nogil=True)
def compact(n, off, deg, idx, slack_num, slack_add):
    """A fresh gapped layout of the first ``n`` vertices in id order (:func:`_rooms`):
    ``(off, cap, idx, end)``."""
    new_off, new_cap, end = _rooms(n, deg, off.shape[0], slack_num, slack_add)
    new_idx = np.empty(max(end, 1), dtype=idx.dtype)
    for v in range(n):
        new_idx[new_off[v]: new_off[v] + deg[v]] = idx[off[v]: off[v] + deg[v]]
    return new_off, new_cap, new_idx, end


@njit(cache=True, nogil=True)
def layout_sorted(n, vcap, own, nbr, slack_num, slack_add):
    """The gapped layout of edges sorted by (own, nbr), no duplicates: ``(off, deg, cap, idx, end)``."""
    deg = np.zeros(vcap, dtype=np.int64)
    for i in range(own.shape[0]):
        deg[own[i]] += 1
    off, cap, end = _rooms(n, deg, vcap, slack_num, slack_add)
    idx = np.empty(max(end, 1), dtype=np.int32)
    fill = off.copy()
    for i in range(own.shape[0]):
        v = own[i]
        idx[fill[v]] = nbr[i]
        fill[v] += 1
    return off, deg, cap, idx, end


@njit(cache=True, nogil=True)
def edge_list(n, off, deg, idx, num_edges):
    """All stored edges ``(own, nbr)`` as int64 arrays, in (own, nbr) order."""
    own = np.empty(num_edges, dtype=np.int64)
    nbr = np.empty(num_edges, dtype=np.int64)
    k = 0
    for v in range(n):
        for j in range(off[v], off[v] + deg[v]):
            own[k] = v
            nbr[k] = idx[j]
            k += 1
    return own, nbr
