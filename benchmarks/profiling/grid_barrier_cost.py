"""The cost of one grid-wide barrier of a cooperative launch, for the grid shapes the frontier
loop could use, and against it the barrier written out four ways (docs/architecture.md). GPU only.

    PYTHONPATH=. python3 benchmarks/profiling/grid_barrier_cost.py
"""
import os
import cupy as cp
import numpy as np

src = open(os.path.join(os.path.dirname(__file__), "grid_barrier_cost.cu")).read()
from streamrank.kernels.cuda.loader import KERNEL_DIR  # noqa: E402  (common.cuh's folder)

mod = cp.RawModule(code=src, options=("-std=c++17", f"-I{KERNEL_DIR}"), backend="nvrtc",
                   enable_cooperative_groups=True)
k = mod.get_function("barriers")
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
out = cp.zeros(1, dtype=cp.uint64)
count = cp.zeros(1, dtype=cp.uint32)  # the written-out barriers' arrivals (zeroed before each launch)


def us_per_round(kernel, grid: int, threads: int, rounds: int, *args) -> float:
    """Median over 5 launches of the device-clock time per round (us) the kernel writes to out."""
    vals = []
    for _ in range(5):
        count.fill(0)
        kernel((grid,), (threads,), (np.int32(rounds), *args, out))
        cp.cuda.runtime.deviceSynchronize()  # sync: read the device clock figure
        vals.append(int(out.get()[0]) / rounds / 1e3)
    return float(np.median(vals))


print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {sms} SMs")
print("blocks x threads | us per barrier (idle) | us per barrier (one global add per thread)")
for per_sm, threads in ((1, 256), (2, 256), (3, 256), (4, 256), (1, 768), (1, 1024), (2, 384)):
    grid = per_sm * sms
    sink = cp.zeros(grid * threads, dtype=cp.float64)
    row = [us_per_round(k, grid, threads, 2000, np.int32(work), sink, count, np.int32(0)) for work in (0, 1)]
    print(f"{grid} x {threads} | {row[0]:.2f} | {row[1]:.2f}")

# Appends as the loop makes them: warps that each wait for one atomicAdd on a counter, then a barrier.
ka = mod.get_function("appends")
grid, threads = 3 * sms, 256
counters = cp.zeros(64, dtype=cp.int32)
sink = cp.zeros(1 << 20, dtype=cp.int32)
print(f"\n{grid} x {threads}: us per phase (atomic slot per active warp + grid barrier)")
print("active warps | one counter | 32 counters | block-aggregated")
for active in (0, 100, 1000, 2000, 3168):
    row = [us_per_round(ka, grid, threads, 1000, np.int32(active), np.int32(spread), counters, sink)
           for spread in (1, 32, 0)]
    print(f"{active} | {row[0]:.2f} | {row[1]:.2f} | {row[2]:.2f}")

# The barrier written out (grid_barrier_cost.cu's own_sync, variants 1-4) against cooperative_groups' (0).
print("\nblocks x threads | us per barrier, idle / one global add per thread: cooperative_groups | release "
      "reduction | release atomic | fence + relaxed reduction | release reduction, relaxed polls")
for per_sm in (3, 4):
    grid, threads = per_sm * sms, 256
    sink = cp.zeros(grid * threads, dtype=cp.float64)
    cells = []
    for work in (0, 1):
        cells.append([us_per_round(k, grid, threads, 2000, np.int32(work), sink, count, np.int32(v))
                      for v in (0, 1, 2, 3, 4)])
    print(f"{grid} x {threads} | " + " | ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(*cells)))
