"""Kafka edge source (kafka-python): explicit assignment, positions from the checkpoint.

Every partition of the configured topics is assigned explicitly (no group rebalancing); on
start each partition is sought to the position saved in the checkpoint (the offset of the
first record not yet applied), or to the beginning/end when the checkpoint has none. When a
consumer group is configured, positions are also committed to it *after* the checkpoint that
holds them, for lag monitoring only: the checkpoint stays the source of truth.

Broker outages are retried with exponential backoff and logged; kafka-python keeps the fetch
positions in memory, so consumption resumes where it stood when the broker returns.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from streamrank.errors import InvalidArgumentError, SourceError

from streamrank.ids.kinds import DEFAULT_MAX_ID_BYTES, IdTypeLock

from .fetch import FetchedRecords, Segment, fetch_items
from .record_fields import DEFAULT_FIELDS, RecordFields
from .records import DEFAULT_MAX_MESSAGE_BYTES

#: Longest the broker may hold a fetch without data (both clients). Apache Kafka answers a fetch as
#: soon as data arrives; some Kafka-protocol brokers (Tansu) hold it for the whole wait, which then
#: becomes latency: produce-to-consume p50/p99 at 100 k records/s on a 2-core host, 29/134 ms with
#: 20 ms, 27/114 ms with 10 ms, and with 1 ms the consumer fell behind
#: (``benchmarks/kafka_latency.py``); librdkafka's default of 500 ms gave a 145 ms median.
FETCH_WAIT_MS = 10

log = logging.getLogger(__name__)


def position_key(topic: str, partition: int) -> str:
    """Checkpoint key of a partition's position."""
    return f"kafka:{topic}:{partition}"


def parse_position_key(key: str):
    """``(topic, partition)`` of a key made by :func:`position_key`, or ``None``."""
    if not key.startswith("kafka:"):
        return None
    topic, _, part = key[len("kafka:"):].rpartition(":")
    return topic, int(part)


class Backoff:
    """Exponential backoff with a cap: ``next()`` returns the next delay in seconds."""

    def __init__(self, *, initial: float = 0.2, maximum: float = 10.0):
        self.initial, self.maximum = initial, maximum
        self.delay = initial

    def next(self) -> float:
        d = self.delay
        self.delay = min(self.maximum, self.delay * 2)
        return d

    def reset(self) -> None:
        self.delay = self.initial


