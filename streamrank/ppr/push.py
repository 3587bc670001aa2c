"""Forward push and lock-free forward pull steps on the CPU (NumPy, vectorized per frontier).

Both steps take the frontier ``F`` (vertices whose residual is at least
``eps * max(outdeg, 1)``), settle ``(1 - alpha) r[u]`` into ``p[u]`` and hand
``alpha r[u] / outdeg(u)`` to each out-neighbour: *push* scatters it (``np.add.at``, the CPU's
counterpart of atomic adds), *pull* lets each out-neighbour of the frontier gather it from its
in-neighbours (one writer per vertex). A dangling ``u`` sends ``alpha r[u]`` back to the seeds
(``"personalization"``) or into the scalar ``lost`` (``"uniform"``, leaky part).
"""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays, expand_segments


class CpuLocalState:
    """Residual ``r``, estimate ``p`` and the per-edge contribution ``c`` of one query."""

    def __init__(self, ga: GraphArrays, pers, *, alpha: float, eps: float, dangling: str):
        self.ga, self.alpha, self.eps, self.dangling = ga, alpha, eps, dangling
        self.seeds, self.seed_w = pers.internal, pers.weights
        self.r = np.zeros(ga.n)
        self.p = np.zeros(ga.n)
        self.c = np.zeros(ga.n)
        self.r[self.seeds] = self.seed_w
        self.lost = 0.0
        self.thr = eps * np.maximum(ga.out_degree, 1).astype(np.float64)

    def initial_frontier(self):
        return self.seeds.copy()

    def _settle(self, F):
        val = self.r[F].copy()
        self.r[F] = 0.0
        self.p[F] += (1.0 - self.alpha) * val
        deg = self.ga.out_degree[F]
        dang = deg == 0
        dmass = self.alpha * float(val[dang].sum())
        return val, deg, dang, dmass

    def _dangling_to(self, dmass):
        """Where the dangling mass goes: returns the seed ids that received some."""
        if dmass == 0.0:
            return np.zeros(0, dtype=np.int64)
        if self.dangling == "personalization":
            self.r[self.seeds] += dmass * self.seed_w
            return self.seeds
        self.lost += dmass
        return np.zeros(0, dtype=np.int64)

    def push(self, F):
        """One push round; returns (next frontier, stats)."""
        ga = self.ga
        val, deg, dang, dmass = self._settle(F)
        nd = ~dang
        pos, seg = expand_segments(np, ga.out_offset[F[nd]], deg[nd])
        tgt = ga.out_indices[pos]
        np.add.at(self.r, tgt, (self.alpha * val[nd] / deg[nd])[seg])
        extra = self._dangling_to(dmass)
        cand = np.unique(np.concatenate([tgt.astype(np.int64), extra]))
        nxt = cand[self.r[cand] >= self.thr[cand]]
        return nxt, {"edges": int(tgt.shape[0])}

    def pull(self, F):
        """One lock-free pull round; returns (next frontier, stats)."""
        ga = self.ga
        val, deg, dang, dmass = self._settle(F)
        nd = ~dang
        self.c[F[nd]] = self.alpha * val[nd] / deg[nd]
        pos, _ = expand_segments(np, ga.out_offset[F[nd]], deg[nd])
        tgt = ga.out_indices[pos].astype(np.int64)
        if dmass and self.dangling == "personalization":
            tgt = np.concatenate([tgt, self.seeds])
        N = np.unique(tgt)
        ipos, iseg = expand_segments(np, ga.in_offset[N], ga.in_degree[N])
        sums = np.bincount(iseg, weights=self.c[ga.in_indices[ipos]], minlength=N.shape[0])
        self.r[N] += sums
        self.c[F[nd]] = 0.0
        self._dangling_to(dmass)
        nxt = N[self.r[N] >= self.thr[N]]
        return nxt, {"_N": N, "edges": int(tgt.shape[0]), "pulling": int(N.shape[0]), "reads": int(ipos.shape[0])}

    def finish(self):
        return self.p, float(self.r.sum()), self.lost
