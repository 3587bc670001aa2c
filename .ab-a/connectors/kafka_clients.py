"""The two Kafka client libraries behind one small interface.

- ``"confluent"``: confluent-kafka (librdkafka, C), the optional extra ``kafka-fast``; the default
  where it is installed;
- ``"kafka-python"``: pure Python, always supported.

:func:`resolve_client` picks one; :func:`make_producer` returns a producer with ``send``,
``send_many`` (a batch of messages with the same headers, handed over in one call), ``poll``
(serve the client's delivery reports), ``flush``, ``mark``/``wait_acked`` and ``close``; sources
are in :mod:`connectors.kafka_source` (kafka-python) and :mod:`connectors.kafka_confluent`, made
by :func:`make_source`.

Delivery failures (a message the client gave up on) are remembered: every later ``flush`` raises
:class:`DeliveryFailed`, so no checkpoint can claim output that was lost; the daemon exits and
its restart re-publishes from the last checkpoint.

``mark()`` returns a token for "everything sent so far"; ``wait_acked(token)`` (callable from
another thread while the loop goes on sending) returns once all those messages are acknowledged,
so a checkpoint can wait for its output off the loop's critical path.
"""

from __future__ import annotations

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
    """kafka-python's ``KafkaProducer`` behind ``send``/``send_many``/``flush``/``close``."""

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
        """Send one message (see :meth:`send_many`)."""
        self.send_many(topic, (key,), (value,), headers)

    def send_many(self, topic: str, keys, values, headers) -> None:
        """Send ``keys[i]``, ``values[i]`` in order, all with ``headers`` (as ``send`` one by one).

        Raises
        ------
        SinkError
            When the client refuses a message (those before it are sent).
        """
        from kafka.errors import KafkaError

        if len(values) != len(keys):
            raise InvalidArgumentError(f"send_many: {len(keys)} keys but {len(values)} values")
        send, on_error = self._p.send, self._on_error
        try:
            for k, v in zip(keys, values):
                send(topic, key=k, value=v, headers=headers).add_errback(on_error)
        except (KafkaError, OSError) as exc:
            raise SinkError(f"sending to {topic} failed: {exc}") from exc

    def poll(self, timeout_s: float = 0.0) -> bool:
        """Nothing to serve: kafka-python's own thread sends and handles the acknowledgements."""
        return True

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


class _Generation:
    """The messages handed to confluent-kafka between two ``mark()`` calls: how many were sent
    (counted by the sending thread) and how many the client reported (acknowledged or failed).

    ``delivered`` is every message's delivery callback. Callbacks run only inside ``poll`` or
    ``flush`` of the client, and :class:`ConfluentProducer` makes those calls under one lock, so
    callbacks never run concurrently and the count needs no lock of its own.
    """

    __slots__ = ("sent", "reported", "failures", "delivered")

    def __init__(self, failures: list):
        self.sent = 0
        self.reported = 0
        self.failures = failures  # shared by all generations (list.append is atomic)
        self.delivered = self._delivered  # one bound method for all the generation's messages

    def _delivered(self, err, msg):
        self.reported += 1
        if err is not None:
            self.failures.append(err)


#: The sending thread serves delivery reports after this many messages sent since it last did (a
#: bound on the reports, and the messages they hold, waiting in the client when nobody polls).
SERVE_EVERY = 50_000


