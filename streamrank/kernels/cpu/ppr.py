"""Personalized PageRank kernels on the CPU (Numba): power iteration, push and pull rounds,
Monte Carlo walks, and the micro-kernels the hybrid cost model times.

Graph arrays follow the store contract (offset / degree / int32 indices, gaps allowed). On a
weighted graph the kernels also take the edge weights beside the indices (``in_wt``, ``out_wt``)
and pass the out-weights where the out-degrees go as divisors; those arguments default to None,
for which Numba removes the weighted branches (``is None`` on an argument typed None) before it
compiles: the unweighted kernels are the same machine code as without them.
The kernels a query spends its time in release the GIL (``nogil``): the daemon answers queries
on threads of its own, and a query must not hold its ingest thread.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import CHUNK, PARALLEL_EDGES, inverse_degrees, nchunks


# ------------------------------------------------------------------------------ power
@njit(cache=True, nogil=True)
def _power_chunk(k, n, in_off, in_deg, in_idx, c, pers, alpha, extra, personalization, leaky, store32, p, new,
                 part_max, in_wt=None):
    m = 0.0
    for v in range(k * CHUNK, min(k * CHUNK + CHUNK, n)):
        acc = 0.0
        if in_wt is None:
            for j in range(in_off[v], in_off[v] + in_deg[v]):
                acc += c[in_idx[j]]
        else:
            for j in range(in_off[v], in_off[v] + in_deg[v]):
                acc += c[in_idx[j]] * in_wt[j]
        val = alpha * acc + (1.0 - alpha) * pers[v]
        if not leaky:
            val += extra * (pers[v] if personalization else 1.0)
        if store32:
            val = np.float64(np.float32(val))
        new[v] = val
        m = max(m, abs(val - p[v]))
    part_max[k] = m


@njit(cache=True, nogil=True, parallel=True)
def _power_par(nch, n, in_off, in_deg, in_idx, c, pers, alpha, extra, personalization, leaky, store32, p, new,
               part_max, in_wt=None):
    for k in prange(nch):
        _power_chunk(k, n, in_off, in_deg, in_idx, c, pers, alpha, extra, personalization, leaky, store32, p, new,
                     part_max, in_wt)


@njit(cache=True, nogil=True)
def power_iterate(in_off, in_deg, in_idx, out_deg, pers, alpha, personalization, leaky, tol, max_iter, store32,
                  num_edges, in_wt=None):
    """``p <- alpha X p + alpha (d . p) w + (1 - alpha) v`` from ``p = v`` until the
    L-infinity change is below ``tol`` (``w = v`` when ``personalization``, else ``1/n``;
    ``leaky`` drops the dangling term; ``store32`` rounds every iterate to float32). Weighted:
    ``out_deg`` holds the out-weights and ``in_wt`` the weights beside ``in_idx``.

    Returns ``(p, iterations, converged, last change)``.
    """
    n = pers.shape[0]
    nch = nchunks(n)
    par = num_edges + n >= PARALLEL_EDGES and nch > 1
    inv = inverse_degrees(out_deg, n, False, par)
    p = pers.copy()
    if store32:
        for v in range(n):
            p[v] = np.float64(np.float32(p[v]))
    new = np.empty(n)
    c = np.empty(n)
    part_max = np.zeros(max(nch, 1))
    change = np.inf
    for it in range(1, max_iter + 1):
        dmass = 0.0
        for v in range(n):
            c[v] = p[v] * inv[v]
            if out_deg[v] == 0:
                dmass += p[v]
        extra = alpha * dmass * (1.0 if personalization else 1.0 / n)
        if par:
            _power_par(nch, n, in_off, in_deg, in_idx, c, pers, alpha, extra, personalization, leaky, store32, p,
                       new, part_max, in_wt)
        else:
            for k in range(nch):
                _power_chunk(k, n, in_off, in_deg, in_idx, c, pers, alpha, extra, personalization, leaky, store32,
                             p, new, part_max, in_wt)
        change = 0.0
        for k in range(nch):
            change = max(change, part_max[k])
        p, new = new, p
        if change < tol:
            return p, it, True, change
    return p, max_iter, False, change


# ------------------------------------------------------------------------------ push / pull
@njit(cache=True, nogil=True)
def _settle(F, r, p, alpha, out_deg, val):
    """Move ``(1 - alpha) r[u]`` into ``p[u]`` for the frontier; ``val`` gets the old residuals.
    Returns the dangling vertices' share ``alpha * sum r``."""
    dmass = 0.0
    for i in range(F.shape[0]):
        u = F[i]
        val[i] = r[u]
        r[u] = 0.0
        p[u] += (1.0 - alpha) * val[i]
        if out_deg[u] == 0:
            dmass += alpha * val[i]
    return dmass


