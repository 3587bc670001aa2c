"""Benchmark of the dynamic algorithms against Static and against what a user would otherwise run.

Protocol (issue 3, following the published DF-P experiments): a base graph (R-MAT generated on the
device, or an edge file), then for every batch fraction ``f`` a sequence of random batches of
``round(f * |E|)`` edges, 80% insertions of random edges between existing vertices and 20%
deletions of random edges of the base graph. Each batch is applied once to the graph store
(timed: "graph update"), then every algorithm updates its own ranks from its own previous ranks
(timed: "rank update"). Times are wall-clock with a device synchronization at the end of each
stage. The first batch of every fraction is a warm-up and is not counted.

Baselines measured in the same run:

- ``static``: the engine's Static PageRank on the same device (and the speedups are against it);
- ``cusparse``: a power iteration on cuSPARSE (``cupyx.scipy.sparse`` CSR SpMV) of the standard
  formulation, the matrix rebuilt from the edge list every batch, warm-started from the previous
  ranks: what a CuPy user would write. Once on the base graph, also from scratch to an L1 change
  of 1e-6 (the setting of the reference figure);
- ``cugraph``: rebuild the pylibcugraph graph, then PageRank warm-started from the previous ranks,
  where cuGraph is installed ("not installed" otherwise).

L1 error is measured after the last batch of each fraction against an oracle: cuGraph where
installed, else a float64 cuSPARSE power iteration to an L1 change of 1e-13 on the GPU (an
implementation independent of the engine's kernels), else SciPy on the CPU.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .backend import resolve_backend
from .batch import EdgeBatch
from .config import ALGORITHMS, RankConfig, check_algorithm
from .errors import InvalidArgumentError
from .metrics import l1_error

DEFAULT_FRACTIONS = (1e-7, 1e-5, 1e-3)


# ---------------------------------------------------------------------- inputs
def parse_graph_spec(spec: str) -> dict:
    """``rmat:SCALE[:EDGEFACTOR]`` or a file path, as a dict."""
    if not isinstance(spec, str) or not spec:
        raise InvalidArgumentError("--graph needs rmat:SCALE[:EDGEFACTOR] or a file path")
    if spec.startswith("rmat:"):
        parts = spec.split(":")
        try:
            scale = int(parts[1])
            ef = int(parts[2]) if len(parts) > 2 else 16
        except (IndexError, ValueError) as exc:
            raise InvalidArgumentError(f"bad R-MAT spec {spec!r}: use rmat:SCALE[:EDGEFACTOR]") from exc
        if len(parts) > 3 or not 1 <= scale <= 31 or ef < 1:
            raise InvalidArgumentError(f"bad R-MAT spec {spec!r}")
        return {"kind": "rmat", "scale": scale, "edge_factor": ef, "name": spec}
    return {"kind": "file", "path": spec, "name": spec}


def load_base_edges(spec: dict, *, xp, seed: int):
    """Base edges ``(src, dst)`` (external ids, int64, on ``xp``)."""
    if spec["kind"] == "rmat":
        from .rmat import rmat_edges

        return rmat_edges(spec["scale"], spec["edge_factor"], seed=seed, xp=xp)
    from connectors.files import read_edges

    table, _ = read_edges(spec["path"])
    src = table.column("src").to_numpy(zero_copy_only=False).astype(np.int64)
    dst = table.column("dst").to_numpy(zero_copy_only=False).astype(np.int64)
    if "op" in table.column_names:
        keep = table.column("op").to_numpy(zero_copy_only=False) >= 0
        src, dst = src[keep], dst[keep]
    return xp.asarray(src), xp.asarray(dst)


class BatchMaker:
    """Random batches: 80% insertions of random edges, 20% deletions of random base edges."""

    def __init__(self, graph, base_src, base_dst, *, xp, seed: int):
        self.xp = xp
        self.graph = graph
        self.base_src, self.base_dst = base_src, base_dst
        self.rs = xp.random.RandomState(seed)

    def make(self, size: int) -> EdgeBatch:
        xp = self.xp
        n_del = int(round(0.2 * size))
        n_ins = size - n_del
        n = self.graph.num_vertices
        ext = self.graph.ids.external
        ins_s = ext[self.rs.randint(0, n, n_ins)]
        ins_d = ext[self.rs.randint(0, n, n_ins)]
        pick = self.rs.randint(0, int(self.base_src.shape[0]), n_del)
        src = xp.concatenate([ins_s, self.base_src[pick]])
        dst = xp.concatenate([ins_d, self.base_dst[pick]])
        op = xp.concatenate([xp.ones(n_ins, dtype=bool), xp.zeros(n_del, dtype=bool)])
        perm = self.rs.permutation(size)
        return EdgeBatch(src[perm].astype(xp.int64), dst[perm].astype(xp.int64), op[perm])


# ---------------------------------------------------------------------- baselines
class CusparsePower:
    """Standard-form PageRank power iteration on cuSPARSE (``cupyx.scipy.sparse``).

    ``p <- alpha P^T p + (alpha * dangling mass + 1 - alpha) / n``; the matrix is built from the
    graph's edge list (``rebuild``), which is what a user without a dynamic store does per batch.
    Stops on ``criterion="linf"`` (the engine's: max change of p) or ``"l1"`` (cuGraph's).
    """

    def __init__(self, graph, *, alpha: float, dangling: str, dtype: str):
        import cupy as cp
        import cupyx.scipy.sparse as csp

        self.cp = cp
        n = graph.num_vertices
        s, d = graph.edges()
        if dangling == "self-loop":
            loops = cp.arange(n, dtype=cp.int64)
            s, d = cp.concatenate([s, loops]), cp.concatenate([d, loops])
        outdeg = cp.bincount(s, minlength=n).astype(dtype)
        w = (1.0 / outdeg[s]).astype(dtype)
        self.PT = csp.coo_matrix((w, (d, s)), shape=(n, n)).tocsr()
        self.PT.sum_duplicates()
        self.dangling = (outdeg == 0).astype(dtype)
        self.n, self.alpha, self.dtype = n, float(alpha), dtype

    def run(self, *, tol: float, criterion: str = "linf", p0=None, max_iter: int = 1000):
        cp = self.cp
        n, a = self.n, self.alpha
        if p0 is None:
            p = cp.full(n, 1.0 / n, dtype=self.dtype)
        else:
            p = cp.asarray(p0, dtype=self.dtype)
            p = p / p.sum()
        it = 0
        for it in range(1, max_iter + 1):
            new = a * (self.PT @ p) + (a * (p @ self.dangling) + 1.0 - a) / n
            new /= new.sum()
            diff = cp.abs(new - p)
            err = float(diff.sum() if criterion == "l1" else diff.max())  # sync: once per iteration
            p = new
            if err < tol:
                break
        return p, it


def gpu_oracle(graph, *, alpha: float, dangling: str):
    """float64 cuSPARSE power iteration to an L1 change below 1e-13, as a host array."""
    p, _ = CusparsePower(graph, alpha=alpha, dangling=dangling, dtype="float64").run(
        tol=1e-13, criterion="l1", max_iter=5000)
    return p.get()


# ---------------------------------------------------------------------- the run
@dataclass
class BenchOptions:
    graph: str = "rmat:18"
    fractions: tuple = DEFAULT_FRACTIONS
    algorithms: tuple = ALGORITHMS
    batches: int = 5
    device: str = "auto"
    seed: int = 0
    config: RankConfig = field(default_factory=RankConfig)
    baselines: bool = True


def _stats(values) -> tuple:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    return float(np.median(a)), float(np.percentile(a, 95))


def _device_name(backend) -> str:
    if not backend.is_gpu:
        import platform

        return f"CPU ({platform.processor() or platform.machine()})"
    props = backend.xp.cuda.runtime.getDeviceProperties(backend.xp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def run_bench(opts: BenchOptions, *, log=print) -> dict:
    """Run the benchmark and return the report (a JSON-ready dict).

    Parameters
    ----------
    opts : BenchOptions
    log : callable
        Progress lines (``print`` by default).
    """
    for a in opts.algorithms:
        check_algorithm(a)
    if int(opts.batches) < 1:
        raise InvalidArgumentError("--batches must be >= 1")
    for f in opts.fractions:
        if not 0 < float(f) <= 1:
            raise InvalidArgumentError(f"batch fractions must be in (0, 1], got {f}")
    backend = resolve_backend(opts.device)
    xp = backend.xp
    cfg = opts.config
    if backend.is_gpu:
        from . import pagerank_gpu as rank
        from .graph_gpu import GpuGraph as Graph

        rank.compile_kernels(cfg.dtype)
    else:
        from . import pagerank_cpu as rank
        from .graph import CpuGraph as Graph
    from .oracle_cugraph import cugraph_available

    spec = parse_graph_spec(opts.graph)
    report = {"graph": dict(spec), "device": _device_name(backend), "backend": backend.name,
              "config": cfg.to_dict(), "batches": int(opts.batches), "seed": int(opts.seed)}
    use_cugraph = backend.is_gpu and cugraph_available() and opts.baselines
    report["cugraph"] = "installed" if use_cugraph else "not installed"

    t = time.perf_counter()
    base_src, base_dst = load_base_edges(spec, xp=xp, seed=opts.seed)
    backend.synchronize()
    report["graph"]["generate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    graph = Graph.from_edges(base_src, base_dst)
    backend.synchronize()
    report["graph"].update(vertices=graph.num_vertices, edges=graph.num_edges,
                           build_s=time.perf_counter() - t)
    log(f"graph {spec['name']}: {graph.num_vertices} vertices, {graph.num_edges} edges "
        f"(generated in {report['graph']['generate_s']:.2f} s, stored in {report['graph']['build_s']:.2f} s) "
        f"on {report['device']}")

    def oracle():
        if use_cugraph:
            from .oracle_cugraph import cugraph_pagerank

            return cugraph_pagerank(graph, alpha=cfg.alpha, dangling=cfg.dangling), "cugraph"
        if backend.is_gpu:
            return gpu_oracle(graph, alpha=cfg.alpha, dangling=cfg.dangling), "cusparse-float64"
        from .oracle import oracle_pagerank

        return oracle_pagerank(graph, alpha=cfg.alpha, dangling=cfg.dangling), "scipy"

    # ---- static on the base graph: the engine's, then cuSPARSE at the same criterion and at L1 1e-6
    rank.static_pagerank(graph, config=cfg)  # warm-up (pools, first-use compilation)
    backend.synchronize()
    t = time.perf_counter()
    res0 = rank.static_pagerank(graph, config=cfg)
    backend.synchronize()
    static_ms = (time.perf_counter() - t) * 1e3
    ref, oracle_name = oracle()
    report["oracle"] = oracle_name
    static = {"ms": static_ms, "iterations": res0.iterations, "l1_error": l1_error(res0.ranks, ref)}
    report["static"] = static
    log(f"static {cfg.dtype}: {static['ms']:.2f} ms, {static['iterations']} iterations, "
        f"L1 error {static['l1_error']:.2e} (oracle {oracle_name})")
    if backend.is_gpu and opts.baselines:
        t = time.perf_counter()
        power = CusparsePower(graph, alpha=cfg.alpha, dangling=cfg.dangling, dtype=cfg.dtype)
        backend.synchronize()
        build_ms = (time.perf_counter() - t) * 1e3
        for label, crit, tol in (("cusparse_static", "linf", cfg.tol / 1.0), ("cusparse_static_l1", "l1", 1e-6)):
            power.run(tol=tol, criterion=crit, max_iter=3)  # warm-up
            backend.synchronize()
            t = time.perf_counter()
            p, its = power.run(tol=tol, criterion=crit, max_iter=cfg.max_iter)
            backend.synchronize()
            report[label] = {"ms": (time.perf_counter() - t) * 1e3, "iterations": its, "criterion": crit,
                             "tol": tol, "build_ms": build_ms, "l1_error": l1_error(p, ref)}
            log(f"{label}: {report[label]['ms']:.2f} ms, {its} iterations ({crit} < {tol:g}), "
                f"L1 error {report[label]['l1_error']:.2e}; matrix build {build_ms:.1f} ms")
        del power
    if use_cugraph:
        from .oracle_cugraph import build_cugraph_graph, pagerank_on

        s, d = graph.edges()
        # float64 weights (ranks computed in float64): float32 at an L1 tolerance of 1e-6 fails
        # to converge on some graphs (pylibcugraph FailedToConvergeError seen on R-MAT 9)
        handle, cg = build_cugraph_graph(s, d, graph.num_vertices, dangling=cfg.dangling, weight_dtype="float64")
        pagerank_on(handle, cg, alpha=cfg.alpha, tol=1e-6, graph_dtype="float64")
        backend.synchronize()
        t = time.perf_counter()
        p = pagerank_on(handle, cg, alpha=cfg.alpha, tol=1e-6, graph_dtype="float64")
        backend.synchronize()
        report["cugraph_static"] = {"ms": (time.perf_counter() - t) * 1e3, "l1_error": l1_error(p, ref), "tol_l1": 1e-6}

    # ---- batches
    maker = BatchMaker(graph, base_src, base_dst, xp=xp, seed=opts.seed + 1)
    rows = []
    names = list(opts.algorithms)
    extra = (["cusparse"] if backend.is_gpu and opts.baselines else []) + (["cugraph"] if use_cugraph else [])
    for frac in opts.fractions:
        size = max(1, int(round(float(frac) * graph.num_edges)))
        start = res0 if not rows else rank.static_pagerank(graph, config=cfg)  # graph moved on: untimed
        x = {a: start.x for a in names}
        p_prev = {b: start.ranks for b in extra}
        rec = {a: {"graph_ms": [], "rank_ms": [], "iterations": [], "affected": [], "initial": [],
                   "converged": []} for a in names + extra}
        for b in range(int(opts.batches) + 1):  # batch 0 warms up
            batch = maker.make(size)
            backend.synchronize()
            t = time.perf_counter()
            changes = graph.apply(batch)
            backend.synchronize()
            graph_ms = (time.perf_counter() - t) * 1e3
            for a in names:
                t = time.perf_counter()
                res = rank.update_pagerank(a, graph, changes, x[a], config=cfg)
                backend.synchronize()
                ms = (time.perf_counter() - t) * 1e3
                x[a] = res.x
                if b:
                    r = rec[a]
                    r["graph_ms"].append(graph_ms)
                    r["rank_ms"].append(ms)
                    r["iterations"].append(res.iterations)
                    r["affected"].append(res.affected_total)
                    r["initial"].append(res.initially_affected)
                    r["converged"].append(bool(res.converged))
            for bl in extra:
                p_prev[bl], gms, rms, its = _baseline_step(bl, graph, p_prev[bl], cfg, backend)
                if b:
                    r = rec[bl]
                    r["graph_ms"].append(gms)
                    r["rank_ms"].append(rms)
                    r["iterations"].append(its)
        ref, _ = oracle()
        totals = {}
        for a in names + extra:
            r = rec[a]
            tot = np.asarray(r["graph_ms"]) + np.asarray(r["rank_ms"])
            totals[a] = float(np.median(tot))
            gm, gp = _stats(r["graph_ms"])
            rm, rp = _stats(r["rank_ms"])
            tm, tp = _stats(tot)
            p_final = (x[a] / x[a].sum()) if a in x else p_prev[a]
            rows.append({
                "fraction": float(frac), "batch_size": size, "algorithm": a,
                "graph_ms_median": gm, "graph_ms_p95": gp, "rank_ms_median": rm, "rank_ms_p95": rp,
                "total_ms_median": tm, "total_ms_p95": tp,
                "iterations_median": float(np.median(r["iterations"])) if r["iterations"] else float("nan"),
                "affected_median": float(np.median(r["affected"])) if r["affected"] else float("nan"),
                "initial_median": float(np.median(r["initial"])) if r["initial"] else float("nan"),
                "converged": all(r["converged"]) if r["converged"] else True,
                "l1_error": l1_error(p_final, ref),
            })
        for row in rows[-len(names + extra):]:
            a = row["algorithm"]
            row["speedup_vs_static"] = totals["static"] / totals[a] if "static" in totals else float("nan")
            row["speedup_vs_cusparse"] = totals["cusparse"] / totals[a] if "cusparse" in totals else float("nan")
            row["speedup_vs_cugraph"] = (totals["cugraph"] / totals[a]) if "cugraph" in totals else "not installed"
        # One more batch, after the errors were taken: every stage synchronized and timed.
        profile = _profile_batch(graph, rank, maker, size, x, cfg, backend) if backend.is_gpu else None
        if profile:
            report.setdefault("profile", {})[f"{frac:g}"] = profile
            log(f"fraction {frac:g}: profiled batch (stages synchronized): "
                + ", ".join(f"{k} {v:.3f} ms" for k, v in profile.items()))
        log(f"fraction {frac:g} (batch of {size} edges) done")
    report["rows"] = rows
    return report


def _profile_batch(graph, rank, maker, size, x, cfg, backend):
    """One extra batch with a device sync after each stage: where the time of DF-P goes."""
    algo = "dfp" if "dfp" in x else next(iter(x))
    graph.stage_ms = {}
    rank.STAGE_MS = {}
    try:
        changes = graph.apply(maker.make(size))
        for a in x:  # keep every algorithm on the same graph
            if a != algo:
                x[a] = rank.update_pagerank(a, graph, changes, x[a], config=cfg).x
        rank.STAGE_MS = {}
        backend.synchronize()
        t = time.perf_counter()
        x[algo] = rank.update_pagerank(algo, graph, changes, x[algo], config=cfg).x
        backend.synchronize()
        out = {f"graph: {k}": v for k, v in graph.stage_ms.items()}
        out.update({f"{algo}: {k}": v for k, v in rank.STAGE_MS.items()})
        out[f"{algo}: total"] = (time.perf_counter() - t) * 1e3
        return out
    finally:
        graph.stage_ms = None
        rank.STAGE_MS = None


def _baseline_step(name, graph, p_prev, cfg, backend):
    """One batch of a rebuild-and-warm-start baseline: (p, rebuild ms, rank ms, iterations)."""
    cp = backend.xp
    n = graph.num_vertices
    p0 = cp.full(n, 1.0 / n, dtype=cp.float64)
    p0[: p_prev.shape[0]] = p_prev
    backend.synchronize()
    t = time.perf_counter()
    if name == "cusparse":
        power = CusparsePower(graph, alpha=cfg.alpha, dangling=cfg.dangling, dtype=cfg.dtype)
        backend.synchronize()
        t1 = time.perf_counter()
        p, its = power.run(tol=cfg.tol, criterion="linf", p0=p0, max_iter=cfg.max_iter)
    else:
        from .oracle_cugraph import build_cugraph_graph, pagerank_on

        s, d = graph.edges()
        handle, g = build_cugraph_graph(s, d, n, dangling=cfg.dangling, weight_dtype="float64")
        backend.synchronize()
        t1 = time.perf_counter()
        p, its = pagerank_on(handle, g, alpha=cfg.alpha, tol=1e-6, initial=p0, graph_dtype="float64"), -1
    backend.synchronize()
    t2 = time.perf_counter()
    return p, (t1 - t) * 1e3, (t2 - t1) * 1e3, its


# ---------------------------------------------------------------------- output
TABLE_COLUMNS = [
    ("fraction", "fraction"), ("batch_size", "batch"), ("algorithm", "algorithm"),
    ("graph_ms_median", "graph ms"), ("rank_ms_median", "rank ms"),
    ("total_ms_median", "total med"), ("total_ms_p95", "total p95"),
    ("iterations_median", "iters"), ("affected_median", "affected"),
    ("l1_error", "L1 err"), ("speedup_vs_static", "x static"), ("speedup_vs_cusparse", "x cusparse"),
    ("speedup_vs_cugraph", "x cugraph"),
]


def format_report(report: dict) -> str:
    """Header lines and the per-(fraction, algorithm) table."""
    from .table import format_table

    g = report["graph"]
    lines = [f"device: {report['device']}  graph: {g['name']} ({g.get('vertices')} vertices, {g.get('edges')} edges)",
             f"oracle: {report.get('oracle')}  cuGraph: {report.get('cugraph')}  dtype: {report['config']['dtype']}  "
             f"tol: {report['config']['tol']:g}  dangling: {report['config']['dangling']}"]
    s = report.get("static")
    if s:
        lines.append(f"static (engine): {s['ms']:.2f} ms, {s['iterations']} iterations, L1 error {s['l1_error']:.2e}")
    for key in ("cusparse_static", "cusparse_static_l1", "cugraph_static"):
        b = report.get(key)
        if b:
            lines.append(f"{key}: {b['ms']:.2f} ms, {b.get('iterations', '?')} iterations, L1 error {b['l1_error']:.2e}")
    lines.append(format_table(report.get("rows", []), TABLE_COLUMNS))
    return "\n".join(lines)


def plot_report(report: dict, path: str) -> str:
    """Median per-batch time (graph + rank update) per algorithm and batch fraction (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report.get("rows", [])
    if not rows:
        raise InvalidArgumentError("nothing to plot: the report has no rows")
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    fracs = sorted(set(r["fraction"] for r in rows))
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(algos)
    for i, a in enumerate(algos):
        med = [next((r["total_ms_median"] for r in rows if r["algorithm"] == a and r["fraction"] == f), math.nan)
               for f in fracs]
        graph_part = [next((r["graph_ms_median"] for r in rows if r["algorithm"] == a and r["fraction"] == f),
                           math.nan) for f in fracs]
        err = [next((r["l1_error"] for r in rows if r["algorithm"] == a and r["fraction"] == f), math.nan)
               for f in fracs]
        pos = np.arange(len(fracs)) + i * width
        ax_t.bar(pos, med, width, label=a)
        ax_t.bar(pos, graph_part, width, color="k", alpha=0.25)
        ax_e.bar(pos, [max(e, 1e-18) for e in err], width, label=a)
    for ax in (ax_t, ax_e):
        ax.set_xticks(np.arange(len(fracs)) + 0.4 - width / 2)
        ax.set_xticklabels([f"{f:g}|E|" for f in fracs])
        ax.set_yscale("log")
    ax_t.set_ylabel("ms per batch (median; shaded: graph update)")
    ax_e.set_ylabel("L1 error vs oracle (after the last batch)")
    ax_t.legend(fontsize=8)
    g = report["graph"]
    fig.suptitle(f"{g['name']} ({g.get('vertices')} V, {g.get('edges')} E) on {report['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
