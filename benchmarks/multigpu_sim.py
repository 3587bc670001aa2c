"""The multi-GPU engine's communication, simulated on one device (docs/architecture.md, "Past one GPU").

For each R-MAT scale: generate the edges on the device (streamrank/bench/rmat.py), partition the id
range into K contiguous parts (1-D by destination), and count per part pair the contributions a
warm sweep and DF-P push per iteration and per batch (streamrank/bench/partition_sim.py), for
random batches of the given fractions of |E| (80% insertions, 20% deletions, as `streamrank bench`
draws them). DF-P's iterations are the simulation's own (its frontier, run from the base graph's
ranks); with --engine-scales the engine itself also runs every batch on one GPU from the same base
(load, then per batch: apply, rank with DF-P and warm sweeps, undo the batch untimed), which gives
its iterations and the one-GPU time per batch.

Predicted time per batch on K GPUs = one-GPU time x (largest part's share of the in-edges) + per
iteration (largest part's send or receive bytes / link bandwidth + latency) + the batch's routing
bytes / bandwidth. The link figure and the latency are arguments (defaults: 450 GB/s per direction
per GPU, H200 NVLink 4 through NVSwitch; 10 us per exchange, an NCCL all-to-all of small messages
within one node).

    python3 benchmarks/multigpu_sim.py --scales 24,26 --engine-scales 24 --json out.json
    python3 benchmarks/multigpu_sim.py --device cpu --scales 12 --batches 1     # any machine
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from streamrank.backend import device_name, resolve_backend
from streamrank.bench import partition_sim as ps
from streamrank.bench.rmat import rmat_edges
from streamrank.table import format_table


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def engine_times(backend, src, dst, batches, *, alpha=0.85, tol=1e-10):
    """One GPU (or the CPU): per batch ``{algorithm: (ms, iterations)}`` from the same base each time."""
    from streamrank.batch import EdgeBatch
    from streamrank.config import RankConfig
    from streamrank.errors import GraphCapacityError

    xp = backend.xp
    if backend.is_gpu:
        from streamrank.rank.gpu import pagerank as rank
        from streamrank.store.gpu import GpuGraph as Graph
    else:
        from streamrank.rank.cpu import pagerank as rank
        from streamrank.store.cpu import CpuGraph as Graph
    cfg = RankConfig(alpha=alpha, tol=tol, dangling="uniform")
    try:
        graph = Graph.from_edges(src, dst)
    except GraphCapacityError as exc:
        return {"error": str(exc)}
    base = rank.static_pagerank(graph, config=cfg).x
    out = []
    for ins, dels in batches:
        s = xp.concatenate([xp.asarray(ins[0]), xp.asarray(dels[0])])
        d = xp.concatenate([xp.asarray(ins[1]), xp.asarray(dels[1])])
        op = xp.concatenate([xp.ones(ins[0].shape[0], dtype=bool), xp.zeros(dels[0].shape[0], dtype=bool)])
        row = {}
        for algo in ("dfp", "warm"):
            backend.synchronize()
            t = time.perf_counter()
            changes = graph.apply(EdgeBatch(s, d, op))
            res = rank.update_pagerank(algo, graph, changes, base, config=cfg)
            backend.synchronize()
            row[algo] = ((time.perf_counter() - t) * 1e3, int(res.iterations))
            graph.apply(EdgeBatch(s, d, ~op))  # back to the base graph (untimed)
        out.append(row)
    return {"batches": out}


def summarize(k, trace_pushes, trace_flags, routed, iterations, *, value_bytes, link, latency):
    """Bytes and predicted communication time of one batch on ``k`` parts."""
    per_iter_link = [max(m.sum(axis=1).max(), m.sum(axis=0).max()) * value_bytes for m in trace_pushes]
    total = sum(int(m.sum()) for m in trace_pushes) * value_bytes
    flags = sum(int(m.sum()) for m in trace_flags) * 4
    routed_off = routed - np.diag(np.diag(routed))
    route_bytes = max(routed_off.sum(axis=1).max(), routed_off.sum(axis=0).max()) * 16
    comm_s = sum(b / link for b in per_iter_link) + latency * iterations + route_bytes / link
    return {"push_bytes": int(total), "flag_bytes": int(flags), "max_link_bytes_per_iter": int(max(per_iter_link)),
            "comm_ms": comm_s * 1e3, "route_bytes": int(route_bytes)}


def run_scale(scale, args, backend, log=_log):
    xp = backend.xp
    t = time.perf_counter()
    src, dst = rmat_edges(scale, seed=args.seed, xp=xp)
    n, e = 1 << scale, int(src.shape[0])
    log(f"rmat {scale}: {e:,} edges generated in {time.perf_counter() - t:.1f} s")
    kmax = max(args.parts)
    mask_max = ps.ghost_masks(xp, src, dst, n, kmax)
    owners = {k: ps.parts_of(xp, xp.arange(n), n, k) for k in args.parts}
    masks = {k: (ps.coarsen(xp, mask_max, kmax, k), owners[k]) for k in args.parts}
    del mask_max
    in_edges = {k: ps._host(xp.bincount(ps.parts_of(xp, dst, n, k), minlength=k)) for k in args.parts}
    imbalance = {k: float(in_edges[k].max() * k / e) for k in args.parts}
    warm_pairs = {k: ps.pair_counts(xp, masks[k][0], masks[k][1], k) for k in args.parts}
    batches = []
    for f in args.fractions:
        size = max(1, int(round(f * e)))
        for b in range(args.batches):
            batches.append((f, ps.random_batch(xp, src, dst, n, size, seed=args.seed + 1000 * b + 1)))
    engine = None
    if scale in args.engine_scales:
        t = time.perf_counter()
        engine = engine_times(backend, src, dst, [bt for _, bt in batches], alpha=args.alpha, tol=args.tol)
        log(f"rmat {scale}: engine runs in {time.perf_counter() - t:.1f} s"
            + (f" ({engine['error']})" if "error" in engine else ""))
    t = time.perf_counter()
    g = ps.SimGraph(xp, src, dst, n)
    del src, dst
    x0 = ps.static_ranks(g, alpha=args.alpha, tol=args.tol)
    log(f"rmat {scale}: simulation graph and base ranks in {time.perf_counter() - t:.1f} s")
    rows = []
    for i, (f, (ins, dels)) in enumerate(batches):
        t = time.perf_counter()
        tr = ps.simulate_dfp(g, x0, ins, dels, masks, alpha=args.alpha, tol=args.tol,
                             frontier_tol=args.frontier_tol, prune_tol=args.prune_tol)
        warm_its = ps.warm_iterations(g, x0, ins, dels, alpha=args.alpha, tol=args.tol)
        eng = engine["batches"][i] if engine and "batches" in engine else None
        log(f"rmat {scale} fraction {f:g}: DF-P {tr.iterations} iterations, frontier max {max(tr.frontier):,}, "
            f"warm {warm_its} iterations ({time.perf_counter() - t:.1f} s)")
        for k in args.parts:
            for mode in ("dfp", "warm"):
                if mode == "dfp":
                    pushes, flags, its = tr.pushes[k], tr.flags[k], tr.iterations
                else:
                    its = warm_its
                    pushes, flags = [warm_pairs[k]] * its, []
                for vb in args.value_bytes:
                    s = summarize(k, pushes, flags, tr.batch_edges[k], its, value_bytes=vb,
                                  link=args.link_gbs * 1e9, latency=args.latency_us * 1e-6)
                    one = eng[mode][0] if eng else None
                    rows.append({"scale": scale, "edges": e, "K": k, "mode": mode, "fraction": f,
                                 "batch": int(ins[0].shape[0] + dels[0].shape[0]), "value_bytes": vb,
                                 "iterations": its, "engine_iterations": eng[mode][1] if eng else None,
                                 "frontier_max": max(tr.frontier) if mode == "dfp" else n,
                                 "imbalance": imbalance[k], "one_gpu_ms": one,
                                 "predicted_ms": (one * imbalance[k] / k + s["comm_ms"]) if one is not None else None,
                                 **s})
    return rows, {"scale": scale, "edges": e, "id_range": n, "imbalance": imbalance,
                  "warm_pushes_per_iter": {k: int(v.sum()) for k, v in warm_pairs.items()},
                  "engine": engine}


def _median_rows(rows):
    """Median over the batches of each (scale, K, mode, fraction, value bytes)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["scale"], r["K"], r["mode"], r["fraction"], r["value_bytes"]), []).append(r)
    out = []
    for key, rs in groups.items():
        row = dict(rs[0])
        for f in ("iterations", "engine_iterations", "push_bytes", "flag_bytes", "max_link_bytes_per_iter",
                  "comm_ms", "one_gpu_ms", "predicted_ms", "frontier_max"):
            vals = [r[f] for r in rs if r[f] is not None]
            row[f] = float(np.median(vals)) if vals else None
        out.append(row)
    return out