@njit(cache=True, nogil=True)
def _dangling_to_seeds(r, seeds, seed_w, dmass, seen, cand, m):
    for i in range(seeds.shape[0]):
        s = seeds[i]
        r[s] += dmass * seed_w[i]
        if not seen[s]:
            seen[s] = 1
            cand[m] = s
            m += 1
    return m


@njit(cache=True, nogil=True)
def push_round(F, r, p, thr, seen, alpha, out_off, out_deg, out_idx, seeds, seed_w, personalization, out_w=None,
               out_wt=None):
    """One forward-push round over the frontier ``F``: settle, scatter ``alpha r[u] / deg`` to
    the out-neighbours, send dangling mass to the seeds (or return it as lost). Returns
    ``(next frontier sorted, edges pushed, lost mass)``; ``seen`` (zeros, length n) is left zero.
    Weighted (``out_w`` the out-weights, ``out_wt`` the weights beside ``out_idx``): edge ``j``
    gets ``alpha r[u] out_wt[j] / out_w[u]``."""
    val = np.empty(F.shape[0])
    dmass = _settle(F, r, p, alpha, out_deg, val)
    cand = np.empty(64, dtype=np.int64)
    m = 0
    edges = 0
    for i in range(F.shape[0]):
        u = F[i]
        d = out_deg[u]
        if d == 0:
            continue
        share = alpha * val[i] / d if out_w is None else alpha * val[i] / out_w[u]
        for j in range(out_off[u], out_off[u] + d):
            w = out_idx[j]
            if out_wt is None:
                r[w] += share
            else:
                r[w] += share * out_wt[j]
            if not seen[w]:
                seen[w] = 1
                if m == cand.shape[0]:
                    cand = np.concatenate((cand, np.empty(m, dtype=np.int64)))
                cand[m] = w
                m += 1
        edges += d
    lost = 0.0
    if dmass != 0.0:
        if personalization:
            if m + seeds.shape[0] > cand.shape[0]:
                cand = np.concatenate((cand, np.empty(m + seeds.shape[0], dtype=np.int64)))
            m = _dangling_to_seeds(r, seeds, seed_w, dmass, seen, cand, m)
        else:
            lost = dmass
    nxt = np.sort(cand[:m])
    k = 0
    for i in range(m):
        w = nxt[i]
        seen[w] = 0
        if r[w] >= thr[w]:
            nxt[k] = w
            k += 1
    return nxt[:k].copy(), edges, lost


@njit(cache=True, nogil=True)
def pull_round(F, r, p, c, thr, seen, alpha, out_off, out_deg, out_idx, in_off, in_deg, in_idx, seeds, seed_w,
               personalization, out_w=None, in_wt=None):
    """One lock-free forward-pull round: settle the frontier into the contributions ``c``, and
    every out-neighbour of the frontier (the pulling set ``N``, sorted) gathers them from its
    in-neighbours. Returns ``(next frontier, N, edges, in-edges read, lost mass)``. Weighted:
    ``c[u] = alpha r[u] / out_w[u]``, gathered times the weights ``in_wt`` beside ``in_idx``."""
    val = np.empty(F.shape[0])
    dmass = _settle(F, r, p, alpha, out_deg, val)
    cand = np.empty(64, dtype=np.int64)
    m = 0
    edges = 0
    for i in range(F.shape[0]):
        u = F[i]
        d = out_deg[u]
        if d == 0:
            continue
        c[u] = alpha * val[i] / d if out_w is None else alpha * val[i] / out_w[u]
        for j in range(out_off[u], out_off[u] + d):
            w = np.int64(out_idx[j])
            if not seen[w]:
                seen[w] = 1
                if m == cand.shape[0]:
                    cand = np.concatenate((cand, np.empty(m, dtype=np.int64)))
                cand[m] = w
                m += 1
        edges += d
    if dmass != 0.0 and personalization:
        if m + seeds.shape[0] > cand.shape[0]:
            cand = np.concatenate((cand, np.empty(m + seeds.shape[0], dtype=np.int64)))
        for s in seeds:
            if not seen[s]:
                seen[s] = 1
                cand[m] = s
                m += 1
        edges += seeds.shape[0]
    N = np.sort(cand[:m])
    reads = 0
    sums = np.zeros(m)
    for i in range(m):
        w = N[i]
        seen[w] = 0
        acc = 0.0
        if in_wt is None:
            for j in range(in_off[w], in_off[w] + in_deg[w]):
                acc += c[in_idx[j]]
        else:
            for j in range(in_off[w], in_off[w] + in_deg[w]):
                acc += c[in_idx[j]] * in_wt[j]
        sums[i] = acc
        reads += in_deg[w]
    for i in range(m):
        r[N[i]] += sums[i]
    for i in range(F.shape[0]):
        if out_deg[F[i]] > 0:
            c[F[i]] = 0.0
    lost = 0.0
    if dmass != 0.0:
        if personalization:
            for i in range(seeds.shape[0]):
                r[seeds[i]] += dmass * seed_w[i]
        else:
            lost = dmass
    nxt = np.empty(m, dtype=np.int64)
    k = 0
    for i in range(m):
        w = N[i]
        if r[w] >= thr[w]:
            nxt[k] = w
            k += 1
    return nxt[:k].copy(), N, edges, reads, lost


