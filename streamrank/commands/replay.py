"""``streamrank replay``: replay a file of edges through the engine, timed and checked."""

from __future__ import annotations

import json
import sys

from ..backend import DEVICES
from ..config import ALGORITHMS, CONTRIBUTION_DTYPES, DANGLING_MODES, DTYPES, UPDATE_ORDERS, RankConfig
from ..errors import InvalidArgumentError
from ..table import format_table
from ..ids.kinds import DEFAULT_MAX_ID_BYTES, ID_TYPES, vertex_column
from .layout_args import add_layout_arguments, add_weight_arguments, layout_from_args

FORMATS = ("snap", "csv", "parquet", "jsonl")  # connectors.files.FORMATS, not imported before a command runs

HELP = "replay a file of timestamped edges (default: the bundled CollegeMsg graph) and report ranks, time and error"

COLUMNS = [
    ("algorithm", "algorithm"), ("device", "device"), ("batches", "batches"),
    ("batch_ms_median", "ms/batch med"), ("batch_ms_p95", "ms/batch p95"),
    ("graph_ms_median", "graph ms"), ("rank_ms_median", "rank ms"),
    ("iterations_median", "iters med"), ("affected_median", "affected med"),
    ("l1_error", "L1 err"), ("linf_error", "Linf err"),
    ("top20_precision", "top20"), ("top100_precision", "top100"),
]


def add_arguments(p):
    p.add_argument("path", nargs="?", default=None,
                   help="edge file: CSV/TSV/space-separated text (gzip allowed; with or without a header), "
                        ".parquet or .jsonl; default: the bundled CollegeMsg graph")
    p.add_argument("--format", default=None, choices=FORMATS,
                   help="file format (default: from the extension: .txt/.tsv/.edges text, .csv, .parquet/.pq, "
                        ".jsonl/.ndjson; .gz ignored)")
    add_layout_arguments(p)
    add_weight_arguments(p)
    p.add_argument("--algorithm", default="auto", choices=list(ALGORITHMS) + ["all"],
                   help="rank update (default auto: DF-P per batch, warm sweeps where its frontier floods the "
                        "graph; all: every algorithm on the same stream)")
    p.add_argument("--base-fraction", type=float, default=0.9, metavar="F",
                   help="share of the edges (in replay order) that builds the base graph, in [0, 1) (default 0.9)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--batch-fraction", type=float, default=1e-4, metavar="F",
                      help="batch size as a share of all edges, in (0, 1] (default 1e-4)")
    size.add_argument("--batch-size", type=int, default=None, metavar="EDGES", help="batch size in edges (>= 1)")
    p.add_argument("--delete-fraction", type=float, default=0.0, metavar="F",
                   help="share of every batch replaced by deletions of random existing edges, in [0, 1) "
                        "(default 0)")
    p.add_argument("--dangling", default="uniform", choices=DANGLING_MODES,
                   help="where the rank of vertices without out-edges goes (default uniform)")
    p.add_argument("--device", default="auto", choices=DEVICES,
                   help="backend (default auto: the GPU when CuPy sees one, else the CPU)")
    p.add_argument("--check", action="store_true", help="compare with the oracle during and after the replay")
    p.add_argument("--check-every", type=int, default=None, metavar="N",
                   help="batches between checks (>= 1; default: about 10 checks)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the report as JSON to OUT")
    p.add_argument("--ranks-out", default=None, metavar="FILE.parquet",
                   help="write the final ranks (vertex, rank) to a Parquet file")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="plot per-batch times (needs matplotlib)")
    p.add_argument("--top", type=int, default=10, metavar="K", help="top ranks to print (0: none; default 10)")
    p.add_argument("--max-batches", type=int, default=None, metavar="N",
                   help="stop after N batches (default: replay every edge)")
    p.add_argument("--keep-order", action="store_true",
                   help="replay in file order even where the file has timestamps (same as --ts none)")
    p.add_argument("--strict", action="store_true", help="stop at the first bad line (default: skip and report)")
    p.add_argument("--id-type", default="auto", choices=ID_TYPES,
                   help="vertex ids: integers, strings, or auto (fixed by the first data line; default)")
    p.add_argument("--max-id-bytes", type=int, default=DEFAULT_MAX_ID_BYTES, metavar="BYTES",
                   help="longest string id in UTF-8 bytes (default 1024)")
    p.add_argument("--alpha", type=float, default=0.85, help="damping factor, in (0, 1) (default 0.85)")
    p.add_argument("--tol", type=float, default=1e-10, help="convergence tolerance, L-infinity (default 1e-10)")
    p.add_argument("--frontier-tol", type=float, default=1e-6,
                   help="DF/DF-P: a vertex whose rank moves more than this marks its out-neighbours (default 1e-6)")
    p.add_argument("--prune-tol", type=float, default=1e-6,
                   help="DF-P: a vertex whose rank moves less than this leaves the frontier (default 1e-6)")
    p.add_argument("--dtype", default="float64", choices=DTYPES, help="rank type (default float64)")
    p.add_argument("--update-order", default="gauss-seidel", choices=UPDATE_ORDERS,
                   help="CPU local-form iterations: Gauss-Seidel in fixed blocks (default) or Jacobi "
                        "(the GPU always iterates Jacobi)")
    p.add_argument("--contributions", default="float64", choices=CONTRIBUTION_DTYPES,
                   help="GPU standard-form sweeps (static, warm, auto's warm part): type of the gathered "
                        "contributions; float32 halves their bytes, the last sweeps stay in --dtype (default float64)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random deletions (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument("--baseline", default=None, choices=["networkx"],
                   help="also time networkx.pagerank of the graph after a few sampled batches and print "
                        "it beside each algorithm's time per batch (needs NetworkX)")
    p.add_argument("--baseline-samples", type=int, default=5, metavar="N",
                   help="batches whose graph the baseline ranks (default 5)")


