"""CPU time per batch of the CPU engine next to a NetworkX recompute, for shared machines.

``streamrank replay`` reports wall-clock time, which on a machine shared with other busy
processes measures the scheduler more than the engine (multi-threaded kernels wait for their
descheduled threads). This script replays the first batches of a file as ``streamrank replay``
does (90 % base graph, batches of ``--batch-fraction`` of the edges) and prints the median *CPU
time* (``time.process_time``) of graph update + rank update per batch, and of
``networkx.pagerank`` on the final graph (asked for an L1 error of 1e-6, as ``replay
--baseline networkx``: :func:`streamrank.replay.baseline.networkx_tol`), with their ratio. Run it with
``NUMBA_NUM_THREADS=1`` so that CPU time is also the single-core wall time on an idle machine::

    NUMBA_NUM_THREADS=1 python benchmarks/cpu_time.py /path/to/sx-mathoverflow.txt.gz --batches 300
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streamrank import EdgeBatch, Engine, RankConfig
from streamrank.replay.baseline import networkx_tol
from streamrank.replay.run import BUNDLED_GRAPH, read_stream


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--algorithm", default="dfp")
    p.add_argument("--batches", type=int, default=300)
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    p.add_argument("--frontier-tol", type=float, default=1e-6)
    p.add_argument("--prune-tol", type=float, default=1e-6)
    args = p.parse_args(argv)
    import networkx as nx

    stream = read_stream(args.path)
    n_base = int(0.9 * len(stream))
    size = max(1, round(args.batch_fraction * len(stream)))
    cfg = RankConfig(frontier_tol=args.frontier_tol, prune_tol=args.prune_tol)
    eng = Engine("cpu", args.algorithm, config=cfg)
    eng.load_edges(stream.src[:n_base], stream.dst[:n_base], stream.insert[:n_base])
    times = []
    for b in range(args.batches):
        lo = n_base + b * size
        if lo >= len(stream):
            break
        hi = min(lo + size, len(stream))
        batch = EdgeBatch.from_arrays(stream.src[lo:hi], stream.dst[lo:hi], stream.insert[lo:hi])
        t = time.process_time()
        eng.apply(batch)
        times.append(time.process_time() - t)
    s, d = eng.graph.edges()
    G = nx.DiGraph()
    G.add_nodes_from(range(eng.graph.num_vertices))
    G.add_edges_from(zip(s.tolist(), d.tolist()))
    nx_times = []
    tol = networkx_tol(eng.graph.num_vertices, cfg.alpha)
    for _ in range(3):
        t = time.process_time()
        nx.pagerank(G, alpha=cfg.alpha, tol=tol, max_iter=10_000)
        nx_times.append(time.process_time() - t)
    med, nx_med = float(np.median(times)) * 1e3, float(np.median(nx_times)) * 1e3
    print(f"{args.path}: {len(times)} batches of {size} edges, |V|={eng.graph.num_vertices:,} |E|={eng.graph.num_edges:,}")
    print(f"{args.algorithm} (frontier_tol {cfg.frontier_tol:g}, prune_tol {cfg.prune_tol:g}): CPU ms per batch "
          f"(graph update included) median {med:.2f}, p95 {float(np.percentile(times, 95)) * 1e3:.2f}")
    print(f"networkx.pagerank (tol {tol:.2g}: L1 error <= 1e-6) of the final graph: CPU ms median {nx_med:.0f}; "
          f"ratio {nx_med / med:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