class KafkaSourceBase:
    """What both Kafka edge sources hold: their settings, the partitions assigned, and the wait for
    the topics to exist, and the decoding of a fetch. Subclasses implement ``open``, ``_assign``,
    ``close``, ``fetch``, ``commit`` and ``lags``.

    Parameters
    ----------
    bootstrap_servers : str
        ``host:port[,host:port...]``.
    topics : list of str
    group_id : str, optional
        Consumer group to commit positions to (monitoring only).
    start_from : {"earliest", "latest"}
        Where partitions without a saved position start.
    max_message_bytes : int
        Larger messages are dead-lettered as ``oversize``.
    max_poll_records : int
    stop : callable, optional
        Returns ``True`` when retries should give up (shutdown requested).
    client_id : str
    id_type : {"int", "string", "auto"}
        Vertex id kind of the messages (:func:`connectors.records.parse_message`).
    id_lock : streamrank.ids.kinds.IdTypeLock, optional
        Keeps the stream to one id kind; a message of the other kind is dead-lettered with
        reason ``mixed_id_types``. Default: a lock of ``id_type``.
    max_id_bytes : int
        Longest string id (UTF-8 bytes).
    fields : connectors.records.RecordFields, optional
        Field names of JSON objects and Arrow columns (default ``src``, ``dst``, ``op``).
    stats_interval_s : float
        confluent-kafka only: every this many seconds the client's statistics, condensed
        (:func:`connectors.kafka_stats.condense`), go to ``on_stats`` from the fetching thread
        (0: off; kafka-python has no such statistics and ignores it).
    on_stats : callable, optional
        Receives the condensed statistics.
    """

    def __init__(self, *, bootstrap_servers: str, topics, group_id: str | None = None,
                 start_from: str = "earliest", max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_poll_records: int = 5000, stop=None, client_id: str = "streamrank-serve",
                 id_type: str = "int", id_lock: IdTypeLock | None = None, max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
                 fields: RecordFields = DEFAULT_FIELDS, stats_interval_s: float = 0.0, on_stats=None):
        self.bootstrap_servers = bootstrap_servers
        self.topics = list(topics)
        self.group_id = group_id
        self.start_from = start_from
        self.max_message_bytes = int(max_message_bytes)
        self.max_poll_records = int(max_poll_records)
        self.id_type = id_type  # declared kind, or "auto" (each message detected, the stream kept to one kind)
        self.id_lock = id_lock if id_lock is not None else IdTypeLock(id_type)
        self.max_id_bytes = int(max_id_bytes)
        if not isinstance(fields, RecordFields):
            raise InvalidArgumentError(f"fields must be a RecordFields, got {type(fields).__name__}")
        self.fields = fields
        self.client_id = client_id
        self.stats_interval_s = float(stats_interval_s)
        self.on_stats = on_stats
        self._stop = stop or (lambda: False)
        self._consumer = None
        self._assigned: list = []
        self._last_refresh = 0.0
        self.refresh_interval = 30.0

    def _wait_for_topics(self, positions: dict) -> None:
        """Assign the partitions (``self._assign``), retrying with backoff until the topics exist.

        Raises
        ------
        SourceError
            When shutdown was requested first.
        """
        self._positions_at_open = dict(positions)
        backoff = Backoff()
        while not self._assign(positions):
            if self._stop():
                raise SourceError(f"topics {self.topics} never became available")
            d = backoff.next()
            log.warning("waiting for topics %s to exist on %s (unreachable or absent); retrying in %.1fs",
                        self.topics, self.bootstrap_servers, d)
            time.sleep(d)

    def poll(self, timeout_s: float, *, max_records: int | None = None) -> list:
        """Fetch records and decode them all at once: :meth:`decode` of :meth:`fetch`.

        Returns
        -------
        list of EdgeRun or BadRecord
            Per partition in offset order; each item carries the position just past its last record.
        """
        return self.decode(self.fetch(timeout_s, max_records=max_records))

    def decode(self, records: FetchedRecords) -> list:
        """The source items of a fetch (:func:`connectors.fetch.fetch_items`). Safe to call from
        other threads than :meth:`fetch`'s, in any order once the stream's id kind is fixed
        (``self.id_lock.kind`` set); before that, in fetch order."""
        return fetch_items(records, max_message_bytes=self.max_message_bytes, id_type=self.id_type,
                           id_lock=self.id_lock, max_id_bytes=self.max_id_bytes, fields=self.fields)


