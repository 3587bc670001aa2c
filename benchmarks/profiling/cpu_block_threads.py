"""CPU DF-P on the published temporal protocol: Gauss-Seidel block size against thread count.

For every block size of ``--grid`` (``GS_BLOCK``: the store cuts its sweep blocks by it, the frontier
loop its sparse blocks; ``jacobi`` in its place: the Jacobi update order) and every thread count (``numba.set_num_threads``, every batch on
that many: ``STREAMRANK_CPU_THREADS=all``), it replays the protocol of ``streamrank bench
--protocol temporal`` (the 248,180 ids up front, self-loop mode, 90 % base converged to the
iteration cap (150 sweeps here), then ``--batches`` batches of each fraction) and prints the median rank ms per
batch, the iterations and the L1 error of the last batch against the SciPy oracle. With
``--per-iteration`` it also times one batch again and again from a copy of the workspace with
``max_iter = 1, 2, ...``: the differences are the cost of each iteration (the first includes the
batch's fixed work). Also the cost of an empty parallel region at each thread count. One process,
one pool (``NUMBA_NUM_THREADS``: the host's cores)::

    python benchmarks/profiling/cpu_block_threads.py sx-mathoverflow.txt.gz --grid 16384:1/2/16,2048:1/16,jacobi:1/16
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import statistics
import time

import numba
import numpy as np
from numba import njit, prange

os.environ.setdefault("STREAMRANK_CPU_THREADS", "all")

from streamrank import Engine, RankConfig  # noqa: E402
from streamrank.backend import resolve_backend  # noqa: E402
from streamrank.bench.baselines import oracle_fn  # noqa: E402
from streamrank.bench.temporal import _batch, _read_lines, line_edges  # noqa: E402
from streamrank.kernels.cpu import common as kernel_common  # noqa: E402
from streamrank.oracle.metrics import l1_error  # noqa: E402
from streamrank.rank.cpu import pagerank as pagerank_cpu  # noqa: E402

PADDED = 248180


@njit(parallel=True, nogil=True, cache=True)
def _region(nb, out):
    for b in prange(nb):
        out[b] += 1.0


def region_us(threads, nb, reps=2000):
    out = np.zeros(64)
    numba.set_num_threads(threads)
    _region(nb, out)
    t = time.perf_counter()
    for _ in range(reps):
        _region(nb, out)
    return (time.perf_counter() - t) / reps * 1e6


def set_block(block):
    kernel_common.GS_BLOCK = block
    pagerank_cpu.GS_BLOCK = block


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph")
    ap.add_argument("--grid", default="16384:1/2/16,2048:1/16", help="BLOCK:THREADS/THREADS/... pairs; BLOCK 'jacobi': the Jacobi order")
    ap.add_argument("--fractions", default="1e-5,1e-4,1e-3")
    ap.add_argument("--tols", default="1e-6,1e-5", help="frontier/prune tolerances")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--per-iteration", default="", help="BLOCK:THREADS pairs to profile per iteration")
    args = ap.parse_args(argv)
    top = numba.get_num_threads()
    for t in sorted({1, 2, 4, 8, top}):
        if t <= top:
            print(f"region us, {t:2d} threads: prange(2) {region_us(t, 2):6.1f}  prange({t}) {region_us(t, t):6.1f}")
    numba.set_num_threads(top)
    print("threading layer:", numba.threading_layer(), " pool:", top, flush=True)
    src, dst = _read_lines(args.graph)
    lines = src.shape[0]
    base_end = int(0.9 * lines)

    def edges(lo, hi):
        return line_edges(src, dst, lo, hi)

    backend = resolve_backend("cpu")
    verts = np.arange(PADDED, dtype=np.int64)
    base = edges(0, base_end)

    def engine(cfg):
        eng = Engine(backend, "auto", config=cfg)
        eng.load_edges(base[0], base[1], vertices=verts)
        numba.set_num_threads(top)
        t0 = time.perf_counter()
        eng.recompute(config=dataclasses.replace(cfg, tol=0.0, max_iter=150))
        engine.build_s = getattr(engine, "build_s", 0.0) + time.perf_counter() - t0
        return eng

    oracle = None
    print(f"{'block':>6} {'thr':>4} {'tol':>6} {'lines':>6} {'rank ms':>8} {'p90':>7} {'graph':>6} {'iters':>6} "
          f"{'L1':>9} {'blocks':>6}", flush=True)
    for item in args.grid.split(","):
        block, _, threads = item.partition(":")
        order = "jacobi" if block == "jacobi" else "gauss-seidel"
        block = 1 << 14 if order == "jacobi" else int(block)
        set_block(block)
        for tol in (float(t) for t in args.tols.split(",")):
            cfg = RankConfig(dangling="self-loop", frontier_tol=tol, prune_tol=tol, update_order=order)
            if oracle is None:
                oracle = oracle_fn(backend, cfg, cugraph=False)
            for frac in (float(f) for f in args.fractions.split(",")):
                size = int(frac * lines)
                batches = [edges(base_end + b * size, base_end + (b + 1) * size) for b in range(args.batches)]
                for t in (int(x) for x in threads.split("/")):
                    if t > top:
                        continue
                    eng = engine(cfg)
                    numba.set_num_threads(t)
                    rk, gr, its = [], [], []
                    for s, d in batches:
                        st = eng.apply(_batch(s, d))
                        rk.append(st.rank_ms)
                        gr.append(st.graph_ms)
                        its.append(st.rank.iterations)
                    numba.set_num_threads(top)
                    l1 = l1_error(eng.ranks()[1], oracle(eng.graph))
                    print(f"{block if order != 'jacobi' else order:>6} {t:4d} {tol:6.0e} {size:6d} {statistics.median(rk):8.3f} "
                          f"{np.percentile(rk, 90):7.3f} {statistics.median(gr):6.3f} {statistics.median(its):6.1f} "
                          f"{l1:9.2e} {eng.graph.sweep_blocks.shape[0]:6d}", flush=True)
    for pair in filter(None, args.per_iteration.split(",")):
        block, _, t = pair.partition(":")
        order = "jacobi" if block == "jacobi" else "gauss-seidel"
        block, t = (1 << 14 if order == "jacobi" else int(block)), int(t)
        set_block(block)
        cfg = RankConfig(dangling="self-loop", update_order=order)
        for frac in (1e-5, 1e-3):
            size = int(frac * lines)
            eng = engine(cfg)
            numba.set_num_threads(t)
            for b in range(5):
                eng.apply(_batch(*edges(base_end + b * size, base_end + (b + 1) * size)))
            s, d = edges(base_end + 5 * size, base_end + 6 * size)
            graph = eng.graph
            changes = graph.apply(_batch(s, d))
            ws = eng._rank_kw["workspace"]

            def run(max_iter):
                best, res = float("inf"), None
                for _ in range(5):
                    memo = {id(graph): graph}
                    w = copy.deepcopy(ws, memo)
                    x = memo[id(eng.x)] if id(eng.x) in memo else eng.x
                    tt = time.perf_counter()
                    res = pagerank_cpu.update_pagerank("dfp", graph, changes, x, workspace=w,
                                                       config=dataclasses.replace(cfg, max_iter=max_iter))
                    best = min(best, (time.perf_counter() - tt) * 1e3)
                return best, res

            full_ms, full = run(cfg.max_iter)
            cum = [run(k)[0] for k in range(1, full.iterations + 1)]
            per = np.diff([0.0] + cum)
            numba.set_num_threads(top)
            print(f"per iteration, {order} block {block} threads {t} lines {size}: total {full_ms:.3f} ms, "
                  f"{full.iterations} iterations")
            print("  frontier:", list(full.affected))
            print("  ms      :", [round(v, 3) for v in per])
    print(f"base recomputes: {engine.build_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
