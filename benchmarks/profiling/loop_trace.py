"""Where an iteration of the frontier loop spends its time, warp by warp: the loop compiled with
its trace (``frontier_loop._LOOP_TRACE = 1``, layout in ``streamrank/rank/gpu/frontier_loop.py``) on the sx-mathoverflow replay of loop_phases.py. For the
iterations of each frontier-size bin it prints, as medians over those iterations: the list sizes,
the iteration's time to its barrier, when the warps' large-list work, small-list work and copies
end (median warp and slowest warp), and what the slowest warp did (its block's large vertices,
its small groups, their largest marking degree and in-degree). A second table groups the warps by
their multiprocessor: whether the multiprocessors whose resident blocks hold more large
vertices, or more small groups, finish later, and where the slowest 1% of the warps run. A third
splits each iteration into the work (to the last warp's end) and what follows it: the barrier's
tail (the last warp's end to the barrier's exit, block reductions and accumulator atomics
included) and the decision (the barrier's exit to the next iteration's start). GPU only;
the trace's extra registers slow the loop a little, so read its times against each other, not
against loop_phases.py's.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZE=5 PYTHONPATH=. \\
        python3 benchmarks/profiling/loop_trace.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _overhead import bins  # noqa: E402
from _sxmo import replay_from_env  # noqa: E402
import cupy as cp  # noqa: E402
from streamrank.rank.gpu import frontier_loop as fl  # noqa: E402

fl._LOOP_TRACE = 1  # before the replay's engine compiles the loop

replay = replay_from_env()
eng, dang, size = replay.engine, replay.dangling, replay.size
_, grid = fl._loop_kernel("float64", int(dang == "self-loop"), 2)
nwarps, its_max = grid * 8, 64
sizes_at = 2048 + its_max * nwarps * 4
ticks = cp.zeros(sizes_at + 2 * its_max, dtype=cp.uint64)
fl.LOOP_TICKS = ticks
rows, sm_rows, tail_rows = [], [], []
for b in range(int(os.environ.get("BATCHES", "40"))):
    st = eng.apply(replay.next_batch(size))
    t = ticks.get().astype(np.int64)
    for i in range(min(st.rank.iterations, its_max)):
        s0, end = t[3 + 3 * i], t[4 + 3 * i]
        w = t[2048 + i * nwarps * 4: 2048 + (i + 1) * nwarps * 4].reshape(nwarps, 4)
        n0, n1 = t[sizes_at + 2 * i], t[sizes_at + 2 * i + 1]
        large, small, copies = (w[:, 0] - s0) / 1e3, (w[:, 1] - s0) / 1e3, (w[:, 3] - s0) / 1e3
        units, mark, indeg = (w[:, 2] >> 40) & 0xFFF, (w[:, 2] >> 20) & 0xFFFFF, w[:, 2] & 0xFFFFF
        sm = (w[:, 2] >> 52) & 0xFF  # the warp's multiprocessor
        # the multiprocessors' load: large vertices of the blocks resident on each, and small groups
        blk_all = n1 // grid + (np.arange(grid) < n1 % grid)
        sm_large = np.bincount(sm[::8], weights=blk_all, minlength=256)
        sm_units = np.bincount(sm, weights=units, minlength=256)
        on = np.bincount(sm, minlength=256) > 0
        sm_end = np.zeros(256)
        np.maximum.at(sm_end, sm, copies)
        load = sm_large[sm]
        cut_lo, cut_hi = np.quantile(sm_large[on], [1 / 3, 2 / 3])
        slowest = copies >= np.quantile(copies, 0.99)
        corr = (np.corrcoef(sm_large[on], sm_end[on])[0, 1] if sm_large[on].std() > 0 else np.nan,
                np.corrcoef(sm_units[on], sm_end[on])[0, 1] if sm_units[on].std() > 0 else np.nan)
        sm_rows.append((st.rank.affected[i], np.median(copies[load <= cut_lo]), np.median(copies[load >= cut_hi]),
                        np.median(sm_end[on & (sm_large <= cut_lo)]), np.median(sm_end[on & (sm_large >= cut_hi)]),
                        corr[0], corr[1], load[slowest].mean(), load.mean(), np.mean(units[slowest] >= 1)))
        nxt = t[3 + 3 * (i + 1)]  # the next iteration's start (or the loop's end)
        tail_rows.append((st.rank.affected[i], copies.max(), (end - s0) / 1e3 - copies.max(), (nxt - end) / 1e3,
                          (nxt - s0) / 1e3))
        slow = int(np.argmax(copies))
        blk = slow // 8
        blk_large = n1 // grid + (1 if blk < n1 % grid else 0)  # by_teams: block b takes b, b + grid, ...
        rows.append((st.rank.affected[i], n0, n1, (end - s0) / 1e3, np.median(large), large.max(), np.median(small),
                     small.max(), np.median(copies), copies.max(), large[slow], small[slow], blk_large, units[slow],
                     mark[slow], indeg[slow], np.mean(units == 0), np.mean(units >= 2)))
r = np.asarray(rows, dtype=float)
print("multiprocessors of blocks 0-11:", " ".join(str(int(v)) for v in sm[::8][:12]))
print(f"{dang} SIZE={size}, grid {grid} blocks ({nwarps} warps); medians over the iterations of each bin; times in us "
      "since the iteration's start")
print("bin | n0 n1 | to barrier | large end (median warp / max) | small end (median / max) | copies end (median / max)"
      " | slowest warp: its large end, small end, its block's large vertices, small groups, max mark degree, max in-degree"
      " | warps with 0 / >= 2 small groups")
for lo, hi, m in bins(r[:, 0]):
    q = np.median(r[m], axis=0)
    print(f"{lo}-{hi} (n={m.sum()}) | {q[1]:.0f} {q[2]:.0f} | {q[3]:.1f} | {q[4]:.1f} / {q[5]:.1f} | {q[6]:.1f} / "
          f"{q[7]:.1f} | {q[8]:.1f} / {q[9]:.1f} | {q[10]:.1f}, {q[11]:.1f}, {q[12]:.0f}, {q[13]:.0f}, {q[14]:.0f}, "
          f"{q[15]:.0f} | {q[16]:.2f} / {q[17]:.2f}")
q = np.asarray(sm_rows, dtype=float)
print("by multiprocessor (its load: the large vertices of the blocks resident on it): median warp end on the least / "
      "most loaded third | median of the multiprocessors' last warp end, least / most loaded third | correlation of a "
      "multiprocessor's last warp end with its large vertices, with its small groups | the slowest 1% of warps: mean "
      "load of their multiprocessors against all warps', share with a small group")
for lo, hi, m in bins(q[:, 0]):
    z = np.nanmedian(q[m], axis=0)
    print(f"{lo}-{hi} (n={m.sum()}) | {z[1]:.1f} / {z[2]:.1f} | {z[3]:.1f} / {z[4]:.1f} | {z[5]:.2f}, {z[6]:.2f} | "
          f"{z[7]:.2f} against {z[8]:.2f}, {z[9]:.2f}")
q = np.asarray(tail_rows, dtype=float)
print("after the work (medians over the iterations of each bin, us): the last warp's end | the barrier's tail | the "
      "decision | both (the iteration's fixed part) | the iteration")
for lo, hi, m in bins(q[:, 0]):
    z = np.median(q[m], axis=0)
    print(f"{lo}-{hi} (n={m.sum()}) | {z[1]:.1f} | {z[2]:.1f} | {z[3]:.1f} | {np.median(q[m, 2] + q[m, 3]):.1f} | "
          f"{z[4]:.1f}")