class ConfluentProducer:
    """confluent-kafka's ``Producer`` behind ``send``/``send_many``/``flush``/``close``.

    ``send``, ``send_many`` and ``mark`` are called from one thread (the daemon's loop);
    ``wait_acked`` from any other; ``poll`` and ``flush`` from either.
    """

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
        self._failures = []
        self._unserved = 0  # messages sent since the sending thread last served reports
        # every call that serves delivery reports (poll, flush) holds this: callbacks never overlap
        self._serving = threading.Lock()
        # generations (a generation ends at each mark()): mark() adds, wait_acked() retires
        self._lock = threading.Lock()
        self._gen_id = 0
        self._oldest = 0
        self._open = _Generation(self._failures)
        self._gens = {0: self._open}

    @property
    def failed(self) -> int:
        """Messages the client gave up on."""
        return len(self._failures)

    def _raise_failed(self) -> None:
        if self._failures:
            raise DeliveryFailed(f"{len(self._failures)} messages were not delivered (last: {self._failures[-1]})")

    def send(self, topic: str, *, key, value, headers) -> None:
        """Hand one message to the client (see :meth:`send_many`)."""
        self.send_many(topic, (key,), (value,), headers)

    def send_many(self, topic: str, keys, values, headers) -> None:
        """Hand ``len(keys)`` messages to the client, in order: ``keys[i]``, ``values[i]``, all with
        ``headers``. The same messages as ``send`` one by one, with less work per message: one
        delivery callback object for all, no bookkeeping per message.

        Raises
        ------
        SinkError
            When the client refuses a message (those before it are sent and counted).
        """
        from confluent_kafka import KafkaException

        n = len(keys)
        if len(values) != n:
            raise InvalidArgumentError(f"send_many: {n} keys but {len(values)} values")
        produce = self._p.produce
        gen = self._open
        cb = gen.delivered
        i = 0
        base = self._unserved  # unserved messages = base + i
        try:
            while i < n:
                end = min(n, i + SERVE_EVERY)
                try:
                    # positional (topic, value, key, partition, callback, on_delivery, timestamp,
                    # headers), the order of confluent-kafka's keyword list: keywords would cost a
                    # third of the call. -1 (any partition: the partitioner picks by key) and 0
                    # (now) are the defaults.
                    for i in range(i, end):
                        produce(topic, values[i], keys[i], -1, cb, None, 0, headers)
                    i = end
                except BufferError:  # local queue full: serve delivery reports, then go on from message i
                    self._serve(0.05)
                    continue
                if i < n and base + i >= SERVE_EVERY and self.poll():  # a large batch: between its parts
                    base = -i
        except (KafkaException, ValueError, TypeError) as exc:
            raise SinkError(f"sending to {topic} failed: {exc}") from exc
        finally:
            gen.sent += i
            self._unserved = base + i
        if self._unserved >= SERVE_EVERY:
            self.poll()

    def poll(self, timeout_s: float = 0.0) -> bool:
        """Serve the delivery reports at hand (the daemon calls it after handing a batch's output
        over); returns False at once when another thread is serving them."""
        return self._serve(timeout_s, wait=False)

    def _serve(self, timeout_s: float, *, wait: bool = True) -> bool:
        """Serve delivery reports for up to ``timeout_s``; when another thread is serving them,
        wait that long for it (``wait``) or return False at once."""
        got = self._serving.acquire(timeout=timeout_s) if wait else self._serving.acquire(blocking=False)
        if not got:
            return False
        try:
            self._p.poll(timeout_s)
        finally:
            self._serving.release()
        self._unserved = 0  # a hint for the sending thread (a lost update only moves its next poll)
        return True

    def flush(self, *, timeout_s: float = 30.0) -> None:
        """Wait until everything sent is acknowledged (see :meth:`KafkaPythonProducer.flush`)."""
        deadline = time.monotonic() + timeout_s
        if not self._serving.acquire(timeout=timeout_s):
            raise SinkError("Kafka flush timed out waiting for another thread serving delivery reports")
        try:
            left = self._p.flush(max(0.0, deadline - time.monotonic()))
            while left and time.monotonic() < deadline:
                left = self._p.flush(max(0.0, deadline - time.monotonic()))
        finally:
            self._serving.release()
        if left:
            raise SinkError(f"Kafka flush timed out with {left} messages unacknowledged")
        self._raise_failed()

    def mark(self) -> int:
        """A token for the messages sent so far (call on the thread that sends)."""
        gen = _Generation(self._failures)
        with self._lock:
            token = self._gen_id
            self._gen_id += 1
            self._gens[self._gen_id] = gen
        self._open = gen
        return token

    def _unacked(self, token: int) -> int:
        """Messages of the generations up to ``token`` not yet reported (0: all acknowledged or failed)."""
        with self._lock:
            while self._oldest <= token:
                g = self._gens[self._oldest]
                if g.reported < g.sent:  # a closed generation's ``sent`` is final
                    return sum(self._gens[t].sent - self._gens[t].reported for t in range(self._oldest, token + 1))
                del self._gens[self._oldest]
                self._oldest += 1
        return 0

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
            left = self._unacked(token)
            self._raise_failed()
            if not left:
                return
            if time.monotonic() >= deadline:
                raise SinkError(f"Kafka acknowledgements timed out with {left} messages unacknowledged")
            self._serve(0.005)  # its callbacks run on this thread

    def close(self, *, timeout_s: float = 5.0) -> None:
        if self._serving.acquire(timeout=timeout_s):
            try:
                self._p.flush(timeout_s)
            finally:
                self._serving.release()
