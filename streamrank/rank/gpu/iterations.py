"""The launch sequence of a rank computation: one iteration = a few kernel launches queued
without waiting; the host reads the device's status once per chunk of iterations, one chunk late
(:class:`_Iterations`).

Private to :mod:`streamrank.rank.gpu.pagerank`.
"""

from __future__ import annotations

import numpy as np

from ...config import RankConfig
from ...kernels.cuda.launch import launch
from ...store.gpu import GpuGraph
from .state import _BLOCK_THREADS, _CTYPE, _THREADS, _Workspace, _kernel, is_weighted


class _Iterations:
    """Launch sequences of one rank computation (MODE 0: DT/ND; 1: DF; 2: DF-P; 3: Static).

    An iteration is ``rank_small`` + ``rank_large`` (+ ``post_small`` for MODE 0-2, +
    ``mark_large`` for DF/DF-P), each launch taking two scalar arguments. ``seq`` replaces that
    sequence with other ``(kernel, grid, block)`` launches of the same two arguments (the
    standard-form sweeps of :mod:`streamrank.rank.gpu.sweeps`).
    """

    def __init__(self, graph: GpuGraph, ws: _Workspace, config: RankConfig, mode: int, args, seq=None):
        self.g, self.ws, self.cfg, self.mode, self.args = graph, ws, config, mode, args
        self_loop = 1 if config.dangling == "self-loop" else 0
        ct = _CTYPE[config.dtype]
        weighted = is_weighted(graph)
        k = lambda name: _kernel(config.dtype, name, weighted)  # noqa: E731
        self.seq = [(k(f"rank_small<int, {ct}, {self_loop}, {mode}>"), ws.gt, _THREADS),
                    (k(f"rank_large<int, {ct}, {self_loop}, {mode}>"), ws.gb, _BLOCK_THREADS)]
        if mode != 3:
            self.seq.append((k(f"post_small<int, {ct}, {mode}>"), ws.gt, _THREADS))
        if mode in (1, 2):
            self.seq.append((k(f"mark_large<int, {ct}, {mode}>"), ws.gb, _BLOCK_THREADS))
        if seq is not None:
            self.seq = list(seq)

    def launch(self, it: int) -> None:
        """Queue iteration ``it`` (asynchronous; a no-op on the device once converged)."""
        parity = np.int32(it % 2)
        for fn, grid, block in self.seq:
            launch(fn, grid, block, (self.args, parity))

    def run(self, start: int = 0):
        """Iterate until the device reports convergence or ``max_iter``, from iteration ``start``
        (the device's status already counts that many).

        Returns ``(iterations, converged, affected_per_iteration, total, base)``.
        """
        cp = self.g.xp
        ws = self.ws
        stream = cp.cuda.get_current_stream()
        it, chunk_no = int(start), 0
        prev = None
        while True:
            size = 2 if chunk_no < 2 else (4 if chunk_no < 4 else 8)
            for _ in range(size):
                self.launch(it)
                it += 1
            buf = ws.host_status[chunk_no % 2]
            # Asynchronous 16-byte copy of the status into pinned memory, then an event.
            cp.cuda.runtime.memcpyAsync(buf.ctypes.data, ws.status.data.ptr, 16, 2, stream.ptr)
            event = cp.cuda.Event(disable_timing=True)
            event.record(stream)
            if prev is not None:
                # Sync: wait for the previous chunk's status while this chunk runs on the device.
                prev[0].synchronize()
                if prev[1][0]:
                    break
            if it > self.cfg.max_iter + 16:  # the device stops at max_iter; never loop forever
                break
            prev = (event, buf)
            chunk_no += 1
        event.synchronize()  # sync: the last status copy (issued after every launch) has landed
        iterations, converged = int(buf[1]), bool(buf[2])
        affected = ws.hist[:iterations].get().tolist()  # sync: small copy
        total, base = (float(v) for v in ws.scalars.get())  # sync: two scalars
        return iterations, converged, affected, total, base

