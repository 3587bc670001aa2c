"""A polled fetch of Kafka records -> the source items the daemon's loop batches.

Both Kafka clients hand their records here as columns (:class:`FetchedRecords`: the values, the
offsets and timestamps as arrays, and where each partition's records lie); :func:`fetch_items`
decodes all values at once (:func:`connectors.batch_decode.decode_values`) and returns, per partition in
record order, :class:`EdgeRun` items (consecutive accepted messages, their edges concatenated)
separated by :class:`~connectors.records.BadRecord` items (rejected messages, for the dead
letters). An :class:`EdgeRun` remembers where each message ends, so the loop can close a batch
between two messages of a run without ever splitting a message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamrank.ids.kinds import DEFAULT_MAX_ID_BYTES, IdTypeLock

from .batch_decode import decode_values
from .record_fields import DEFAULT_FIELDS, RecordFields
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
                       int(self.positions[b - 1]), None if self.weight is None else self.weight[e0:e1],
                       ends=self.ends[a:b] - e0, positions=self.positions[a:b], timestamps_ms=ts)

    def message_edges(self) -> np.ndarray:
        """Edges per message."""
        return np.diff(self.ends, prepend=0)


@dataclass
class Segment:
    """Consecutive records of one partition in a :class:`FetchedRecords` (``start:stop``)."""

    pos_key: str
    topic: str
    partition: int
    start: int
    stop: int


@dataclass
class FetchedRecords:
    """One fetch of records as columns, the records of each partition contiguous and in offset order.

    Attributes
    ----------
    values : list of bytes or None
        Record values.
    segments : list of Segment
        Where each partition's records lie (in any order of partitions; together they cover all records).
    offsets : ndarray of int64
        Per record.
    keys : sequence of bytes or None
        Per record; indexed only for rejected records (a client may hand a lazy sequence).
    timestamps_ms : ndarray of int64 or None
        Per record produce time (milliseconds since the epoch).
    """

    values: list
    segments: list
    offsets: np.ndarray
    keys: object
    timestamps_ms: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def from_records(cls, pos_keys, topics, partitions, offsets, keys, values, timestamps_ms=None) -> "FetchedRecords":
        """From per-record columns (``pos_keys``: checkpoint position key per record; the records of
        one key contiguous and in offset order)."""
        n = len(values)
        cuts = [0] + [i for i in range(1, n) if pos_keys[i] != pos_keys[i - 1]] + [n]
        segments = [Segment(pos_keys[a], topics[a], int(partitions[a]), a, b) for a, b in zip(cuts[:-1], cuts[1:])
                    if b > a]
        return cls(list(values), segments, np.asarray(offsets, dtype=np.int64), list(keys),
                   None if timestamps_ms is None else np.asarray(timestamps_ms, dtype=np.int64))


def fetch_items(records: FetchedRecords, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                id_type: str = "int", id_lock: IdTypeLock | None = None,
                max_id_bytes: int = DEFAULT_MAX_ID_BYTES, fields: RecordFields = DEFAULT_FIELDS) -> list:
    """Decode one fetch into source items.

    Parameters
    ----------
    records : FetchedRecords
    max_message_bytes : int
    id_type, id_lock, max_id_bytes
        The stream's vertex ids (:func:`connectors.batch_decode.decode_values`): a message whose
        ids are not of the stream's kind is a :class:`BadRecord` with reason ``mixed_id_types``.
    fields : connectors.records.RecordFields, optional
        Field names of JSON objects and Arrow columns (default ``src``, ``dst``, ``op``).

    Returns
    -------
    list of EdgeRun or BadRecord
        Per segment, in record order.
    """
    values = records.values
    if not values:
        return []
    dec = decode_values(values, max_bytes=max_message_bytes, id_type=id_type, id_lock=id_lock,
                        max_id_bytes=max_id_bytes, fields=fields)
    offsets, ts = records.offsets, records.timestamps_ms
    edge_end = np.cumsum(dec.counts)
    bad = np.array(sorted(dec.errors), dtype=np.int64)
    items = []
    for seg in records.segments:
        # runs of accepted records of this partition, cut at every rejected one
        inside = bad[(bad >= seg.start) & (bad < seg.stop)].tolist()
        a = seg.start
        for b in inside + [seg.stop]:
            if b > a:
                e0 = int(edge_end[a - 1]) if a else 0
                e1 = int(edge_end[b - 1])
                items.append(EdgeRun(dec.src[e0:e1], dec.dst[e0:e1], dec.insert[e0:e1], seg.pos_key,
                                     int(offsets[b - 1]) + 1, None if dec.weight is None else dec.weight[e0:e1],
                                     ends=edge_end[a:b] - e0, positions=offsets[a:b] + 1,
                                     timestamps_ms=None if ts is None else ts[a:b]))
            if b < seg.stop:
                err = dec.errors[b]
                items.append(BadRecord(value=values[b] or b"", reason=err.reason, detail=err.detail, topic=seg.topic,
                                       partition=seg.partition, offset=int(offsets[b]), key=records.keys[b],
                                       pos_key=seg.pos_key, pos_value=int(offsets[b]) + 1))
            a = b + 1
    return items
