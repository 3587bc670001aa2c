"""How fast the host runs right after D ms of something else.

The graph update's host part runs 2-3x slower after R-MAT's long flooded ranks than after
sx-mathoverflow's short ones. This script reproduces the gap without a graph: after each of
these, for D in DURATIONS (ms),

- ``sync``: a device kernel that spins D ms while the host waits in ``stream.synchronize()``;
- ``sleep``: ``time.sleep``;
- ``pyspin``: a Python loop reading the clock;
- ``launches``: tiny kernel launches with a stream synchronization every 8 (a launch sequence);
- ``blas``: 256 x 256 float64 matrix products (wide vector instructions);

it times, one after the other, the Python probe (``streamrank.bench.host_probe.fixed_host_work``:
the batch's kind of host work), a native one (``np.sqrt`` over 16 k float64, no Python in the
loop), and the Python probe again. Beside each, from the kernel's accounting: the time the thread
waited on a run queue during the probes (``/proc/self/schedstat``), the machine's steal time
during the whole round (``/proc/stat``), and whether the thread changed CPU.

    PYTHONPATH=. [DURATIONS=0,0.3,1,3,10] [REPEATS=30] python3 benchmarks/profiling/host_speed_after.py
"""
import os
import time

import cupy as cp
import numpy as np

from streamrank.bench.host_probe import fixed_host_work, fixed_host_work_us

durations = [float(d) for d in os.environ.get("DURATIONS", "0,0.3,1,3,10").split(",")]
repeats = int(os.environ.get("REPEATS", "30"))

spin = cp.RawKernel(r'''
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { __nanosleep(1000); asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
extern "C" __global__ void tiny(int* a) { if (threadIdx.x == 0) a[blockIdx.x] += 1; }
''', "spin")
tiny = cp.RawKernel(spin.code, "tiny")
tiny_arg = cp.zeros(8, dtype=cp.int32)
stream = cp.cuda.get_current_stream()
mat = np.random.default_rng(0).random((256, 256))
vec, out = np.random.default_rng(1).random(16384), np.empty(16384)


def run_sync(d):
    spin((1,), (32,), (np.uint64(int(d * 1e6)),))
    stream.synchronize()  # sync: the host waits for the spinning kernel (the condition itself)


def run_sleep(d):
    time.sleep(d / 1e3)


def run_pyspin(d):
    end = time.perf_counter() + d / 1e3
    while time.perf_counter() < end:
        pass


def run_launches(d):
    end = time.perf_counter() + d / 1e3
    i = 0
    while time.perf_counter() < end:
        tiny((8,), (32,), (tiny_arg,))
        i += 1
        if i % 8 == 0:
            stream.synchronize()  # sync: as a launch sequence's convergence check
    stream.synchronize()  # sync: nothing left queued before the probe


def run_blas(d):
    end = time.perf_counter() + d / 1e3
    while time.perf_counter() < end:
        mat @ mat


def schedstat():
    with open("/proc/self/schedstat") as f:  # run time, run-queue wait (ns), time slices
        return [int(v) for v in f.read().split()]


def steal():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])  # jiffies of steal, all CPUs


def cpu():
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def native_us():
    t = time.perf_counter_ns()
    np.sqrt(vec, out=out)
    return (time.perf_counter_ns() - t) / 1e3


conditions = {"sync": run_sync, "sleep": run_sleep, "pyspin": run_pyspin, "launches": run_launches,
              "blas": run_blas}
for f in conditions.values():  # warm every path once
    f(0.1)
fixed_host_work()
native_us()
print(f"# host speed after D ms of each condition; medians of {repeats} rounds (us); "
      f"steal in jiffies over all rounds; {os.cpu_count()} CPUs")
print(f"{'condition':10s} {'D ms':>6s} {'py 1st':>8s} {'native':>8s} {'py 2nd':>8s} {'py 2nd/1st':>10s} "
      f"{'rq wait us':>10s} {'cpu moved':>9s} {'steal':>6s}")
for name, f in conditions.items():
    for d in durations:
        rows = []
        st0 = steal()
        for _ in range(repeats):
            c0 = cpu()
            if d > 0:
                f(d)
            s0 = schedstat()
            a = fixed_host_work_us()
            b = native_us()
            c = fixed_host_work_us()
            s1 = schedstat()
            rows.append((a, b, c, (s1[1] - s0[1]) / 1e3, cpu() != c0))
        st1 = steal()
        r = np.array(rows, dtype=float)
        med = np.median(r, axis=0)
        print(f"{name:10s} {d:6.1f} {med[0]:8.1f} {med[1]:8.2f} {med[2]:8.1f} {med[2] / med[0]:10.2f} "
              f"{med[3]:10.2f} {int(r[:, 4].sum()):9d} {st1 - st0:6d}", flush=True)
