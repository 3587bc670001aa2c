"""Simulation of the multi-GPU engine on one device: what each part would send per iteration.

The design (docs/architecture.md, "Past one GPU") partitions the vertices 1-D by destination:
part ``p`` of ``K`` owns the ids ``[p N / K, (p + 1) N / K)`` of the id range ``N`` and every
in-edge of those vertices, so a vertex's new value is computed by its owner from the
contributions ``x[u] / outdeg(u)`` of its in-neighbours. A part keeps a mirror ("ghost") of the
contribution of every remote vertex with an out-edge into it; when a vertex's value changes, its
owner pushes the new contribution to every other part holding such an edge (one push per
(vertex, part) pair: deduplicated per part pair), and the receiving part marks the out-neighbours
it owns as DF-P's frontier rule says. Explicit frontier flags (a part telling another that one of
its vertices is affected) are counted too, for a design that sends them instead.

This module counts those messages exactly on a real graph, with NumPy or CuPy:

- :func:`ghost_masks`: per vertex, the parts (of ``kmax``) that hold one of its out-edges; the
  masks of ``K`` parts (``K`` dividing ``kmax``) follow by OR-ing groups of bits
  (:func:`coarsen`), since the ranges nest;
- :func:`pair_counts`: the ``K x K`` matrix of pushes ``[sender, receiver]`` for a set of changed
  vertices (all vertices for a warm sweep);
- :func:`simulate_dfp`: DF-P's Jacobi iteration on the graph after a batch (local form
  ``x[v] = 1 + alpha * sum x[u] / outdeg(u)``, marking and pruning as the engine's rank contract
  states, without the GPU's one-step-ahead read of out-degree-1 in-neighbours), recording per
  iteration the frontier, the pushes and the explicit flags per part pair;
- :func:`warm_iterations`: iterations of full sweeps from the old ranks to the same criterion.

Bytes are counts times 8 (float64 contributions) or 4 (float32), flags 4 bytes (a vertex id) per
distinct (sender part, flagged vertex).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError

_OR_KERNEL = {}


def _is_numpy(xp) -> bool:
    return getattr(xp, "__name__", "") == "numpy"


def _sparse(xp):
    if _is_numpy(xp):
        import scipy.sparse as sp
    else:
        import cupyx.scipy.sparse as sp
    return sp


def _scatter_add(xp, out, idx, vals) -> None:
    if _is_numpy(xp):
        np.add.at(out, idx, vals)
    else:
        import cupyx

        cupyx.scatter_add(out, idx, vals)


def parts_of(xp, ids, id_range: int, k: int):
    """Owner part of each id: ``id * k // id_range`` (contiguous ranges; int32)."""
    return ((xp.asarray(ids, dtype=xp.int64) * int(k)) // int(id_range)).astype(xp.int32)


def ghost_masks(xp, src, dst, id_range: int, kmax: int):
    """Per vertex id (``id_range`` of them), an int32 bit mask of the parts of ``kmax`` that own
    an out-neighbour of it, its own part excluded."""
    if not 1 <= int(kmax) <= 31:
        raise InvalidArgumentError(f"kmax must be in 1..31, got {kmax}")
    mask = xp.zeros(int(id_range), dtype=xp.int32)
    bit = (xp.int32(1) << parts_of(xp, dst, id_range, kmax)).astype(xp.int32)
    if _is_numpy(xp):
        np.bitwise_or.at(mask, np.asarray(src, dtype=np.int64), bit)
    else:
        if "or" not in _OR_KERNEL:
            _OR_KERNEL["or"] = xp.ElementwiseKernel("int64 u, int32 b", "raw int32 mask",
                                                    "atomicOr(&mask[u], b)", "streamrank_ghost_or")
        _OR_KERNEL["or"](xp.asarray(src, dtype=xp.int64), bit, mask)
    own = (xp.int32(1) << parts_of(xp, xp.arange(int(id_range)), id_range, kmax)).astype(xp.int32)
    return mask & ~own


def coarsen(xp, mask, kmax: int, k: int):
    """Masks over ``k`` parts from masks over ``kmax`` (``k`` divides ``kmax``; the ranges nest),
    each vertex's own part excluded."""
    if int(kmax) % int(k):
        raise InvalidArgumentError(f"{k} parts do not divide {kmax}")
    group = int(kmax) // int(k)
    out = xp.zeros_like(mask)
    for p in range(int(k)):
        sel = ((1 << group) - 1) << (p * group)
        out |= ((mask & sel) != 0).astype(xp.int32) << p
    n = int(mask.shape[0])
    own = (xp.int32(1) << parts_of(xp, xp.arange(n), n, k)).astype(xp.int32)
    return out & ~own


def pair_counts(xp, mask_k, owner_k, k: int, active=None) -> np.ndarray:
    """``counts[q, p]``: vertices of part ``q`` (``active`` ones; all when None) whose ghost mask
    over ``k`` parts has bit ``p``: the contributions ``q`` pushes to ``p``. Host int64 array."""
    out = np.zeros((int(k), int(k)), dtype=np.int64)
    for p in range(int(k)):
        bit = ((mask_k >> p) & 1).astype(bool)
        if active is not None:
            bit &= active
        sel = owner_k[bit]
        out[:, p] = _host(xp.bincount(sel, minlength=int(k)))[: int(k)]
    return out


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


class SimGraph:
    """A base graph for the simulation: the in-edge matrix (rows: targets), out-degrees, ids.

    Parameters
    ----------
    xp : module
    src, dst : arrays of int64
        Distinct edges (ids in ``[0, id_range)``).
    id_range : int
        The id space partitioned (``2**scale`` for R-MAT).
    """

    def __init__(self, xp, src, dst, id_range: int):
        self.xp = xp
        self.n = int(id_range)
        self.e = int(src.shape[0])
        sp = _sparse(xp)
        src = xp.asarray(src)
        dst = xp.asarray(dst)
        if self.n >= 2**31 or self.e >= 2**31:
            raise InvalidArgumentError("the simulation holds ids and edges below 2**31")
        # rows = targets, so that A @ c sums the in-neighbours' contributions: one sort of packed
        # (dst, src) keys, no COO conversion (8 bytes per edge of keys, the matrix's 12)
        keys = xp.sort((dst << 32) | src)
        indices = (keys & 0xFFFFFFFF).astype(xp.int32)
        del keys
        indptr = xp.zeros(self.n + 1, dtype=xp.int64)
        xp.cumsum(xp.bincount(dst, minlength=self.n), out=indptr[1:])
        self.a_in = sp.csr_matrix((xp.ones(self.e, dtype=xp.float64), indices, indptr.astype(xp.int32)),
                                  shape=(self.n, self.n))
        del indices, indptr
        self.outdeg = xp.bincount(src, minlength=self.n).astype(xp.float64)
        self.indeg = xp.bincount(dst, minlength=self.n).astype(xp.int64)

    def in_sum(self, c):
        """``sum_{u -> v} c[u]`` for every ``v``."""
        return self.a_in @ c

    def has_in_neighbour(self, flags):
        """Whether each vertex has an in-neighbour among ``flags`` (bool)."""
        return (self.a_in @ flags.astype(self.xp.float64)) > 0


@dataclass
class DfpTrace:
    """One simulated DF-P batch: per iteration the frontier and the messages per part pair.

    Attributes
    ----------
    iterations : int
    converged : bool
    frontier : list of int
        Vertices processed in each iteration.
    pushes : dict
        ``k -> list`` of ``k x k`` host arrays (one per iteration; the first is the batch's own
        change of out-degrees): contributions each part pushes to each other part.
    flags : dict
        ``k -> list`` of ``k x k`` host arrays: distinct remote vertices each part flags per iteration.
    batch_edges : dict
        ``k -> k x k`` array: edges of the batch routed from the part owning the source (where it
        arrives, say) to the part owning the target; diagonal: local.
    sets : list
        With ``keep_sets``: per iteration ``(changed, expanded)`` host bool arrays (for tests).
    x : array
        The final iterate.
    """

    iterations: int = 0
    converged: bool = False
    frontier: list = field(default_factory=list)
    pushes: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    batch_edges: dict = field(default_factory=dict)
    sets: list = field(default_factory=list)
    x: object = None


def static_ranks(g: SimGraph, *, alpha: float = 0.85, tol: float = 1e-10, max_iter: int = 500):
    """Local-form ranks of the base graph by Jacobi sweeps (``max|dx| / sum(x) < tol``)."""
    xp = g.xp
    x = xp.ones(g.n, dtype=xp.float64)
    inv = xp.where(g.outdeg > 0, 1.0 / xp.maximum(g.outdeg, 1.0), 0.0)
    for _ in range(int(max_iter)):
        nx = 1.0 + alpha * g.in_sum(x * inv)
        done = float(xp.abs(nx - x).max()) / float(nx.sum()) < tol
        x = nx
        if done:
            break
    return x


def simulate_dfp(g: SimGraph, x0, ins, dels, masks: dict, *, alpha: float = 0.85, tol: float = 1e-10,
                 frontier_tol: float = 1e-6, prune_tol: float = 1e-6, max_iter: int = 500,
                 keep_sets: bool = False) -> DfpTrace:
    """DF-P after one batch on the base graph ``g`` from its ranks ``x0``, counting the messages.

    Parameters
    ----------
    g : SimGraph
    x0 : array
        Ranks of the base graph (local form).
    ins, dels : tuple of arrays
        ``(src, dst)`` of the batch's applied insertions (absent from ``g``) and deletions
        (present in ``g``), distinct.
    masks : dict
        ``k -> (ghost masks over k parts, owner part per id)`` of the base graph; the batch's
        insertions are added to them (a deletion leaves its ghost in place: a part drops a ghost
        only when it rebuilds), and the largest ``k`` must be a multiple of the others.
    keep_sets : bool
        Keep the changed and expanded vertex sets per iteration (small graphs, tests).

    Returns
    -------
    DfpTrace
    """
    xp = g.xp
    isrc, idst = (xp.asarray(a, dtype=xp.int64) for a in ins)
    dsrc, ddst = (xp.asarray(a, dtype=xp.int64) for a in dels)
    outdeg = g.outdeg.copy()
    _scatter_add(xp, outdeg, isrc, xp.ones(isrc.shape[0], dtype=xp.float64))
    _scatter_add(xp, outdeg, dsrc, -xp.ones(dsrc.shape[0], dtype=xp.float64))
    inv = xp.where(outdeg > 0, 1.0 / xp.maximum(outdeg, 1.0), 0.0)
    trace = DfpTrace()

    def in_sum(c):
        s = g.in_sum(c)
        _scatter_add(xp, s, idst, c[isrc])
        _scatter_add(xp, s, ddst, -c[dsrc])
        return s

    def mark_out(flags):
        marked = g.has_in_neighbour(flags)  # base out-edges (a deleted one marks its target too)
        hit = flags[isrc]
        marked[idst[hit]] = True
        return marked

    # the batch: routed by edge owner; the sources' contributions change with their out-degree
    changed_src = xp.zeros(g.n, dtype=bool)
    changed_src[isrc] = True
    changed_src[dsrc] = True
    masks = {k: (mask | ghost_masks(xp, isrc, idst, g.n, k), owner) for k, (mask, owner) in masks.items()}
    for k, (mask, owner) in masks.items():
        routed = np.zeros((k, k), dtype=np.int64)
        for s, d in ((isrc, idst), (dsrc, ddst)):
            if s.shape[0]:
                np.add.at(routed, (_host(owner[s]), _host(owner[d])), 1)
        trace.batch_edges[k] = routed
        trace.pushes[k] = [pair_counts(xp, mask, owner, k, changed_src)]
        trace.flags[k] = []
    affected = mark_out(changed_src)
    affected[ddst] = True
    x = x0
    for it in range(int(max_iter)):
        trace.frontier.append(int(affected.sum()))
        nx = xp.where(affected, 1.0 + alpha * in_sum(x * inv), x)
        dx = xp.abs(nx - x)
        rel = dx / xp.maximum(xp.maximum(nx, x), 1e-300)
        changed = affected & (dx > 0)
        expand = affected & (rel > frontier_tol)
        prune = affected & (rel <= prune_tol)
        done = float(dx.max()) / float(nx.sum()) < tol
        if not done:  # the last iteration's changes and flags reach no one: the run ends
            flags = flag_counts(g, expand, {k: owner for k, (_, owner) in masks.items()}, (isrc, idst))
            for k, (mask, owner) in masks.items():
                trace.pushes[k].append(pair_counts(xp, mask, owner, k, changed))
                trace.flags[k].append(flags[k])
        if keep_sets:
            trace.sets.append((_host(changed), _host(expand)))
        x = nx
        trace.iterations = it + 1
        if done:
            trace.converged = True
            break
        affected = (affected & ~prune) | mark_out(expand)
    trace.x = x
    return trace


def flag_counts(g: SimGraph, expand, owners: dict, ins=None) -> dict:
    """``k -> counts[q, p]``: distinct vertices of part ``p != q`` with an in-neighbour in part
    ``q`` among ``expand``: the flags ``q`` would send ``p``. ``owners``: ``k -> owner part per
    id``, the ranges of every ``k`` nesting in those of the largest; ``ins``: the batch's inserted
    ``(src, dst)``, edges of the graph too. One in-edge product per part of the largest ``k``."""
    xp = g.xp
    kmax = max(owners)
    out = {k: np.zeros((k, k), dtype=np.int64) for k in owners}
    if not bool(expand.any()):
        return out
    own = owners[kmax]
    hits = []
    for q in range(kmax):
        from_q = expand & (own == q)
        hit = g.has_in_neighbour(from_q)
        if ins is not None and ins[0].shape[0]:
            hit[ins[1][from_q[ins[0]]]] = True
        hits.append(hit)
    for k, owner in owners.items():
        group = kmax // k
        for q in range(k):
            hit = hits[q * group]
            for j in range(1, group):
                hit = hit | hits[q * group + j]
            remote = hit & (owner != q)
            out[k][q] = _host(xp.bincount(owner[remote], minlength=k))[:k]
    return out


def warm_iterations(g: SimGraph, x0, ins, dels, *, alpha: float = 0.85, tol: float = 1e-10,
                    max_iter: int = 500) -> int:
    """Jacobi sweeps over all vertices from ``x0`` on the graph after the batch until
    ``max|dx| / sum(x) < tol``: a warm sweep's iterations (every one pushes every ghost)."""
    xp = g.xp
    isrc, idst = (xp.asarray(a, dtype=xp.int64) for a in ins)
    dsrc, ddst = (xp.asarray(a, dtype=xp.int64) for a in dels)
    outdeg = g.outdeg.copy()
    _scatter_add(xp, outdeg, isrc, xp.ones(isrc.shape[0], dtype=xp.float64))
    _scatter_add(xp, outdeg, dsrc, -xp.ones(dsrc.shape[0], dtype=xp.float64))
    inv = xp.where(outdeg > 0, 1.0 / xp.maximum(outdeg, 1.0), 0.0)
    x = x0
    for it in range(int(max_iter)):
        c = x * inv
        s = g.in_sum(c)
        _scatter_add(xp, s, idst, c[isrc])
        _scatter_add(xp, s, ddst, -c[dsrc])
        nx = 1.0 + alpha * s
        done = float(xp.abs(nx - x).max()) / float(nx.sum()) < tol
        x = nx
        if done:
            return it + 1
    return int(max_iter)


def random_batch(xp, src, dst, n_ids: int, size: int, *, seed: int, present=None):
    """A batch of ``size`` edges as the benchmark draws them: 80% insertions of random pairs of
    vertices with edges, 20% deletions of random base edges; returns the applied ``(ins, dels)``
    (insertions not in the graph and distinct, no self-loops; deletions distinct)."""
    rs = xp.random.RandomState(seed)
    n_del = int(round(0.2 * size))
    n_ins = size - n_del
    verts = xp.flatnonzero(xp.bincount(src, minlength=n_ids) + xp.bincount(dst, minlength=n_ids))
    a = verts[rs.randint(0, int(verts.shape[0]), n_ins)]
    b = verts[rs.randint(0, int(verts.shape[0]), n_ins)]
    keys = xp.unique(a[a != b] * n_ids + b[a != b])
    base = src * n_ids + dst  # sorted (src, dst) distinct edges: a sorted key array
    pos = xp.searchsorted(base, keys)
    pos = xp.minimum(pos, base.shape[0] - 1)
    keys = keys[base[pos] != keys]
    pick = xp.unique(rs.randint(0, int(src.shape[0]), n_del))
    return (keys // n_ids, keys % n_ids), (src[pick], dst[pick])
