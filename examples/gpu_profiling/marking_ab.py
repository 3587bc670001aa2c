"""The frontier loop with its phase-P marking per flagged vertex (the old way) and balanced over
out-edges (``mark_out_packed``), on the same batches from the same state: device time of the loop
(events) per variant, and a check that both give the same ranks and iterations (docs/GPU.md,
"Where a batch's time goes"). GPU only.

    SXMO=path/sx-mathoverflow.txt.gz PYTHONPATH=. python3 examples/gpu_profiling/marking_ab.py
"""
import os, sys, collections
import numpy as np
sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _sxmo import SxmoReplay  # noqa: E402
from streamrank.config import RankConfig
from streamrank import pagerank_gpu
from streamrank.rank_gpu import frontier_loop as fl
from streamrank.kernels.loader import get_kernel, resident_blocks
from streamrank.gpu_launch import sm_count
import cupy as cp
VARIANTS = [(64, 0), (64, 1)]  # (block source, packed marking)
for dang, sizes in (("self-loop", (5, 50, 500)), ("uniform", (5, 50, 500))):
    cfg = RankConfig(dangling=dang)
    sl = 1 if dang == "self-loop" else 0
    kern = {}
    for bs, un in VARIANTS:
        k = get_kernel(fl._LOOP_CU, f"frontier_loop<int, double, {sl}, 2>", fl._loop_names("double"),
                       ("-DSR_GROUP=8", f"-DSR_BLOCK_SOURCE={bs}", f"-DSR_MARK_PACKED={un}"), cooperative=True)
        kern[(bs, un)] = (k, min(resident_blocks(k, 256), 2 * sm_count()))
    replay = SxmoReplay(dang)
    eng = replay.engine
    for size in sizes:
        dev = collections.defaultdict(list); its = []
        for b in range(35):
            ch = eng.graph.apply(replay.next_batch(size))
            order = VARIANTS if b % 2 == 0 else VARIANTS[::-1]
            res_by = {}
            for v in order:
                k, g = kern[v]
                evs = []
                def call(*a, k=k, evs=evs):
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event(); e0.record(); k(*a); e1.record(); evs.append((e0, e1))
                fl._loop_kernel = lambda *a, call=call, g=g: (call, g)
                r = pagerank_gpu.update_pagerank("dfp", eng.graph, ch, eng.x, config=cfg)
                res_by[v] = r
                if fl.loop_unavailable:
                    sys.exit(f"loop unavailable: {fl.loop_unavailable}")
                if b >= 3 and evs:
                    dev[v].append(cp.cuda.get_elapsed_time(*evs[0]) * 1e3)
            r0, r1 = res_by[VARIANTS[0]], res_by[VARIANTS[1]]
            if r0.iterations != r1.iterations or float(cp.abs(r0.x - r1.x).max()) > 1e-9 * float(r0.x.max()):
                print("MISMATCH", b, r0.iterations, r1.iterations, float(cp.abs(r0.x - r1.x).max()))
            its.append(r.iterations); eng.x = r.x
        print(f"{dang[:4]}{size} ({np.median(its):.0f} it): " + ", ".join(
            f"packed={un}: {np.median(t):.0f} us" for (bs, un), t in dev.items()), flush=True)
