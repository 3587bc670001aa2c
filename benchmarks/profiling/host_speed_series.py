"""The host's two speeds over time, and what else changes with them.

Every ``STEP_MS`` for ``SECONDS`` this times, back to back: the Python probe
(``streamrank.bench.host_probe.fixed_host_work``, after one untimed run), a native loop with no
memory traffic to speak of (``np.sqrt`` over 16 k float64, L2-resident), a native random gather
over 256 KiB (L2, few pages), one over 256 MiB (a TLB miss on almost every load, 4 KiB pages or
not), and two CUDA driver calls into an idle stream: an event's ``record()`` and the launch of a
captured graph of 4 empty kernels (as the graph update's). It prints each second's medians beside the transparent huge pages the process holds
(``AnonHugePages`` of ``/proc/self/smaps_rollup``) and the kernel's THP counters, so that a switch
between the host's two speeds can be matched to what moved with it. ``CHURN=1`` allocates and
frees 64 MiB of Python objects every second (a new engine's kind of allocation).

    PYTHONPATH=. [SECONDS=20] [STEP_MS=5] [CHURN=0] python3 benchmarks/profiling/host_speed_series.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph  # noqa: E402

from streamrank.bench.host_probe import fixed_host_work, fixed_host_work_us

seconds = float(os.environ.get("SECONDS", "20"))
step = float(os.environ.get("STEP_MS", "5")) / 1e3
churn = os.environ.get("CHURN", "0") != "0"
rng = np.random.default_rng(0)
vec, out = rng.random(16384), np.empty(16384)
small = rng.random(32768)  # 256 KiB
big = rng.random(1 << 25)  # 256 MiB
n_idx = 20000
idx_small = rng.integers(0, small.shape[0], n_idx)
idx_big = rng.integers(0, big.shape[0], n_idx)
g = np.empty(n_idx)
stream = cp.cuda.Stream(non_blocking=True)
graph = empty_graph(4)
event = cp.cuda.Event()


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as exc:
        return f"({exc.strerror})"


def anon_huge_kb():
    for line in read("/proc/self/smaps_rollup").splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return -1


def vmstat(keys=("thp_fault_alloc", "thp_collapse_alloc", "thp_split_page", "compact_stall")):
    vals = dict(line.split() for line in read("/proc/vmstat").splitlines() if " " in line)
    return {k: int(vals.get(k, -1)) for k in keys}


def driver_us():
    """(record, graph launch) host us into the idle stream."""
    stream.synchronize()  # sync: the stream is idle before each timed call
    t0 = time.perf_counter_ns()
    event.record(stream)
    t1 = time.perf_counter_ns()
    graph.launch(stream)
    t2 = time.perf_counter_ns()
    stream.synchronize()  # sync: the graph's end, before the next sample
    return (t1 - t0) / 1e3, (t2 - t1) / 1e3


def timed(f):
    t = time.perf_counter_ns()
    f()
    return (time.perf_counter_ns() - t) / 1e3


print("# THP enabled:", read("/sys/kernel/mm/transparent_hugepage/enabled"),
      "| defrag:", read("/sys/kernel/mm/transparent_hugepage/defrag"),
      "| PYTHONMALLOC:", os.environ.get("PYTHONMALLOC", "-"), "| GLIBC_TUNABLES:", os.environ.get("GLIBC_TUNABLES", "-"))
print("# per second, medians (us): py probe, native sqrt 16k, gather 20k from 256 KiB, from 256 MiB; "
      "event record, graph launch; AnonHugePages (MiB); vmstat deltas")
print(f"{'s':>4s} {'py':>7s} {'sqrt':>7s} {'g256K':>7s} {'g256M':>7s} {'record':>7s} {'launch':>7s} {'hugeMiB':>8s}  vmstat")
fixed_host_work()
t_end = time.perf_counter() + seconds
sec = 0
v0 = vmstat()
junk = None
while time.perf_counter() < t_end:
    rows = []
    t_sec = time.perf_counter() + 1.0
    if churn:
        junk = [[i] * 8 for i in range(200_000)]  # about 64 MiB of small objects
    while time.perf_counter() < t_sec:
        fixed_host_work()
        a = fixed_host_work_us()
        b = timed(lambda: np.sqrt(vec, out=out))
        c = timed(lambda: np.take(small, idx_small, out=g))
        d = timed(lambda: np.take(big, idx_big, out=g))
        rows.append((a, b, c, d, *driver_us()))
        time.sleep(step)
    junk = None
    v1 = vmstat()
    m = np.median(np.array(rows), axis=0)
    delta = {k: v1[k] - v0[k] for k in v1 if v1[k] != v0[k]}
    v0 = v1
    print(f"{sec:4d} {m[0]:7.1f} {m[1]:7.2f} {m[2]:7.1f} {m[3]:7.1f} {m[4]:7.2f} {m[5]:7.2f} {anon_huge_kb() / 1024:8.1f}  {delta or ''}",
          flush=True)
    sec += 1
