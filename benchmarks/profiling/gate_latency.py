"""From the host's go to the device's work, with and without a gate in front of it (the graph
update queued behind a gate between batches, measured and not kept; the try is
``docs/results/update_gate_try.diff``). GPU only.

A captured graph of four kernels stands in for the graph update: three empty ones and a last one
that writes a counter into mapped pinned memory, which the host spins on. For each way of starting
it, the host clock from the go to seeing that write (median and p90 of ``N`` rounds, us):

- ``launch``: ``graph.launch()`` on an idle stream (the armed launch without the gate);
- ``record + launch``: a timing event's ``record()`` first (what the one-wait batch does);
- ``gate + events``: the graph queued on a stream of its own behind a one-thread gate kernel that
  polls a flag in mapped pinned memory, with a timing event before and after the graph (as the
  try's ``UpdateGate`` did), queued 200 us before the go; the go writes the flag and spins until
  the gate's acknowledgement (mapped memory) arrives;
- ``gate, no events``: the same without the events.

For the gated rows also the acknowledgement's arrival (the go to its sight), and the cost of
``stream.done`` (``cudaStreamQuery``, which the try's release checked).

    PYTHONPATH=. python3 benchmarks/profiling/gate_latency.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph, host_spin  # noqa: E402

N = int(os.environ.get("N", "300"))
src = r'''
extern "C" __global__ void touch(long long* count, long long* host) {
    if (threadIdx.x == 0) { long long c = ++(*count); *(volatile long long*)host = c; __threadfence_system(); }
}
// the try's update_gate.cu: poll the flag until it holds epoch (released) or -epoch (cancelled) or
// the timeout passed, then acknowledge
extern "C" __global__ void gate(const long long* flag, long long* ack, long long epoch, long long timeout_ns) {
    if (threadIdx.x != 0) return;
    long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long t = t0, v = 0;
    while (t - t0 < timeout_ns) {
        v = *(const volatile long long*)flag;
        if (v == epoch || v == -epoch) break;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    }
    __threadfence_system();
    *(volatile long long*)ack = v == epoch ? epoch : -epoch;
}
'''
mod = cp.RawModule(code=src)
touch, gate_k = mod.get_function("touch"), mod.get_function("gate")


def mapped(n):
    mem = cp.cuda.alloc_pinned_memory(8 * n)
    a = np.frombuffer(mem, dtype=np.int64, count=n)
    a[:] = 0
    return mem, a, np.uint64(cp.cuda.runtime.pointerGetAttributes(int(a.ctypes.data)).devicePointer)


done_mem, done, done_dev = mapped(8)
flag_mem, flag, flag_dev = mapped(8)
ack_mem, ack, ack_dev = mapped(8)
count = cp.zeros(1, dtype=cp.int64)
graph = empty_graph(3, then=lambda: touch((1,), (32,), (count, done_dev)))
stream = cp.cuda.Stream(non_blocking=True)
gstream = cp.cuda.Stream(non_blocking=True)
ev, ev0, ev1 = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
expect = 0
epoch = 0


def wait_done():
    global expect
    expect += 1
    while int(done[0]) != expect:
        pass
    return time.perf_counter_ns()


def open_gate(events: bool):
    """The gate kernel and the graph behind it on the gate's stream (and the timing events)."""
    global epoch
    epoch += 1
    ack[0] = 0
    with gstream:
        gate_k((1,), (32,), (flag_dev, ack_dev, np.int64(epoch), np.int64(50_000_000)))
        if events:
            ev0.record(gstream)
        graph.launch(gstream)
        if events:
            ev1.record(gstream)


def release():
    flag[0] = epoch
    while int(ack[0]) != epoch:
        pass


rows = {}
for name in ("launch", "record + launch", "gate + events", "gate, no events"):
    total, acks = [], []
    for i in range(N + 20):
        stream.synchronize()
        gstream.synchronize()
        if name.startswith("gate"):
            open_gate(name == "gate + events")
        host_spin(200)
        t1 = time.perf_counter_ns()
        if name == "launch":
            graph.launch(stream)
        elif name == "record + launch":
            ev.record(stream)
            graph.launch(stream)
        else:
            release()
            ta = time.perf_counter_ns()
        t2 = wait_done()
        if i >= 20:
            total.append((t2 - t1) / 1e3)
            if name.startswith("gate"):
                acks.append((ta - t1) / 1e3)
    rows[name] = (total, acks)
q = []
for _ in range(N):
    t1 = time.perf_counter_ns()
    stream.done
    q.append((time.perf_counter_ns() - t1) / 1e3)

print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {N} rounds")
print(f"{'start':<18} {'go -> work seen, us (median)':>29} {'p90':>7} {'go -> acknowledged (median)':>28} {'p90':>7}")
for name, (total, ack) in rows.items():
    a = f"{np.median(ack):>28.1f} {np.percentile(ack, 90):>7.1f}" if ack else f"{'-':>28} {'-':>7}"
    print(f"{name:<18} {np.median(total):>29.1f} {np.percentile(total, 90):>7.1f} {a}")
print(f"stream.done (cudaStreamQuery on an idle stream): median {np.median(q):.2f} us, p90 {np.percentile(q, 90):.2f}")
