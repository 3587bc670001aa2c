"""Host cost of the CuPy calls a small batch makes (median us per call, warm): kernel launches
by argument kind, allocations from the pool, views, events, asynchronous copies, and the launch of
a captured CUDA graph of 1, 2, 4 or 8 kernel nodes into an idle stream (as a batch's graph update
is launched; the fused update's graph has 4 kernel nodes) with the device time from an event
recorded just before the launch to one after the graph.

    PYTHONPATH=. python3 benchmarks/profiling/host_costs.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph  # noqa: E402

src = r'''
extern "C" __global__ void k26(const long long* a0, const long long* a1, const bool* a2, int a3, long long* a4,
  int* a5, unsigned* a6, long long* a7, int a8, int a9, long long* a10, int* a11, int* a12, int* a13, long long a14,
  long long a15, long long* a16, int* a17, int* a18, int* a19, long long a20, long long a21, unsigned char* a22,
  long long a23, long long* a24, long long* a25) {}
extern "C" __global__ void k2(const void* a, const void* b) {}
'''
mod = cp.RawModule(code=src)
k26, k2 = mod.get_function("k26"), mod.get_function("k2")
arrs = [cp.zeros(16, dtype=cp.int64) for _ in range(26)]


def t(label, f, n=2000, idle=False):
    """Median host us of ``f`` over ``n`` calls after a warm-up; ``idle``: the stream is idle before
    each call (as before a batch's first launch), else calls queue behind each other."""
    for _ in range(50):
        f()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(n):
        if idle:
            cp.cuda.Device().synchronize()  # sync: the stream is idle before the timed call
        t0 = time.perf_counter_ns()
        f()
        ts.append(time.perf_counter_ns() - t0)
    cp.cuda.Device().synchronize()
    print(f"  {label:60s} {np.median(ts) / 1e3:7.2f} us")


ints = {3, 8, 9}
longs = {14, 15, 20, 21, 23}
args_arr = tuple(np.int32(1) if i in ints else (np.int64(1) if i in longs else arrs[i]) for i in range(26))
args_ptr = tuple(np.int32(1) if i in ints else (np.int64(1) if i in longs else np.uint64(arrs[i].data.ptr))
                 for i in range(26))
t("launch 26 args (cupy arrays)", lambda: k26((1,), (32,), args_arr))
t("launch 26 args (np.uint64 pointers)", lambda: k26((1,), (32,), args_ptr))
t("build 26 np.uint64(a.data.ptr)", lambda: [np.uint64(a.data.ptr) for a in arrs])
t("launch 2 args (cupy arrays)", lambda: k2((1,), (32,), (arrs[0], arrs[1])))
t("launch 2 args (np.uint64)", lambda: k2((1,), (32,), (np.uint64(1), np.uint64(2))))
t("cp.empty(400, int64)", lambda: cp.empty(400, dtype=cp.int64))
a = cp.zeros(1000, dtype=cp.int64)
t("slice a[10:20]", lambda: a[10:20])
t("cp.ascontiguousarray(a, int64)", lambda: cp.ascontiguousarray(a, dtype=cp.int64))
t("a.data.ptr", lambda: a.data.ptr)
t("cp.cuda.Event()", lambda: cp.cuda.Event())
ev = cp.cuda.Event()
t("event.record()", lambda: ev.record())
ev2 = cp.cuda.Event(disable_timing=True)
t("event(disable_timing).record()", lambda: ev2.record())
t("get_current_stream()", lambda: cp.cuda.get_current_stream())
s = cp.cuda.get_current_stream()
pin = np.frombuffer(cp.cuda.alloc_pinned_memory(4096), dtype=np.uint8)
d = cp.zeros(4096, dtype=cp.uint8)
t("memcpyAsync 64 B H2D (pinned)", lambda: cp.cuda.runtime.memcpyAsync(d.data.ptr, pin.ctypes.data, 64, 1, s.ptr))
dp, hp, sp = d.data.ptr, pin.ctypes.data, s.ptr
t("memcpyAsync 64 B, pointers cached", lambda: cp.cuda.runtime.memcpyAsync(dp, hp, 64, 1, sp))
t("stream.synchronize() (idle)", lambda: s.synchronize())
import struct
vals = list(range(30))
t("struct.pack 30 Q", lambda: struct.pack("<30Q", *vals))
t("np.frombuffer(bytes) + copy into pinned", lambda: pin.__setitem__(slice(0, 240), np.frombuffer(struct.pack("<30Q", *vals), dtype=np.uint8)))
x = np.arange(5, dtype=np.int64)
t("pinned[0:40] = x.view(uint8)", lambda: pin.__setitem__(slice(0, 40), x.view(np.uint8)))
t("pin.ctypes.data", lambda: pin.ctypes.data)
t("event.record() (idle stream)", lambda: ev.record(), n=500, idle=True)
t("launch 2 args (np.uint64, idle stream)", lambda: k2((1,), (32,), (np.uint64(1), np.uint64(2))), n=500, idle=True)
before, after = cp.cuda.Event(), cp.cuda.Event()
for nodes in (1, 2, 4, 8):
    g = empty_graph(nodes)
    t(f"graph.launch(), {nodes} kernel node(s) (idle stream)", lambda: g.launch(), n=500, idle=True)
    dev = []
    for _ in range(200):
        cp.cuda.Device().synchronize()  # sync: an idle stream, as before a batch
        before.record()
        g.launch()
        after.record()
        after.synchronize()  # sync: read the events
        dev.append(cp.cuda.get_elapsed_time(before, after) * 1e3)
    print(f"  {'  device: event before the launch -> event after the graph':60s} {np.median(dev):7.2f} us")
