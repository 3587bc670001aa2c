"""Where a CPU DF-P batch's time goes: graph update, iterations, cost per iteration, threads.

Replays a file as ``streamrank replay`` does (90 % base graph, batches of ``--batch-fraction``
of the edges) with the CPU engine and, on every ``--every``-th batch, times that batch's rank
update again and again from a copy of the engine's workspace with ``max_iter = 1, 2, ...``: the
differences are the cost of each iteration (the best of ``--repeat`` runs, so a busy machine
spoils fewer of them). An iteration whose frontier holds more than a quarter of the vertices
counts as *wide* (where the loop runs its dense pass over all vertices). Prints one row per
update order and thread count, medians over the sampled batches::

    python benchmarks/profile_cpu_batch.py /path/to/sx-mathoverflow.txt.gz --batches 200 --every 20

It drives :func:`streamrank.rank.cpu.pagerank.update_pagerank` with copies of a
:class:`streamrank.rank.cpu.workspace.FrontierWorkspace` (the engine's CPU rank step without the engine).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import time

import numba
import numpy as np

from streamrank import EdgeBatch, RankConfig
from streamrank.config import UPDATE_ORDERS
from streamrank.rank.cpu.threads import ENV as THREADS_ENV
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.store.cpu import CpuGraph
from streamrank.rank.cpu.pagerank import static_pagerank, update_pagerank
from streamrank.replay.run import BUNDLED_GRAPH, read_stream


def _profile_batch(graph, ws, x, batch, cfg, repeat):
    """Apply ``batch``; returns the new ``x`` and (graph ms, rank ms, iterations, per-iteration
    frontiers, per-iteration ms)."""
    t0 = time.perf_counter()
    changes = graph.apply(batch)
    graph_ms = (time.perf_counter() - t0) * 1e3

    def run(max_iter):
        best, res = float("inf"), None
        for _ in range(repeat):
            memo = {id(graph): graph}
            w = copy.deepcopy(ws, memo)  # x (the workspace's own view) is copied with it:
            x_copy = memo[id(x)]  # handed back, the copy continues from its own state
            t = time.perf_counter()
            res = update_pagerank("dfp", graph, changes, x_copy, workspace=w,
                                  config=dataclasses.replace(cfg, max_iter=max_iter))
            best = min(best, (time.perf_counter() - t) * 1e3)
        return best, res

    full_ms, full = run(cfg.max_iter)
    cumulative = [run(k)[0] for k in range(1, full.iterations + 1)]
    per = np.diff([0.0] + cumulative)
    x = update_pagerank("dfp", graph, changes, x, config=cfg, workspace=ws).x  # the stream goes on
    return x, (graph_ms, full_ms, full.iterations, np.array(full.affected), per)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--every", type=int, default=20, help="profile every this many batches")
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement (the best counts)")
    p.add_argument("--orders", default=",".join(UPDATE_ORDERS))
    args = p.parse_args(argv)
    os.environ[THREADS_ENV] = "all"  # the thread count is set here, not chosen per batch
    stream = read_stream(args.path)
    n_base = int(0.9 * len(stream))
    size = max(1, round(args.batch_fraction * len(stream)))
    top = numba.get_num_threads()
    rows = []
    for order in args.orders.split(","):
        for threads in sorted({1, top}):
            numba.set_num_threads(threads)
            cfg = RankConfig(update_order=order)
            keep = stream.insert[:n_base]
            graph = CpuGraph.from_edges(stream.src[:n_base][keep], stream.dst[:n_base][keep])
            x = static_pagerank(graph, config=cfg).x
            ws = FrontierWorkspace()
            n = graph.num_vertices
            samples = []
            for b in range(args.batches):
                lo = n_base + b * size
                if lo >= len(stream):
                    break
                batch = EdgeBatch.from_arrays(stream.src[lo:lo + size], stream.dst[lo:lo + size],
                                              stream.insert[lo:lo + size])
                if (b + 1) % args.every:
                    x = update_pagerank("dfp", graph, graph.apply(batch), x, config=cfg, workspace=ws).x
                    continue
                x, (graph_ms, rank_ms, its, affected, per) = _profile_batch(graph, ws, x, batch, cfg, args.repeat)
                wide = affected > n / 4
                samples.append((graph_ms, rank_ms, its, wide.sum(), per[wide].sum(), (~wide).sum(), per[~wide].sum(),
                                per[wide].mean() if wide.any() else float("nan"), affected.sum()))
            med = np.nanmedian(np.array(samples, dtype=float), axis=0)
            rows.append((order, threads, len(samples), *med))
    numba.set_num_threads(top)
    print(f"{args.path}: batches of {size} edges, base graph |V|={n:,}; medians over the sampled batches")
    head = ("order", "threads", "batches", "graph ms", "rank ms", "iters", "wide iters", "ms wide", "other iters",
            "ms other", "ms per wide", "vertex updates")
    print("  ".join(f"{h:>12s}" for h in head))
    for r in rows:
        print(f"{r[0]:>12s}  {r[1]:>12d}  {r[2]:>12d}  " + "  ".join(
            f"{v:12.3f}" if i in (0, 1, 4, 6, 7) else f"{v:12.0f}" for i, v in enumerate(r[3:])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
