"""Drift guard: compare the engine's ranks with a static recompute, off the hot path.

Every ``every`` batches the loop hands a snapshot (edge list, vertex count, ranks) to a worker
thread, which computes the oracle (:func:`streamrank.oracle.static.scipy_pagerank`, float64) and the L1
distance. The loop picks the result up at a later batch boundary, logs and exports it, and when
it exceeds ``bound`` replaces the engine's ranks with a static recompute of the *current* graph
(:meth:`Engine.recompute`), so that no batch applied in the meantime is lost.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class DriftResult:
    """One finished check: ``l1`` at batch ``seq`` over ``num_vertices`` vertices."""

    seq: int
    l1: float
    num_vertices: int
    seconds: float


class DriftGuard:
    """Runs drift checks on a worker thread, one at a time.

    Parameters
    ----------
    every : int
        Check after every ``every``-th batch (0: never).
    bound : float
        L1 error above which the ranks are replaced.
    alpha : float
    dangling : str
    """

    def __init__(self, *, every: int, bound: float, alpha: float = 0.85, dangling: str = "uniform"):
        self.every = int(every)
        self.bound = float(bound)
        self.alpha = float(alpha)
        self.dangling = dangling
        self._results: queue.Queue = queue.Queue()
        self._busy = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self, seq: int) -> bool:
        return self.every > 0 and seq > 0 and seq % self.every == 0 and not self._busy.is_set()

    def submit(self, seq: int, engine) -> bool:
        """Snapshot ``engine`` (host copies) and start a check. False when one is running."""
        if self._busy.is_set():
            return False
        be = engine.backend
        s, d = engine.graph.edges()
        src = np.array(be.to_host(s), dtype=np.int64, copy=True)
        dst = np.array(be.to_host(d), dtype=np.int64, copy=True)
        weight = engine.graph.edge_weights() if getattr(engine.graph, "weighted", False) else None  # a fresh array
        _, p = engine.ranks()
        n = engine.graph.num_vertices
        self._busy.set()
        self._thread = threading.Thread(target=self._work, args=(seq, src, dst, n, p, weight), name="drift-guard",
                                        daemon=True)
        self._thread.start()
        return True

    def _work(self, seq, src, dst, n, p, weight=None):
        import time

        from ..oracle.static import scipy_pagerank

        t0 = time.perf_counter()
        try:
            ref = scipy_pagerank(src, dst, n, weight=weight, alpha=self.alpha, dangling=self.dangling, tol=1e-13)
            l1 = float(np.abs(ref - p).sum()) if n else 0.0
            self._results.put(DriftResult(seq, l1, n, time.perf_counter() - t0))
        except Exception as exc:  # a failed check must not take the daemon down
            log.error("drift check at seq=%d failed: %s", seq, exc)
        finally:
            self._busy.clear()

    def results(self) -> list:
        """Finished checks since the last call."""
        out = []
        while True:
            try:
                out.append(self._results.get_nowait())
            except queue.Empty:
                return out

    def join(self, timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
