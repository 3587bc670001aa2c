"""Gauss-Seidel block size against iterations and time: can a small graph's dense pass use two cores?

The CPU frontier loop cuts its Gauss-Seidel steps into blocks of at most ``GS_BLOCK`` entries
(:mod:`streamrank.kernels.cpu.frontier_gs`); one thread runs a block, and a vertex reads the other
blocks' values as they were when the iteration began. A graph with fewer vertices than one block
runs its dense passes on one thread (sx-mathoverflow, 24.8 k vertices: two blocks of the default
16,384, one of 32,768). This replays a file with DF-P for
each block size and thread count given (``GS_BLOCK`` replaced for the run, in the kernels' calls and
in the store's sweep order, :mod:`streamrank.kernels.cpu.sweep_order`; the block size, not the
thread count, decides the ranks) and prints per-batch medians: time (graph update included),
iterations and vertex updates, and the L1 error against the SciPy oracle at the end::

    python benchmarks/gs_block_ab.py /path/to/sx-mathoverflow.txt.gz --blocks 32768,16384,8192 --threads 1,2

Rows run in the order given, so repeat the command to alternate them on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from streamrank import EdgeBatch, Engine, RankConfig
from streamrank.rank.cpu import pagerank as pagerank_cpu
from streamrank.kernels.cpu import common as kernel_common
from streamrank.rank.cpu.threads import ENV as THREADS_ENV
from streamrank.oracle.static import oracle_pagerank
from streamrank.replay.run import BUNDLED_GRAPH, read_stream


def _run(stream, batches, size, threads):
    """One replay (90 % base graph, then ``batches`` batches); returns the row's figures."""
    numba.set_num_threads(threads)
    n_base = int(0.9 * len(stream))
    eng = Engine("cpu", "dfp", config=RankConfig(), id_type=stream.id_type)
    eng.load_edges(stream.src[:n_base], stream.dst[:n_base], stream.insert[:n_base])
    ms, its, upd = [], [], []
    for b in range(batches):
        lo = n_base + b * size
        if lo >= len(stream):
            break
        hi = lo + size
        batch = EdgeBatch.from_arrays(stream.src[lo:hi], stream.dst[lo:hi], stream.insert[lo:hi])
        t = time.perf_counter()
        step = eng.apply(batch)
        ms.append((time.perf_counter() - t) * 1e3)
        its.append(step.rank.iterations)
        upd.append(step.rank.affected_total)
    x = np.asarray(eng.x, dtype=np.float64)
    ref = np.asarray(oracle_pagerank(eng.graph, alpha=eng.config.alpha, dangling=eng.config.dangling))
    l1 = float(np.abs(x / x.sum() - ref).sum())
    return len(ms), float(np.median(ms)), float(np.median(its)), float(np.median(upd)), l1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--blocks", default="32768,16384,8192", help="GS_BLOCK values, comma-separated")
    p.add_argument("--threads", default="1,2", help="Numba thread counts, comma-separated")
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    args = p.parse_args(argv)
    blocks = [int(b) for b in args.blocks.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    if any(b < 512 or b % 512 for b in blocks):
        p.error("block sizes must be positive multiples of 512 (whole chunks)")
    if any(t < 1 or t > numba.config.NUMBA_NUM_THREADS for t in threads):
        p.error(f"thread counts must be in [1, {numba.config.NUMBA_NUM_THREADS}]")
    os.environ[THREADS_ENV] = "all"  # every batch on the thread count of the row
    stream = read_stream(args.path)
    size = max(1, round(args.batch_fraction * len(stream)))
    print(f"{args.path}: batches of {size} edges, medians per batch; load average {os.getloadavg()[0]:.2f}")
    head = ("GS_BLOCK", "threads", "batches", "ms/batch", "iterations", "vertex updates", "L1 error")
    print("  ".join(f"{h:>14s}" for h in head))
    default = pagerank_cpu.GS_BLOCK
    try:
        for block in blocks:
            pagerank_cpu.GS_BLOCK = kernel_common.GS_BLOCK = block  # the kernels' and the store's order's
            for t in threads:
                nb, ms, it, upd, l1 = _run(stream, args.batches, size, t)
                print(f"{block:14d}  {t:14d}  {nb:14d}  {ms:14.3f}  {it:14.1f}  {upd:14.0f}  {l1:14.2e}", flush=True)
    finally:
        pagerank_cpu.GS_BLOCK = kernel_common.GS_BLOCK = default
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
