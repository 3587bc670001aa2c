"""A polled fetch of Kafka records -> the source items the daemon's loop batches.

Both Kafka clients hand their records here as plain columns; :func:`fetch_items` decodes all
values at once (:func:`connectors.batch_decode.decode_values`) and returns, per partition in
record order, :class:`EdgeRun` items (consecutive accepted messages, their edges concatenated)
separated by :class:`~connectors.records.BadRecord` items (rejected messages, for the dead
letters). An :class:`EdgeRun` remembers where each message ends, so the loop can close a batch
between two messages of a run without ever splitting a message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamrank.vertex_ids import DEFAULT_MAX_ID_BYTES, IdTypeLock

from .batch_decode import decode_values
from .records import DEFAULT_MAX_MESSAGE_BYTES, BadRecord, EdgeChunk


@dataclass
class EdgeRun(EdgeChunk):
    """Edges of consecutive accepted messages of one partition.

    Attributes
    ----------
    ends : ndarray of int64
        Cumulative edge count after each message (``ends[-1] == len(self)``).
    positions : ndarray of int64
        Source position once each message is applied (Kafka: its offset + 1).
    timestamps_ms : ndarray of int64 or None
        Produce time of each message (Kafka CreateTime), for the staleness figures.
    """

    ends: np.ndarray = None
    positions: np.ndarray = None
    timestamps_ms: np.ndarray | None = None

    @property
    def num_messages(self) -> int:
        return int(self.ends.shape[0])

    def split(self, max_edges: int):
        """``(head, tail)``: the longest prefix of whole messages with at most ``max_edges`` edges,
        and the rest. Either may be ``None``."""
        k = int(np.searchsorted(self.ends, max_edges, side="right"))
        if k == 0:
            return None, self
        if k >= self.num_messages:
            return self, None
        return self._take(0, k), self._take(k, self.num_messages)

    def _take(self, a: int, b: int) -> "EdgeRun":
        e0 = int(self.ends[a - 1]) if a else 0
        e1 = int(self.ends[b - 1])
        ts = None if self.timestamps_ms is None else self.timestamps_ms[a:b]
        return EdgeRun(self.src[e0:e1], self.dst[e0:e1], self.insert[e0:e1], self.pos_key,
                       int(self.positions[b - 1]), ends=self.ends[a:b] - e0, positions=self.positions[a:b],
                       timestamps_ms=ts)

    def message_edges(self) -> np.ndarray:
        """Edges per message."""
        return np.diff(self.ends, prepend=0)


def fetch_items(pos_keys, topics, partitions, offsets, keys, values, timestamps_ms=None, *,
                max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, id_type: str = "int",
                id_lock: IdTypeLock | None = None, max_id_bytes: int = DEFAULT_MAX_ID_BYTES) -> list:
    """Decode one fetch into source items.

    Parameters
    ----------
    pos_keys, topics : sequence of str
        Per record: checkpoint position key and topic. Records of one partition are contiguous
        and in offset order.
    partitions, offsets : sequence of int
    keys, values : sequence of bytes or None
    timestamps_ms : sequence of int, optional
        Per record produce time (milliseconds since the epoch).
    max_message_bytes : int
    id_type, id_lock, max_id_bytes
        The stream's vertex ids (:func:`connectors.batch_decode.decode_values`): a message whose
        ids are not of the stream's kind is a :class:`BadRecord` with reason ``mixed_id_types``.

    Returns
    -------
    list of EdgeRun or BadRecord
    """
    n = len(values)
    if n == 0:
        return []
    dec = decode_values(values, max_bytes=max_message_bytes, id_type=id_type, id_lock=id_lock,
                        max_id_bytes=max_id_bytes)
    offsets = np.asarray(offsets, dtype=np.int64)
    ts = None if timestamps_ms is None else np.asarray(timestamps_ms, dtype=np.int64)
    edge_end = np.cumsum(dec.counts)
    bad = sorted(dec.errors)
    items = []
    # segments: maximal runs of records with one position key, cut at every rejected record
    cuts = [0] + [i for i in range(1, n) if pos_keys[i] != pos_keys[i - 1]] + [n]
    bi = 0
    for s, e in zip(cuts[:-1], cuts[1:]):
        a = s
        while a < e:
            while bi < len(bad) and bad[bi] < a:
                bi += 1
            b = bad[bi] if bi < len(bad) and bad[bi] < e else e
            if b > a:
                e0 = int(edge_end[a - 1]) if a else 0
                ends = edge_end[a:b] - e0
                items.append(EdgeRun(dec.src[e0:int(edge_end[b - 1])], dec.dst[e0:int(edge_end[b - 1])],
                                     dec.insert[e0:int(edge_end[b - 1])], pos_keys[a], int(offsets[b - 1]) + 1,
                                     ends=ends, positions=offsets[a:b] + 1,
                                     timestamps_ms=None if ts is None else ts[a:b]))
            if b < e:
                err = dec.errors[b]
                items.append(BadRecord(value=values[b] or b"", reason=err.reason, detail=err.detail, topic=topics[b],
                                       partition=int(partitions[b]), offset=int(offsets[b]), key=keys[b],
                                       pos_key=pos_keys[b], pos_value=int(offsets[b]) + 1))
            a = b + 1
    return items
