"""The frontier loop's iteration time against its frontier, with the fitted fixed cost:
reads the per-iteration CSVs that ``loop_phases.py`` writes with ``CSV=path``, prints the
least-squares line of each (``_overhead.fit_fixed_cost``, iterations under 10,000 vertices) and
plots the iterations, the lines and the 10 us mark. Runs anywhere with NumPy and matplotlib.

    CSV=self.csv DANGLING=self-loop SIZE=5 PYTHONPATH=. python3 benchmarks/profiling/loop_phases.py
    python3 benchmarks/profiling/fixed_cost_plot.py out.png self-loop=self.csv uniform=uni.csv
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _overhead import FIT_BELOW, FRONTIER_BINS, bins, fit_fixed_cost  # noqa: E402


def read_iterations(path: str) -> tuple:
    """(frontier, iteration time in us) of a loop_phases.py CSV (columns frontier, R_us, decide_us)."""
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: not a loop_phases.py CSV ({exc})") from exc
    if data.shape[1] != 3 or data.shape[0] == 0:
        raise SystemExit(f"{path}: expected rows of frontier, R_us, decide_us")
    return data[:, 0], data[:, 1] + data[:, 2]


def main(argv: list) -> None:
    if len(argv) < 2 or not argv[0].endswith(".png") or any("=" not in a for a in argv[1:]):
        raise SystemExit("usage: fixed_cost_plot.py out.png label=iterations.csv [label=iterations.csv ...]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    print("label | iterations fitted | fixed cost a (us, 95%) | b (us per 1,000 vertices) | median iteration "
          "under 100 / 100-1,000 / 1,000-10,000 vertices (us)")
    for arg in argv[1:]:
        label, path = arg.split("=", 1)
        n, t = read_iterations(path)
        try:
            fit = fit_fixed_cost(n, t)
        except ValueError as exc:
            raise SystemExit(f"{path}: {exc}") from exc
        held = {(lo, hi): np.median(t[m]) for lo, hi, m in bins(n)}
        med = [held.get(b, np.nan) for b in FRONTIER_BINS[:3]]
        print(f"{label} | {fit.iterations} | {fit.intercept_us:.1f} ({fit.low_us:.1f}-{fit.high_us:.1f}) | "
              f"{fit.slope_us_per_1000:.2f} | " + " / ".join(f"{m:.1f}" for m in med))
        under = n < FIT_BELOW
        dots = ax.scatter(np.maximum(n[under], 1), t[under], s=6, alpha=0.35, label=f"{label}: iterations")
        xs = np.linspace(1, FIT_BELOW, 200)
        ax.plot(xs, fit.intercept_us + fit.slope_us_per_1000 * xs / 1000, color=dots.get_facecolor()[0][:3],
                label=f"{label}: {fit.intercept_us:.1f} us + {fit.slope_us_per_1000:.2f} us per 1,000 vertices")
    ax.axhline(10, color="grey", ls="--", lw=1, label="10 us")
    ax.set_xscale("log")
    ax.set_xlabel("frontier (vertices)")
    ax.set_ylabel("iteration (us): updates to the barrier, then the decision")
    ax.set_title(f"Frontier loop: iteration time and its fixed cost (frontiers under {FIT_BELOW:,})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[0], dpi=90)
    print(f"plot: {argv[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
