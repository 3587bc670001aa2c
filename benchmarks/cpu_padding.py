"""What the published protocol's padding costs the CPU engine: the rank kernel's CPU time per batch,
padded (ids created up front) against unpadded, on one thread.

Replays the temporal protocol of ``streamrank bench --protocol temporal`` (90 % of the file's lines
as the base, then ``--batches`` batches of ``--fraction`` of its lines, self-loop mode) with DF-P on
the CPU, once with ``--vertices`` ids created up front and once without, and reports the median
over the batches (the first two left out) of the frontier loop's CPU time (``time.thread_time``
around the compiled call: on a shared host, time other processes take does not count), its
iterations and vertex updates, and the store's sweep end where it has one. Run it with
``NUMBA_NUM_THREADS=1`` (one thread: its CPU time is the work)::

    NUMBA_NUM_THREADS=1 python benchmarks/cpu_padding.py /path/to/sx-mathoverflow.txt.gz --fraction 1e-3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streamrank.backend import resolve_backend
from streamrank.bench.temporal import _base_engine, _batch, _read_lines
from streamrank.config import RankConfig
from streamrank.engine import Engine
from streamrank.kernels.cpu import frontier
from streamrank.rank.cpu import pagerank as pagerank_cpu


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--fraction", type=float, default=1e-3)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--vertices", type=int, default=248180)
    args = p.parse_args(argv)
    src, dst = _read_lines(args.path)
    base_end = int(0.9 * src.shape[0])
    size = int(args.fraction * src.shape[0])

    def edges(lo, hi):
        s, d = src[lo:hi], dst[lo:hi]
        keep = s != d  # self-loop mode: a line u u adds nothing
        return s[keep], d[keep]

    kernel_ms = []

    def timed(kernel):
        def call(*a):
            t = time.thread_time()
            out = kernel(*a)
            kernel_ms.append((time.thread_time() - t) * 1e3)
            return out
        return call

    pagerank_cpu.FRONTIER = {k: timed(f) for k, f in frontier.FRONTIER.items()}
    cfg = RankConfig(dangling="self-loop")
    print(f"{args.path}: batches of {size} lines, {args.batches} per run; medians over batches 3..{args.batches}")
    for vertices in (args.vertices, None):
        eng = _base_engine(Engine, resolve_backend("cpu"), "dfp", cfg, edges(0, base_end),
                           None if vertices is None else np.arange(vertices))
        rows = []
        for b in range(args.batches):
            kernel_ms.clear()
            step = eng.apply(_batch(*edges(base_end + b * size, base_end + (b + 1) * size)))
            rows.append((sum(kernel_ms), step.rank.iterations, sum(step.rank.affected)))
        med = np.median(np.array(rows[2:], dtype=float), axis=0)
        end = getattr(eng.graph, "sweep_end", None)
        print(f"{'padded' if vertices else 'unpadded':>8s}: {eng.graph.num_vertices} vertices, sweep end {end}, "
              f"{eng.graph.sweep_blocks.shape[0]} blocks: kernel CPU ms {med[0]:.2f}, iterations {med[1]:.1f}, "
              f"vertex updates {med[2]:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
