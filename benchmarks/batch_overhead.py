"""Fixed cost of a DF-P batch on a large graph: batches that touch almost nothing.

Each batch inserts one edge between two new vertices (an isolated pair), so DF-P's frontier is a
couple of vertices for two iterations: what remains is the per-batch cost that does not follow
the batch (before the CPU frontier workspace, whole-graph arrays allocated, filled and summed per
batch, and the id map copied). Prints the median wall time per batch (graph update included)
after a warm-up::

    python benchmarks/batch_overhead.py --scale 20
"""

from __future__ import annotations

import argparse

import numpy as np

from streamrank import EdgeBatch, Engine
from streamrank.bench.rmat import rmat_edges


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale (2**scale vertex ids, 8 edges each)")
    p.add_argument("--batches", type=int, default=300)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    s, d = rmat_edges(args.scale, 8, seed=1)
    eng = Engine(args.device, "dfp")
    eng.load_edges(np.asarray(s), np.asarray(d))
    first_new = 1 << 40  # ids the R-MAT graph does not use
    total, graph = [], []
    for b in range(args.batches):
        step = eng.apply(EdgeBatch.from_arrays(np.array([first_new + 2 * b]), np.array([first_new + 2 * b + 1])))
        total.append(step.total_ms)
        graph.append(step.graph_ms)
    warm = max(1, args.batches // 10)
    print(f"R-MAT {args.scale}: |V|={eng.graph.num_vertices:,} |E|={eng.graph.num_edges:,}, {eng.backend.name}; "
          f"one-edge DF-P batch (two new vertices): median {np.median(total[warm:]):.3f} ms per batch, "
          f"graph update {np.median(graph[warm:]):.3f} ms, {step.rank.iterations} iterations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
