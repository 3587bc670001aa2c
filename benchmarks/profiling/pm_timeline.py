"""The frontier loop's launch over time, from Nsight Compute's PM sampling:
the L2, L1 and instruction-issue throughput of the whole device, sample by sample, as a table of
the busy stretches (the iterations' work between their barriers) and a plot.

    PM=1 OUT=dir DANGLING=self-loop SIZE=5 SKIP=10 bash benchmarks/profiling/loop_ncu.sh
    python3 benchmarks/profiling/pm_timeline.py dir/loop_pm.csv [plot.png]

The CSV is the report's raw page with every sample (``ncu --import dir/loop.ncu-rep --page raw
--print-metric-instances values --csv``, which loop_ncu.sh writes with PM=1). Runs anywhere with
NumPy (matplotlib for the plot).
"""
import csv
import sys

import numpy as np

#: The series shown: (column name in the raw page, label).
SERIES = (
    ("TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "SM instructions issued"),
    ("SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed", "L1 throughput"),
    ("LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput"),
    ("FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput"),
)
#: A sample belongs to a busy stretch when the SMs issue at least this share of their peak (%).
BUSY = 10.0


def read_samples(path: str) -> tuple:
    """(series: {label: array of % per sample}, sample interval in us) of the report's one launch."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 3:
        raise SystemExit(f"{path}: not a raw page of one launch (header, units, values)")
    head, values = rows[0], rows[-1]
    cells = dict(zip(head, values))
    series = {}
    for name, label in SERIES:
        cell = cells.get(name, "")
        if "(" not in cell:
            raise SystemExit(f"{path}: no samples of {name} (was the report taken with PM=1?)")
        inner = cell[cell.index("(") + 1: cell.rindex(")")]
        series[label] = np.array([float(v.strip().replace(",", "") or 0) for v in inner.split(";")])
    interval = float(cells.get("profiler__pmsampler_interval_time", "0").split()[0].replace(",", "") or 0)
    return series, interval


def busy_stretches(issued: np.ndarray) -> list:
    """(first, last) sample of each run of samples at or above BUSY."""
    out, start = [], None
    for i, v in enumerate(issued):
        if v >= BUSY and start is None:
            start = i
        elif v < BUSY and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(issued) - 1))
    return out


def main(argv: list) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    series, interval = read_samples(argv[1])
    issued = series["SM instructions issued"]
    active = np.nonzero(issued > 0)[0]
    if active.size == 0:
        raise SystemExit(f"{argv[1]}: the SMs issued nothing in any sample")
    lo, hi = int(active[0]), int(active[-1])
    print(f"# {argv[1]}: {hi - lo + 1} samples of {interval:.2f} us while the launch ran; busy: SM issue >= {BUSY:.0f}%")
    print("stretch | samples | " + " | ".join(f"{label} mean / max (%)" for label in series))
    stretches = busy_stretches(issued[lo: hi + 1])
    for k, (a, b) in enumerate(stretches):
        cells = [f"{series[label][lo + a: lo + b + 1].mean():.0f} / {series[label][lo + a: lo + b + 1].max():.0f}"
                 for label in series]
        print(f"{k} | {b - a + 1} | " + " | ".join(cells))
    idle = np.ones(hi - lo + 1, dtype=bool)
    for a, b in stretches:
        idle[a: b + 1] = False
    print("between stretches | " + f"{int(idle.sum())} | " +
          " | ".join(f"{series[label][lo: hi + 1][idle].mean():.0f} / {series[label][lo: hi + 1][idle].max():.0f}"
                     if idle.any() else "-" for label in series))
    if len(argv) > 2:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        t = (np.arange(lo, hi + 1) - lo) * (interval or 1.0)
        fig, ax = plt.subplots(figsize=(10, 3.6))
        for label, v in series.items():
            ax.plot(t, v[lo: hi + 1], label=label, linewidth=1.2)
        ax.set_xlabel("time since the launch's first sample (us)" if interval else "sample")
        ax.set_ylabel("% of peak")
        ax.set_ylim(0, 100)
        ax.set_title("frontier loop, one launch: device throughput per PM sample")
        ax.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        fig.savefig(argv[2], dpi=110)
        print(f"plot: {argv[2]}")


if __name__ == "__main__":
    main(sys.argv)
