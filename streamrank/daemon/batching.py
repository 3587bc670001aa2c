"""The daemon's batch window: decoded items from the ingest stage -> one batch.

A batch closes when it holds ``batch_size`` edges, or ``batch_wait_ms`` after its first record
was *polled* (not after the loop took it: records that waited in the queue behind a long batch
do not wait a further window), or at shutdown. Once the window is over, records already polled
still join the batch (up to ``batch_size``, without waiting for more): when the loop is behind, a
batch takes the backlog at hand instead of one fetch at a time, so per-batch costs (publishing
every moved vertex, the rank update) are shared by more edges. A message is never split: a message that would
overflow the batch opens the next one (a single message bigger than the batch forms a batch of
its own); consecutive messages of an :class:`~connectors.fetch.EdgeRun` may go to two batches.
"""

from __future__ import annotations

import time

import numpy as np
from dataclasses import dataclass, field

from connectors.fetch import EdgeRun
from connectors.records import EdgeChunk


@dataclass
class Window:
    """One batch window: accepted ``chunks``, rejected records (``bad``), the source ``positions``
    after them, and the wall-clock times (seconds) when its first record was polled and when it closed."""

    chunks: list = field(default_factory=list)
    bad: list = field(default_factory=list)
    positions: dict = field(default_factory=dict)
    polled_at: float | None = None
    closed_at: float | None = None


class BatchWindow:
    """Forms batch windows from ``ingest.get`` (see :class:`~streamrank.daemon.ingest.Ingest`).

    Parameters
    ----------
    ingest : Ingest
    batch_size : int
        Edges per batch at most (unless one message holds more).
    batch_wait_ms : float
        Longest a batch waits for more records after its first one was polled.
    stop : callable
        Returns True once shutdown is requested (the window in hand closes at once).
    """

    def __init__(self, ingest, *, batch_size: int, batch_wait_ms: float, stop):
        self.ingest = ingest
        self.batch_size = int(batch_size)
        self.wait_s = float(batch_wait_ms) / 1000.0
        self.stop = stop
        self.held: list = []          # polled items not yet in a batch, in order
        self._held_at = 0.0           # when they were polled (monotonic)

    def collect(self) -> Window:
        """Gather one batch window (its lists may be empty when nothing arrived)."""
        w = Window()
        n = 0
        opened = None
        idle_until = time.monotonic() + max(0.5, self.wait_s)
        while True:
            if not self.held:
                now = time.monotonic()
                if opened is None:
                    if self.stop() or now >= idle_until:
                        break
                    timeout = min(0.2, max(0.0, idle_until - now))
                else:
                    if self.stop():
                        break
                    remaining = opened + self.wait_s - now
                    if remaining <= 0:  # the window is over: what is polled already still joins, without a wait
                        self.held = self.ingest.get(0.0)
                        self._held_at = self.ingest.polled_at
                        if not self.held:
                            break
                        continue
                    timeout = min(0.2, remaining)
                self.held = self.ingest.get(timeout)
                self._held_at = self.ingest.polled_at
                continue
            item = self.held[0]
            is_edges = isinstance(item, EdgeChunk)
            size = len(item) if is_edges else 0
            if n + size > self.batch_size and isinstance(item, EdgeRun) and item.num_messages > 1:
                head, tail = item.split(self.batch_size - n)  # between messages, never inside one
                if head is None and not n:
                    head, tail = item.split(int(item.ends[0]))  # one message bigger than a batch
                if head is not None:
                    self.held[0:1] = [head, tail]
                    item, size = head, len(head)
            if n and n + size > self.batch_size:
                break
            self.held.pop(0)
            if opened is None:  # the window runs from when the record was polled, not from now
                opened = min(time.monotonic(), self._held_at)
                w.polled_at = time.time() - (time.monotonic() - opened)
            if not is_edges:
                w.bad.append(item)
            elif size:
                w.chunks.append(item)
                n += size
            w.positions[item.pos_key] = item.pos_value
            if n >= self.batch_size:
                break
        w.closed_at = time.time()
        return w


def batch_weights(chunks: list, insert: np.ndarray) -> np.ndarray:
    """The weights of a weighted stream's batch: each chunk's own, or (a chunk without weights, e.g.
    an empty file's) 1 per insert and NaN (no weight) per delete."""
    if len(chunks) == 1 and chunks[0].weight is not None:
        return chunks[0].weight
    parts, at = [], 0
    for c in chunks:
        n = len(c)
        parts.append(c.weight if c.weight is not None else np.where(insert[at:at + n], 1.0, np.nan))
        at += n
    return np.concatenate(parts) if parts else np.zeros(0)
