"""Plots of replay runs (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError


def _rolling_median(values, window: int):
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] < window:
        return np.full(values.shape, np.median(values) if values.size else np.nan)
    from numpy.lib.stride_tricks import sliding_window_view

    med = np.median(sliding_window_view(values, window), axis=1)
    pad = window // 2
    return np.concatenate([np.full(pad, med[0]), med, np.full(values.shape[0] - med.shape[0] - pad, med[-1])])


def plot_replay(report, path: str, *, title: str | None = None) -> str:
    """Per-batch time and error against the oracle of each algorithm of a replay.

    Parameters
    ----------
    report : ReplayReport
    path : str
        Output image (``.png``, ``.svg``, ``.pdf``).
    title : str, optional

    Returns
    -------
    str
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not report.runs:
        raise InvalidArgumentError("nothing to plot: the replay has no runs")
    fig, (ax_t, ax_e) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for run in report.runs:
        total = np.asarray(run.graph_ms) + np.asarray(run.rank_ms)
        x = np.arange(1, total.shape[0] + 1)
        line, = ax_t.plot(x, _rolling_median(total, 25), lw=1.6,
                          label=f"{run.algorithm} (median {np.median(total):.2f} ms)")
        ax_t.scatter(x, total, s=2, alpha=0.25, color=line.get_color(), linewidths=0)
        if run.checks:
            b = [c[0] for c in run.checks]
            e = [max(c[1]["l1_error"], 1e-18) for c in run.checks]
            ax_e.plot(b, e, marker="o", ms=3, label=run.algorithm)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time per batch (ms), graph + rank\n(dots: batches; line: rolling median of 25)")
    ax_t.legend(fontsize=8)
    ax_t.grid(alpha=0.3)
    ax_e.set_yscale("log")
    ax_e.set_ylabel("L1 error vs oracle")
    ax_e.set_xlabel("batch")
    ax_e.grid(alpha=0.3)
    if any(r.checks for r in report.runs):
        ax_e.legend(fontsize=8)
    else:
        ax_e.text(0.5, 0.5, "run with --check to plot the error", ha="center", transform=ax_e.transAxes)
    g = report.graph
    fig.suptitle(title or f"{g['path']}: |V|={g['vertices']:,} |E|={g['edges']:,}, "
                 f"{g['batches']} batches of {g['batch_size']} ({g['dangling']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
