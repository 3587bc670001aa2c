"""CPU steps of a DF-P batch timed alone: the Gauss-Seidel dense pass and the initial frontier.

Replays a file (90 % base graph, then ``--batches`` batches of ``--batch-fraction`` of the edges)
with DF-P on one thread, then times on that state

* the frontier loop's Gauss-Seidel dense pass over all vertices (uniform mode, the loop's own
  arguments: :func:`streamrank.kernels.cpu.frontier_order.dense_order` over the workspace's
  mirror, called from a compiled wrapper with them as constants), every vertex with in-edges
  active, from the same copy of the workspace each run: best and median of ``--repeat`` runs,
  ``--rounds`` times (before the sweep order, this timed ``frontier_gs.dense_gs``, the pass in
  id order over the store's rows: run the script of each checkout to compare);
* :func:`streamrank.kernels.cpu.marking.initial_frontier` of the next 50 batches (median).

Run it in two checkouts alternately to compare builds::

    python benchmarks/cpu_passes.py /path/to/sx-mathoverflow.txt.gz
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit

from streamrank import EdgeBatch, RankConfig
from streamrank.kernels.cpu.frontier_order import dense_order, enter
from streamrank.kernels.cpu.marking import initial_frontier
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.store.cpu import CpuGraph
from streamrank.rank.cpu.pagerank import static_pagerank, update_pagerank
from streamrank.replay.run import BUNDLED_GRAPH, read_stream


@njit
def joined_pass(n, g, mv, cp, xp, keepp, parts, part_count):
    # DF-P, uniform mode, as frontier_iterate passes them (literal flags)
    dense_order(n, True, g, mv, cp, xp, keepp, False, 0.85, False, 1e-6, 1e-6, True, True, parts,
                part_count)


def batch_at(stream, n_base: int, size: int, b: int) -> EdgeBatch:
    """Batch ``b`` of ``size`` edges after the first ``n_base`` of ``stream``."""
    lo = n_base + b * size
    return EdgeBatch.from_arrays(stream.src[lo:lo + size], stream.dst[lo:lo + size], stream.insert[lo:lo + size])


def replayed(path: str, batches: int, fraction: float):
    """``(stream, n_base, size, graph, x, ws)``: the file's first 90 % as the base graph, then
    ``batches`` DF-P batches of ``fraction`` of its edges (Numba's thread count as set before)."""
    stream = read_stream(path)
    n_base = int(0.9 * len(stream))
    size = max(1, round(fraction * len(stream)))
    cfg = RankConfig()
    keep = stream.insert[:n_base]
    graph = CpuGraph.from_edges(stream.src[:n_base][keep], stream.dst[:n_base][keep])
    x = static_pagerank(graph, config=cfg).x
    ws = FrontierWorkspace()
    for b in range(batches):
        x = update_pagerank("dfp", graph, graph.apply(batch_at(stream, n_base, size, b)), x, config=cfg,
                            workspace=ws).x
    return stream, n_base, size, graph, x, ws


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--batches", type=int, default=200, help="batches replayed before the timings")
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    p.add_argument("--repeat", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    if args.batches < 0 or args.repeat < 1 or args.rounds < 1:
        p.error("--batches must be >= 0, --repeat and --rounds >= 1")
    numba.set_num_threads(1)
    stream, n_base, size, graph, x, ws = replayed(args.path, args.batches, args.batch_fraction)

    def batch(b):
        return batch_at(stream, n_base, size, b)

    g = graph.kernel_arrays()
    n = graph.num_vertices
    xx, c, inv, flags = ws.x, ws.c, ws.inv, ws.flags
    cprev, loops, parts_f, parts_i = ws.cprev, ws.loops, ws.parts_f, ws.parts_i
    parts = (parts_f[0], parts_f[1], parts_i[0], parts_i[1], parts_i[2], parts_i[3])
    x0, c0 = xx.copy(), c.copy()
    k0 = flags.copy()
    k0[:n] = graph.in_degree > 0
    flags[:] = k0
    enter(n, g, inv, loops, ws.mirror(), xx, c, flags, ws.xnew, ws.cnew, ws.keep2)  # builds the mirror
    xp0, cp0, kp0 = ws.xnew.copy(), ws.cnew.copy(), ws.keep2.copy()
    flags[:] = 0
    best, medians = [], []
    for r in range(args.rounds + 1):  # round 0 compiles and warms up
        ts = []
        for _ in range(args.repeat if r else 3):
            ws.xnew[:] = xp0
            ws.cnew[:] = cp0
            ws.keep2[:] = kp0
            t = time.perf_counter()
            joined_pass(n, g, ws.mirror(), ws.cnew, ws.xnew, ws.keep2, parts, parts_i[5])
            ts.append((time.perf_counter() - t) * 1e3)
        if r:
            best.append(min(ts))
            medians.append(float(np.median(ts)))
    flags[:] = 0
    xx[:] = x0
    c[:] = c0
    cprev[:] = c0
    room = n + 2 * 50 * size  # the next 50 batches add at most two vertices per edge
    marks, listed = np.zeros(room, dtype=np.uint8), np.empty(room, dtype=np.int32)
    init = []
    for b in range(args.batches, args.batches + 50):
        ch = graph.apply(batch(b))
        ins_src, del_src, del_dst = (np.ascontiguousarray(a, dtype=np.int64) for a in
                                     (ch.ins_src, ch.del_src, ch.del_dst))
        g = graph.kernel_arrays()
        t = time.perf_counter()
        nf = initial_frontier(g, ins_src, del_src, del_dst, False, marks, listed)
        init.append((time.perf_counter() - t) * 1e3)
        marks[listed[:nf]] = 0  # every flag 0 again (the sources' scan bits are cleared by the kernel)
    print(f"{args.path}: |V|={n:,} |E|={graph.num_edges:,} after {args.batches} batches of {size} edges, one thread")
    print(f"dense pass (all vertices with in-edges active), {args.rounds} rounds of {args.repeat}: "
          f"best {min(best):.4f} ms, median of the rounds' medians {np.median(medians):.4f} ms")
    print(f"initial frontier of the next 50 batches: median {np.median(init) * 1e3:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
