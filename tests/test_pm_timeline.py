"""benchmarks/profiling/pm_timeline.py reads Nsight Compute's raw page of a PM-sampled launch:
a synthetic page with two busy stretches, run as the command the docs give."""

import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "profiling" / "pm_timeline.py"
COLUMNS = ("TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
           "SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
           "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed")


def _page(path: Path, issued: list, interval: str = "1.50 (1.50)") -> None:
    head = ["ID", "Kernel Name", *COLUMNS, "profiler__pmsampler_interval_time"]
    units = ["", "", "%", "%", "%", "%", "us"]
    cells = [f"{max(issued):.2f} (" + "; ".join(f"{v:g}" for v in issued) + ")"]
    cells += [f"{v / 2:.2f} (" + "; ".join(f"{v / 2:g}" for v in issued) + ")" for v in (max(issued),) * 3]
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([head, units, ["0", "frontier_loop", *cells, interval]])


def test_busy_stretches_and_quiet_samples(tmp_path):
    issued = [0, 0, 40, 60, 50, 3, 4, 30, 2, 0]  # two busy stretches (3 and 1 samples), quiet between
    _page(tmp_path / "pm.csv", issued)
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "pm.csv")], capture_output=True, text=True,
                         check=True).stdout
    lines = out.splitlines()
    assert "7 samples of 1.50 us" in lines[0]  # from the first sample the SMs issued in to the last
    assert lines[2].startswith("0 | 3 | 50 / 60 | 25 / 30")  # mean / max of the first stretch
    assert lines[3].startswith("1 | 1 | 30 / 30")
    assert lines[4].startswith("between stretches | 3 | 3 / 4")


def test_a_page_without_samples_is_refused(tmp_path):
    path = tmp_path / "pm.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([["ID", COLUMNS[0]], ["", "%"], ["0", "12.5"]])
    res = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True)
    assert res.returncode != 0 and "no samples" in res.stderr
