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

from .fetch import fetch_items
from .kafka_source import FETCH_WAIT_MS, KafkaSourceBase, parse_position_key, position_key

log = logging.getLogger(__name__)


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
                "logger": logging.getLogger("confluent_kafka.consumer")}
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
    def poll(self, timeout_s: float, *, max_records: int | None = None) -> list:
        """Fetch records and decode them all at once; see ``KafkaEdgeSource.poll``."""
        from confluent_kafka import KafkaError, KafkaException

        if time.monotonic() - self._last_refresh > self.refresh_interval:
            self._assign(self._positions_at_open)
        try:
            msgs = self._consumer.consume(num_messages=max_records or self.max_poll_records, timeout=timeout_s)
        except (KafkaException, RuntimeError) as exc:
            raise SourceError(f"Kafka poll failed: {exc}") from exc
        good = []
        for m in msgs:
            err = m.error()
            if err is None:
                good.append(m)
            elif err.code() != KafkaError._PARTITION_EOF:
                log.warning("Kafka fetch error: %s", err)
        if not good:
            return []
        topics = [m.topic() for m in good]
        parts = [m.partition() for m in good]
        pos_keys = [position_key(t, p) for t, p in zip(topics, parts)]
        # one partition's records contiguous (consume() may interleave partitions; order within one is kept)
        order = sorted(range(len(good)), key=pos_keys.__getitem__)
        if order != list(range(len(good))):
            good = [good[i] for i in order]
            topics = [topics[i] for i in order]
            parts = [parts[i] for i in order]
            pos_keys = [pos_keys[i] for i in order]
        stamps = np.fromiter((m.timestamp()[1] for m in good), dtype=np.int64, count=len(good))
        return fetch_items(pos_keys, topics, parts, [m.offset() for m in good], [m.key() for m in good],
                           [m.value() for m in good], stamps, max_message_bytes=self.max_message_bytes,
                           id_type=self.id_type, id_lock=self.id_lock, max_id_bytes=self.max_id_bytes)

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
