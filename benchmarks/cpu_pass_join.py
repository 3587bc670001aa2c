"""The Gauss-Seidel dense pass of two blocks with and without the join after it, timed alone.

Replays a file (90 % base graph, then ``--batches`` batches of ``--batch-fraction`` of the edges)
with DF-P, marks every vertex with in-edges, gathers the state into position order
(:func:`streamrank.kernels.cpu.frontier_order.enter`) and times, from that same state each run,
:func:`~streamrank.kernels.cpu.frontier_order.dense_order` (each block updates one array of the
pair in place, then both are joined by a serial copy) against
:func:`~streamrank.kernels.cpu.frontier_order.dense_pass` (two blocks: each block also writes its
values into a spare pair, no join), alternately, ``--rounds`` times ``--repeat`` runs on
``--threads`` threads; prints best and median per round and checks that both leave the same bits::

    python benchmarks/cpu_pass_join.py /path/to/sx-mathoverflow.txt.gz
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit

from bench_cpu_passes import joined_pass as _joined  # dense_order with the loop's arguments
from bench_cpu_passes import replayed
from streamrank.kernels.cpu.frontier_order import dense_pass, enter
from streamrank.replay.run import BUNDLED_GRAPH


@njit
def _spare(n, g, mv, cp, cprevp, cpn, cprevpn, xp, keepp, parts, part_count):
    return dense_pass(n, True, g, mv, cp, cprevp, cpn, cprevpn, xp, keepp, False, 0.85, False, 1e-6, 1e-6,
                      True, True, parts, part_count)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(BUNDLED_GRAPH))
    p.add_argument("--batches", type=int, default=200, help="batches replayed before the timings")
    p.add_argument("--batch-fraction", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    if args.batches < 0 or args.repeat < 1 or args.rounds < 1 or args.threads < 1:
        p.error("--batches must be >= 0, --threads, --repeat and --rounds >= 1")
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    _, _, _, graph, _, ws = replayed(args.path, args.batches, args.batch_fraction)
    g = graph.kernel_arrays()
    n = graph.num_vertices
    parts = (ws.parts_f[0], ws.parts_f[1], ws.parts_i[0], ws.parts_i[1], ws.parts_i[2], ws.parts_i[3])
    count = ws.parts_i[5]
    flags = ws.flags.copy()
    flags[:n] = graph.in_degree > 0
    mv = ws.mirror()
    enter(n, g, ws.inv, ws.loops, mv, ws.x.copy(), ws.c.copy(), flags, ws.xnew, ws.cnew, ws.keep2)
    cp0, xp0, kp0 = ws.cnew.copy(), ws.xnew.copy(), ws.keep2.copy()

    def reset():
        ws.cnew[:] = cp0
        mv[6][:] = cp0
        ws.xnew[:] = xp0
        ws.keep2[:] = kp0

    def run(name):
        reset()
        if name == "join":
            _joined(n, g, mv, ws.cnew, ws.xnew, ws.keep2, parts, count)
            return ws.cnew
        return ws.cpn if _spare(n, g, mv, ws.cnew, mv[6], ws.cpn, ws.cprevpn, ws.xnew, ws.keep2, parts, count) else ws.cnew

    same = np.array_equal(run("join")[:n].copy().view(np.int64), run("spare")[:n].view(np.int64))
    print(f"{n} vertices, {graph.num_edges} edges, {numba.get_num_threads()} threads; the same bits: {same}")
    for r in range(args.rounds):
        for name in ("join", "spare"):
            ts = []
            for _ in range(args.repeat):
                reset()
                t = time.perf_counter_ns()
                if name == "join":
                    _joined(n, g, mv, ws.cnew, ws.xnew, ws.keep2, parts, count)
                else:
                    _spare(n, g, mv, ws.cnew, mv[6], ws.cpn, ws.cprevpn, ws.xnew, ws.keep2, parts, count)
                ts.append(time.perf_counter_ns() - t)
            print(f"round {r + 1} {name:5s}: best {min(ts) / 1e3:.1f} us, median {np.median(ts) / 1e3:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
