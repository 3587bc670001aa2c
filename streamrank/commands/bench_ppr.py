"""``streamrank bench-ppr``: latency and top-k precision of the PPR methods over random seeds."""

from __future__ import annotations

import json
import time

import numpy as np

from ..backend import resolve_backend, to_host
from ..errors import InvalidArgumentError

HELP = "benchmark personalized PageRank methods: latency and top-k precision over random seeds"


def add_arguments(p):
    p.add_argument("--graph", required=True, help="rmat:SCALE[:EF], an edge file, or a checkpoint dir")
    p.add_argument("--seeds", type=int, default=100, help="random seeds (vertices with out-edges)")
    p.add_argument("--methods", default="power,push,pull,hybrid,montecarlo")
    p.add_argument("--atomics", default="native,exchange", help="push atomics schemes to compare")
    p.add_argument("--walks", default="65536,524288,2097152", help="Monte Carlo walk counts to compare")
    p.add_argument("--power-iters", default="4,5,6",
                   help="truncated power iteration rows (max_iter values; '' for none)")
    p.add_argument("--power-dtypes", default="float64,float32",
                   help="iterate types of the truncated power rows")
    p.add_argument("--batch-iters", default="5,6",
                   help="GPU: batched truncated power rows (all seeds in one call, float32; '' for none); "
                        "an exact batched row is added whenever these are")
    p.add_argument("--no-static", action="store_true",
                   help="skip the static PageRank baselines measured on the same graph")
    p.add_argument("--eps", type=float, default=1e-7)
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--dangling", default="personalization", choices=["personalization", "uniform"])
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--rng-seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT")
    p.add_argument("--plot", metavar="OUT.png")


def _variants(args, *, gpu: bool = False):
    out = []
    for m in args.methods.split(","):
        m = m.strip()
        if m == "power":
            out.append(("power", {}))
            for dt in str(args.power_dtypes).split(","):
                tag = "" if dt.strip() == "float64" else "/f32"
                out += [(f"power/it={int(t)}{tag}", {"max_iter": int(t), "tol": 0.0, "dtype": dt.strip()})
                        for t in str(args.power_iters).split(",") if t.strip()]
            if gpu and str(args.batch_iters).strip():
                out.append(("power-batch", {"batch": True}))
                out += [(f"power-batch/it={int(t)}/f32", {"batch": True, "max_iter": int(t), "tol": 0.0,
                                                          "dtype": "float32"})
                        for t in str(args.batch_iters).split(",") if t.strip()]
        elif m in ("push", "hybrid"):
            out += [(f"{m}/{a}", {"atomics": a, "eps": args.eps}) for a in args.atomics.split(",")]
        elif m == "pull":
            out.append(("pull", {"eps": args.eps}))
        elif m == "montecarlo":
            out += [(f"montecarlo/{int(w)}", {"walks": int(w)}) for w in args.walks.split(",")]
        else:
            raise InvalidArgumentError(f"unknown method {m!r}")
    return out


def run(args) -> int:
    from ..ppr import personalized_pagerank, personalized_pagerank_batch, topk_precision
    from ..ppr.io import load_graph

    t = time.perf_counter()
    graph, desc = load_graph(args.graph, device=args.device)
    load_s = time.perf_counter() - t
    deg = graph.out_degree
    deg = to_host(deg)
    cand = np.nonzero(deg > 0)[0]
    if cand.size == 0:
        raise InvalidArgumentError("the graph has no vertex with out-edges")
    rng = np.random.default_rng(args.rng_seed)
    internal = rng.choice(cand, size=min(args.seeds, cand.size), replace=False)
    ext = graph.ids.external[internal]
    seeds = [int(x) for x in to_host(ext)]
    common = dict(k=args.k, dangling=args.dangling)
    static = {} if args.no_static else static_baselines(graph)
    variants = _variants(args, gpu=getattr(graph, "xp", np) is not np)
    # warm-up: compile kernels, measure unit costs, fill caches
    for name, kw in variants:
        kw = dict(kw)
        if kw.pop("batch", False):
            personalized_pagerank_batch(graph, seeds[:2], method="power", **common, **kw)
        else:
            personalized_pagerank(graph, seeds[0], method=name.split("/")[0], **common, **kw)
    exact = {}
    rows, per_query = [], {}
    for name, kw in variants:
        method = name.split("/")[0]
        kw = dict(kw)
        batch = kw.pop("batch", False)
        lat, amort, prec, iters, choices = [], [], [], [], []
        if batch:
            results = personalized_pagerank_batch(graph, seeds, method="power", **common, **kw)
        else:
            results = (personalized_pagerank(graph, s, method=method, return_vector=name == "power", **common, **kw)
                       for s in seeds)
        for s, r in zip(seeds, results):
            lat.append(r.elapsed_ms)
            amort.append(r.extra.get("amortized_ms", r.elapsed_ms))
            iters.append(r.iterations)
            if name == "power":
                exact[s] = r.vector
            if method == "hybrid":
                choices.append("".join("P" if c == "push" else "L" for c in r.extra["choices"]))
            if s in exact:
                ids = graph.ids.lookup(np.array([v for v, _ in r.top_k]))
                ids = to_host(ids)
                prec.append(topk_precision(ids, exact[s], args.k))
        lat = np.array(lat)
        row = {"method": name, "median_ms": float(np.median(lat)), "p95_ms": float(np.percentile(lat, 95)),
               "amortized_ms": float(np.median(amort)),
               "mean_prec": float(np.mean(prec)) if prec else None,
               "min_prec": float(np.min(prec)) if prec else None,
               "p5_prec": float(np.percentile(prec, 5)) if prec else None,
               "share_ge_80": float(np.mean(np.array(prec) >= 0.8)) if prec else None,
               "mean_iters": float(np.mean(iters))}
        if static:
            row["x_static"] = static["static"]["ms"] / row["amortized_ms"]
        if choices:
            allc = "".join(choices)
            row["push_share"] = allc.count("P") / max(len(allc), 1)
        rows.append(row)
        per_query[name] = {"latency_ms": lat.tolist(), "amortized_ms": amort, "precision": prec, "iterations": iters,
                           **({"choices": choices} if choices else {})}
    _print_table(rows, args, desc, graph, load_s, static)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**desc, "vertices": int(graph.num_vertices), "edges": int(graph.num_edges),
                       "static_baselines": static,
                       "seeds": seeds, "k": args.k, "eps": args.eps, "rows": rows, "per_query": per_query}, fh)
    if args.plot:
        _plot(rows, per_query, args.plot, title=f"{args.graph} ({desc['backend']}, {len(seeds)} seeds)")
    return 0