# ------------------------------------------------------------------------------ Monte Carlo
@njit(cache=True, nogil=True)
def _draw_seed(seeds, cum):
    if seeds.shape[0] == 1:
        return seeds[0]
    k = np.searchsorted(cum, np.random.random(), side="right")
    return seeds[min(k, seeds.shape[0] - 1)]


#: Golden-ratio step of a weighted walk's first draw (a low-discrepancy sequence over the walks).
_SPREAD = 0.6180339887498949


@njit(cache=True, nogil=True)
def segment_sums(n, off, deg, wt):
    """Per slot the running sum of ``wt`` within its vertex's segment (the slot included)."""
    out = np.zeros(wt.shape[0])
    for v in range(n):
        s = 0.0
        for j in range(off[v], off[v] + deg[v]):
            s += wt[j]
            out[j] = s
    return out


@njit(cache=True, inline="always")
def _weighted_step(out_off, out_deg, out_idx, out_cum, v, u):
    """The out-neighbour of ``v`` whose share of the running weights ``out_cum`` holds ``u`` in
    [0, 1): the first slot whose running sum exceeds ``u`` times the segment's total."""
    lo = out_off[v]
    hi = lo + out_deg[v]
    target = u * out_cum[hi - 1]
    while lo < hi - 1:
        mid = (lo + hi - 1) >> 1
        if out_cum[mid] > target:
            hi = mid + 1
        else:
            lo = mid + 1
    return out_idx[lo]


@njit(cache=True, nogil=True)
def walks(n, out_off, out_deg, out_idx, seeds, cum, alpha, personalization, num_walks, rng_seed, out_cum=None):
    """Complete-path walks: visit counts per vertex and the total number of visits.

    Walk ``i`` starts at a seed drawn from the personalization (cumulative weights ``cum``);
    at each step it continues with probability ``alpha`` to a uniformly random out-neighbour
    (its first step from the seed: neighbour ``i mod deg``, spreading the walks evenly), from
    a dangling vertex to a seed (personalization) or a uniform random vertex. Weighted
    (``out_cum``: :func:`segment_sums` of the out-weights): the out-neighbour is drawn in
    proportion to its edge's weight (the first step at ``frac(i * 0.618...)`` of the weights,
    spreading the walks evenly in proportion).
    """
    np.random.seed(rng_seed)
    counts = np.zeros(n, dtype=np.int64)
    steps = 0
    for i in range(num_walks):
        v = _draw_seed(seeds, cum)
        counts[v] += 1
        steps += 1
        first = True
        while np.random.random() < alpha:
            d = out_deg[v]
            if d == 0:
                v = _draw_seed(seeds, cum) if personalization else np.random.randint(0, n)
            elif out_cum is not None:
                u = (i * _SPREAD) % 1.0 if first else np.random.random()
                v = _weighted_step(out_off, out_deg, out_idx, out_cum, v, u)
            elif first:
                v = out_idx[out_off[v] + i % d]
            else:
                v = out_idx[out_off[v] + np.random.randint(0, d)]
            first = False
            counts[v] += 1
            steps += 1
    return counts, steps


# ------------------------------------------------------------------------------ cost model
@njit(cache=True, nogil=True)
def scatter_add(a, idx, vals):
    for i in range(idx.shape[0]):
        a[idx[i]] += vals[i]


@njit(cache=True, nogil=True)
def gather_sum(a, idx):
    s = 0.0
    for i in range(idx.shape[0]):
        s += a[idx[i]]
    return s


@njit(cache=True, nogil=True)
def store(a, vals):
    for i in range(vals.shape[0]):
        a[i] = vals[i]
