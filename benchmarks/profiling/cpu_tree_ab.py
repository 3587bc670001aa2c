"""CPU engine A/B across code trees: the published temporal protocol, one process per run, alternating.

Each tree is a checkout of the engine (for example ``git archive <commit> | tar x -C DIR``). A
first round runs every tree at once, untimed: it compiles the kernels into each tree's cache
and takes the L1 error of the final ranks against SciPy's float64 PageRank. Then ``--rounds``
rounds run one tree after another, the order rotated each round, and the table gives per tree,
tolerance and batch size the median per batch of every run and the median of the runs
(graph + rank update), with the iterations (median per batch and sum over the batches).

    python benchmarks/profiling/cpu_tree_ab.py --graph sx-mathoverflow.txt.gz \\
        --tree before=/tmp/before --tree after=. --rounds 4 --out ab.txt

The batches are those of ``streamrank bench --protocol temporal`` (first 90% of the lines as the
base, ``--vertices`` ids up front, self-loop mode, ``--batches`` batches per fraction, auto);
``--tols`` lists frontier/prune tolerances (``default``: the engine's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _worker(args) -> None:
    """One run in the current tree: a JSON line appended to ``args.result``."""
    import dataclasses

    import numpy as np

    from streamrank import Engine, RankConfig
    from streamrank.bench.temporal import _batch, _read_lines, line_edges

    src, dst = _read_lines(args.graph)
    lines = src.shape[0]
    base_end = int(0.9 * lines)

    def edges(lo, hi):
        return line_edges(src, dst, lo, hi)

    verts = np.arange(args.vertices, dtype=np.int64)
    # a throwaway engine first: the first batches of a process load the kernels from the cache
    size = int(float(args.fractions.split(",")[0]) * lines)
    warm = Engine("cpu", "auto", config=RankConfig(dangling="self-loop"))
    warm.load_edges(*edges(0, base_end), vertices=verts)
    for b in range(3):
        warm.apply(_batch(*edges(base_end + b * size, base_end + (b + 1) * size)))
    rows = []
    for tol in args.tols.split(","):
        cfg = RankConfig(dangling="self-loop")
        if tol != "default":
            cfg = dataclasses.replace(cfg, frontier_tol=float(tol), prune_tol=float(tol))
        for frac in (float(f) for f in args.fractions.split(",")):
            size = int(frac * lines)
            batches = [edges(base_end + b * size, base_end + (b + 1) * size) for b in range(args.batches)]
            eng = Engine("cpu", "auto", config=cfg)
            eng.load_edges(*edges(0, base_end), vertices=verts)
            eng.recompute(config=dataclasses.replace(cfg, tol=0.0))
            ms, its = [], []
            for s, d in batches:
                step = eng.apply(_batch(s, d))
                ms.append(step.graph_ms + step.rank_ms)
                its.append(step.rank.iterations)
            row = {"tol": tol, "lines": size, "ms": float(np.median(ms)), "it": float(np.median(its)),
                   "itsum": int(sum(its))}
            if args.check:
                from streamrank.oracle.static import oracle_pagerank

                exact = oracle_pagerank(eng.graph, alpha=cfg.alpha, dangling=cfg.dangling)
                row["l1"] = float(np.abs(eng.ranks()[1] - exact).sum())
            rows.append(row)
    with open(args.result, "a") as fh:
        fh.write(json.dumps({"tree": args.name, "check": bool(args.check), "rows": rows}) + "\n")


def _run(name, path, args, result, check, wait=True):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--name", name, "--result", result,
           "--graph", os.path.abspath(args.graph), "--vertices", str(args.vertices), "--batches", str(args.batches),
           "--fractions", args.fractions, "--tols", args.tols] + (["--check"] if check else [])
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    proc = subprocess.Popen(cmd, cwd=os.path.abspath(path), env=env)
    return proc.wait() if wait else proc


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", required=True, help="a temporal edge file (SNAP: src dst ts)")
    p.add_argument("--tree", action="append", default=[], help="NAME=DIR, a checkout of the engine (two or more)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--vertices", type=int, default=248180, help="ids created up front")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--fractions", default="1e-5,1e-4,1e-3")
    p.add_argument("--tols", default="default,1e-5", help="frontier/prune tolerances ('default': the engine's)")
    p.add_argument("--out", help="also write the table here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--name", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(args)
        return
    trees = [t.split("=", 1) for t in args.tree]
    if len(trees) < 2 or any(len(t) != 2 or not os.path.isdir(t[1]) for t in trees):
        p.error("give two or more --tree NAME=DIR, each an existing directory")
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    work = tempfile.mkdtemp(prefix="cpu-tree-ab-")
    checks, timed = os.path.join(work, "check.jsonl"), os.path.join(work, "timed.jsonl")
    t0 = time.perf_counter()
    procs = [_run(n, d, args, checks, True, wait=False) for n, d in trees]
    if any(proc.wait() != 0 for proc in procs):
        sys.exit("a first-round run failed")
    print(f"first round (compile, L1) in {time.perf_counter() - t0:.0f} s", flush=True)
    for r in range(args.rounds):
        order = trees[r % len(trees):] + trees[:r % len(trees)]
        for n, d in order:
            if _run(n, d, args, timed, False) != 0:
                sys.exit(f"run of {n} failed")
        print(f"round {r + 1} in {time.perf_counter() - t0:.0f} s: {' '.join(n for n, _ in order)}", flush=True)
    check = {json.loads(line)["tree"]: json.loads(line) for line in open(checks)}
    runs = [json.loads(line) for line in open(timed)]
    out = [f"{'tree':10} {'tol':>8} {'lines':>6}  {'ms per batch, each run':40} {'median':>7}  iterations (sum)  L1"]
    for n, _ in trees:
        for row in check[n]["rows"]:
            key = (row["tol"], row["lines"])
            ms = [x["ms"] for run in runs if run["tree"] == n for x in run["rows"] if (x["tol"], x["lines"]) == key]
            out.append(f"{n:10} {row['tol']:>8} {row['lines']:>6}  {', '.join(f'{m:.2f}' for m in ms):40} "
                       f"{statistics.median(ms):7.2f}  {row['it']:g} ({row['itsum']})  {row['l1']:.2e}")
    text = "\n".join(out)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
