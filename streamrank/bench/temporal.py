"""The temporal protocol of the published DF-P experiments, inside streamrank.

``streamrank bench --graph FILE --protocol temporal`` replays a SNAP temporal file the way the
reference implementation (``shared/anchors``, run by ``shared/tools/seed-dfp-bench``) does:

- ``--vertices N`` creates the ids ``0 .. N-1`` up front (the published runs use 10x the SNAP
  vertex count), so most vertices of the padded graph are isolated;
- the first ``base_fraction`` (90%) of the file's lines, in file order, build the base graph;
- then, for every batch fraction ``f`` and starting again from the base graph, ``batches``
  consecutive insert-only batches of ``int(f * lines)`` lines each (present edges are no-ops);
- alpha 0.85, float64, L-infinity tolerance 1e-10, frontier and prune tolerances 1e-6 (the
  command's defaults); the base graph's ranks converged to the iteration cap, as the reference's
  (its tolerance for them is 1e-100).

With ``dangling="self-loop"`` (the published setting: every vertex has a self-loop) a line
``u u`` of the file adds nothing in the reference (the loop is already there), so it is skipped
here too; with ``dangling="uniform"`` (standard PageRank) such lines are ordinary edges.

Every batch is applied through :class:`streamrank.engine.Engine` (graph update, then rank
update, each timed with a device synchronization at its end), and its L1 error is taken against
the float64 oracle of the graph after the batch (cuGraph where installed, else a cuSPARSE power
iteration on the GPU, else SciPy), untimed, on the ranks the engine publishes (``Engine.ranks``:
in self-loop mode the vertices without in-edges at their exact rank, the rest scaled to the
remaining mass; :mod:`streamrank.rank.published`). In self-loop mode the L1 error is also taken
for two other forms of the same iterate: the reference's own, scaled by ``(1 - alpha) / n``
without normalizing (``l1_unnormalized_median``, what the reference publishes), and the plain
``x / sum(x)`` (``l1_sum_normalized_median``, streamrank's earlier published form). The
reference's figures, when its output (``--reference-log``) comes from the same device call, are
put beside ours with the ratio (reference ms per batch over ours; its timer covers the rank
computation only, ours the graph update too): its CUDA DF-P on the GPU backend, its OpenMP DF-P
(``pagerankPruneDynamicFrontierOmp``) on the CPU backend.

``weighted`` runs the same replay on a weighted engine (either backend): with ``multi_edges="set"``
every edge weighs 1 (the unweighted ranks, through the weighted code), with ``"sum"`` a repeated
line adds 1 to its edge's weight (on sx-mathoverflow: how often a user answered another), which
makes it a reweight (``reweighted_median``) instead of a no-op. The oracle then takes the weights.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import RankConfig, check_algorithm
from ..errors import InvalidArgumentError, SourceError
from ..oracle.metrics import l1_error

DEFAULT_FRACTIONS = (1e-5, 1e-4, 1e-3)
#: Lines of seed-dfp-bench's summary: fraction, method, batches, ms, iterations, error.
_SEED_LINE = re.compile(r"fraction\s+(\S+)\s+(\w+)\s+batches\s+(\d+)\s+ms\s+([\d.]+)\s+iterations\s+([\d.]+)"
                        r"\s+error\s+([\d.eE+-]+)")
#: The reference's DF-P methods on the GPU (without and with the degree partition); the faster is the
#: baseline of a GPU run.
SEED_DFP = ("pagerankPruneDynamicFrontierCuda", "pagerankPruneDynamicFrontierCudaPartition")
#: The reference's DF-P method on the CPU (OpenMP): the baseline of a CPU run.
SEED_DFP_CPU = ("pagerankPruneDynamicFrontierOmp",)


@dataclass
class TemporalOptions:
    """Settings of :func:`run_temporal` (see the module docstring)."""

    path: str
    fractions: tuple = DEFAULT_FRACTIONS
    algorithms: tuple = ("static", "dfp")
    batches: int = 20
    vertices: int | None = None
    base_fraction: float = 0.9
    device: str = "auto"
    config: RankConfig = field(default_factory=lambda: RankConfig(dangling="self-loop"))
    reference_log: str | None = None
    error_every: int = 1
    weighted: bool = False
    multi_edges: str = "set"


def parse_seed_log(text: str) -> dict:
    """``{fraction: {method: {"ms", "iterations", "error", "batches"}}}`` from seed-dfp-bench output."""
    out: dict = {}
    for line in text.splitlines():
        m = _SEED_LINE.search(line)
        if m:
            out.setdefault(float(m.group(1)), {})[m.group(2)] = {
                "batches": int(m.group(3)), "ms": float(m.group(4)), "iterations": float(m.group(5)),
                "error": float(m.group(6))}
    return out


def _read_lines(path: str):
    """``(src, dst)`` of every valid line of ``path``, in file order (int64 host arrays)."""
    from connectors.files import read_edges

    table, report = read_edges(path, keep_order=True)
    src = table.column("src").to_numpy(zero_copy_only=False).astype(np.int64)
    dst = table.column("dst").to_numpy(zero_copy_only=False).astype(np.int64)
    if "op" in table.column_names and bool((table.column("op").to_numpy(zero_copy_only=False) < 0).any()):
        raise InvalidArgumentError("the temporal protocol replays insertions only; the file has deletions")
    if src.shape[0] == 0:
        raise SourceError(f"{path}: no valid edges")
    return src, dst


def line_edges(src, dst, lo: int, hi: int, *, skip_loops: bool = True):
    """``(src, dst)`` of the lines ``lo .. hi - 1``, lines ``u u`` left out with ``skip_loops``."""
    s, d = src[lo:hi], dst[lo:hi]
    if skip_loops:
        keep = s != d
        s, d = s[keep], d[keep]
    return s, d


def run_temporal(opts: TemporalOptions, *, log=print) -> dict:
    """Run the temporal protocol and return the report (a JSON-ready dict).

    Parameters
    ----------
    opts : TemporalOptions
    log : callable
        Progress lines.

    Returns
    -------
    dict
        ``rows``: one per (fraction, algorithm) with median graph / rank / total ms, iterations,
        L1 error (median and max over the batches), ``host_probe_us`` (the host's speed after the
        timed batches, :func:`~streamrank.bench.host_probe.host_probe_us`) and, where a reference
        log was given, the reference's DF-P figures and ``ratio_vs_reference``.
    """
    from ..backend import device_name, resolve_backend
    from ..engine import Engine
    from ..oracle.cugraph_static import cugraph_available
    from .baselines import oracle_fn
    from .host_probe import host_probe_us

    for a in opts.algorithms:
        check_algorithm(a)
    if int(opts.batches) < 1:
        raise InvalidArgumentError("--batches must be >= 1")
    if not 0.0 < float(opts.base_fraction) < 1.0:
        raise InvalidArgumentError(f"base fraction must be in (0, 1), got {opts.base_fraction}")
    for f in opts.fractions:
        if not 0 < float(f) < 1:
            raise InvalidArgumentError(f"batch fractions must be in (0, 1), got {f}")
    if int(opts.error_every) < 1:
        raise InvalidArgumentError(f"--error-every must be >= 1, got {opts.error_every}")
    if opts.vertices is not None and int(opts.vertices) < 1:
        raise InvalidArgumentError(f"--vertices must be >= 1, got {opts.vertices}")
    seed = None
    if opts.reference_log:
        try:
            with open(opts.reference_log) as fh:
                seed = parse_seed_log(fh.read())
        except OSError as exc:
            raise InvalidArgumentError(f"cannot read the reference log {opts.reference_log}: {exc}") from exc

    cfg = opts.config
    backend = resolve_backend(opts.device)
    src, dst = _read_lines(opts.path)
    lines = int(src.shape[0])
    if opts.vertices is not None and int(max(src.max(), dst.max())) >= int(opts.vertices):
        raise InvalidArgumentError(f"--vertices {opts.vertices} is too small: the file has id "
                                   f"{int(max(src.max(), dst.max()))}")
    skip_loops = cfg.dangling == "self-loop"
    base_end = int(opts.base_fraction * lines)
    oracle = oracle_fn(backend, cfg, cugraph=backend.is_gpu and cugraph_available(), weighted=bool(opts.weighted))
    report = {"protocol": "temporal", "graph": {"name": opts.path, "lines": lines, "base_lines": base_end},
              "device": device_name(backend), "backend": backend.name, "config": cfg.to_dict(),
              "batches": int(opts.batches), "vertices_up_front": opts.vertices, "oracle": oracle.name,
              "self_loop_lines_skipped": skip_loops, "reference": seed,
              "weighted": bool(opts.weighted), "multi_edges": opts.multi_edges}
    if backend.is_gpu:
        from ..rank.gpu import pagerank as pagerank_gpu

        pagerank_gpu.compile_kernels(cfg.dtype)

    def edges(lo, hi):
        return line_edges(src, dst, lo, hi, skip_loops=skip_loops)

    verts = None if opts.vertices is None else np.arange(int(opts.vertices), dtype=np.int64)
    rows = []
    for frac in opts.fractions:
        size = int(float(frac) * lines)
        if size < 1:
            raise InvalidArgumentError(f"batch fraction {frac:g} of {lines} lines is no line")
        if base_end + size * int(opts.batches) > lines:
            raise InvalidArgumentError(f"{opts.batches} batches of {size} lines do not fit after the base")
        for algo in opts.algorithms:
            batches = [edges(base_end + b * size, base_end + (b + 1) * size) for b in range(int(opts.batches))]
            eng = _base_engine(Engine, backend, algo, cfg, edges(0, base_end), verts, opts)
            report["graph"].update(vertices=eng.graph.num_vertices, base_edges=eng.graph.num_edges)
            log(f"fraction {frac:g}, {algo}: base graph {eng.graph.num_vertices} vertices, "
                f"{eng.graph.num_edges} edges")
            rec = {k: [] for k in ("graph_ms", "rank_ms", "iterations", "inserted", "reweighted", "l1",
                                   "l1_unnormalized", "l1_sum_normalized", "converged", "ran")}
            # The timed pass: batch after batch with nothing else on the device in between (with
            # an oracle run after every 5th batch, 5-line batches took 0.42-0.60 ms against
            # 0.33-0.34 without; likely the graph's arrays leaving the GPU's L2).
            for s, d in batches:
                step = eng.apply(_batch(s, d))
                rec["graph_ms"].append(step.graph_ms)
                rec["rank_ms"].append(step.rank_ms)
                rec["iterations"].append(step.rank.iterations)
                rec["inserted"].append(step.changes.num_insertions)
                rec["reweighted"].append(step.changes.num_reweights)
                rec["converged"].append(bool(step.rank.converged))
                rec["ran"].append(step.rank.algorithm)
            host_us = host_probe_us()  # the host's speed right after the timed batches (host_probe.py)
            # The error pass (untimed): the same batches again from the same base graph, the L1
            # error every `error_every` batches and after the last. DF/DF-P are deterministic, so
            # these are the timed pass's ranks (same_iterations says whether every batch ran the
            # same iterations).
            check = _base_engine(Engine, backend, algo, cfg, edges(0, base_end), verts, opts)
            same = True
            for b, (s, d) in enumerate(batches):
                step = check.apply(_batch(s, d))
                same = same and step.rank.iterations == rec["iterations"][b]
                if (b + 1) % int(opts.error_every) == 0 or b + 1 == len(batches):
                    exact = oracle(check.graph)
                    rec["l1"].append(l1_error(check.ranks()[1], exact))
                    if cfg.dangling == "self-loop":
                        x = np.asarray(check.backend.to_host(check.x), dtype=np.float64)  # device-to-host copy
                        rec["l1_unnormalized"].append(l1_error(x * ((1.0 - cfg.alpha) / x.shape[0]), exact))
                        rec["l1_sum_normalized"].append(l1_error(x / x.sum(), exact))
            rows.append(_row(frac, size, algo, rec, seed, SEED_DFP if backend.is_gpu else SEED_DFP_CPU))
            r = rows[-1]
            r["same_iterations"] = bool(same)
            r["host_probe_us"] = host_us
            log(f"fraction {frac:g}, {algo}: {r['total_ms_median']:.3f} ms per batch "
                f"({r['graph_ms_median']:.3f} graph + {r['rank_ms_median']:.3f} rank), "
                f"{r['iterations_median']:.1f} iterations, L1 {r['l1_median']:.2e}")
    report["oracle"] = oracle.name  # another where cuGraph's graph stopped fitting (oracle_note)
    if oracle.failure:
        report["oracle_note"] = str(oracle.failure)
    report["rows"] = rows
    return report


def _base_engine(Engine, backend, algo, cfg, base, verts, opts):
    """An engine on the base graph, the device idle after it. As in the reference, the base ranks
    are converged to the iteration cap (its tolerance is 1e-100), so every batch starts from the
    exact ranks of the base graph and its error is its own."""
    eng = Engine(backend, algo, config=cfg, weighted=opts.weighted, multi_edges=opts.multi_edges)
    eng.load_edges(base[0], base[1], vertices=verts)
    eng.recompute(config=replace(cfg, tol=0.0))
    backend.synchronize()
    return eng


def _batch(s, d):
    from ..batch import EdgeBatch

    return EdgeBatch.from_arrays(s, d)


def _row(frac, size, algo, rec, seed, methods=SEED_DFP) -> dict:
    med = lambda k: float(np.median(rec[k])) if rec[k] else math.nan  # noqa: E731
    total = np.asarray(rec["graph_ms"]) + np.asarray(rec["rank_ms"])
    row = {"fraction": float(frac), "batch_lines": size, "algorithm": algo,
           "inserted_median": med("inserted"), "reweighted_median": med("reweighted"),
           "graph_ms_median": med("graph_ms"),
           "rank_ms_median": med("rank_ms"), "total_ms_median": float(np.median(total)),
           "total_ms_p95": float(np.percentile(total, 95)), "iterations_median": med("iterations"),
           "l1_median": med("l1"), "l1_max": float(np.max(rec["l1"])),
           "l1_unnormalized_median": med("l1_unnormalized") if rec["l1_unnormalized"] else None,
           "l1_sum_normalized_median": med("l1_sum_normalized") if rec["l1_sum_normalized"] else None,
           "converged": all(rec["converged"]),
           "batches": len(rec["converged"]), "error_checks": len(rec["l1"]),
           "ran": {k: rec["ran"].count(k) for k in sorted(set(rec["ran"]))}}
    ref = _reference_for(seed, frac, methods)
    if ref is not None:
        row.update(reference_method=ref[0], reference_ms=ref[1]["ms"],
                   reference_iterations=ref[1]["iterations"], reference_error=ref[1]["error"],
                   ratio_vs_reference=ref[1]["ms"] / row["total_ms_median"])
    return row


def _reference_for(seed, frac, methods=SEED_DFP):
    """The faster of the reference's DF-P ``methods`` at ``frac`` as ``(method, figures)``, or None."""
    if not seed:
        return None
    at = next((v for k, v in seed.items() if math.isclose(k, float(frac), rel_tol=1e-6)), None)
    if not at:
        return None
    found = [(m, at[m]) for m in methods if m in at]
    return min(found, key=lambda mf: mf[1]["ms"]) if found else None


