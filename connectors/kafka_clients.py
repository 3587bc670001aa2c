"""The two Kafka client libraries behind one small interface.

- ``"confluent"``: confluent-kafka (librdkafka, C), the optional extra ``kafka-fast``; the default
  where it is installed;
- ``"kafka-python"``: pure Python, always supported.

:func:`resolve_client` picks one; :func:`make_producer` returns a producer with ``send``,
``flush``, ``mark``/``wait_acked`` and ``close``; sources are in :mod:`connectors.kafka_source` (kafka-python) and
:mod:`connectors.kafka_confluent`, made by :func:`make_source`.

Delivery failures (a message the client gave up on) are remembered: every later ``flush`` raises
:class:`DeliveryFailed`, so no checkpoint can claim output that was lost; the daemon exits and
its restart re-publishes from the last checkpoint.

``mark()`` returns a token for "everything sent so far"; ``wait_acked(token)`` (callable from
another thread while the loop goes on sending) returns once all those messages are acknowledged,
so a checkpoint can wait for its output off the loop's critical path.
"""

from __future__ import annotations

import functools
import logging
import threading
import time

from streamrank.errors import InvalidArgumentError, StreamrankError

from .kafka_stats import stats_config

log = logging.getLogger(__name__)

CLIENTS = ("auto", "confluent", "kafka-python")


class SinkError(StreamrankError, IOError):
    """Publishing to a sink failed (the broker is unreachable, the flush timed out)."""


class DeliveryFailed(SinkError):
    """The client gave up on a message: the output since the last checkpoint is incomplete."""


def confluent_available() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_client(name: str = "auto") -> str:
    """``"confluent"`` or ``"kafka-python"``.

    ``"auto"`` picks confluent-kafka where it is installed.

    Raises
    ------
    InvalidArgumentError
        For an unknown name, or ``"confluent"`` when it is not installed.
    """
    if name not in CLIENTS:
        raise InvalidArgumentError(f"Kafka client must be one of {CLIENTS}, got {name!r}")
    if name == "auto":
        return "confluent" if confluent_available() else "kafka-python"
    if name == "confluent" and not confluent_available():
        raise InvalidArgumentError("kafka client 'confluent' needs confluent-kafka (pip install 'streamrank[kafka-fast]')")
    return name


def make_source(client: str, **kw):
    """An edge source for ``client`` (keyword arguments of :class:`~connectors.kafka_source.KafkaEdgeSource`)."""
    if resolve_client(client) == "confluent":
        from .kafka_confluent import ConfluentEdgeSource

        return ConfluentEdgeSource(**kw)
    from .kafka_source import KafkaEdgeSource

    return KafkaEdgeSource(**kw)


def make_producer(client: str, bootstrap_servers: str, *, client_id: str = "streamrank-serve", linger_ms: int = 5,
                  stats_interval_s: float = 0.0, on_stats=None):
    """A producer configured for at-least-once delivery (acks from all replicas).

    ``linger_ms`` (5): how long the client gathers messages before a request; the rank updates of
    a batch are handed over within a few milliseconds, and every millisecond of linger adds to
    the time until a consumer sees them (a checkpoint's wait for acknowledgements too).
    ``stats_interval_s`` / ``on_stats``: confluent-kafka only, as for the sources
    (:class:`~connectors.kafka_source.KafkaSourceBase`); called from the thread that polls.

    Raises
    ------
    SinkError
        When the client cannot be created (kafka-python: no broker reachable).
    """
    if resolve_client(client) == "confluent":
        return ConfluentProducer(bootstrap_servers, client_id=client_id, linger_ms=linger_ms,
                                 stats=stats_config(stats_interval_s, on_stats) if on_stats else {})
    return KafkaPythonProducer(bootstrap_servers, client_id=client_id, linger_ms=linger_ms)


class KafkaPythonProducer:
    """kafka-python's ``KafkaProducer`` behind ``send``/``flush``/``close``."""

    def __init__(self, bootstrap_servers: str, *, client_id: str, linger_ms: int):
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        try:
            self._p = KafkaProducer(bootstrap_servers=bootstrap_servers.split(","), client_id=client_id,
                                    acks="all", linger_ms=linger_ms, retries=5, max_block_ms=10000,
                                    request_timeout_ms=10000, batch_size=256 * 1024,
                                    max_request_size=16 * 1024 * 1024, bootstrap_timeout_ms=5000)
        except (KafkaError, OSError) as exc:
            raise SinkError(f"cannot create a Kafka producer for {bootstrap_servers}: {exc}") from exc
        self.failed = 0
        self._err = None

    def _on_error(self, exc):
        self.failed += 1
        self._err = exc

    def send(self, topic: str, *, key, value, headers) -> None:
        from kafka.errors import KafkaError

        try:
            self._p.send(topic, key=key, value=value, headers=headers).add_errback(self._on_error)
        except (KafkaError, OSError) as exc:
            raise SinkError(f"sending to {topic} failed: {exc}") from exc

    def flush(self, *, timeout_s: float = 30.0) -> None:
        """Wait until everything sent is acknowledged.

        Raises
        ------
        SinkError
            When the wait times out; :class:`DeliveryFailed` when a message was lost.
        """
        from kafka.errors import KafkaError

        try:
            self._p.flush(timeout=timeout_s)
        except (KafkaError, OSError) as exc:
            raise SinkError(f"Kafka flush failed: {exc}") from exc
        if self.failed:
            raise DeliveryFailed(f"{self.failed} messages were not delivered (last: {self._err})")

    def mark(self):
        """A token for the messages sent so far (see :meth:`wait_acked`)."""
        return None

    def wait_acked(self, token, *, timeout_s: float = 30.0) -> None:
        """Wait until every message sent before ``mark()`` returned ``token`` is acknowledged.

        kafka-python's ``flush`` waits for the batches incomplete when it is called (messages
        sent meanwhile by another thread do not prolong it), which covers the token's messages.

        Raises
        ------
        SinkError, DeliveryFailed
            As :meth:`flush`.
        """
        self.flush(timeout_s=timeout_s)

    def close(self, *, timeout_s: float = 5.0) -> None:
        self._p.close(timeout=timeout_s)


