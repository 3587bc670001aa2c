"""Personalized PageRank queries of the HTTP API, on a bounded worker pool.

A query runs on one worker thread (so at most one core is taken from the loop by PPR at a time,
whatever the number of clients); at most ``limit`` queries are admitted (running plus waiting), a
query past that is refused at once (:class:`QueueFull`, HTTP 429). A query reads a
:class:`~streamrank.daemon.live.FrozenGraph` (the loop waits for at most the copy of the graph,
made when a batch changed it since the last query).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import InvalidArgumentError, StreamrankError
from .live import LiveState

#: Options of ``GET /ppr`` passed to :func:`streamrank.ppr.personalized_pagerank` (name -> type).
PPR_OPTIONS = {"method": str, "alpha": float, "dangling": str, "tol": float, "max_iter": int, "eps": float,
               "walks": int, "dtype": str, "rng_seed": int}


class QueueFull(StreamrankError):
    """Too many personalized PageRank queries admitted at once."""


class UnknownSeed(InvalidArgumentError):
    """A seed that is not a vertex of the graph."""


class PprPool:
    """The worker pool of PPR queries.

    Parameters
    ----------
    live : LiveState
    limit : int
        Most queries admitted at once (running and waiting), >= 1.
    workers : int
        Worker threads (default 1).
    """

    def __init__(self, live: LiveState, *, limit: int, workers: int = 1):
        if int(limit) < 1 or int(workers) < 1:
            raise InvalidArgumentError(f"limit and workers must be >= 1, got {limit}, {workers}")
        self.live = live
        self.limit = int(limit)
        self.workers = int(workers)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="streamrank-ppr")
        self._admitted = 0
        self._lock = threading.Lock()

    @property
    def admitted(self) -> int:
        return self._admitted

    def submit(self, seeds: list, *, k: int, options: dict) -> Future:
        """Queue one query; its future's result is the answer's dict.

        Raises
        ------
        QueueFull
            When ``limit`` queries are admitted already.
        """
        with self._lock:
            if self._admitted >= self.limit:
                raise QueueFull(f"too many personalized PageRank queries: {self._admitted} running or waiting "
                                f"(limit {self.limit}, --http-ppr-queue); retry later")
            self._admitted += 1
        try:
            fut = self._pool.submit(self._run, seeds, k, options)
        except RuntimeError as exc:  # the pool is shut down
            self._release(None)
            raise StreamrankError(f"the PPR pool is closed: {exc}") from exc
        fut.add_done_callback(self._release)
        return fut

    def _release(self, _fut) -> None:
        with self._lock:
            self._admitted -= 1

    def _run(self, seeds: list, k: int, options: dict) -> dict:
        from ..ppr import personalized_pagerank

        view, graph = self.live.frozen_graph()
        internal = self.live.index.lookup(view, seeds)
        if (internal < 0).any():
            bad = [s for s, i in zip(seeds, internal.tolist()) if i < 0][:5]
            raise UnknownSeed(f"seed vertex id(s) not in the graph at batch {view.seq}: {bad}")
        res = personalized_pagerank(graph, internal.tolist() if len(seeds) > 1 else int(internal[0]), k=k,
                                    **options)
        top = [{"vertex": _json_id(view.ids[v]), "score": s} for v, s in res.top_k if s > 0]
        out = {"seq": view.seq, "seeds": [_json_id(s) for s in seeds], "method": res.method, "device": res.device,
               "elapsed_ms": res.elapsed_ms, "iterations": res.iterations, "converged": res.converged,
               "error_bound": res.error_bound, "top": top}
        if "l1_bound" in res.extra:
            out["l1_bound"] = res.extra["l1_bound"]
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _json_id(v):
    return v if isinstance(v, str) else int(v)