TEMPORAL_COLUMNS = [
    ("fraction", "fraction"), ("batch_lines", "lines"), ("algorithm", "algorithm"),
    ("graph_ms_median", "graph ms"), ("rank_ms_median", "rank ms"), ("total_ms_median", "total ms"),
    ("reweighted_median", "reweights"), ("iterations_median", "iters"), ("l1_median", "L1 err"), ("l1_unnormalized_median", "L1 x(1-a)/N"),
    ("l1_sum_normalized_median", "L1 x/sum"),
    ("reference_ms", "ref ms"),
    ("reference_iterations", "ref iters"), ("reference_error", "ref err"), ("ratio_vs_reference", "x ref"),
    ("host_probe_us", "host us"),
]


def format_temporal(report: dict) -> str:
    """Header lines and the per-(fraction, algorithm) table."""
    from ..table import format_table

    g, c = report["graph"], report["config"]
    lines = [f"device: {report['device']}  graph: {g['name']} ({g['lines']} lines, base {g['base_lines']}; "
             f"{g.get('vertices')} vertices, {g.get('base_edges')} base edges)",
             f"protocol: temporal  vertices up front: {report['vertices_up_front'] or 'none'}  dangling: {c['dangling']}  "
             f"dtype: {c['dtype']}  tol: {c['tol']:g}  frontier/prune tol: {c['frontier_tol']:g}/{c['prune_tol']:g}  "
             f"oracle: {report['oracle']}  batches per fraction: {report['batches']}"
             + (f"  weighted: multi-edges {report.get('multi_edges')}" if report.get("weighted") else ""),
             "ms are medians per batch; ours = graph update + rank update, the reference's = rank only; "
             "host us: a fixed piece of host work timed after the row's batches (higher: a slower host, "
             "which graph ms follows)"]
    lines.append(format_table(report.get("rows", []), TEMPORAL_COLUMNS))
    return "\n".join(lines)


