"""Forward push (two atomics schemes) and lock-free forward pull on the GPU.

Kernels live in ``kernels/cuda/ppr_push.cu``. Work lists follow the frontier: the push kernel
appends the vertices that reach the threshold to the next frontier queue (deduplicated by a
flag), and the pull step builds its pulling set from the frontier's out-edges with a scan
(``cumsum`` of the frontier's out-degrees), a last-writer-wins mark and a compaction. No step
touches all |V| vertices.
"""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel

BLOCK = 256


class GpuLocalState:
    """Residual ``r``, estimate ``p`` and work arrays of one query on the device."""

    def __init__(self, ga: GraphArrays, pers, *, alpha: float, eps: float, dangling: str,
                 atomics: str = "native"):
        import cupy as cp

        self.cp, self.ga = cp, ga
        self.alpha, self.eps, self.dangling = float(alpha), float(eps), dangling
        self.mode = 0 if dangling == "personalization" else 1
        n = ga.n
        self.seeds = cp.asarray(pers.internal, dtype=cp.int32)
        self.seed_w = cp.asarray(pers.weights, dtype=cp.float64)
        self.nseeds = int(self.seeds.shape[0])
        self.r = cp.zeros(n, dtype=cp.float64)
        self.p = cp.zeros(n, dtype=cp.float64)
        self.flag = cp.zeros(n, dtype=cp.int32)
        self.r[self.seeds] = self.seed_w
        self.scal = cp.zeros(1, dtype=cp.float64)  # lost (uniform mode)
        self.count = cp.zeros(1, dtype=cp.int32)
        self._c = self._mark = self._pers = None
        o, d = ctype(ga.out_offset), ctype(ga.out_degree)
        exch = 1 if atomics == "exchange" else 0
        wt = ga.weighted
        if wt:  # float64 weights (a store's own arrays are; a view's copies of them too)
            self._out_w = cp.asarray(ga.out_weight, dtype=cp.float64)
            self._out_wt = cp.asarray(ga.out_weights, dtype=cp.float64)
            self._in_wt = cp.asarray(ga.in_weights, dtype=cp.float64)
        else:
            self._out_w = self._out_wt = self._in_wt = np.uint64(0)  # null: never read
        self.k_push = kernel("ppr_push.cu", f"ppr_push_warp<{o}, {d}, {exch}, {int(wt)}>", weighted=wt)
        self.k_scatter = kernel("ppr_push.cu", f"ppr_pull_scatter<{o}, {d}, {int(wt)}>", weighted=wt)
        self.k_gather = kernel("ppr_push.cu", f"ppr_pull_gather<{ctype(ga.in_offset)}, {ctype(ga.in_degree)}, "
                                              f"{int(wt)}>", weighted=wt)
        self.k_seeds = kernel("ppr_push.cu", "ppr_pull_add_seeds")
        self.k_dedup = kernel("ppr_push.cu", "ppr_pull_dedup")
        if ga.in_degree.dtype != ga.out_degree.dtype:
            self._out_deg_as_in = ga.out_degree.astype(ga.in_degree.dtype)
        else:
            self._out_deg_as_in = ga.out_degree

    def initial_frontier(self):
        return self.seeds.copy()

    def push(self, F):
        cp, ga = self.cp, self.ga
        f = int(F.shape[0])
        nxt = cp.empty(ga.n, dtype=cp.int32)
        self.count.fill(0)
        self.k_push(((f * 32 + BLOCK - 1) // BLOCK,), (BLOCK,),
                    (F, np.int32(f), ga.out_offset, ga.out_degree, ga.out_indices, self._out_w, self._out_wt,
                     self.r, self.p,
                     self.flag, nxt, self.count, self.seeds, self.seed_w, np.int32(self.nseeds),
                     np.int32(self.mode), self.scal, np.float64(self.alpha), np.float64(self.eps)))
        m = int(self.count.get()[0])  # sync: the next frontier's size sets the next launch
        return nxt[:m], {}

    def _pull_arrays(self):
        cp, n = self.cp, self.ga.n
        if self._c is None:
            self._c = cp.zeros(n, dtype=cp.float64)
            self._mark = cp.empty(n, dtype=cp.int64)
            self._pers = cp.zeros(n, dtype=cp.float64)
            self._pers[self.seeds] = self.seed_w
        return self._c, self._mark, self._pers

    def pull(self, F):
        cp, ga = self.cp, self.ga
        c, mark, pers = self._pull_arrays()
        f = int(F.shape[0])
        deg = ga.out_degree[F].astype(cp.int64)
        ends = cp.cumsum(deg)
        S = int(ends[-1].get())  # sync: the target list's length sizes its allocation
        tpos = ends - deg
        extra = self.nseeds if self.mode == 0 else 0
        total = S + extra
        targets = cp.empty(max(total, 1), dtype=cp.int32)
        dmass = cp.empty(f, dtype=cp.float64)
        self.k_scatter(((f * 32 + BLOCK - 1) // BLOCK,), (BLOCK,),
                       (F, np.int32(f), tpos, ga.out_offset, ga.out_degree, ga.out_indices, self._out_w, self.r,
                        self.p, c, dmass, self.flag, targets, mark, np.float64(self.alpha)))
        if extra:
            self.k_seeds(((extra + 255) // 256,), (256,), (self.seeds, np.int32(extra), np.int64(S), targets, mark))
        keep = cp.empty(max(total, 1), dtype=cp.uint8)
        self.k_dedup(((total + BLOCK - 1) // BLOCK,), (BLOCK,), (targets, np.int64(total), mark, keep))
        N = targets[:total][keep[:total].view(cp.bool_)]  # sync: compaction size
        nsize = int(N.shape[0])
        dsum = dmass.sum(keepdims=True)  # stays on the device
        above = cp.empty(max(nsize, 1), dtype=cp.uint8)
        if nsize:
            self.k_gather(((nsize * 32 + BLOCK - 1) // BLOCK,), (BLOCK,),
                          (N, np.int32(nsize), ga.in_offset, ga.in_degree, ga.in_indices, self._in_wt,
                           self._out_deg_as_in, c, pers, dsum, np.int32(self.mode), self.r, above,
                           np.float64(self.eps)))
        if self.mode == 1:
            self.scal += dsum
        c[F] = 0.0
        nxt = N[above[:nsize].view(cp.bool_)]  # sync: compaction size
        return nxt, {"_N": N, "edges": S, "pulling": nsize}

    def finish(self):
        cp = self.cp
        host = cp.stack([self.r.sum(), self.scal[0]]).get()  # sync: residual mass and lost mass
        return self.p, float(host[0]), float(host[1])