COLUMNS = [("scale", "R-MAT"), ("K", "K"), ("mode", "mode"), ("fraction", "batch/|E|"),
           ("iterations", "iters sim"), ("engine_iterations", "iters 1-GPU"), ("frontier_max", "frontier max"),
           ("max_link_bytes_per_iter", "max part B/iter"), ("push_bytes", "pushed B/batch"),
           ("flag_bytes", "flags B/batch"), ("comm_ms", "comm ms"), ("one_gpu_ms", "1-GPU ms"),
           ("predicted_ms", "K-GPU ms"), ("imbalance", "imbalance")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", default="24,26")
    p.add_argument("--parts", default="2,4,8", help="K values; the largest must be a multiple of the others")
    p.add_argument("--fractions", default="1e-6,1e-4,1e-2")
    p.add_argument("--batches", type=int, default=2, help="batches per fraction")
    p.add_argument("--engine-scales", default="", help="scales at which the engine also runs on one device")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--value-bytes", default="8,4", help="bytes per contribution (8: float64, 4: float32)")
    p.add_argument("--link-gbs", type=float, default=450.0, help="GB/s per direction per GPU (H200 NVLink 4)")
    p.add_argument("--latency-us", type=float, default=10.0, help="latency of one exchange")
    p.add_argument("--alpha", type=float, default=0.85)
    p.add_argument("--tol", type=float, default=1e-10)
    p.add_argument("--frontier-tol", type=float, default=1e-6)
    p.add_argument("--prune-tol", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    ints = lambda t: [int(v) for v in t.split(",") if v.strip()]  # noqa: E731
    args.scales, args.parts, args.engine_scales = ints(args.scales), ints(args.parts), ints(args.engine_scales)
    args.value_bytes = ints(args.value_bytes)
    args.fractions = [float(v) for v in args.fractions.split(",") if v.strip()]
    if any(max(args.parts) % k for k in args.parts):
        p.error("the largest K must be a multiple of the others")
    backend = resolve_backend(args.device)
    report = {"device": device_name(backend), "link_gbs": args.link_gbs, "latency_us": args.latency_us,
              "args": {k: v for k, v in vars(args).items()}, "rows": [], "graphs": []}
    print(f"device: {report['device']}; link {args.link_gbs:g} GB/s per direction per GPU, {args.latency_us:g} us "
          f"per exchange; medians over {args.batches} batch(es) per fraction", flush=True)
    for scale in args.scales:  # each scale's table as soon as it is done
        rows, info = run_scale(scale, args, backend)
        report["rows"] += rows
        report["graphs"].append(info)
        if backend.is_gpu:
            backend.xp.get_default_memory_pool().free_all_blocks()
        med = _median_rows(rows)
        report.setdefault("median_rows", []).extend(med)
        for vb in args.value_bytes:
            print(f"\nR-MAT {scale}, contributions of {vb} bytes:")
            print(format_table([r for r in med if r["value_bytes"] == vb], COLUMNS), flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