def plot_temporal(report: dict, path: str) -> str:
    """Per fraction: ms per batch (ours split into graph and rank update, the reference's) and
    iterations, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report.get("rows", [])
    if not rows:
        raise InvalidArgumentError("nothing to plot: the report has no rows")
    fracs = sorted({r["fraction"] for r in rows})
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    series = algos + (["reference DF-P"] if any("reference_ms" in r for r in rows) else [])
    width = 0.8 / len(series)
    fig, (ax_t, ax_i) = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, name in enumerate(series):
        pos = np.arange(len(fracs)) + i * width
        if name == "reference DF-P":
            ms = [next((r.get("reference_ms", math.nan) for r in rows if r["fraction"] == f), math.nan) for f in fracs]
            its = [next((r.get("reference_iterations", math.nan) for r in rows if r["fraction"] == f), math.nan)
                   for f in fracs]
            ax_t.bar(pos, ms, width, label=name + " (rank only)", color="0.5")
            ax_i.bar(pos, its, width, label=name, color="0.5")
            continue
        pick = lambda k: [next((r[k] for r in rows if r["algorithm"] == name and r["fraction"] == f), math.nan)  # noqa: E731
                          for f in fracs]
        ax_t.bar(pos, pick("total_ms_median"), width, label=f"{name} (shaded: graph update)")
        ax_t.bar(pos, pick("graph_ms_median"), width, color="k", alpha=0.25)
        ax_i.bar(pos, pick("iterations_median"), width, label=name)
    for ax in (ax_t, ax_i):
        ax.set_xticks(np.arange(len(fracs)) + 0.4 - width / 2)
        ax.set_xticklabels([f"{f:g}" for f in fracs])
        ax.set_xlabel("batch fraction of the file's lines")
        ax.legend(fontsize=8)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("ms per batch (median)")
    ax_i.set_ylabel("iterations per batch (median)")
    g = report["graph"]
    fig.suptitle(f"temporal protocol: {g['name']} ({g.get('vertices')} vertices, dangling "
                 f"{report['config']['dangling']}) on {report['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
