"""``streamrank bench``: time the dynamic algorithms against Static, cuSPARSE and cuGraph."""

from __future__ import annotations

import json
import sys

from ..backend import DEVICES
from ..config import ALGORITHMS, CONTRIBUTION_DTYPES, DANGLING_MODES, DTYPES, UPDATE_ORDERS, RankConfig
from ..errors import InvalidArgumentError

HELP = ("benchmark Static/ND/DT/DF/DF-P per batch (graph + rank update) on an R-MAT graph or a file; "
        "--protocol temporal replays a SNAP temporal file as the published DF-P experiments do")


def _floats(text: str) -> tuple:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"--batch-fractions takes numbers separated by commas, got {text!r}") from exc
    if not vals:
        raise InvalidArgumentError("--batch-fractions is empty")
    return vals


def _algorithms(text: str, *, with_static: bool = True) -> tuple:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    for n in names:
        if n not in ALGORITHMS:
            raise InvalidArgumentError(f"unknown algorithm {n!r} (choose from {', '.join(ALGORITHMS)})")
    if not names:
        raise InvalidArgumentError("--algorithms is empty")
    if with_static and "static" not in names:
        names = ("static",) + names  # speedups are against Static measured in the same run
    return names


def add_arguments(p):
    p.add_argument("--graph", default="rmat:18", help="rmat:SCALE[:EDGEFACTOR] or an edge file (default rmat:18)")
    p.add_argument("--protocol", default="random", choices=("random", "temporal"),
                   help="random: random batches of 80%% insertions / 20%% deletions on the graph; temporal: the "
                        "published DF-P protocol on a SNAP temporal file (first 90%% of its lines as the base, then "
                        "consecutive insert-only batches of fraction x lines)")
    p.add_argument("--batch-fractions", default=None,
                   help="batch sizes as shares of |E| (random; default 1e-7,1e-5,1e-3) or of the file's lines "
                        "(temporal; default 1e-5,1e-4,1e-3), comma-separated")
    p.add_argument("--algorithms", default=None,
                   help="comma-separated subset of static,nd,dt,df,dfp (default: all for random, where static is "
                        "always run; dfp for temporal)")
    p.add_argument("--batches", type=int, default=None,
                   help="timed batches per fraction (random: default 5, plus one warm-up; temporal: default 20)")
    p.add_argument("--vertices", type=int, default=None, metavar="N",
                   help="temporal: create the vertex ids 0..N-1 up front (the published runs use 10x |V|)")
    p.add_argument("--base-fraction", type=float, default=0.9, help="temporal: share of the lines in the base graph")
    p.add_argument("--error-every", type=int, default=1, metavar="K",
                   help="temporal: take the L1 error against the oracle after every K-th batch and the last (in a "
                        "second, untimed replay of the same batches, so that the oracle runs between no timed batches)")
    p.add_argument("--reference-log", default=None, metavar="FILE",
                   help="temporal: output of shared/tools/seed-dfp-bench from the same device call; its DF-P "
                        "figures and the ratio join the table")
    p.add_argument("--device", default="auto", choices=DEVICES)
    p.add_argument("--json", default=None, metavar="OUT", help="write the full report as JSON")
    p.add_argument("--plot", default=None, metavar="OUT.png", help="write a plot (matplotlib, Agg)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float64", choices=DTYPES)
    p.add_argument("--contributions", default="float64", choices=CONTRIBUTION_DTYPES,
                   help="GPU standard-form sweeps (static, warm, auto's warm part): type of the gathered "
                        "contributions; float32 halves their bytes, the last sweeps stay in --dtype")
    p.add_argument("--dangling", default=None, choices=DANGLING_MODES,
                   help="default: uniform (random), self-loop (temporal, the published setting)")
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--switch-degree", type=int, default=64)
    p.add_argument("--frontier-tol", type=float, default=1e-6, help="DF/DF-P frontier tolerance (default 1e-6)")
    p.add_argument("--prune-tol", type=float, default=1e-6, help="DF-P prune tolerance (default 1e-6)")
    p.add_argument("--update-order", default="gauss-seidel", choices=UPDATE_ORDERS,
                   help="CPU local-form iterations: Gauss-Seidel in fixed blocks (default) or Jacobi "
                        "(the GPU always iterates Jacobi)")
    p.add_argument("--no-baselines", action="store_true", help="skip the cuSPARSE/cuGraph baselines")
    p.add_argument("--gpu-memory-limit", default=None, metavar="BYTES",
                   help="cap the device memory the GPU backend may use (8G, 512M, bytes; default: "
                        "STREAMRANK_GPU_MEMORY_LIMIT, else none): a load or batch past it stops with an error")
    p.add_argument("--weighted", action="store_true",
                   help="temporal: replay on a weighted engine (every line weighs 1)")
    p.add_argument("--multi-edges", default=None, choices=("set", "sum"),
                   help="temporal, weighted: a repeated line sets its edge's weight (set, default: weight 1, the "
                        "unweighted ranks) or adds 1 to it (sum, turns --weighted on: counts repeated interactions)")


def run(args) -> int:
    temporal = args.protocol == "temporal"
    dangling = args.dangling or ("self-loop" if temporal else "uniform")
    cfg = RankConfig(dtype=args.dtype, sweep_contributions=args.contributions, dangling=dangling, tol=args.tol,
                     switch_degree=args.switch_degree,
                     frontier_tol=args.frontier_tol, prune_tol=args.prune_tol, update_order=args.update_order)
    fractions = _floats(args.batch_fractions or ("1e-5,1e-4,1e-3" if temporal else "1e-7,1e-5,1e-3"))
    # random: speedups are against Static, always run; temporal: against the reference DF-P
    # (temporal: the engine's default and the algorithm the reference implements)
    algorithms = _algorithms(args.algorithms or ("auto,dfp" if temporal else ",".join(ALGORITHMS)),
                             with_static=not temporal)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    multi_edges = args.multi_edges or "set"
    weighted = bool(args.weighted) or multi_edges == "sum"
    if (weighted or args.multi_edges) and not temporal:
        raise InvalidArgumentError("--weighted and --multi-edges belong to --protocol temporal")
    if temporal:
        from ..bench.temporal import TemporalOptions, format_temporal, plot_temporal, run_temporal

        opts = TemporalOptions(path=args.graph, fractions=fractions, algorithms=algorithms,
                               batches=args.batches or 20, vertices=args.vertices, base_fraction=args.base_fraction,
                               device=args.device, config=cfg, reference_log=args.reference_log,
                               error_every=args.error_every, weighted=weighted, multi_edges=multi_edges)
        report = run_temporal(opts, log=log)
        text, plot = format_temporal(report), plot_temporal
    else:
        from ..bench import BenchOptions, format_report, plot_report, run_bench

        if args.vertices is not None or args.reference_log:
            raise InvalidArgumentError("--vertices and --reference-log belong to --protocol temporal")
        opts = BenchOptions(graph=args.graph, fractions=fractions, algorithms=algorithms,
                            batches=args.batches or 5, device=args.device, seed=args.seed, config=cfg,
                            baselines=not args.no_baselines, gpu_memory_limit=args.gpu_memory_limit)
        report = run_bench(opts, log=log)
        text, plot = format_report(report), plot_report
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    if args.plot:
        plot(report, args.plot)
    return 0
