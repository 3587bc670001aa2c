"""Weighted against unweighted DF-P on the CPU: the sx-mathoverflow temporal replay, alternating.

Each round runs, one after the other, each in a process of its own: the unweighted engine of
a baseline tree (``--baseline-tree``, e.g. a ``git archive`` of the code before a change,
optional), the unweighted engine of this tree, and the weighted engine of this tree with
``multi_edges="set"`` (every edge weighs 1) and ``"sum"`` (a repeated line adds 1 to its
edge's weight). Every process runs :func:`streamrank.bench.temporal.run_temporal` (the
published temporal protocol: the first 90% of the lines as the base graph, then ``--batches``
batches of each fraction of the lines, graph update and rank update timed, the L1 error of
every batch against the float64 oracle, untimed) with the default algorithm. The order of the
variants rotates from round to round; the table gives, per variant and fraction, the median over
the rounds of each run's median ms per batch (graph update included), the iterations, the L1
error, and the ratio to this tree's unweighted engine. The load average before and after each
run is printed beside it (a shared host).

    nice -n 19 python benchmarks/weighted_cpu.py --baseline-tree /tmp/main-tree --rounds 3

The first round warms the kernel caches (Numba compiles the baseline tree's kernels anew) and is
not counted unless ``--count-first``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: variant -> (tree, weighted, multi_edges); the tree "base" is --baseline-tree
VARIANTS = {"unweighted (baseline tree)": ("base", False, "set"), "unweighted": ("here", False, "set"),
            "weighted set": ("here", True, "set"), "weighted sum": ("here", True, "sum")}


def _child(args) -> None:
    from streamrank.bench.temporal import TemporalOptions, run_temporal

    opts = TemporalOptions(args.graph, fractions=tuple(args.fractions), algorithms=("auto",), batches=args.batches,
                           vertices=args.vertices, device="cpu", weighted=args.weighted, multi_edges=args.multi_edges)
    report = run_temporal(opts, log=lambda msg: print(msg, file=sys.stderr))
    print(json.dumps([{k: r[k] for k in ("fraction", "total_ms_median", "graph_ms_median", "rank_ms_median",
                                         "iterations_median", "l1_median", "l1_max", "converged")}
                      for r in report["rows"]]))


def _run(variant, tree, args):
    where, weighted, multi = VARIANTS[variant]
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--graph", args.graph, "--batches", str(args.batches),
           "--vertices", str(args.vertices), "--multi-edges", multi, "--fractions", *map(str, args.fractions)]
    if weighted:
        cmd.append("--weighted")
    env = dict(os.environ, PYTHONPATH=tree)
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    if out.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{out.stderr[-3000:]}")
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    return rows, (load, os.getloadavg()[0])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="/work/shared/data/sx-mathoverflow.txt.gz")
    p.add_argument("--baseline-tree", default=None, help="a tree of the code to compare with (unweighted only)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--count-first", action="store_true", help="count the first (cache-warming) round too")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--vertices", type=int, default=248180, help="ids created up front (the published 10x)")
    p.add_argument("--fractions", type=float, nargs="+", default=[1e-4, 1e-3])
    p.add_argument("--out", default=None, help="also write the table and every run's figures here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--weighted", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--multi-edges", default="set", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    variants = [v for v in VARIANTS if args.baseline_tree or VARIANTS[v][0] == "here"]
    trees = {"here": HERE, "base": os.path.abspath(args.baseline_tree) if args.baseline_tree else None}
    lines = [f"# {' '.join(sys.argv)}", f"# {os.cpu_count()} CPU cores; variants alternate, rotated per round; "
             f"per run: median of {args.batches} batches"]
    runs = {v: [] for v in variants}
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]
        for v in order:
            rows, load = _run(v, trees[VARIANTS[v][0]], args)
            counted = r > 0 or args.count_first
            if counted:
                runs[v].append(rows)
            figs = "  ".join(f"{row['fraction']:g}: {row['total_ms_median']:.2f} ms {row['iterations_median']:.1f} it"
                             for row in rows)
            lines.append(f"round {r}{'' if counted else ' (warm-up)'} {v:28s} {figs}   load {load[0]:.2f} -> {load[1]:.2f}")
            print(lines[-1], flush=True)
    lines.append("")
    lines.append(f"{'variant':28s} {'fraction':>8s} {'ms/batch':>9s} {'graph ms':>9s} {'rank ms':>8s} "
                 f"{'iters':>6s} {'L1 median':>10s} {'L1 max':>9s} {'x unweighted':>12s}")
    meds = {}
    for v in variants:
        for i, frac in enumerate(args.fractions):
            rows = [run[i] for run in runs[v]]
            meds[v, frac] = {k: float(np.median([row[k] for row in rows])) for k in (
                "total_ms_median", "graph_ms_median", "rank_ms_median", "iterations_median", "l1_median")}
            meds[v, frac]["l1_max"] = max(row["l1_max"] for row in rows)
    for v in variants:
        for frac in args.fractions:
            med = meds[v, frac]
            ratio = med["total_ms_median"] / meds["unweighted", frac]["total_ms_median"]
            lines.append(f"{v:28s} {frac:8g} {med['total_ms_median']:9.2f} {med['graph_ms_median']:9.2f} "
                         f"{med['rank_ms_median']:8.2f} {med['iterations_median']:6.1f} {med['l1_median']:10.2e} "
                         f"{med['l1_max']:9.2e} {ratio:12.2f}")
            print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
