"""The daemon's ingest stage: poll and decode on a worker thread, ahead of the loop.

While the loop applies batch N to the graph and ranks and publishes it, the worker polls and
decodes the records of batch N+1 into a bounded queue (at most ``max_edges`` decoded edges, so
memory stays bounded when the loop falls behind). The source client is used under one lock, so the loop's
calls (commit, lag) never run concurrently with a poll. When shutdown is requested the worker
stops polling; decoded items still queued are simply not applied (their positions never reach a
checkpoint, so the next run reads them again).

``threaded=False`` polls on the caller's thread (directory mode, where "the input is exhausted"
must be decided between polls).
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from ..errors import SourceError

log = logging.getLogger("streamrank.daemon")

#: A poll returns after this long even when it got fewer records than it may take (latency bound:
#: librdkafka's batch consume waits the whole timeout unless the poll fills up, and the oldest
#: record of a poll waited all of it; at 50 k single-edge messages/s on the 2-core host the oldest
#: record was 105 ms old (median) when a poll returned with 20 ms, 40 ms with 5 ms, one run each;
#: at 100 k/s four alternated pairs of runs did not tell the two apart on that shared host).
POLL_TIMEOUT_S = 0.005


class Ingest:
    """Polls ``source`` into a queue.

    Parameters
    ----------
    source
        ``poll(timeout_s) -> list`` of source items.
    shutdown : ShutdownFlag
    metrics : DaemonMetrics
    threaded : bool
    max_edges : int
        The worker stops polling while this many decoded edges wait; a poll asks for about this
        many edges' worth of records (from the edges per message seen so far), so that a poll of
        many-edge messages cannot hold much more.
    """

    def __init__(self, source, *, shutdown, metrics, threaded: bool = True, max_edges: int = 100_000):
        self.source = source
        self.shutdown = shutdown
        self.metrics = metrics
        self.threaded = threaded
        self.max_edges = max(1, int(max_edges))
        self.lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._queued = 0               # decoded edges waiting in the queue
        self._per_message = 1.0        # edges per message in the last poll
        self._room = threading.Condition()
        self._stop = threading.Event()
        self._thread = None
        #: ``time.monotonic()`` when the items of the last non-empty :meth:`get` were polled.
        self.polled_at = 0.0

    def start(self) -> None:
        if self.threaded and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="streamrank-ingest", daemon=True)
            self._thread.start()

    def _poll_once(self, timeout_s: float) -> list:
        t0 = time.perf_counter()
        d0 = getattr(self.source, "decode_seconds", None)
        try:
            with self.lock:
                if self.threaded:  # Kafka: records per poll sized to max_edges
                    cap = getattr(self.source, "max_poll_records", 5000)
                    items = self.source.poll(timeout_s, max_records=int(max(1, min(cap, self.max_edges
                                                                                      / self._per_message))))
                else:
                    items = self.source.poll(timeout_s)
        except SourceError as exc:
            self.metrics.source_errors.labels(where="poll").inc()
            log.warning("source poll failed: %s", exc)
            self.shutdown.wait(1.0)
            return []
        self.metrics.stage_seconds.labels(stage="poll").observe(time.perf_counter() - t0)
        if items:
            if d0 is not None:  # the decode part of that poll (Kafka sources time it)
                self.metrics.stage_seconds.labels(stage="decode").observe(self.source.decode_seconds - d0)
            messages = sum(getattr(i, "num_messages", 1) for i in items)
            self._per_message = max(1.0, _edges(items) / messages)
        return items

    def _run(self) -> None:
        while not self._stop.is_set() and not self.shutdown.requested:
            with self._room:
                while self._queued >= self.max_edges and not self._stop.is_set() and not self.shutdown.requested:
                    self._room.wait(0.1)
            items = self._poll_once(POLL_TIMEOUT_S)
            if items:
                with self._room:
                    self._queued += _edges(items)
                self._queue.put((time.monotonic(), items))

    def get(self, timeout_s: float) -> list:
        """The next polled items (an empty list when none arrived within ``timeout_s``); see
        :attr:`polled_at`."""
        if not self.threaded:
            items = self._poll_once(timeout_s)
            if items:
                self.polled_at = time.monotonic()
            return items
        try:
            self.polled_at, items = self._queue.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return []
        with self._room:
            self._queued -= _edges(items)
            self._room.notify()
        return items

    def call(self, fn):
        """Run ``fn()`` with the source to itself (no poll in flight)."""
        with self.lock:
            return fn()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None


def _edges(items: list) -> int:
    return sum(len(i) for i in items if hasattr(i, "insert"))
