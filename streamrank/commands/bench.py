"""``streamrank bench``: time the dynamic algorithms against Static, cuSPARSE and cuGraph."""

from __future__ import annotations

import json
import sys

from ..backend import DEVICES
from ..config import ALGORITHMS, DANGLING_MODES, DTYPES, RankConfig
from ..errors import InvalidArgumentError

HELP = "benchmark Static/ND/DT/DF/DF-P per batch (graph + rank update) on an R-MAT graph or a file"


def _floats(text: str) -> tuple:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"--batch-fractions takes numbers separated by commas, got {text!r}") from exc
    if not vals:
        raise InvalidArgumentError("--batch-fractions is empty")
    return vals


def _algorithms(text: str) -> tuple:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    for n in names:
        if n not in ALGORITHMS:
            raise InvalidArgumentError(f"unknown algorithm {n!r} (choose from {', '.join(ALGORITHMS)})")
    if "static" not in names:
        names = ("static",) + names  # speedups are against Static measured in the same run
    return names


def add_arguments(p):
    p.add_argument("--graph", default="rmat:18", help="rmat:SCALE[:EDGEFACTOR] or an edge file (default rmat:18)")
    p.add_argument("--batch-fractions", default="1e-7,1e-5,1e-3",
                   help="batch sizes as shares of |E|, comma-separated (default 1e-7,1e-5,1e-3)")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help="comma-separated subset of static,nd,dt,df,dfp (static is always run)")
    p.add_argument("--batches", type=int, default=5, help="timed batches per fraction (default 5, plus one warm-up)")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--json", default=None, metavar="OUT", help="write the full report as JSON")
    p.add_argument("--plot", default=None, metavar="OUT.png", help="write a plot (matplotlib, Agg)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float64", choices=DTYPES)
    p.add_argument("--dangling", default="uniform", choices=DANGLING_MODES)
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--switch-degree", type=int, default=64)
    p.add_argument("--frontier-tol", type=float, default=1e-6, help="DF/DF-P frontier tolerance (default 1e-6)")
    p.add_argument("--prune-tol", type=float, default=1e-6, help="DF-P prune tolerance (default 1e-6)")
    p.add_argument("--no-baselines", action="store_true", help="skip the cuSPARSE/cuGraph baselines")


def run(args) -> int:
    from ..bench import BenchOptions, format_report, plot_report, run_bench

    cfg = RankConfig(dtype=args.dtype, dangling=args.dangling, tol=args.tol, switch_degree=args.switch_degree,
                     frontier_tol=args.frontier_tol, prune_tol=args.prune_tol)
    opts = BenchOptions(graph=args.graph, fractions=_floats(args.batch_fractions),
                        algorithms=_algorithms(args.algorithms), batches=args.batches,
                        device=args.device, seed=args.seed, config=cfg, baselines=not args.no_baselines)
    report = run_bench(opts, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    if args.plot:
        plot_report(report, args.plot)
    return 0