class ConfluentProducer:
    """confluent-kafka's ``Producer`` behind ``send``/``flush``/``close``."""

    def __init__(self, bootstrap_servers: str, *, client_id: str, linger_ms: int, stats: dict | None = None):
        from confluent_kafka import KafkaException, Producer

        try:
            self._p = Producer({"bootstrap.servers": bootstrap_servers, "client.id": client_id, "acks": "all",
                                "linger.ms": linger_ms, "message.max.bytes": 16 * 1024 * 1024,
                                "queue.buffering.max.messages": 2_000_000,
                                "queue.buffering.max.kbytes": 1024 * 1024, "enable.idempotence": False,
                                "logger": logging.getLogger("confluent_kafka.producer"), **(stats or {})})
        except (KafkaException, ValueError, TypeError) as exc:
            raise SinkError(f"cannot create a Kafka producer for {bootstrap_servers}: {exc}") from exc
        self.failed = 0
        self._err = None
        self._since_poll = 0
        # messages per generation (a generation ends at each mark()): sent by the loop's thread,
        # reported (acknowledged or failed) by whichever thread serves delivery reports
        self._lock = threading.Lock()
        self._gen = 0
        self._oldest = 0
        self._sent = {0: 0}
        self._reported = {0: 0}
        self._on_delivery = functools.partial(self._delivered, 0)

    def _delivered(self, gen, err, msg):
        with self._lock:
            self._reported[gen] += 1
            if err is not None:
                self.failed += 1
                self._err = err

    def send(self, topic: str, *, key, value, headers) -> None:
        from confluent_kafka import KafkaException

        while True:
            try:
                self._p.produce(topic, value=value, key=key, headers=headers, on_delivery=self._on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                self._p.poll(0.05)
            except (KafkaException, ValueError, TypeError) as exc:
                raise SinkError(f"sending to {topic} failed: {exc}") from exc
        self._sent[self._gen] += 1
        self._since_poll += 1
        if self._since_poll >= 10000:
            self._p.poll(0)
            self._since_poll = 0

    def flush(self, *, timeout_s: float = 30.0) -> None:
        """Wait until everything sent is acknowledged (see :meth:`KafkaPythonProducer.flush`)."""
        deadline = time.monotonic() + timeout_s
        left = self._p.flush(timeout_s)
        while left and time.monotonic() < deadline:
            left = self._p.flush(max(0.0, deadline - time.monotonic()))
        if left:
            raise SinkError(f"Kafka flush timed out with {left} messages unacknowledged")
        if self.failed:
            raise DeliveryFailed(f"{self.failed} messages were not delivered (last: {self._err})")

    def mark(self) -> int:
        """A token for the messages sent so far (call on the thread that sends)."""
        with self._lock:
            token = self._gen
            self._gen += 1
            self._sent[self._gen] = 0
            self._reported[self._gen] = 0
            self._on_delivery = functools.partial(self._delivered, self._gen)
        return token

    def wait_acked(self, token: int, *, timeout_s: float = 30.0) -> None:
        """Wait until every message sent before ``mark()`` returned ``token`` is acknowledged.

        Serves delivery reports meanwhile; messages sent after the mark do not prolong the wait.

        Raises
        ------
        SinkError, DeliveryFailed
            As :meth:`flush`.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                while self._oldest <= token and self._reported[self._oldest] >= self._sent[self._oldest]:
                    del self._sent[self._oldest], self._reported[self._oldest]
                    self._oldest += 1
                done = self._oldest > token
                left = sum(self._sent[g] - self._reported[g] for g in range(self._oldest, token + 1)) if not done else 0
            if self.failed:
                raise DeliveryFailed(f"{self.failed} messages were not delivered (last: {self._err})")
            if done:
                return
            if time.monotonic() >= deadline:
                raise SinkError(f"Kafka acknowledgements timed out with {left} messages unacknowledged")
            self._p.poll(0.005)  # serves delivery reports (their callbacks run on this thread)

    def close(self, *, timeout_s: float = 5.0) -> None:
        self._p.flush(timeout_s)
