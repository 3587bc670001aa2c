"""The weighted graph store's gapped CSR (Numba): :mod:`.gapped_csr` with a weight per slot.

A weighted direction adds ``wt`` (float64) beside ``idx``: the weight of the edge whose
neighbour sits in ``idx[j]`` is ``wt[j]``. The unweighted store never calls these kernels, so
its updates run exactly as before. The room bookkeeping (:func:`.gapped_csr.net_changes`,
:func:`.gapped_csr.room_needed`, the rooms of a fresh layout) is shared.

The batch fold (:func:`fold_pairs`) turns a batch's records, grouped by pair in arrival order,
into each pair's final state under the ``set`` or ``sum`` rule.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import gapped_csr
from .gapped_csr import _rooms, lower_bound

#: ``sum`` mode: a subtraction that leaves at most this fraction of the weight before it
#: removes the edge (float error never leaves a ghost edge).
ZERO_REL = 1e-12


@njit(cache=True, inline="always")
def stored_weight(off, deg, idx, wt, u, v):
    """The weight of the stored ``u -> v`` (internal ids, -1 allowed), NaN where it is not stored."""
    if u < 0 or v < 0:
        return np.nan
    lo = off[u]
    hi = lo + deg[u]
    p = lower_bound(idx, lo, hi, v)
    if p < hi and idx[p] == v:
        return wt[p]
    return np.nan


@njit(cache=True, nogil=True)
def edge_weights(off, deg, idx, wt, own, nbr):
    """The weight of each ``own[i] -> nbr[i]``, NaN where it is not stored."""
    out = np.empty(own.shape[0])
    for i in range(own.shape[0]):
        out[i] = stored_weight(off, deg, idx, wt, own[i], nbr[i])
    return out


@njit(cache=True, inline="always")
def fold_record(w, insert, x, summing):
    """The weight after one record (``insert``, weight ``x``: NaN on a deletion without one)
    from ``w`` (NaN: absent), under the rule :func:`fold_pairs` states."""
    if insert:
        return w + x if summing and not np.isnan(w) else x
    if np.isnan(w):
        return w  # deleting an absent edge: nothing
    if summing and not np.isnan(x):
        left = w - x
        return left if left > ZERO_REL * w else np.nan
    return np.nan


@njit(cache=True, nogil=True)
def fold_pairs(starts, insert, weight, before, summing):
    """The final weight of each pair (NaN: absent) after its records in arrival order.

    ``starts`` (length pairs + 1) delimits each pair's records in ``insert`` / ``weight``
    (weight NaN: a deletion without a weight); ``before`` is the pair's stored weight (NaN:
    absent). ``set``: an insertion sets the weight, a deletion removes the edge. ``sum``: an
    insertion adds its weight, a deletion with a weight subtracts it (the edge goes when at
    most :data:`ZERO_REL` of the weight before is left), one without removes the edge.
    """
    out = np.empty(starts.shape[0] - 1)
    for p in range(starts.shape[0] - 1):
        w = before[p]
        for r in range(starts[p], starts[p + 1]):
            w = fold_record(w, insert[r], weight[r], summing)
        out[p] = w
    return out


@njit(cache=True, nogil=True)
def update(off, deg, cap, idx, wt, end, touched, new_deg, d_own, d_nbr, i_own, i_nbr, i_wt):
    """:func:`.gapped_csr.update` carrying the weights: delete ``d_own[i] -> d_nbr[i]`` (all
    stored), insert ``i_own[i] -> i_nbr[i]`` with weight ``i_wt[i]`` (none stored), both sorted
    by (own, nbr). Returns ``(new end, garbage slots left behind)``."""
    return gapped_csr.update(off, deg, cap, idx, end, touched, new_deg, d_own, d_nbr, i_own, i_nbr, wt, i_wt)


@njit(cache=True, nogil=True)
def set_weights(off, deg, idx, wt, own, nbr, w):
    """Overwrite the weight of each stored ``own[i] -> nbr[i]`` with ``w[i]``."""
    for i in range(own.shape[0]):
        v = own[i]
        lo = off[v]
        p = lower_bound(idx, lo, lo + deg[v], nbr[i])
        wt[p] = w[i]


@njit(cache=True, nogil=True)
def sum_weights(off, deg, wt, vertices, out):
    """``out[v]`` = the sum of ``v``'s stored weights (in list order), for each ``v`` of ``vertices``."""
    for v in vertices:
        s = 0.0
        for j in range(off[v], off[v] + deg[v]):
            s += wt[j]
        out[v] = s


@njit(cache=True, nogil=True)
def compact(n, off, deg, idx, wt, slack_num, slack_add):
    """A fresh gapped layout of the first ``n`` vertices in id order: ``(off, cap, idx, wt, end)``."""
    new_off, new_cap, end = _rooms(n, deg, off.shape[0], slack_num, slack_add)
    new_idx = np.empty(max(end, 1), dtype=idx.dtype)
    new_wt = np.empty(max(end, 1))
    for v in range(n):
        new_idx[new_off[v]: new_off[v] + deg[v]] = idx[off[v]: off[v] + deg[v]]
        new_wt[new_off[v]: new_off[v] + deg[v]] = wt[off[v]: off[v] + deg[v]]
    return new_off, new_cap, new_idx, new_wt, end


@njit(cache=True, nogil=True)
def layout_sorted(n, vcap, own, nbr, w, slack_num, slack_add):
    """The gapped layout of weighted edges sorted by (own, nbr), no duplicates:
    ``(off, deg, cap, idx, wt, end)``."""
    deg = np.zeros(vcap, dtype=np.int64)
    for i in range(own.shape[0]):
        deg[own[i]] += 1
    off, cap, end = _rooms(n, deg, vcap, slack_num, slack_add)
    idx = np.empty(max(end, 1), dtype=np.int32)
    wt = np.empty(max(end, 1))
    fill = off.copy()
    for i in range(own.shape[0]):
        v = own[i]
        idx[fill[v]] = nbr[i]
        wt[fill[v]] = w[i]
        fill[v] += 1
    return off, deg, cap, idx, wt, end


@njit(cache=True, nogil=True)
def weight_list(n, off, deg, wt, num_edges):
    """The stored weights in the order of :func:`.gapped_csr.edge_list`."""
    out = np.empty(num_edges)
    k = 0
    for v in range(n):
        for j in range(off[v], off[v] + deg[v]):
            out[k] = wt[j]
            k += 1
    return out
