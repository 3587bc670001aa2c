"""Kafka edge source on confluent-kafka (librdkafka): the same contract as
:class:`connectors.kafka_source.KafkaEdgeSource`.

Every partition of the topics is assigned explicitly (``assign``: no group join, no rebalance)
at the position saved in the checkpoint, or at the beginning/end. A consumer group, when
configured, receives the positions *after* the checkpoint that holds them (lag monitoring only).
librdkafka reconnects by itself and keeps its fetch positions across broker outages.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from streamrank.errors import SourceError

from .fetch import FetchedRecords, Segment
from .kafka_source import FETCH_WAIT_MS, KafkaSourceBase, parse_position_key, position_key
from .kafka_stats import stats_config

log = logging.getLogger(__name__)

#: How long librdkafka postpones the next fetch of a partition whose local queue is over its
#: threshold (``queued.min.messages``, 100,000 messages). librdkafka's default, 1,000 ms, capped a
#: backlog's drain at about 160 k single-edge messages/s on the 2-core host (the queue emptied in a
#: fraction of that second, then the consumer waited); with 10 ms a plain consumer drains 1.1 M/s
#: (``benchmarks/kafka_drain.py``).
FETCH_QUEUE_BACKOFF_MS = 10


class ConfluentEdgeSource(KafkaSourceBase):
    """Reads edge messages from Kafka topics with confluent-kafka.

    Parameters are those of :class:`connectors.kafka_source.KafkaSourceBase`.
    """

    # ------------------------------------------------------------------ lifecycle
    def open(self, positions: dict) -> None:
        """Create the consumer, assign every partition of the topics, seek to ``positions``.

        Raises
        ------
        SourceError
            When shutdown was requested before the topics could be found.
        """
        from confluent_kafka import Consumer, KafkaException

        conf = {"bootstrap.servers": self.bootstrap_servers, "client.id": self.client_id,
                # librdkafka wants a group id; with assign() it never joins, and commits go nowhere
                # unless group_id was configured (see commit())
                "group.id": self.group_id or f"{self.client_id}-unused",
                "enable.auto.commit": False, "enable.auto.offset.store": False,
                "auto.offset.reset": self.start_from, "enable.partition.eof": False,
                "fetch.max.bytes": max(52428800, self.max_message_bytes * 2),
                "max.partition.fetch.bytes": max(1048576, self.max_message_bytes + 1024),
                "receive.message.max.bytes": max(52428800, self.max_message_bytes * 2) + 1024 * 1024,
                "reconnect.backoff.max.ms": 5000,
                "fetch.wait.max.ms": FETCH_WAIT_MS,
                "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
                "logger": logging.getLogger("confluent_kafka.consumer"),
                **(stats_config(self.stats_interval_s, self.on_stats) if self.on_stats else {})}
        try:
            self._consumer = Consumer(conf)
        except (KafkaException, ValueError, TypeError) as exc:
            raise SourceError(f"cannot create a Kafka consumer for {self.bootstrap_servers}: {exc}") from exc
        self._wait_for_topics(positions)

    def _assign(self, positions: dict) -> bool:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

        c = self._consumer
        try:
            found = []
            for topic in self.topics:
                md = c.list_topics(topic, timeout=5.0)
                t = md.topics.get(topic)
                if t is None or t.error is not None or not t.partitions:
                    return False
                found.extend((topic, p) for p in sorted(t.partitions))
            if set(found) == set(self._assigned):
                self._last_refresh = time.monotonic()
                return True
            new = [tp for tp in found if tp not in set(self._assigned)]
            tps = []
            for topic, p in new:
                off = positions.get(position_key(topic, p))
                if off is None:
                    off = OFFSET_END if self.start_from == "latest" else OFFSET_BEGINNING
                tps.append(TopicPartition(topic, p, int(off)))
            if self._assigned:
                c.incremental_assign(tps)  # partitions already assigned keep their fetch positions
            else:
                c.assign(tps)
            self._assigned = self._assigned + new
            self._last_refresh = time.monotonic()
            log.info("assigned %d partitions of %s (%d sought from the checkpoint)", len(found), self.topics,
                     sum(position_key(t, p) in positions for t, p in new))
            return True
        except KafkaException as exc:
            log.warning("Kafka metadata request failed: %s", exc)
            return False

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception as exc:  # closing must not mask the shutdown path
                log.debug("consumer close: %s", exc)
            self._consumer = None

    # ------------------------------------------------------------------ reading
    def fetch(self, timeout_s: float, *, max_records: int | None = None) -> FetchedRecords:
        """The records of one ``consume()`` as columns; see ``KafkaEdgeSource.fetch``."""
        from confluent_kafka import KafkaException

        if time.monotonic() - self._last_refresh > self.refresh_interval:
            self._assign(self._positions_at_open)
        try:
            msgs = self._consumer.consume(num_messages=max_records or self.max_poll_records, timeout=timeout_s)
        except (KafkaException, RuntimeError) as exc:
            raise SourceError(f"Kafka poll failed: {exc}") from exc
        return self._columns(msgs)

    def _columns(self, msgs: list) -> FetchedRecords:
        """The consumed messages as columns: one C-level pass per field (``map`` over the unbound
        accessors), no Python code per message; each partition's messages made contiguous."""
        from confluent_kafka import KafkaError, Message

        if any(map(Message.error, msgs)):  # rare: fetch errors come as messages
            good = []
            for m in msgs:
                err = m.error()
                if err is None:
                    good.append(m)
                elif err.code() != KafkaError._PARTITION_EOF:
                    log.warning("Kafka fetch error: %s", err)
            msgs = good
        n = len(msgs)
        if n == 0:
            return FetchedRecords([], [], np.zeros(0, dtype=np.int64), [])
        part = np.fromiter(map(Message.partition, msgs), dtype=np.int64, count=n)
        if len(self.topics) == 1:
            names = [self.topics[0]]
            group = part
        else:
            names, tix = np.unique(np.asarray(list(map(Message.topic, msgs)), dtype=object), return_inverse=True)
            names = names.tolist()
            group = tix.astype(np.int64) * (1 << 32) + part
        starts = np.flatnonzero(np.diff(group)) + 1
        if starts.size + 1 != np.unique(group).size:  # consume() interleaved partitions: group them, keeping
            # the order within each
            order = np.argsort(group, kind="stable")
            msgs = [msgs[i] for i in order.tolist()]
            group, part = group[order], part[order]
            starts = np.flatnonzero(np.diff(group)) + 1
        bounds = [0] + starts.tolist() + [n]
        segments = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            topic, p = names[int(group[a] >> 32)], int(part[a])
            segments.append(Segment(position_key(topic, p), topic, p, a, b))
        offsets = np.fromiter(map(Message.offset, msgs), dtype=np.int64, count=n)
        stamps = np.array(list(map(Message.timestamp, msgs)), dtype=np.int64).reshape(n, 2)[:, 1]  # (type, ms)
        return FetchedRecords(list(map(Message.value, msgs)), segments, offsets, _Keys(msgs), stamps)

    # ------------------------------------------------------------------ positions
    def commit(self, positions: dict) -> bool:
        """Commit ``positions`` to the consumer group (when one is configured); False on failure."""
        if not self.group_id or self._consumer is None:
            return True
        from confluent_kafka import KafkaException, TopicPartition

        offsets = [TopicPartition(t, p, int(v)) for k, v in positions.items()
                   if (tp := parse_position_key(k)) is not None for t, p in [tp]]
        if not offsets:
            return True
        try:
            self._consumer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as exc:
            log.warning("committing positions to group %s failed (monitoring only): %s", self.group_id, exc)
            return False

    def lags(self, positions: dict) -> dict:
        """``(topic, partition) -> end offset - position``.

        Raises
        ------
        SourceError
            When the broker cannot be asked (the loop's health check).
        """
        from confluent_kafka import KafkaException, TopicPartition

        out = {}
        for topic, p in self._assigned:
            try:
                _low, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=2.0)
            except KafkaException as exc:
                raise SourceError(f"Kafka end-offset request failed: {exc}") from exc
            pos = positions.get(position_key(topic, p))
            if pos is None:
                pos = self._consumer.position([TopicPartition(topic, p)])[0].offset
            out[(topic, p)] = max(0, int(high) - max(0, int(pos)))
        return out


class _Keys:
    """Record keys, read only where asked (rejected records)."""

    def __init__(self, msgs: list):
        self._msgs = msgs

    def __getitem__(self, i: int):
        return self._msgs[i].key()
