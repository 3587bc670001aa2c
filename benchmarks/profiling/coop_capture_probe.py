"""Probe: a cooperative launch captured into a CUDA graph with CuPy, replayed with new inputs
from pinned memory; the host cost of a replay."""
import cupy as cp, numpy as np, time
src = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void coop(long long* a, const long long* hdr) {
  cg::grid_group g = cg::this_grid();
  if (g.thread_rank() == 0) a[0] = hdr[0] + 1;
  g.sync();
  if (g.thread_rank() == 1) a[1] = a[0] * 2;
}
extern "C" __global__ void plain(long long* hdr) { if (threadIdx.x == 0) hdr[0] += 10; }
'''
mod = cp.RawModule(code=src, options=("-std=c++17",), enable_cooperative_groups=True)
coop, plain = mod.get_function("coop"), mod.get_function("plain")
a = cp.zeros(2, dtype=cp.int64)
hdr = cp.zeros(8, dtype=cp.int64)
pin = cp.cuda.alloc_pinned_memory(64); hp = np.frombuffer(pin, dtype=np.int64, count=8)
out_pin = cp.cuda.alloc_pinned_memory(16); op = np.frombuffer(out_pin, dtype=np.int64, count=2)
side = cp.cuda.Stream(non_blocking=True)
ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
with side:
    side.begin_capture()
    cp.cuda.runtime.memcpyAsync(hdr.data.ptr, hp.ctypes.data, 64, 1, side.ptr)
    plain((1,), (32,), (hdr,))
    coop((132,), (256,), (a, hdr))
    cp.cuda.runtime.memcpyAsync(op.ctypes.data, a.data.ptr, 16, 2, side.ptr)
    g = side.end_capture()
print("captured", type(g))
null = cp.cuda.Stream.null
for v in (1, 5, 7):
    hp[0] = v
    ev0.record(null)
    g.launch(stream=null)
    ev1.record(null)
    null.synchronize()
    print(v, op.tolist(), "expect", [v + 11, 2 * (v + 11)], "graph ms", cp.cuda.get_elapsed_time(ev0, ev1))
ts = []
for i in range(2000):
    t = time.perf_counter_ns(); g.launch(stream=null); ts.append(time.perf_counter_ns() - t); null.synchronize()
print("graph.launch host us median", np.median(ts) / 1e3)
