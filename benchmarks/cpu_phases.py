"""Where a CPU batch's time goes: the temporal replay of a graph with each phase timed per batch.

Runs the published temporal protocol's batches (the first 90% of the lines as the base graph,
then ``--batches`` batches of ``--fraction`` of the lines, self-loop mode, ``--vertices`` ids up
front) on a CPU engine, unweighted and weighted (``set``: every line weighs 1, the same graph;
``sum`` with ``--sum``), and prints the median per batch of: the whole ``Engine.apply``, the
graph update, the workspace's start of the batch (:meth:`FrontierWorkspace.begin`) with the
mirror's upkeep inside it, and the frontier loop itself. The phases are timed by wrapping the
functions the engine calls (a few microseconds of Python per call).

    python benchmarks/cpu_phases.py --graph sx-mathoverflow.txt.gz --fraction 1e-3 --rounds 2

``STREAMRANK_CPU_THREADS=all`` turns the per-batch thread choice off (docs/configuration.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamrank import Engine, RankConfig  # noqa: E402
from streamrank.bench.temporal import _batch, _read_lines, line_edges  # noqa: E402
import streamrank.rank.cpu.pagerank as cpu_pagerank  # noqa: E402
import streamrank.rank.cpu.workspace as cpu_workspace  # noqa: E402

PHASES = defaultdict(float)


def _clocked(fn, key):
    """``fn`` with its wall time added to ``PHASES[key]`` on every call."""
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[key] += time.perf_counter() - t

    return wrapper


def _instrument():
    upkeep = cpu_workspace.mirror_upkeep
    upkeep.admit = _clocked(upkeep.admit, "mirror upkeep")
    cpu_pagerank.FrontierWorkspace.begin = _clocked(cpu_pagerank.FrontierWorkspace.begin, "begin")
    for key, kernel in list(cpu_pagerank.FRONTIER.items()):
        cpu_pagerank.FRONTIER[key] = _clocked(kernel, "loop")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", required=True, help="a temporal edge file (SNAP: src dst ts)")
    p.add_argument("--fraction", type=float, default=1e-3)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--vertices", type=int, default=248180, help="ids created up front (the published 10x)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--padding", choices=("after", "first"), default="after",
                   help="the ids up front created after the edges' own (what load_edges does) or first, in id order "
                        "(the layout before: the ids with edges scattered over all of them)")
    p.add_argument("--sum", action="store_true", help="also the weighted engine with multi_edges='sum'")
    args = p.parse_args(argv)
    _instrument()
    src, dst = _read_lines(args.graph)
    lines = src.shape[0]
    base_end = int(0.9 * lines)
    size = int(args.fraction * lines)
    if size < 1 or base_end + size * args.batches > lines:
        raise SystemExit(f"{args.batches} batches of {args.fraction:g} of {lines} lines do not fit after the base")
    cfg = RankConfig(dangling="self-loop")

    def edges(lo, hi):
        return line_edges(src, dst, lo, hi)

    batches = [edges(base_end + b * size, base_end + (b + 1) * size) for b in range(args.batches)]
    variants = [("unweighted", {}), ("weighted set", {"weighted": True, "multi_edges": "set"})]
    if args.sum:
        variants.append(("weighted sum", {"weighted": True, "multi_edges": "sum"}))
    print(f"{os.cpu_count()} CPUs; {size} lines per batch; {args.vertices} ids up front, created {args.padding}; "
          f"medians of {args.batches} batches, ms")
    print(f"{'variant':13s} {'total':>7s} {'graph':>7s} {'begin':>7s} {'mirror':>7s} {'loop':>7s} {'iters':>6s}")
    for _ in range(args.rounds):
        for name, kw in variants:
            eng = Engine("cpu", "auto", config=cfg, **kw)
            if args.padding == "first":
                eng.add_vertices(np.arange(args.vertices, dtype=np.int64))
                eng.load_edges(*edges(0, base_end))
            else:
                eng.load_edges(*edges(0, base_end), vertices=np.arange(args.vertices, dtype=np.int64))
            eng.recompute(config=replace(cfg, tol=0.0))
            rows = []
            for s, d in batches:
                PHASES.clear()
                t = time.perf_counter()
                step = eng.apply(_batch(s, d))
                rows.append(((time.perf_counter() - t) * 1e3, step.graph_ms, PHASES["begin"] * 1e3,
                             PHASES["mirror upkeep"] * 1e3, PHASES["loop"] * 1e3, step.rank.iterations))
            med = np.median(np.array(rows), axis=0)
            print(f"{name:13s} {med[0]:7.2f} {med[1]:7.2f} {med[2]:7.2f} {med[3]:7.2f} {med[4]:7.2f} {med[5]:6.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
