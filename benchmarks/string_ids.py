"""What string vertex ids cost per batch: the same stream replayed with integer and with string ids.

The file's integer ids are rewritten as strings (``user_<id>`` by default, ``--name-format``),
both versions are read with :func:`streamrank.replay.run.read_stream`, and two engines are driven in
lockstep over the same batches (base graph: the first ``--base-fraction`` of the edges; batches:
``--batch-fraction`` of all edges), so that load on a shared host hits both alike. Per batch it
times ``Engine.apply`` (graph update, which for string ids includes encoding them to codes, plus
the DF-P rank update) and the whole step including building the ``EdgeBatch``; it prints one
table with both id kinds side by side and the ratio of each figure, and ``--json`` writes them.

    python benchmarks/string_ids.py                                   # bundled CollegeMsg, CPU
    python benchmarks/string_ids.py sx-mathoverflow.txt.gz            # the README's CPU figure
    python benchmarks/string_ids.py sx-mathoverflow.txt.gz --device gpu --json out.json  # the GPU one
    python benchmarks/string_ids.py --batch-size 20 --max-batches 300 --json out.json  # the per-batch fixed cost

The integer and the string engine number their vertices differently (first appearance of the
ids versus first appearance of the codes in a batch's sorted order), so their floating-point sums
run in another order and DF-P can do slightly different work; the ranks agree to 1e-9 (checked at
the end and printed).

The step time is ``EdgeBatch.from_arrays`` (validation) plus ``Engine.apply``: what a caller pays
per batch. At small batches (``--batch-size 20``) it shows the fixed cost per batch of string ids.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.replay.run import BUNDLED_GRAPH, read_stream  # noqa: E402
from streamrank.table import format_table  # noqa: E402


def rewrite(path: Path, out: Path, name_format: str) -> None:
    """``path`` (SNAP text) with every id ``v`` written as ``name_format.format(v)``."""
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as fin, gzip.open(out, "wt",
                                                                                          compresslevel=1) as fout:
        for line in fin:
            f = line.split()
            if len(f) < 2 or f[0][:1] in "#%":
                continue
            fout.write(" ".join([name_format.format(f[0]), name_format.format(f[1])] + f[2:]) + "\n")


def summary(label: str, apply_ms: list, step_ms: list, graph_ms: list, rank_ms: list, iters: list) -> dict:
    a = np.asarray(apply_ms)
    return {"ids": label, "batches": len(a), "apply_med": float(np.median(a)), "apply_p95": float(np.percentile(a, 95)),
            "apply_mean": float(a.mean()), "step_med": float(np.median(step_ms)), "graph_med": float(np.median(graph_ms)),
            "rank_med": float(np.median(rank_ms)), "iters_mean": float(np.mean(iters))}


#: The table's rows: (key of :func:`summary`, label).
FIGURES = [("apply_med", "Engine.apply ms, median"), ("apply_p95", "Engine.apply ms, p95"),
           ("apply_mean", "Engine.apply ms, mean"), ("step_med", "step ms, median"),
           ("graph_med", "graph update ms, median"), ("rank_med", "rank update ms, median"),
           ("iters_mean", "DF-P iterations, mean")]


def side_by_side(rows: list) -> list:
    """One table row per figure: the integer run's, the string run's and their ratio."""
    by = {r["ids"]: r for r in rows}
    out = [{"what": "batches", "int": by["int"]["batches"], "string": by["string"]["batches"], "ratio": None}]
    for key, label in FIGURES:
        a, b = by["int"][key], by["string"][key]
        out.append({"what": label, "int": a, "string": b, "ratio": f"{b / a:.3f}x" if a else None})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH),
                   help="SNAP edge file (default: the bundled CollegeMsg)")
    p.add_argument("--device", default="cpu", choices=["auto", "cpu", "gpu"])
    p.add_argument("--algorithm", default="dfp")
    p.add_argument("--base-fraction", type=float, default=0.9)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--batch-fraction", type=float, default=1e-4, help="batch size as a share of all edges")
    size.add_argument("--batch-size", type=int, default=None, help="batch size in edges (e.g. 20: the per-batch "
                                                                    "fixed cost of string ids)")
    p.add_argument("--max-batches", type=int, default=None)
    p.add_argument("--name-format", default="user_{}", help="how an integer id becomes a string (default user_{})")
    p.add_argument("--json", default=None, metavar="OUT")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        named = Path(tmp) / "named.txt.gz"
        t0 = time.perf_counter()
        rewrite(Path(args.path), named, args.name_format)
        read_stream(args.path)  # warm-up: the first read pays for imports and allocator growth
        t1 = time.perf_counter()
        s_int = read_stream(args.path)
        t2 = time.perf_counter()
        s_str = read_stream(named)
        t3 = time.perf_counter()
    assert s_int.id_type == "int" and s_str.id_type == "string" and len(s_int) == len(s_str)
    total = len(s_int)
    n_base = int(args.base_fraction * total)
    size = args.batch_size if args.batch_size is not None else max(1, int(round(args.batch_fraction * total)))
    starts = list(range(n_base, total, size))[: args.max_batches]

    engines, load_s = {}, {}
    for label, s in (("int", s_int), ("string", s_str)):
        eng = Engine(args.device, args.algorithm)
        t = time.perf_counter()
        eng.load_edges(s.src[:n_base], s.dst[:n_base], s.insert[:n_base])
        load_s[label] = time.perf_counter() - t
        engines[label] = (eng, s)
    stats = {k: ([], [], [], [], []) for k in engines}
    for b, lo in enumerate(starts):
        order = ("int", "string") if b % 2 == 0 else ("string", "int")  # alternate who goes first
        for label in order:
            eng, s = engines[label]
            t = time.perf_counter()
            batch = EdgeBatch.from_arrays(s.src[lo:lo + size], s.dst[lo:lo + size], s.insert[lo:lo + size])
            step = eng.apply(batch)
            wall = (time.perf_counter() - t) * 1e3
            apply_ms, step_ms, graph_ms, rank_ms, iters = stats[label]
            apply_ms.append(step.total_ms)
            step_ms.append(wall)
            graph_ms.append(step.graph_ms)
            rank_ms.append(step.rank_ms)
            iters.append(step.rank.iterations)
    rows = [summary(k, *stats[k]) for k in ("int", "string")]
    ratio = rows[1]["apply_med"] / rows[0]["apply_med"]
    step_ratio = rows[1]["step_med"] / rows[0]["step_med"]
    ids_i, p_i = engines["int"][0].ranks()
    ids_s, p_s = engines["string"][0].ranks()
    by_name = dict(zip(ids_s.tolist(), p_s.tolist()))
    diff = max(abs(by_name[args.name_format.format(v)] - r) for v, r in zip(ids_i.tolist(), p_i.tolist()))
    eng = engines["int"][0]
    shown = Path(args.path).resolve()
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else args.path
    print(f"{shown}: {total:,} edges, base {n_base:,}, {len(starts)} batches of {size}, "
          f"|V|={eng.num_vertices:,}, device {eng.backend.name} ({eng.backend.reason})")
    print(f"read: integer file {t2 - t1:.2f} s, string file {t3 - t2:.2f} s (rewrite {t1 - t0:.2f} s); "
          f"base graph load: integer {load_s['int']:.2f} s, string {load_s['string']:.2f} s")
    print(format_table(side_by_side(rows), [("what", "per batch"), ("int", "integer ids"),
                                            ("string", "string ids"), ("ratio", "string / integer")]))
    print(f"string / integer, median ms per batch: {ratio:.3f} (Engine.apply), {step_ratio:.3f} (step: "
          f"EdgeBatch.from_arrays + Engine.apply); largest rank difference {diff:.1e}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"path": args.path, "device": eng.backend.name, "batch_size": size, "rows": rows,
                       "ratio_median": ratio, "step_ratio_median": step_ratio, "max_rank_diff": diff,
                       "load_s": load_s}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