def _check_flags(args) -> None:
    """Flag values outside their domain, named as the user wrote them."""
    def bad(flag, want, value):
        raise InvalidArgumentError(f"{flag} {value}: expected {want}")

    if not 0.0 <= args.base_fraction < 1.0:
        bad("--base-fraction", "a share in [0, 1)", args.base_fraction)
    if args.batch_size is not None and args.batch_size < 1:
        bad("--batch-size", "at least 1 edge", args.batch_size)
    if args.batch_size is None and not 0.0 < args.batch_fraction <= 1.0:
        bad("--batch-fraction", "a share in (0, 1]", args.batch_fraction)
    if not 0.0 <= args.delete_fraction < 1.0:
        bad("--delete-fraction", "a share in [0, 1)", args.delete_fraction)
    if args.check_every is not None and args.check_every < 1:
        bad("--check-every", "at least 1", args.check_every)
    if args.max_batches is not None and args.max_batches < 1:
        bad("--max-batches", "at least 1", args.max_batches)
    if args.top < 0:
        bad("--top", "0 or more", args.top)
    if args.max_id_bytes < 1:
        bad("--max-id-bytes", "at least 1", args.max_id_bytes)
    if args.baseline_samples < 1:
        bad("--baseline-samples", "at least 1", args.baseline_samples)


