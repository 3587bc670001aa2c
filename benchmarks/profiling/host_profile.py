"""Where the host time of a small GPU batch goes: cProfile over ``Engine.apply``.

Replays sx-mathoverflow (the temporal protocol's base graph, :mod:`_sxmo`) and prints the median
wall time per batch without the profiler, then the profiler's top functions by own time and by
cumulative time over the same number of batches.

Usage (GPU machine, repository root)::

    PYTHONPATH=. python benchmarks/profiling/host_profile.py [self-loop|uniform] [LINES] [BATCHES]
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sxmo import SxmoReplay  # noqa: E402


def main() -> None:
    import cupy as cp

    dangling = sys.argv[1] if len(sys.argv) > 1 else "self-loop"
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    r = SxmoReplay(dangling)
    for _ in range(30):  # warm-up: kernels compiled, pools filled
        r.engine.apply(r.next_batch(size))
    cp.cuda.Device().synchronize()  # sync: start the timing from an idle device
    wall = []
    for _ in range(batches):
        b = r.next_batch(size)
        t0 = time.perf_counter()
        r.engine.apply(b)
        wall.append(time.perf_counter() - t0)
    print(f"{dangling}: median {np.median(wall) * 1e3:.3f} ms per batch of {size} lines (no profiler)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(batches):
        r.engine.apply(r.next_batch(size))
    prof.disable()
    for key, count in (("tottime", 40), ("cumulative", 45)):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(count)
        print(out.getvalue())


if __name__ == "__main__":
    main()
