"""The random-batch benchmark's table and plot."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgumentError


TABLE_COLUMNS = [
    ("fraction", "fraction"), ("batch_size", "batch"), ("algorithm", "algorithm"),
    ("graph_ms_median", "graph ms"), ("rank_ms_median", "rank ms"),
    ("total_ms_median", "total med"), ("total_ms_p95", "total p95"),
    ("iterations_median", "iters"), ("affected_median", "affected"),
    ("l1_error", "L1 err"), ("speedup_vs_static", "x static"), ("speedup_vs_cusparse", "x cusparse"),
    ("speedup_vs_cugraph", "x cugraph"), ("note", "note"),
]

SWEEP_COLUMNS = [("variant", "sweep"), ("ms_per_sweep", "ms"), ("bytes_per_sweep", "bytes"),
                 ("gb_per_s", "GB/s"), ("share_of_copy", "of copy")]


def format_report(report: dict) -> str:
    """Header lines and the per-(fraction, algorithm) table."""
    from ..table import format_table

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
    mem = report.get("memory") or {}
    if mem.get("store_bytes") is not None:
        lines.append(f"device memory: graph store {mem['store_bytes'] / 2**20:.0f} MiB "
                     f"({mem['store_bytes_per_edge']:.1f} B/edge); peak live arrays during the engine's batches "
                     f"{mem['peak_pool_used_bytes'] / 2**20:.0f} MiB ({mem['peak_pool_used_bytes_per_edge']:.1f} B/edge, "
                     f"bench inputs included); peak device use {mem['peak_device_bytes'] / 2**20:.0f} MiB")
    if mem.get("rank_state_bytes") is not None:
        lines.append(f"device memory: rank state {mem['rank_state_bytes'] / 2**20:.0f} MiB "
                     f"({mem['rank_state_bytes_per_edge']:.1f} B/edge: workspaces and the iterate)")
    if mem.get("load_peak_pool_bytes") is not None:
        lines.append(f"device memory while loading: peak {mem['load_peak_pool_bytes'] / 2**20:.0f} MiB of live "
                     f"arrays ({mem['load_start_pool_bytes'] / 2**20:.0f} MiB of them the bench's edge arrays; "
                     f"the build's own {mem['load_peak_bytes_per_edge']:.1f} B/edge, the store included); "
                     f"generating the edges: peak {mem['generate_peak_pool_bytes'] / 2**20:.0f} MiB")
    if mem.get("load_bound_bytes") is not None:
        lines.append(f"load bound (store + 16 B per input edge + the id plan's table): "
                     f"{mem['load_bound_bytes'] / 2**20:.0f} MiB; the load's peak over its input "
                     f"{(mem['load_peak_pool_bytes'] - mem['load_start_pool_bytes']) / 2**20:.0f} MiB: "
                     f"{'within' if mem.get('load_within_bound') else 'PAST'} the bound")
    for name, why in (report.get("baseline_status") or {}).items():
        lines.append(f"{name}: {why}")
    sw = report.get("sweeps")
    if sw:
        lines.append(f"one full sweep ({sw['sweeps_timed']} timed per run; device copy {sw['copy_gb_s']:.0f} GB/s):")
        lines.append(format_table(sw["rows"], SWEEP_COLUMNS))
    lines.append(format_table(report.get("rows", []), TABLE_COLUMNS))
    return "\n".join(lines)


def plot_report(report: dict, path: str) -> str:
    """Median per-batch time (graph + rank update) per algorithm and batch fraction (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report.get("rows", []) if "note" not in r]  # baselines that did not run
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
