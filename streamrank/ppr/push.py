"""Forward push and lock-free forward pull rounds on the CPU (compiled, one call per round:
:func:`streamrank.kernels.cpu.ppr.push_round` / :func:`~streamrank.kernels.cpu.ppr.pull_round`).

Both rounds take the frontier ``F`` (vertices whose residual is at least
``eps * max(outdeg, 1)``), settle ``(1 - alpha) r[u]`` into ``p[u]`` and hand
``alpha r[u] / outdeg(u)`` to each out-neighbour: *push* scatters it, *pull* lets each
out-neighbour of the frontier gather it from its in-neighbours (one writer per vertex). A
dangling ``u`` sends ``alpha r[u]`` back to the seeds (``"personalization"``) or into the scalar
``lost`` (``"uniform"``, leaky part). On a weighted graph ``u`` hands ``alpha r[u] w(u, v) / W[u]``
to ``v`` (``W``: the out-weight); the threshold stays ``eps * max(outdeg, 1)``, the edges a
round over ``u`` reads. The round loop (and the hybrid's per-round choice) is
:func:`streamrank.ppr.hybrid.run_local`, shared with the GPU.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cpu.ppr import pull_round, push_round
from ._graph import GraphArrays


class CpuLocalState:
    """Residual ``r``, estimate ``p`` and the per-edge contribution ``c`` of one query."""

    def __init__(self, ga: GraphArrays, pers, *, alpha: float, eps: float, dangling: str):
        self.ga, self.alpha, self.eps, self.dangling = ga, float(alpha), eps, dangling
        self.seeds = np.ascontiguousarray(pers.internal, dtype=np.int64)
        self.seed_w = np.ascontiguousarray(pers.weights, dtype=np.float64)
        self.r = np.zeros(ga.n)
        self.p = np.zeros(ga.n)
        self.c = np.zeros(ga.n)
        self.seen = np.zeros(ga.n, dtype=np.uint8)
        self.r[self.seeds] = self.seed_w
        self.lost = 0.0
        self.thr = eps * np.maximum(ga.out_degree, 1).astype(np.float64)

    def initial_frontier(self):
        return self.seeds.copy()

    def push(self, F):
        """One push round; returns (next frontier, stats)."""
        ga = self.ga
        args = (F, self.r, self.p, self.thr, self.seen, self.alpha, ga.out_offset, ga.out_degree, ga.out_indices,
                self.seeds, self.seed_w, self.dangling == "personalization")
        if ga.weighted:
            nxt, edges, lost = push_round(*args, ga.out_weight, ga.out_weights)
        else:
            nxt, edges, lost = push_round(*args)
        self.lost += lost
        return nxt, {"edges": int(edges)}

    def pull(self, F):
        """One lock-free pull round; returns (next frontier, stats)."""
        ga = self.ga
        args = (F, self.r, self.p, self.c, self.thr, self.seen, self.alpha, ga.out_offset, ga.out_degree,
                ga.out_indices, ga.in_offset, ga.in_degree, ga.in_indices, self.seeds, self.seed_w,
                self.dangling == "personalization")
        if ga.weighted:
            nxt, N, edges, reads, lost = pull_round(*args, ga.out_weight, ga.in_weights)
        else:
            nxt, N, edges, reads, lost = pull_round(*args)
        self.lost += lost
        return nxt, {"_N": N, "edges": int(edges), "pulling": int(N.shape[0]), "reads": int(reads)}

    def finish(self):
        return self.p, float(self.r.sum()), self.lost