def run(args) -> int:
    from ..replay.run import BUNDLED_GRAPH, read_stream, replay

    path = args.path or str(BUNDLED_GRAPH)
    _check_flags(args)
    layout = layout_from_args(args)
    algorithms = list(ALGORITHMS) if args.algorithm == "all" else [args.algorithm]
    config = RankConfig(alpha=args.alpha, tol=args.tol, frontier_tol=args.frontier_tol,
                        prune_tol=args.prune_tol, dangling=args.dangling, dtype=args.dtype,
                        sweep_contributions=args.contributions, update_order=args.update_order)
    stream = read_stream(path, keep_order=args.keep_order, strict=args.strict, fmt=args.format,
                         id_type=args.id_type, max_id_bytes=args.max_id_bytes, layout=layout)
    if stream.columns and args.path:
        print(f"{path}: {stream.columns}", file=sys.stderr)
    if stream.bad_lines:
        print(f"{path}: {stream.bad_lines} bad line(s) skipped; the first:", file=sys.stderr)
        for message in stream.bad_messages[:5]:
            print(f"  {message}", file=sys.stderr)
    report = replay(stream, algorithms=algorithms, base_fraction=args.base_fraction,
                    batch_fraction=args.batch_fraction, batch_size=args.batch_size,
                    delete_fraction=args.delete_fraction, config=config, device=args.device,
                    check=args.check, check_every=args.check_every, max_batches=args.max_batches,
                    seed=args.seed, progress=not args.no_progress, baseline=args.baseline,
                    baseline_samples=args.baseline_samples, multi_edges=args.multi_edges)
    g = report.graph
    eng = report.runs[0].engine
    print(f"graph: {g['path']}")
    print(f"  {g['edges_in_file']:,} edges in file, base graph {g['base_edges']:,} edges, "
          f"{g['batches']} batches of {g['batch_size']} ({g['deletions_per_batch']} deletions each), "
          f"final |V|={g['vertices']:,} |E|={g['edges']:,}, {g['id_type']} ids, dangling={g['dangling']}"
          + (f", weighted, multi-edges {g['multi_edges']}" if g["weighted"] else ""))
    print(f"  backend: {eng.backend.name} ({eng.backend.reason})")
    if args.top > 0:
        ids, p = eng.top_k(args.top)
        print(f"\ntop {len(ids)} ranks ({report.runs[0].algorithm}):")
        print(f"  {'#':>4}  {'vertex':<12} rank")
        for i, (v, r) in enumerate(zip(ids.tolist(), p.tolist()), 1):
            print(f"  {i:4d}  {str(v):<12} {r:.6e}")
    print()
    rows = [r.summary() for r in report.runs]
    print(format_table(rows, COLUMNS))
    for r in rows:
        if r["algorithm"] == "auto":
            print("auto ran: " + ", ".join(f"{a} {k} batches" for a, k in r["ran"].items()))
    if report.baseline is not None:
        _print_baseline(report)
    if args.check:
        if g["oracle"] == "cugraph":
            print("\nerrors are against cuGraph's static PageRank (float64) of the final graph")
        else:
            print("\nerrors are against a float64 SciPy static PageRank of the final graph (L1 change < 1e-15)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report.to_dict(), fh, indent=2)
        print(f"wrote {args.json}")
    if args.ranks_out:
        import pyarrow as pa
        import pyarrow.parquet as pq

        ids, p = eng.ranks()
        pq.write_table(pa.table({"vertex": vertex_column(ids), "rank": p}), args.ranks_out)
        print(f"wrote {args.ranks_out}")
    if args.plot:
        from ..replay.plots import plot_replay

        plot_replay(report, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _print_baseline(report) -> None:
    """The baseline's median beside every algorithm's median time per batch."""
    bl = report.baseline
    d = bl.to_dict()
    print(f"\nbaseline: networkx.pagerank (alpha={report.graph['alpha']}, tol={max(bl.tol):.2g}: "
          f"L1 error <= {d['target_l1']:g}) of the graph after batches "
          f"{', '.join(str(b) for b in bl.batches)}: median {bl.median_ms:.1f} ms "
          f"({', '.join(f'{m:.1f}' for m in bl.ms)}); its L1 error against the oracle at most "
          f"{max(bl.l1_error):.2g}; building the NetworkX graph (not counted) median {d['build_ms_median']:.0f} ms")
    for run in report.runs:
        med = run.summary()["batch_ms_median"]
        print(f"  {run.algorithm}: {med:.3g} ms per batch (graph update included), "
              f"{bl.median_ms / med:.0f}x under the NetworkX recompute")
