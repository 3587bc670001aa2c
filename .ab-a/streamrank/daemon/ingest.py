"""The daemon's ingest stage: fetch and decode on worker threads, ahead of the loop.

While the loop applies batch N to the graph and ranks and publishes it, the ingest thread fetches
the records of batch N+1 and decodes them into a bounded queue (at most about ``max_edges`` edges,
so memory stays bounded when the loop falls behind). With ``decode_threads`` > 0 (Kafka sources)
the ingest thread only fetches and a pool of that many threads decodes the fetches, each fetch
a task: the queue holds the tasks in fetch order and the loop takes each one's result in that
order, so items, positions and dead letters keep their order whatever thread decoded them (the
client's consume and pyarrow's readers release the GIL, so fetch and decode overlap). Until an
``auto`` stream's id kind is fixed, fetches are decoded one at a time on the ingest thread, in
order (the first accepted record fixes the kind).

The source client is used under one lock, so the loop's calls (commit, lag) never run
concurrently with a fetch. When shutdown is requested the ingest thread stops fetching; items
still queued are simply not applied (their positions never reach a checkpoint, so the next run
reads them again).

``threaded=False`` polls on the caller's thread (directory mode, where "the input is exhausted"
must be decided between polls).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import SourceError

log = logging.getLogger("streamrank.daemon")

#: A poll returns after this long even when it got fewer records than it may take (latency bound:
#: librdkafka's batch consume waits the whole timeout unless the poll fills up, and the oldest
#: record of a poll waited all of it; at 50 k single-edge messages/s on the 2-core host the oldest
#: record was 105 ms old (median) when a poll returned with 20 ms, 40 ms with 5 ms, one run each;
#: at 100 k/s four alternated pairs of runs did not tell the two apart on that shared host).
POLL_TIMEOUT_S = 0.005


class Ingest:
    """Fetches from ``source`` and decodes into a queue.

    Parameters
    ----------
    source
        ``poll(timeout_s) -> list`` of source items; a Kafka source also ``fetch(timeout_s,
        max_records=) -> FetchedRecords``, ``decode(records) -> list`` and ``id_lock``.
    shutdown : ShutdownFlag
    metrics : DaemonMetrics
    threaded : bool
    max_edges : int
        The ingest thread stops fetching while about this many edges wait; a fetch asks for about
        this many edges' worth of records (from the edges per message seen so far), so that a
        fetch of many-edge messages cannot hold much more.
    decode_threads : int
        Threads that decode fetches (0: the ingest thread decodes each fetch itself).
    """

    def __init__(self, source, *, shutdown, metrics, threaded: bool = True, max_edges: int = 100_000,
                 decode_threads: int = 0):
        self.source = source
        self.shutdown = shutdown
        self.metrics = metrics
        self.threaded = threaded
        self.max_edges = max(1, int(max_edges))
        self.decode_threads = max(0, int(decode_threads))
        self.lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._queued = 0.0             # edges (estimated until decoded) waiting in the queue
        self._per_message = 1.0        # edges per message in the last decoded fetch
        self._room = threading.Condition()
        self._stop = threading.Event()
        self._thread = None
        self._pool = None
        #: ``time.monotonic()`` when the items of the last non-empty :meth:`get` were polled.
        self.polled_at = 0.0

    def start(self) -> None:
        if self.threaded and self._thread is None:
            if self.decode_threads:
                self._pool = ThreadPoolExecutor(self.decode_threads, thread_name_prefix="streamrank-decode")
            self._thread = threading.Thread(target=self._run, name="streamrank-ingest", daemon=True)
            self._thread.start()

    def _timed_poll(self, call):
        """``call()`` under the source lock, timed as the ``poll`` stage; ``None`` when the source failed."""
        t0 = time.perf_counter()
        try:
            with self.lock:
                out = call()
        except SourceError as exc:
            self.metrics.source_errors.labels(where="poll").inc()
            log.warning("source poll failed: %s", exc)
            self.shutdown.wait(1.0)
            return None
        self.metrics.stage_seconds.labels(stage="poll").observe(time.perf_counter() - t0)
        return out

    def _decode(self, records) -> list:
        """Decode one fetch (any thread), timed as the ``decode`` stage."""
        t0 = time.perf_counter()
        items = self.source.decode(records)
        self.metrics.stage_seconds.labels(stage="decode").observe(time.perf_counter() - t0)
        if items:
            self._per_message = max(1.0, _edges(items) / len(records))
        return items

    def _run(self) -> None:
        cap = getattr(self.source, "max_poll_records", 5000)
        lock = getattr(self.source, "id_lock", None)
        while not self._stop.is_set() and not self.shutdown.requested:
            with self._room:
                while self._queued >= self.max_edges and not self._stop.is_set() and not self.shutdown.requested:
                    self._room.wait(0.1)
            want = int(max(1, min(cap, self.max_edges / self._per_message)))  # records per fetch sized to max_edges
            records = self._timed_poll(lambda: self.source.fetch(POLL_TIMEOUT_S, max_records=want))
            if not records:
                continue
            polled_at = time.monotonic()
            estimate = len(records) * self._per_message
            if self._pool is None or lock is None or lock.kind is None:  # an undetected id kind: in order, here
                task = Future()
                try:
                    task.set_result(self._decode(records))
                except Exception as exc:  # handed to the loop, which stops on it as on a pool task's error
                    task.set_exception(exc)
            else:
                task = self._pool.submit(self._decode, records)
            with self._room:
                self._queued += estimate
            self._queue.put((polled_at, estimate, task))

    def get(self, timeout_s: float) -> list:
        """The next polled items (an empty list when none arrived within ``timeout_s``); see
        :attr:`polled_at`."""
        if not self.threaded:
            items = self._timed_poll(lambda: self.source.poll(timeout_s)) or []
            if items:
                self.polled_at = time.monotonic()
            return items
        try:
            self.polled_at, estimate, task = self._queue.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return []
        items = task.result()  # in fetch order, whichever thread decoded it
        with self._room:
            self._queued -= estimate
            self._room.notify()
        return items

    def call(self, fn):
        """Run ``fn()`` with the source to itself (no fetch in flight)."""
        with self.lock:
            return fn()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _edges(items: list) -> int:
    return sum(len(i) for i in items if hasattr(i, "insert"))
