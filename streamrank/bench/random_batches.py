"""Benchmark of the dynamic algorithms against Static and against what a user would otherwise run.

Protocol (following the published DF-P experiments): a base graph (R-MAT generated on the
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
  where cuGraph is installed.

A baseline that cannot run (cuGraph not installed, or a graph too big for it beside the engine's
on this GPU: :func:`~streamrank.bench.baselines.baseline_fits`) gets a row per fraction saying why.
R-MAT graphs come from :func:`~streamrank.bench.rmat_keys.rmat_keys` (bounded memory) and load
through :meth:`GpuGraph.from_keys`; the load's peak is reported against its stated bound. A file
graph is read chunk by chunk into packed keys in file order (:func:`~streamrank.bench.inputs.load_file_keys`:
one chunk on the host, 8 bytes per edge on the device), which load the same way when the ids are dense.

L1 error is measured after the last batch of each fraction against an oracle: cuGraph where
installed, else a float64 cuSPARSE power iteration to an L1 change of 1e-13 on the GPU (an
implementation independent of the engine's kernels) where its matrix fits, else the same iteration
over the store's in-lists (:mod:`streamrank.oracle.gpu_spmv`), else SciPy on the CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..rank.auto_policy import AutoPolicy
from ..backend import device_name, resolve_backend
from ..config import ALGORITHMS, RankConfig, check_algorithm
from ..store.memory import DeviceMemoryTracker, PoolPeak, out_of_memory, set_device_limit
from ..errors import DeviceMemoryError, InvalidArgumentError
from ..oracle.metrics import l1_error
from ..rank.published import published_ranks
from .baselines import CusparsePower, baseline_fits, baseline_step, oracle_fn, with_cache_released
from .inputs import BatchMaker, file_graph, load_base_edges, load_base_keys, load_file_keys, parse_graph_spec

DEFAULT_FRACTIONS = (1e-7, 1e-5, 1e-3)


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
    gpu_memory_limit: object = None  # bytes or text ("40G"); None: STREAMRANK_GPU_MEMORY_LIMIT


def _available(xp) -> int:
    from ..store.memory import read_device_memory

    return read_device_memory(xp).available


def baseline_status(backend, graph, *, baselines: bool, cugraph_installed: bool, self_loops: bool = False) -> dict:
    """Per baseline (``"cusparse"``, ``"cugraph"``) None when it runs, else why not: not asked
    (``--no-baselines``), not on the GPU, cuGraph not installed, or the graph too big for it on
    this GPU (:func:`~streamrank.bench.baselines.baseline_fits`)."""
    if not backend.is_gpu:
        return {}
    if not baselines:
        return {"cusparse": "not run (--no-baselines)", "cugraph": "not run (--no-baselines)"}
    free = _available(backend.xp)
    return {"cusparse": baseline_fits("cusparse", graph, available=free, self_loops=self_loops),
            "cugraph": (baseline_fits("cugraph", graph, available=free, self_loops=self_loops)
                        if cugraph_installed else "not installed")}


def load_bound_bytes(graph, input_edges: int, spec: dict) -> int:
    """The stated bound of the load's peak over its input (docs/architecture.md): the final
    store, the build's keys and their sort's buffer (16 bytes per input edge), and the id plan's
    per-id and per-vertex arrays (:mod:`streamrank.store.gpu_build`)."""
    from ..store import gpu_build

    hi = (1 << spec["scale"]) - 1 if spec.get("kind") == "rmat" else 2 * int(input_edges)
    per_vertex = gpu_build.BUILD_BYTES_PER_VERTEX * (int(graph.num_vertices) + 1)
    return (int(graph.nbytes) + gpu_build.WORK_BYTES_PER_EDGE * int(input_edges)
            + max(gpu_build.plan_work_bytes(hi, input_edges), per_vertex))


def _stats(values) -> tuple:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return float("nan"), float("nan")
    return float(np.median(a)), float(np.percentile(a, 95))


def _cugraph_static(graph, cfg, backend, ref) -> dict:
    """cuGraph's static PageRank of the base graph: its graph built, a warm-up run, a timed run."""
    from ..oracle.cugraph_static import build_cugraph_graph, pagerank_on

    s, d = graph.edges()
    # float64 weights (ranks computed in float64): float32 at an L1 tolerance of 1e-6 fails
    # to converge on some graphs (pylibcugraph FailedToConvergeError seen on R-MAT 9)
    handle, cg = build_cugraph_graph(s, d, graph.num_vertices, dangling=cfg.dangling, weight_dtype="float64")
    pagerank_on(handle, cg, alpha=cfg.alpha, tol=1e-6, graph_dtype="float64")
    backend.synchronize()
    t = time.perf_counter()
    p = pagerank_on(handle, cg, alpha=cfg.alpha, tol=1e-6, graph_dtype="float64")
    backend.synchronize()
    return {"ms": (time.perf_counter() - t) * 1e3, "l1_error": l1_error(p, ref), "tol_l1": 1e-6}


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
    if backend.is_gpu and opts.gpu_memory_limit is not None:
        set_device_limit(xp, opts.gpu_memory_limit)
    if backend.is_gpu:
        from ..rank.gpu import pagerank as rank
        from ..store.gpu import GpuGraph as Graph

        rank.compile_kernels(cfg.dtype)
    else:
        from ..rank.cpu import pagerank as rank
        from ..store.cpu import CpuGraph as Graph
    from ..oracle.cugraph_static import cugraph_available

    spec = parse_graph_spec(opts.graph)
    report = {"graph": dict(spec), "device": device_name(backend), "backend": backend.name,
              "config": cfg.to_dict(), "batches": int(opts.batches), "seed": int(opts.seed)}

    rmat = spec["kind"] == "rmat"
    t = time.perf_counter()
    with PoolPeak(xp) as gen_peak:
        try:  # R-MAT: sorted distinct packed keys, generated in bounded pieces (bench/rmat_keys.py)
            if rmat:
                base_src, base_dst = load_base_keys(spec, xp=xp, seed=opts.seed), None
            else:  # a file: its keys in file order, streamed chunk by chunk (8 B per edge)
                base_src, base_dst = load_file_keys(spec, xp=xp, log=log), None
                if base_src is None:  # ids past the keys' range: (src, dst) of the whole file
                    base_src, base_dst = load_base_edges(spec, xp=xp, seed=opts.seed)
        except MemoryError as exc:
            raise out_of_memory(exc, xp=xp, what=f"generating the edges of {spec['name']}",
                                changed="no graph was built") from exc
    backend.synchronize()
    report["graph"]["generate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    with PoolPeak(xp) as load_peak:  # every allocation of the build, the sorts' buffers included
        if rmat and backend.is_gpu:  # the build consumes its keys: the bench keeps its own for the batches
            graph = Graph.from_keys(base_src.copy(), id_bound=1 << spec["scale"])
        elif rmat:
            graph = Graph.from_edges(base_src >> 32, base_src & 0xFFFFFFFF)
        elif base_dst is None:
            graph = file_graph(Graph, base_src, xp=xp)
        else:
            graph = Graph.from_edges(base_src, base_dst)
        backend.synchronize()
    report["graph"].update(vertices=graph.num_vertices, edges=graph.num_edges,
                           build_s=time.perf_counter() - t)
    load = {"generate_peak_pool_bytes": gen_peak.bytes, "load_peak_pool_bytes": load_peak.bytes,
            "load_start_pool_bytes": load_peak.start_bytes}
    if backend.is_gpu:
        load["load_bound_bytes"] = load_bound_bytes(graph, int(base_src.shape[0]), spec)
    # Device memory: the store's own arrays, and the peak over the engine's stages (sampled after
    # the build and after every rank update; the bench's base edges, 8 B per edge for R-MAT and
    # files, and one rank vector per algorithm are live then too).
    track = DeviceMemoryTracker(backend)
    track.sample("store built")
    log(f"graph {spec['name']}: {graph.num_vertices} vertices, {graph.num_edges} edges "
        f"(generated in {report['graph']['generate_s']:.2f} s, stored in {report['graph']['build_s']:.2f} s) "
        f"on {report['device']}")

    # baselines that cannot load this graph on this GPU say so in their rows
    self_loops = cfg.dangling == "self-loop"
    status = baseline_status(backend, graph, baselines=opts.baselines, cugraph_installed=cugraph_available(),
                             self_loops=self_loops)
    use_cugraph = status.get("cugraph") is None and backend.is_gpu
    report["cugraph"] = "installed" if use_cugraph else status.get("cugraph", "not installed")
    report["baseline_status"] = {k: v for k, v in status.items() if v is not None}
    cusparse_fits = backend.is_gpu and baseline_fits("cusparse", graph, available=_available(xp),
                                                     self_loops=self_loops) is None
    oracle = oracle_fn(backend, cfg, cugraph=use_cugraph, cusparse=cusparse_fits)

    def cugraph_cannot_load(exc):  # cuGraph ran out of device memory: its rows say so from here on
        nonlocal use_cugraph
        use_cugraph = False
        asked = f"{exc.needed / 2**30:.1f} GiB asked, " if getattr(exc, "needed", 0) else ""
        status["cugraph"] = (f"cannot load on this GPU: ran out of device memory beside the engine's "
                             f"({asked}{_available(xp) / 2**30:.0f} GiB free)")
        report["cugraph"] = report["baseline_status"]["cugraph"] = status["cugraph"]
        log(f"cugraph: {status['cugraph']}: {exc}")

    # ---- static on the base graph: the engine's, then cuSPARSE at the same criterion and at L1 1e-6
    rank.static_pagerank(graph, config=cfg)  # warm-up (pools, first-use compilation)
    backend.synchronize()
    t = time.perf_counter()
    res0 = rank.static_pagerank(graph, config=cfg)
    backend.synchronize()
    static_ms = (time.perf_counter() - t) * 1e3
    ref = oracle(graph)
    if oracle.failure and use_cugraph:  # cuGraph's graph does not fit beside the engine's
        cugraph_cannot_load(oracle.failure)
    report["oracle"] = oracle.name
    static = {"ms": static_ms, "iterations": res0.iterations, "l1_error": l1_error(res0.ranks, ref)}
    report["static"] = static
    log(f"static {cfg.dtype}: {static['ms']:.2f} ms, {static['iterations']} iterations, "
        f"L1 error {static['l1_error']:.2e} (oracle {oracle.name})")
    if backend.is_gpu and status.get("cusparse") is None:
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
        from .sweep_bytes import measure_sweeps

        report["sweeps"] = measure_sweeps(graph, cfg, backend, x0=res0.x, log=log)
    if use_cugraph:
        try:
            report["cugraph_static"] = with_cache_released(lambda: _cugraph_static(graph, cfg, backend, ref), xp)
        except DeviceMemoryError as exc:
            cugraph_cannot_load(exc)

    # ---- batches
    maker = BatchMaker(graph, base_src, base_dst, xp=xp, seed=opts.seed + 1)
    rows = []
    names = list(opts.algorithms)
    extra = (["cusparse"] if backend.is_gpu and status.get("cusparse") is None else []) + \
        (["cugraph"] if use_cugraph else [])
    skipped = [b for b in ("cusparse", "cugraph") if status.get(b) is not None]
    for frac in opts.fractions:
        size = max(1, int(round(float(frac) * graph.num_edges)))
        start = res0 if not rows else rank.static_pagerank(graph, config=cfg)  # graph moved on: untimed
        x = {a: start.x for a in names}
        p_prev = {b: start.ranks for b in extra}
        rec = {a: {"graph_ms": [], "rank_ms": [], "iterations": [], "affected": [], "initial": [],
                   "converged": [], "ran": []} for a in names + extra}
        policies = {a: AutoPolicy() for a in names if a == "auto"}
        # the CPU's DT/DF/DF-P keep their per-vertex arrays across batches, as in the engine
        kws = {a: ({} if backend.is_gpu else {"workspace": rank.FrontierWorkspace()}) for a in names}
        for b in range(int(opts.batches) + 1):  # batch 0 warms up
            batch = maker.make(size)
            backend.synchronize()
            t = time.perf_counter()
            changes = graph.apply(batch)
            backend.synchronize()
            graph_ms = (time.perf_counter() - t) * 1e3
            for a in names:
                t = time.perf_counter()
                chosen = policies[a].choose(changes) if a in policies else a
                res = rank.update_pagerank(chosen, graph, changes, x[a], config=cfg, **kws[a])
                backend.synchronize()
                ms = (time.perf_counter() - t) * 1e3
                track.sample("engine batches")
                x[a] = res.x
                if a in policies:
                    policies[a].observe(res, changes, graph.num_vertices)
                if b:
                    rec[a]["ran"].append(res.algorithm)
                    r = rec[a]
                    r["graph_ms"].append(graph_ms)
                    r["rank_ms"].append(ms)
                    r["iterations"].append(res.iterations)
                    r["affected"].append(res.affected_total)
                    r["initial"].append(res.initially_affected)
                    r["converged"].append(bool(res.converged))
            for bl in extra:
                if bl == "cugraph" and not use_cugraph:
                    continue  # it stopped fitting earlier in this fraction
                try:
                    p_prev[bl], gms, rms, its = baseline_step(bl, graph, p_prev[bl], cfg, backend)
                except DeviceMemoryError as exc:
                    if bl != "cugraph":
                        raise
                    cugraph_cannot_load(exc)
                    continue
                if b:
                    r = rec[bl]
                    r["graph_ms"].append(gms)
                    r["rank_ms"].append(rms)
                    r["iterations"].append(its)
        ref = oracle(graph)
        if oracle.failure and use_cugraph:
            cugraph_cannot_load(oracle.failure)
        if "cugraph" in extra and not use_cugraph:  # cuGraph's graph stopped fitting: its rows say so
            extra.remove("cugraph")
            skipped.append("cugraph")
            del rec["cugraph"], p_prev["cugraph"]
        totals = {}
        for a in names + extra:
            r = rec[a]
            tot = np.asarray(r["graph_ms"]) + np.asarray(r["rank_ms"])
            totals[a] = float(np.median(tot))
            gm, gp = _stats(r["graph_ms"])
            rm, rp = _stats(r["rank_ms"])
            tm, tp = _stats(tot)
            # the engine's algorithms: the ranks Engine.ranks would publish from their final iterate
            p_final = (published_ranks(x[a], graph.in_degree, alpha=cfg.alpha, dangling=cfg.dangling)
                       if a in x else p_prev[a])
            rows.append({
                "fraction": float(frac), "batch_size": size, "algorithm": a,
                "graph_ms_median": gm, "graph_ms_p95": gp, "rank_ms_median": rm, "rank_ms_p95": rp,
                "total_ms_median": tm, "total_ms_p95": tp,
                "iterations_median": float(np.median(r["iterations"])) if r["iterations"] else float("nan"),
                "affected_median": float(np.median(r["affected"])) if r["affected"] else float("nan"),
                "initial_median": float(np.median(r["initial"])) if r["initial"] else float("nan"),
                "converged": all(r["converged"]) if r["converged"] else True,
                "l1_error": l1_error(p_final, ref),
                "ran": {k: r["ran"].count(k) for k in sorted(set(r["ran"]))},
            })
        for b in skipped:  # the baseline's row says why it did not run
            rows.append({"fraction": float(frac), "batch_size": size, "algorithm": b, "note": status[b]})
        for row in rows[-len(names + extra + skipped):]:
            if "note" in row:
                continue
            a = row["algorithm"]
            row["speedup_vs_static"] = totals["static"] / totals[a] if "static" in totals else float("nan")
            row["speedup_vs_cusparse"] = totals["cusparse"] / totals[a] if "cusparse" in totals else float("nan")
            row["speedup_vs_cugraph"] = (totals["cugraph"] / totals[a]) if "cugraph" in totals else \
                (status.get("cugraph") and "-")
        # One more batch, after the errors were taken: every stage synchronized and timed.
        profile = _profile_batch(graph, rank, maker, size, x, cfg, backend) if backend.is_gpu else None
        if profile:
            report.setdefault("profile", {})[f"{frac:g}"] = profile
            log(f"fraction {frac:g}: profiled batch (stages synchronized): "
                + ", ".join(f"{k} {v:.3f} ms" for k, v in profile.items()))
        log(f"fraction {frac:g} (batch of {size} edges) done: " + "; ".join(
            f"{r['algorithm']} {r['total_ms_median']:.2f} ms (graph {r['graph_ms_median']:.2f}), L1 {r['l1_error']:.2e}"
            for r in rows[-len(names + extra + skipped):] if "note" not in r))
    report["oracle"] = oracle.name  # another where cuGraph's graph stopped fitting (oracle_note)
    if oracle.failure:
        report["oracle_note"] = str(oracle.failure)
    report["rows"] = rows
    x_rank = x.get("auto", x.get("dfp", next(iter(x.values())))) if rows else res0.x
    report["memory"] = _memory_report(graph, track, load, rank, x_rank)  # printed by report.format_report
    return report


def _memory_report(graph, track, load: dict, rank, x) -> dict:
    e = max(int(graph.num_edges), 1)
    out = track.report(e)
    gpu = track.backend.is_gpu
    store = int(graph.nbytes) if gpu else None  # device bytes: the GPU store only
    out["store_bytes"] = store
    out["store_bytes_per_edge"] = store / e if store is not None else None
    # the rank state kept between batches: the workspaces (every dtype used) and one iterate
    state = int(rank.rank_state_bytes(graph, x)) if gpu else None
    out["rank_state_bytes"] = state
    out["rank_state_bytes_per_edge"] = state / e if state is not None else None
    pool = out.get("peak_pool_used_bytes")
    out["peak_pool_used_bytes_per_edge"] = pool / e if pool is not None else None
    out.update(load)
    # the build's own working set: its peak over what was live before it (the bench's edge arrays)
    peak, start = load.get("load_peak_pool_bytes"), load.get("load_start_pool_bytes")
    out["load_peak_bytes_per_edge"] = (peak - start) / e if peak is not None else None
    bound = load.get("load_bound_bytes")
    if bound is not None and peak is not None:
        out["load_within_bound"] = bool(peak - start <= bound)
    return out


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


