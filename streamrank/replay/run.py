"""Replay a file of timestamped edges: base graph, then batches, timed and checked.

The first ``base_fraction`` of the (time-ordered) edges builds the base graph; the rest arrives
in batches of ``batch_size`` edges (or ``batch_fraction`` of all edges). With
``delete_fraction > 0`` that share of every batch is replaced by deletions of random existing
edges (the published random-batch protocol uses 0.2). Several algorithms can run on the same
stream, each with its own engine; with ``check`` every engine is compared with the oracle every
``check_every`` batches and at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .baseline import BaselineTimes, check_baseline, sample_batches, time_networkx
from ..backend import resolve_backend
from ..batch import EdgeBatch
from ..config import ALGORITHMS, RankConfig, check_algorithm
from ..engine import Engine
from ..errors import InvalidArgumentError, SourceError
from ..oracle.metrics import error_report, l1_error
from ..oracle.static import oracle_name, oracle_pagerank
from .progress import Progress, cpu_kernels_cached
from ..ids.kinds import DEFAULT_MAX_ID_BYTES

#: The bundled real graph (SNAP CollegeMsg), replayed when no path is given.
BUNDLED_GRAPH = Path(__file__).resolve().parents[1] / "data" / "CollegeMsg.txt.gz"


@dataclass
class EdgeStream:
    """Edges of a file in replay order (host arrays) and what the reader reported.

    ``src``/``dst`` are int64 NumPy arrays, or Arrow string arrays for string ids
    (``id_type == "string"``); ``weight`` is a float64 array for a weighted stream (NaN: a delete
    without a weight), else None.
    """

    src: object
    dst: object
    insert: np.ndarray
    path: str
    bad_lines: int = 0
    bad_examples: list = field(default_factory=list)
    id_type: str = "int"
    columns: str | None = None  # the reader's one-line account of the columns used and not used
    bad_messages: list = field(default_factory=list)  # ``file:line: reason (text)`` of the first bad lines
    weight: np.ndarray | None = None

    def __len__(self):
        return int(self.insert.shape[0])


def read_stream(path, *, keep_order: bool = False, strict: bool = False, fmt=None, id_type: str = "auto",
                max_id_bytes: int = DEFAULT_MAX_ID_BYTES, layout=None) -> EdgeStream:
    """Read an edge file into memory in replay order (see :mod:`connectors.files`; ``layout`` is a
    :class:`connectors.files.Layout`, whose ``weighted`` reads the file's weights)."""
    from connectors.files import open_edge_file

    tables = []
    with open_edge_file(str(path), format=fmt, keep_order=keep_order, strict=strict, id_type=id_type,
                        max_id_bytes=max_id_bytes, layout=layout) as reader:
        for table in reader:
            tables.append(table.select(["src", "dst", "op"] + (["weight"] if "weight" in table.column_names else [])))
        report = reader.report
    if not tables or not sum(t.num_rows for t in tables):
        if report.bad_lines:
            raise SourceError(f"{path}: no valid edges ({report.bad} bad {report.unit}s; the first: "
                              f"{report.describe_bad(report.bad_lines[0])})")
        if reader.schema is not None or report.skipped:
            raise SourceError(f"{path}: no edges (only a header, comments or blank lines)")
        raise SourceError(f"{path}: the file is empty")
    whole = pa.concat_tables(tables).combine_chunks()
    kind = "string" if pa.types.is_string(whole.schema.field("src").type) else "int"
    if kind == "string":
        src, dst = whole.column("src").chunk(0), whole.column("dst").chunk(0)
    else:
        src = whole.column("src").to_numpy().astype(np.int64)
        dst = whole.column("dst").to_numpy().astype(np.int64)
    insert = whole.column("op").to_numpy() > 0
    weight = whole.column("weight").to_numpy() if "weight" in whole.column_names else None
    bad = int(getattr(report, "bad", 0))
    examples = list(getattr(report, "bad_lines", [])[:10])
    return EdgeStream(src, dst, insert, str(path), bad, examples, kind, report.columns,
                      [report.describe_bad(b) for b in examples], weight)


@dataclass
class RunStats:
    """Per-batch figures of one algorithm over a replay."""

    algorithm: str
    device: str
    graph_ms: list = field(default_factory=list)
    rank_ms: list = field(default_factory=list)
    iterations: list = field(default_factory=list)
    affected: list = field(default_factory=list)
    converged: list = field(default_factory=list)
    ran: list = field(default_factory=list)  # what ran per batch (auto: dfp, warm or dfp>warm)
    checks: list = field(default_factory=list)  # (batch index, error report dict)
    engine: Engine | None = None

    def summary(self) -> dict:
        total = np.asarray(self.graph_ms) + np.asarray(self.rank_ms)
        out = {
            "algorithm": self.algorithm,
            "device": self.device,
            "batches": len(self.rank_ms),
            "batch_ms_median": _q(total, 50),
            "batch_ms_p95": _q(total, 95),
            "graph_ms_median": _q(self.graph_ms, 50),
            "rank_ms_median": _q(self.rank_ms, 50),
            "iterations_median": _q(self.iterations, 50),
            "affected_median": _q(self.affected, 50),
            "not_converged": int(len(self.converged) - sum(self.converged)),
            "ran": {a: self.ran.count(a) for a in sorted(set(self.ran))},
        }
        if self.algorithm == "auto":
            out["ran_per_batch"] = list(self.ran)  # the choice of every batch, in order
        if self.checks:
            out.update(self.checks[-1][1])
            out["l1_error_max"] = max(c[1]["l1_error"] for c in self.checks)
            out["checks"] = len(self.checks)
        return out


def _q(values, q):
    return float(np.percentile(values, q)) if len(values) else float("nan")


@dataclass
class ReplayReport:
    """Everything a replay measured."""

    graph: dict
    runs: list
    baseline: BaselineTimes | None = None

    def to_dict(self) -> dict:
        out = {"graph": self.graph, "runs": [r.summary() for r in self.runs]}
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        return out


def replay(stream: EdgeStream, *, algorithms=("auto",), base_fraction: float = 0.9,
           batch_fraction: float | None = 1e-4, batch_size: int | None = None,
           delete_fraction: float = 0.0, config: RankConfig = RankConfig(), device="auto",
           check: bool = False, check_every: int | None = None, max_batches: int | None = None,
           seed: int = 0, progress: bool = True, baseline: str | None = None,
           baseline_samples: int = 5, multi_edges: str = "set") -> ReplayReport:
    """Replay ``stream`` through one engine per algorithm.

    Parameters
    ----------
    stream : EdgeStream
        From :func:`read_stream`.
    algorithms : sequence of str
        Any of :data:`streamrank.config.ALGORITHMS` (default ``auto``).
    base_fraction : float
        Share of the edges (in order) that builds the base graph, in [0, 1).
    batch_fraction, batch_size
        Batch size as a share of all edges, or as a count (``batch_size`` wins).
    delete_fraction : float
        Share of every batch turned into deletions of random existing edges, in [0, 1).
    config : RankConfig
    device : {"auto", "cpu", "gpu"}
    check : bool
        Compare with the oracle every ``check_every`` batches and after the last one.
    check_every : int, optional
        Default: about 10 checks over the replay.
    max_batches : int, optional
        Stop after this many batches.
    seed : int
        Seed of the random deletions.
    progress : bool
        Show a progress line on stderr.
    baseline : {None, "networkx"}
        Also time a NetworkX PageRank recompute of the graph after ``baseline_samples``
        batches spread over the replay (:mod:`streamrank.replay.baseline`; not part of the batch times).
    baseline_samples : int
    multi_edges : {"set", "sum"}
        How repeats of an edge combine (:class:`~streamrank.engine.Engine`); the engines are
        weighted when the stream is (``stream.weight``) or ``"sum"`` is asked for (a stream
        without weights then weighs every insert 1).

    Returns
    -------
    ReplayReport
    """
    algorithms = [check_algorithm(a) for a in algorithms]
    check_baseline(baseline)
    if not algorithms:
        raise InvalidArgumentError("give at least one algorithm")
    if not 0.0 <= base_fraction < 1.0:
        raise InvalidArgumentError(f"base_fraction must be in [0, 1), got {base_fraction}")
    if not 0.0 <= delete_fraction < 1.0:
        raise InvalidArgumentError(f"delete_fraction must be in [0, 1), got {delete_fraction}")
    total = len(stream)
    if batch_size is None:
        if batch_fraction is None or not 0.0 < batch_fraction <= 1.0:
            raise InvalidArgumentError("give batch_size >= 1 or batch_fraction in (0, 1]")
        batch_size = max(1, int(round(batch_fraction * total)))
    if int(batch_size) < 1:
        raise InvalidArgumentError(f"batch_size must be >= 1, got {batch_size}")
    batch_size = int(batch_size)
    n_del = int(round(delete_fraction * batch_size))
    n_ins = max(batch_size - n_del, 1)
    n_base = int(base_fraction * total)
    rest = total - n_base
    num_batches = math.ceil(rest / n_ins) if rest else 0
    if max_batches is not None:
        num_batches = min(num_batches, int(max_batches))
    if check_every is None:
        check_every = max(1, num_batches // 10)
    base_times = None
    if baseline is not None:
        base_times = BaselineTimes(baseline)
        base_at = sample_batches(num_batches, baseline_samples)

    runs = []
    if progress and resolve_backend(device).name == "cpu" and not cpu_kernels_cached():
        import sys

        print("compiling the CPU kernels on first use (once: they are cached for later runs; this can take "
              "a few minutes); the progress line shows no ETA until batches run at their own speed", file=sys.stderr)
    weights = stream.weight
    if weights is None and multi_edges == "sum":
        weights = np.where(stream.insert, 1.0, np.nan)
    for alg in algorithms:
        eng = Engine(device, alg, config=config, id_type=stream.id_type, weighted=weights is not None,
                     multi_edges=multi_edges)
        # The base graph is the net effect of the first edges (deletions in it applied in order).
        eng.load_edges(stream.src[:n_base], stream.dst[:n_base], stream.insert[:n_base],
                       weight=None if weights is None else weights[:n_base])
        runs.append(RunStats(alg, eng.backend.name, engine=eng))
    ref_graph = runs[0].engine.graph
    rng = np.random.default_rng(seed)
    bar = Progress(num_batches, "replay", enabled=progress)
    for b in range(num_batches):
        lo = n_base + b * n_ins
        hi = min(lo + n_ins, total)
        src, dst, ins = stream.src[lo:hi], stream.dst[lo:hi], stream.insert[lo:hi]
        w = None if weights is None else weights[lo:hi]
        if n_del and ref_graph.num_edges:
            es, ed = runs[0].engine.edges_external()
            pick = rng.integers(0, es.shape[0], n_del)
            if stream.id_type == "string":
                src = pa.concat_arrays([src, pa.array(es[pick], type=src.type)])
                dst = pa.concat_arrays([dst, pa.array(ed[pick], type=dst.type)])
            else:
                src = np.concatenate([src, es[pick]])
                dst = np.concatenate([dst, ed[pick]])
            ins = np.concatenate([ins, np.zeros(n_del, dtype=bool)])
            if w is not None:  # random deletions carry no weight: the whole edge goes
                w = np.concatenate([w, np.full(n_del, np.nan)])
        batch = EdgeBatch.from_arrays(src, dst, ins, weight=w)
        for run in runs:
            step = run.engine.apply(batch)
            run.graph_ms.append(step.graph_ms)
            run.rank_ms.append(step.rank_ms)
            run.iterations.append(step.rank.iterations)
            run.affected.append(step.rank.affected_total)
            run.converged.append(step.rank.converged)
            run.ran.append(step.rank.algorithm)
        if base_times is not None and b + 1 in base_at:
            run_nx = time_networkx(ref_graph, alpha=config.alpha, dangling=config.dangling)
            ref = oracle_pagerank(ref_graph, alpha=config.alpha, dangling=config.dangling)
            base_times.add(b + 1, run_nx, l1_error(run_nx.ranks, ref))
        if check and ((b + 1) % check_every == 0 or b == num_batches - 1):
            _check(runs, ref_graph, config, b + 1)
        bar.update(b + 1, " ".join(f"{r.algorithm}:{r.rank_ms[-1]:.1f}ms" for r in runs))
    bar.close()
    if check and num_batches == 0:
        _check(runs, ref_graph, config, 0)
    info = {
        "path": stream.path,
        "edges_in_file": total,
        "bad_lines": stream.bad_lines,
        "base_edges": n_base,
        "batch_size": batch_size,
        "deletions_per_batch": n_del,
        "batches": num_batches,
        "id_type": stream.id_type,
        "vertices": ref_graph.num_vertices,
        "edges": ref_graph.num_edges,
        "dangling": config.dangling,
        "weighted": weights is not None,
        "multi_edges": multi_edges,
        "alpha": config.alpha,
        "tol": config.tol,
        "oracle": oracle_name(ref_graph) if check else None,
    }
    return ReplayReport(info, runs, base_times)


def _check(runs, graph, config: RankConfig, batch: int) -> None:
    """Record every run's error against the oracle's ranks of ``graph`` after ``batch`` batches."""
    ref = oracle_pagerank(graph, alpha=config.alpha, dangling=config.dangling)
    for run in runs:
        run.checks.append((batch, error_report(run.engine.ranks()[1], ref)))


__all__ = ["ALGORITHMS", "BUNDLED_GRAPH", "EdgeStream", "ReplayReport", "RunStats", "read_stream", "replay"]
