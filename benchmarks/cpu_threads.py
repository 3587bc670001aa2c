"""Thread scaling of the CPU backend on the published temporal protocol, beside the reference's
OpenMP DF-P at the same thread counts.

For every thread count (``--threads``: a process of its own with ``NUMBA_NUM_THREADS`` set to it,
as on a host of that many cores, so the engine's per-batch choice is between one thread and all
of them), every graph setting (``padded``:
the published 248,180 ids up front; ``unpadded``: only the ids the file uses) and every tolerance
setting (``default``: frontier/prune 1e-6, ``loose``: ``--loose-tol``, for errors at the
reference's level), it runs ``streamrank bench --protocol temporal --device cpu --algorithms
auto`` in-process (:func:`streamrank.bench.temporal.run_temporal`) and keeps each fraction's
median ms per batch (graph update included), iterations and L1 error. With ``--reference-log
SETTING=FILE`` (the output of ``benchmarks/reference/dfp_omp_threads.cxx``, one file per graph
setting, any fractions) the reference's medians at each thread count join the table with the
ratio (reference ms over ours).

Run by ``bash benchmarks/run.sh cpu-threads DATA_DIR OUT_DIR`` (which also builds and runs the
reference driver); ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numba

from streamrank.bench.temporal import TemporalOptions, run_temporal
from streamrank.config import RankConfig
from streamrank.table import format_table

#: The published protocol's vertex count for sx-mathoverflow (10x its 24,818 vertices).
PADDED = 248180
#: A line of the reference driver: batch fraction, batch index, threads, ms, iterations, error.
_LINE = re.compile(r"\+([\d.e+-]+) batchf, (\d+) batchi, (\d+) threads\} -> \{([\d.]+)ms, [\d.]+ms init, "
                   r"[\d.]+ms mark, [\d.]+ms comp, (\d+) iter, ([\d.e+-]+) err\} pagerankPruneDynamicFrontierOmp")


def parse_reference(text: str) -> dict:
    """``{(fraction, threads): {"ms", "iterations", "error", "batches"}}``: medians over the batches."""
    runs: dict = {}
    for m in _LINE.finditer(text):
        key = (float(m.group(1)), int(m.group(3)))
        runs.setdefault(key, []).append((float(m.group(4)), int(m.group(5)), float(m.group(6))))
    return {k: {"ms": statistics.median(r[0] for r in v), "iterations": statistics.median(r[1] for r in v),
                "error": statistics.median(r[2] for r in v), "batches": len(v)} for k, v in runs.items()}


def _find(ref: dict, frac: float, threads: int):
    return next((v for (f, t), v in ref.items() if t == threads and abs(f - frac) <= 1e-9 * max(f, 1e-12)), None)


def _run_one(args, t, fractions) -> list:
    """The rows of every graph and tolerance setting on this process's pool of ``t`` threads."""
    runs = [(s, "default", 1e-6) for s in args.settings.split(",")]
    if args.loose_tol is not None:
        runs += [(s, "loose", args.loose_tol) for s in args.loose_settings.split(",")]
    rows = []
    for setting, tol_name, ftol in runs:
        cfg = RankConfig(dangling="self-loop", frontier_tol=ftol, prune_tol=ftol)
        opts = TemporalOptions(path=args.graph, fractions=fractions, algorithms=("auto",), batches=args.batches,
                               vertices=PADDED if setting == "padded" else None, device="cpu", config=cfg,
                               error_every=args.error_every)
        report = run_temporal(opts, log=lambda m: None)
        for r in report["rows"]:
            rows.append({"setting": setting, "tolerance": tol_name, "frontier_prune_tol": ftol, "threads": t,
                         "threading_layer": numba.threading_layer(), "fraction": r["fraction"],
                         "lines": r["batch_lines"], "ms": r["total_ms_median"], "graph_ms": r["graph_ms_median"],
                         "rank_ms": r["rank_ms_median"], "p95_ms": r["total_ms_p95"],
                         "iterations": r["iterations_median"], "l1": r["l1_median"], "l1_max": r["l1_max"],
                         "vertices": report["graph"]["vertices"]})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", required=True, help="sx-mathoverflow.txt.gz (SNAP temporal file)")
    ap.add_argument("--threads", default="1,2,4,8,16", help="comma-separated thread counts")
    ap.add_argument("--fractions", default="1e-5,1e-4,1e-3")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--error-every", type=int, default=5, help="L1 error after every K-th batch and the last")
    ap.add_argument("--settings", default="padded,unpadded", help="graph settings: padded, unpadded")
    ap.add_argument("--loose-tol", type=float, default=None,
                    help="also run frontier/prune tolerance LOOSE (the reference's error level)")
    ap.add_argument("--loose-settings", default="padded", help="graph settings that run the loose tolerance too")
    ap.add_argument("--reference-log", action="append", default=[], metavar="SETTING=FILE",
                    help="the reference driver's output for a graph setting")
    ap.add_argument("--json", help="write every row as JSON")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    threads = [int(t) for t in args.threads.split(",")]
    fractions = tuple(float(f) for f in args.fractions.split(","))
    if args.one:  # one thread count, in this process (its pool is the thread count)
        if numba.config.NUMBA_NUM_THREADS != threads[0]:
            ap.error(f"--one runs with NUMBA_NUM_THREADS={threads[0]} (it is {numba.config.NUMBA_NUM_THREADS})")
        json.dump(_run_one(args, threads[0], fractions), sys.stdout)
        return 0
    refs = {}
    for item in args.reference_log:
        name, _, path = item.partition("=")
        with open(path) as fh:
            refs[name] = parse_reference(fh.read())
    rows = []
    for t in threads:
        t0 = time.perf_counter()
        cmd = [sys.executable, os.path.abspath(__file__), "--one", "--threads", str(t), "--graph", args.graph,
               "--fractions", args.fractions, "--batches", str(args.batches), "--error-every", str(args.error_every),
               "--settings", args.settings, "--loose-settings", args.loose_settings]
        if args.loose_tol is not None:
            cmd += ["--loose-tol", str(args.loose_tol)]
        out = subprocess.run(cmd, env={**os.environ, "NUMBA_NUM_THREADS": str(t)}, stdout=subprocess.PIPE, check=True)
        for row in json.loads(out.stdout):
            ref = _find(refs.get(row["setting"], {}), row["fraction"], t)
            if ref is not None:
                row.update(ref_ms=ref["ms"], ref_iterations=ref["iterations"], ref_error=ref["error"],
                           ratio=ref["ms"] / row["ms"])
            rows.append(row)
        print(f"# {t} threads: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    cols = [("setting", "graph"), ("tolerance", "tol"), ("threads", "threads"), ("fraction", "fraction"),
            ("lines", "lines"), ("ms", "ms"), ("graph_ms", "graph ms"), ("iterations", "iters"), ("l1", "L1"),
            ("ref_ms", "ref ms"), ("ref_iterations", "ref iters"), ("ref_error", "ref err"), ("ratio", "x ref")]
    print("streamrank auto, CPU, NUMBA_NUM_THREADS = threads; ms: median per batch, graph update included; "
          "the reference's: rank only")
    print(format_table(rows, cols))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"graph": args.graph, "batches": args.batches, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
