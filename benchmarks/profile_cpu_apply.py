"""Where the CPU engine's ``Engine.apply`` time goes: the frontier kernel, the graph update, the rest.

Replays a file as ``streamrank replay`` does (90 % base graph, batches of ``--batch-fraction`` of
the edges) through one CPU engine and times, per batch, the whole ``Engine.apply``, the compiled
frontier loop (the one call of :data:`streamrank.kernels.cpu.frontier.FRONTIER` the rank step
makes) and :meth:`streamrank.store.cpu.CpuGraph.apply`; "other" is the rest (the Python around the
compiled calls: the engine, the workspace's upkeep, the initial frontier, the thread choice).
Prints the medians over the batches after ``--skip``::

    python benchmarks/profile_cpu_apply.py /path/to/sx-mathoverflow.txt.gz

Run it in two checkouts alternately to compare builds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import streamrank.rank.cpu.pagerank as pagerank_cpu
from streamrank import EdgeBatch, Engine
from streamrank.kernels.cpu import frontier
from streamrank.store.cpu import CpuGraph
from streamrank.replay.run import BUNDLED_GRAPH, read_stream


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--algorithm", default="dfp", choices=("dt", "df", "dfp"))
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    p.add_argument("--skip", type=int, default=100, help="batches left out of the medians (warm-up)")
    args = p.parse_args(argv)
    kernel_ns, graph_ns = [], []

    def timed(fn, out):
        def run(*a, **kw):
            t = time.perf_counter_ns()
            r = fn(*a, **kw)
            out.append(time.perf_counter_ns() - t)
            return r
        return run

    # every kernel entry timed (the rank step looks them up in its module's FRONTIER per batch)
    pagerank_cpu.FRONTIER = {key: timed(fn, kernel_ns) for key, fn in frontier.FRONTIER.items()}
    stream = read_stream(args.path)
    total = len(stream)
    n_base = int(0.9 * total)
    size = max(1, round(args.batch_fraction * total))
    eng = Engine("cpu", args.algorithm, id_type=stream.id_type)
    eng.load_edges(stream.src[:n_base], stream.dst[:n_base], stream.insert[:n_base])
    CpuGraph.apply = timed(CpuGraph.apply, graph_ns)  # after the base graph's load
    apply_ns = []
    for lo in range(n_base, total, size):
        hi = min(lo + size, total)
        batch = EdgeBatch.from_arrays(stream.src[lo:hi], stream.dst[lo:hi], stream.insert[lo:hi])
        t = time.perf_counter_ns()
        eng.apply(batch)
        apply_ns.append(time.perf_counter_ns() - t)
    if len(kernel_ns) != len(apply_ns) or len(graph_ns) != len(apply_ns):
        raise SystemExit("a batch skipped the frontier kernel or the graph update: no per-batch split")
    a, k, g = (np.array(v[args.skip:]) / 1e6 for v in (apply_ns, kernel_ns, graph_ns))
    print(f"{a.shape[0]} batches of {size} edges ({args.algorithm}), medians per batch:")
    print(f"  Engine.apply {np.median(a):.3f} ms = frontier kernel {np.median(k):.3f} + graph update "
          f"{np.median(g):.3f} + other {np.median(a - k - g):.3f} (median of the differences)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