class KafkaEdgeSource(KafkaSourceBase):
    """Reads edge messages from Kafka topics with kafka-python.

    Parameters are those of :class:`KafkaSourceBase`.
    """

    # ------------------------------------------------------------------ lifecycle
    def _connect(self):
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        backoff = Backoff()
        while True:
            try:
                return KafkaConsumer(
                    bootstrap_servers=self.bootstrap_servers.split(","),
                    client_id=self.client_id,
                    group_id=self.group_id,
                    enable_auto_commit=False,
                    auto_offset_reset=self.start_from,
                    max_poll_records=self.max_poll_records,
                    max_poll_interval_ms=3000,  # only matters for group joins, which we never do
                    request_timeout_ms=10000,
                    fetch_max_bytes=max(52428800, self.max_message_bytes * 2),
                    max_partition_fetch_bytes=max(1048576, self.max_message_bytes + 1024),
                    reconnect_backoff_max_ms=5000,
                    fetch_max_wait_ms=FETCH_WAIT_MS,
                    bootstrap_timeout_ms=5000,
                )
            except (KafkaError, OSError) as exc:
                if self._stop():
                    raise SourceError(f"cannot connect to Kafka at {self.bootstrap_servers}: {exc}") from exc
                d = backoff.next()
                log.warning("Kafka at %s unreachable (%s); retrying in %.1fs", self.bootstrap_servers, exc, d)
                time.sleep(d)

    def open(self, positions: dict) -> None:
        """Connect, assign every partition of the topics, and seek to ``positions``.

        Parameters
        ----------
        positions : dict
            From the checkpoint: ``position_key(topic, partition) -> next offset``.

        Raises
        ------
        SourceError
            When shutdown was requested before the broker could be reached.
        """
        self._consumer = self._connect()
        self._wait_for_topics(positions)

    def _assign(self, positions: dict) -> bool:
        """(Re)assign all partitions; new ones are sought per ``positions``. True when any exist."""
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        c = self._consumer
        try:
            tps = []
            for topic in self.topics:
                parts = c.partitions_for_topic(topic)
                if not parts:
                    return False
                tps.extend(TopicPartition(topic, p) for p in sorted(parts))
            assigned = set(self._assigned)
            if set(tps) == assigned:
                self._last_refresh = time.monotonic()
                return True
            new = [tp for tp in tps if tp not in assigned]
            c.assign(tps)
            for tp in new:
                off = positions.get(position_key(tp.topic, tp.partition))
                if off is not None:
                    c.seek(tp, int(off))
                elif self.start_from == "latest":
                    c.seek_to_end(tp)
                else:
                    c.seek_to_beginning(tp)
            self._assigned = tps
            self._last_refresh = time.monotonic()
            log.info("assigned %d partitions of %s (%d sought from the checkpoint)", len(tps),
                     self.topics, sum(position_key(t.topic, t.partition) in positions for t in new))
            return True
        except (KafkaError, OSError) as exc:
            log.warning("Kafka metadata request failed: %s", exc)
            return False

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            except Exception as exc:  # closing must not mask the shutdown path
                log.debug("consumer close: %s", exc)
            self._consumer = None

    # ------------------------------------------------------------------ reading
    def fetch(self, timeout_s: float, *, max_records: int | None = None) -> FetchedRecords:
        """The records of one poll of the client, as columns (decode them with :meth:`decode`).

        Raises
        ------
        SourceError
            When the client's poll fails.
        """
        from kafka.errors import KafkaError

        if time.monotonic() - self._last_refresh > self.refresh_interval:
            self._assign(self._positions_at_open)  # picks up new partitions of the topics
        try:
            batches = self._consumer.poll(timeout_ms=int(timeout_s * 1000),
                                          max_records=max_records or self.max_poll_records)
        except (KafkaError, OSError) as exc:
            raise SourceError(f"Kafka poll failed: {exc}") from exc
        segments, offsets, keys, values, stamps = [], [], [], [], []
        for tp, records in batches.items():
            if not records:
                continue
            start = len(values)
            offsets += [r.offset for r in records]
            keys += [r.key for r in records]
            values += [r.value for r in records]
            stamps += [r.timestamp for r in records]
            segments.append(Segment(position_key(tp.topic, tp.partition), tp.topic, tp.partition, start, len(values)))
        return FetchedRecords(values, segments, np.asarray(offsets, dtype=np.int64), keys,
                              np.asarray(stamps, dtype=np.int64))

    # ------------------------------------------------------------------ positions
    def commit(self, positions: dict) -> bool:
        """Commit ``positions`` to the consumer group (when one is configured).

        Failures are logged and reported as ``False``: the checkpoint already holds the positions.
        """
        if not self.group_id or self._consumer is None:
            return True
        from kafka import TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        offsets = {}
        for k, v in positions.items():
            tp = parse_position_key(k)
            if tp is not None:
                offsets[TopicPartition(*tp)] = OffsetAndMetadata(int(v), "", -1)
        if not offsets:
            return True
        try:
            self._consumer.commit(offsets)
            return True
        except (KafkaError, OSError) as exc:
            log.warning("committing positions to group %s failed (monitoring only): %s", self.group_id, exc)
            return False

    def lags(self, positions: dict) -> dict:
        """``(topic, partition) -> end offset - position``.

        Raises
        ------
        SourceError
            When the broker cannot be asked (used as the health check of the loop).
        """
        from kafka.errors import KafkaError

        if not self._assigned:
            return {}
        try:
            ends = self._consumer.end_offsets(self._assigned)
        except (KafkaError, OSError) as exc:
            raise SourceError(f"Kafka end-offset request failed: {exc}") from exc
        out = {}
        for tp, end in ends.items():
            pos = positions.get(position_key(tp.topic, tp.partition))
            if pos is None:
                pos = self._consumer.position(tp)  # ends holds only assigned partitions
            out[(tp.topic, tp.partition)] = max(0, int(end) - int(pos))
        return out
