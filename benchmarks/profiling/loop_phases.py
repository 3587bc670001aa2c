"""The frontier loop's device time per phase (phase I, M, then R (the updates, up to the grid
barrier) and the decision of each iteration; ``frontier_loop.LOOP_TICKS``) against the frontier's
size (docs/architecture.md), and the fixed cost of an iteration: the
least-squares line of R + decision against the frontier over the iterations under 10,000 vertices
(``_overhead.fit_fixed_cost``). ``CSV=path`` also writes each iteration's frontier, R and
decision (us), which ``fixed_cost_plot.py`` plots. GPU only.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZE=5 PYTHONPATH=. \
        python3 benchmarks/profiling/loop_phases.py
"""
import os, sys
import numpy as np
sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _overhead import FIT_BELOW, bins, fit_fixed_cost  # noqa: E402
from _sxmo import replay_from_env  # noqa: E402
from streamrank.rank.gpu import frontier_loop as fl
import cupy as cp

replay = replay_from_env()
eng, dang, size = replay.engine, replay.dangling, replay.size
def nxt():
    return replay.next_batch(size)
ticks = cp.zeros(3 * 600 + 4, dtype=cp.uint64); fl.LOOP_TICKS = ticks
R, D, I, M, F, T = [], [], [], [], [], []
for b in range(int(os.environ.get("BATCHES", "40"))):
    st = eng.apply(nxt())
    it = st.rank.iterations
    t = ticks[: 3 * it + 4].get().astype(np.int64) / 1e3
    I.append(t[1] - t[0]); M.append(t[2] - t[1]); T.append(t[3 + 3 * it] - t[0])
    for i in range(it):
        s0, r1, nx = t[3 + 3 * i], t[4 + 3 * i], t[6 + 3 * i]  # (slot 5 + 3i: unused)
        R.append(r1 - s0); D.append(nx - r1); F.append(st.rank.affected[i])
    if b < 2 and not os.environ.get("QUIET"):
        print(f"batch {b}: I {I[-1]:.1f} us, M {M[-1]:.1f} us; per iteration (frontier: R/decide us):")
        print("   ", [(int(st.rank.affected[i]), round(t[4+3*i]-t[3+3*i],1), round(t[6+3*i]-t[4+3*i],1)) for i in range(it)])
F = np.array(F); R, D = map(np.array, (R, D))
try:
    k, grid = fl._loop_kernel("float64", int(dang == "self-loop"), 2)
    print(f"loop grid (dfp): {grid} blocks of 256, {k.num_regs} registers per thread")
except Exception as exc:  # noqa: BLE001 (profiling output only)
    print(f"loop grid: {exc}")
print(f"== {dang} SIZE={size}: phase I {np.median(I):.1f} us, phase M {np.median(M):.1f} us; "
      f"the loop per batch {np.median(T):.1f} us (median; {np.mean(T):.1f} mean), {len(R) / len(T):.1f} iterations")
for lo, hi, m in bins(F):
    print(f"  frontier {lo}-{hi}: n={m.sum()}, R {np.median(R[m]):.1f} / decide {np.median(D[m]):.1f} us"
          f" = {np.median(R[m] + D[m]):.1f} per iteration")
fit = fit_fixed_cost(F, R + D)
print(f"  fixed cost per iteration (R + decide = a + b * frontier, {fit.iterations} iterations under {FIT_BELOW:,}): "
      f"a = {fit.intercept_us:.1f} us (95% {fit.low_us:.1f}-{fit.high_us:.1f}), b = {fit.slope_us_per_1000:.2f} us "
      f"per 1,000 vertices; decide {np.median(D[F < FIT_BELOW]):.1f} us")
if os.environ.get("CSV"):
    np.savetxt(os.environ["CSV"], np.column_stack([F, R, D]), fmt=["%d", "%.3f", "%.3f"], delimiter=",",
               header="frontier,R_us,decide_us", comments="")