def static_baselines(graph) -> dict:
    """Static (global) PageRank on the same graph, for scale: the engine's ``static_pagerank``
    (float64, L-infinity tolerance 1e-10, the default RankConfig) and, on the GPU, a cuSPARSE
    power iteration at the same criterion, and cuGraph's PageRank where pylibcugraph is
    installed (float32, its L1 criterion at 1e-6; graph built beforehand). Median of 3 warm runs
    each, device synchronized."""
    from ..config import RankConfig

    cfg = RankConfig()
    gpu = getattr(graph, "xp", np) is not np
    backend = resolve_backend("gpu" if gpu else "cpu")
    if gpu:
        from ..rank.gpu import pagerank as rank
        from ..bench import CusparsePower
    else:
        from ..rank.cpu import pagerank as rank

    def timed(fn):
        fn()
        backend.synchronize()
        out, ms = None, []
        for _ in range(3):
            t = time.perf_counter()
            out = fn()
            backend.synchronize()  # sync: the timing includes the device work
            ms.append((time.perf_counter() - t) * 1e3)
        return out, float(np.median(ms))

    res, ms = timed(lambda: rank.static_pagerank(graph, config=cfg))
    out = {"static": {"ms": ms, "iterations": int(res.iterations), "tol": cfg.tol, "dangling": cfg.dangling}}
    if gpu:
        power = CusparsePower(graph, alpha=cfg.alpha, dangling=cfg.dangling, dtype="float64")
        (_, its), ms = timed(lambda: power.run(tol=cfg.tol, criterion="linf", max_iter=cfg.max_iter))
        out["cusparse_static"] = {"ms": ms, "iterations": int(its), "tol": cfg.tol}
        del power
        from ..oracle.cugraph_static import build_cugraph_graph, cugraph_available, pagerank_on

        if cugraph_available():  # float32, cuGraph's own L1 criterion: what a cuGraph user runs
            s, d = graph.edges()
            handle, cg = build_cugraph_graph(s, d, graph.num_vertices, weight_dtype="float32")
            _, ms = timed(lambda: pagerank_on(handle, cg, alpha=cfg.alpha, tol=1e-6, max_iter=cfg.max_iter))
            out["cugraph_static"] = {"ms": ms, "tol": 1e-6, "criterion": "L1 change, float32"}
    return out


TABLE_COLUMNS = [
    ("method", "method"), ("median_ms", "median ms"), ("p95_ms", "p95 ms"), ("amortized_ms", "ms/query"),
    ("mean_prec", "mean P@k"),
    ("p5_prec", "p5 P@k"), ("min_prec", "min P@k"), ("mean_iters", "iters"), ("push_pct", "push%"),
    ("x_static", "x static"),
]


def _print_table(rows, args, desc, graph, load_s, static):
    from ..table import format_table

    print(f"graph {args.graph}: {graph.num_vertices} vertices, {graph.num_edges} edges, "
          f"backend {desc['backend']} (loaded in {load_s:.1f} s); k={args.k}, dangling={args.dangling}")
    for key, label in (("static", "static PageRank (engine)"), ("cusparse_static", "static PageRank (cuSPARSE)")):
        if key in static:
            print(f"{label}: {static[key]['ms']:.3f} ms, {static[key]['iterations']} iterations "
                  f"(L-infinity < {static[key]['tol']:g})")
    if "cugraph_static" in static:
        print(f"static PageRank (cuGraph, float32): {static['cugraph_static']['ms']:.3f} ms "
              f"(L1 change < {static['cugraph_static']['tol']:g})")
    shown = [{**{k: v for k, v in r.items() if v is not None},
              **({"push_pct": 100.0 * r["push_share"]} if "push_share" in r else {})} for r in rows]
    print(format_table(shown, TABLE_COLUMNS))


def _plot(rows, per_query, path, *, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [r["method"] for r in rows]
    a1.boxplot([per_query[n]["latency_ms"] for n in names], showfliers=False)
    a1.plot(range(1, len(names) + 1), [np.median(per_query[n]["amortized_ms"]) for n in names], "rx",
            label="time per query (batched: the batch's time over its size)")
    a1.legend(fontsize=7, loc="upper right")
    a1.set_xticks(range(1, len(names) + 1), names, rotation=40, ha="right", fontsize=8)
    a1.set_yscale("log")
    a1.set_ylabel("latency per query (ms)")
    prec_names = [n for n in names if per_query[n]["precision"]]
    a2.boxplot([per_query[n]["precision"] for n in prec_names], showfliers=True)
    a2.set_xticks(range(1, len(prec_names) + 1), prec_names, rotation=40, ha="right", fontsize=8)
    a2.axhline(0.8, color="grey", ls="--", lw=0.8)
    a2.set_ylabel("top-k precision vs power")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
