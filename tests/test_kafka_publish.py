"""The keyed rank publish in one call per batch (``keyed_messages`` + ``send_many``).

- ``keyed_messages`` gives the bytes of the per-message formula it replaced (kept here as the
  reference), for integer ids, string ids with and without JSON escaping, and other ids;
- ``RankPublisher.publish`` sends the same messages, in the same order, through ``send_many`` as
  through ``send``;
- with a real broker and both clients, the records read back are those messages (keys, values,
  headers, per-key order);
- confluent-kafka's acknowledgement bookkeeping (a client double that reports when told to):
  ``wait_acked`` returns only once every message sent before the mark is reported, and not
  later ones; a failed report raises ``DeliveryFailed``; a full local queue resumes with the
  refused message, nothing lost or doubled; a refused message raises ``SinkError`` with the ones
  before it counted; and a real client whose broker is gone raises ``DeliveryFailed``.
"""

from __future__ import annotations

import json
import re
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_broker import free_port, kafka_broker  # noqa: F401

from connectors.kafka_sink import RankPublisher, keyed_messages

# --------------------------------------------------------------------------- the reference (the old loop)

_ESCAPE = re.compile(r'["\\\x00-\x1f\u2028\u2029]|[\ud800-\udfff]')


def reference_messages(seq, ids, ranks):
    """The per-message formula ``RankPublisher.publish`` used before ``keyed_messages``."""
    out = []
    for v, r in zip(ids.tolist(), np.asarray(ranks).tolist()):
        key = (v if isinstance(v, str) else str(int(v))).encode("utf-8")
        if isinstance(v, str):
            jv = json.dumps(v, ensure_ascii=False).encode("utf-8") if _ESCAPE.search(v) else b'"%s"' % v.encode("utf-8")
        else:
            jv = b"%d" % v
        out.append((key, b'{"seq":%d,"vertex":%s,"rank":%s}' % (seq, jv, repr(r).encode())))
    return out


RANKS = [0.0, 1.0, 0.5, 1e-4, 9.99e-5, 1e-5, 1.2345678901234567e-07, 1e16, 1e15, 2.0 ** -1074,
         1 / 3, 123456.789, 5e-324, 1.7976931348623157e308]


def _check(seq, ids, ranks):
    keys, values = keyed_messages(seq, ids, ranks)
    assert list(zip(keys, values)) == reference_messages(seq, ids, ranks)
    return keys, values


def test_integer_ids_byte_identical():
    rng = np.random.default_rng(3)
    ids = np.concatenate([[0, 1, 9, 10, 2 ** 63 - 1], rng.integers(0, 2 ** 40, 500)]).astype(np.int64)
    ranks = np.concatenate([RANKS, 10.0 ** rng.uniform(-12, 3, ids.shape[0] - len(RANKS))])
    keys, values = _check(17, ids, ranks)
    assert keys[:2] == [b"0", b"1"] and values[1] == b'{"seq":17,"vertex":1,"rank":1.0}'
    _check(1, np.array([2 ** 64 - 1, 5], dtype=np.uint64), np.array([0.25, 0.75]))
    _check(2, np.array([3, 4], dtype=np.int32), np.array([0.25, 0.75], dtype=np.float32))
    assert keyed_messages(3, np.zeros(0, dtype=np.int64), np.zeros(0)) == ([], [])


def test_string_ids_byte_identical_with_and_without_escaping():
    plain = np.array(["alice", "bob", "ünï", "日本", "x y", "42", "a'b", "😀"], dtype=object)
    ranks = np.linspace(1e-7, 1e-6, plain.shape[0])
    keys, values = _check(5, plain, ranks)
    assert values[2] == b'{"seq":5,"vertex":"\xc3\xbcn\xc3\xaf","rank":%s}' % repr(float(ranks[2])).encode()
    escaped = np.array(["alice", 'q"uote', "back\\slash", "tab\there", "nl\n", "\x00", "\u2028", "\u2029x", "ok"],
                       dtype=object)
    keys, values = _check(6, escaped, np.linspace(0.1, 0.9, escaped.shape[0]))
    for k, v in zip(keys, values):  # and they are JSON that gives the id back
        assert json.loads(v)["vertex"] == k.decode("utf-8")
    assert keyed_messages(7, np.array([], dtype=object), np.zeros(0)) == ([], [])


def test_other_ids_take_the_per_vertex_path():
    ids = np.array([7, "seven", np.int64(8)], dtype=object)  # not all str: the helpers per vertex
    _check(9, ids, np.array([0.1, 0.2, 0.7]))
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate is not UTF-8, as before
        keyed_messages(1, np.array(["\ud800"], dtype=object), np.array([1.0]))


@settings(max_examples=150, deadline=None)
@given(ids=st.lists(st.text(min_size=1, max_size=8), min_size=0, max_size=20, unique=True),
       ranks=st.data())
def test_string_ids_byte_identical_hypothesis(ids, ranks):
    ids = [i for i in ids if not re.search(r"[\ud800-\udfff]", i)]
    r = ranks.draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=len(ids),
                            max_size=len(ids)))
    _check(11, np.array(ids, dtype=object), np.array(r, dtype=np.float64))


@settings(max_examples=150, deadline=None)
@given(ids=st.lists(st.integers(0, 2 ** 63 - 1), max_size=30, unique=True), data=st.data())
def test_integer_ids_byte_identical_hypothesis(ids, data):
    r = data.draw(st.lists(st.floats(allow_nan=False), min_size=len(ids), max_size=len(ids)))
    _check(12, np.array(ids, dtype=np.int64), np.array(r, dtype=np.float64))


# --------------------------------------------------------------------------- the publisher


class SendOnly:
    def __init__(self):
        self.sent = []

    def send(self, topic, *, key, value, headers):
        self.sent.append((topic, key, value, list(headers)))


class SendMany(SendOnly):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def send_many(self, topic, keys, values, headers):
        self.calls += 1
        for k, v in zip(keys, values):
            self.sent.append((topic, k, v, list(headers)))


@pytest.mark.parametrize("ids", [np.array([30, 10, 20, 40]), np.array(["c", 'q"', "a", "ü"], dtype=object)])
@pytest.mark.parametrize("fmt", ["keyed", "both"])
def test_publisher_sends_the_same_messages_through_send_many(ids, fmt):
    p1 = np.array([0.1, 0.2, 0.3, 0.4])
    p2 = np.array([0.1, 0.25, 0.3, 0.35])
    out = {}
    for cls in (SendOnly, SendMany):
        prod = cls()
        pub = RankPublisher(prod, "ranks", threshold=1e-3, top_k=2, top_k_every=2, publish_format=fmt)
        pub.publish(1, ids, p1)
        pub.publish(2, ids, p2)
        out[cls] = prod.sent
        if cls is SendMany:
            assert prod.calls == 2
    assert out[SendOnly] == out[SendMany]
    keyed = [m for m in out[SendMany] if m[1] not in (b"__batch__", b"__top_k__")]
    assert [m[2] for m in keyed[:4]] == [v for _, v in reference_messages(1, ids, p1)]
    assert [m[2] for m in keyed[4:]] == [v for _, v in reference_messages(2, ids[[1, 3]], p2[[1, 3]])]
    assert all(m[3] == [("seq", b"2")] for m in keyed[4:])


# --------------------------------------------------------------------------- real broker, both clients


def _confluent():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


CLIENTS = [pytest.param("confluent", marks=pytest.mark.skipif(not _confluent(), reason="confluent-kafka not installed")),
           "kafka-python"]


@pytest.mark.kafka
@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("kind", ["int", "string"])
def test_records_on_the_broker_are_the_old_messages(kafka_broker, client, kind):  # noqa: F811
    from connectors.kafka_clients import make_producer

    topic = kafka_broker.create_topic(partitions=3)
    n = 300
    if kind == "int":
        ids = np.arange(1000, 1000 + n, dtype=np.int64) * 7919
    else:
        ids = np.array([f"v{i}" if i % 5 else f'q"{i}\\\t' for i in range(n)], dtype=object)
    rng = np.random.default_rng(1)
    p1 = rng.random(n) / n
    p2 = p1 + 1e-3
    t0 = time.time()
    prod = make_producer(client, kafka_broker.bootstrap)
    try:
        pub = RankPublisher(prod, topic, threshold=0.0, top_k=0, publish_format="keyed")
        pub.publish(1, ids, p1)
        pub.publish(2, ids, p2)
        prod.wait_acked(prod.mark(), timeout_s=30)
    finally:
        prod.close()
    got = kafka_broker.read_all(topic, expect=2 * n)
    want = {1: reference_messages(1, ids, p1), 2: reference_messages(2, ids, p2)}
    assert len(got) == 2 * n
    by_key = {}
    for r in sorted(got, key=lambda r: (r.partition, r.offset)):
        assert t0 - 1 <= r.timestamp / 1000 <= time.time() + 1  # the client's time of sending, as before
        (hk, hv), = [tuple(h) for h in r.headers]
        assert hk == "seq"
        by_key.setdefault(r.key, []).append((int(hv), r.value))
    assert set(by_key) == {k for k, _ in want[1]}
    for seq in (1, 2):
        for k, v in want[seq]:
            assert by_key[k][seq - 1] == (seq, v)  # per key: seq 1 then seq 2, the same bytes


@pytest.mark.kafka
@pytest.mark.parametrize("client", CLIENTS)
def test_send_many_then_mark_waits_for_all_of_them(kafka_broker, client):  # noqa: F811
    from connectors.kafka_clients import make_producer

    topic = kafka_broker.create_topic(partitions=2)
    prod = make_producer(client, kafka_broker.bootstrap)
    try:
        prod.send_many(topic, [b"%d" % i for i in range(3000)], [b"before"] * 3000, [("h", b"1")])
        token = prod.mark()
        waiter = threading.Thread(target=prod.wait_acked, args=(token,), kwargs={"timeout_s": 20.0})
        waiter.start()
        prod.send_many(topic, [b"%d" % i for i in range(3000)], [b"after"] * 3000, [("h", b"2")])
        waiter.join(25)
        assert not waiter.is_alive()
        got = kafka_broker.read_all(topic)
        assert sum(r.value == b"before" for r in got) == 3000
        prod.flush(timeout_s=20)
    finally:
        prod.close()


def test_confluent_delivery_failure_raises(monkeypatch):
    """A real librdkafka producer whose broker is gone: the messages time out, and both
    ``wait_acked`` and ``flush`` raise ``DeliveryFailed``."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from connectors.kafka_clients import DeliveryFailed, make_producer

    real = confluent_kafka.Producer
    monkeypatch.setattr(confluent_kafka, "Producer", lambda conf: real({**conf, "message.timeout.ms": 500}))
    prod = make_producer("confluent", f"127.0.0.1:{free_port()}")  # nothing listens there
    prod.send_many("t", [b"1", b"2"], [b"a", b"b"], [("seq", b"1")])
    with pytest.raises(DeliveryFailed, match="2 messages were not delivered"):
        prod.wait_acked(prod.mark(), timeout_s=20)
    with pytest.raises(DeliveryFailed):
        prod.flush(timeout_s=5)
    prod.close(timeout_s=0.1)


# --------------------------------------------------------------------------- a confluent-kafka double


class FakeClient:
    """``confluent_kafka.Producer`` as the wrapper uses it: ``produce`` queues a message with its
    callback; ``poll``/``flush`` report the messages ``ack(n)`` released (with ``errors``); the
    queue holds ``room`` messages before ``BufferError``; ``refuse_at`` raises KafkaException."""

    def __init__(self, conf):
        self.queued = []  # (value, key, partition, callback, timestamp, headers)
        self.released = 0  # messages the "broker" acknowledged so far (in order)
        self.reported = 0
        self.errors = {}  # index -> error passed to the callback
        self.room = 10 ** 9
        self.refuse_at = None
        self.full_once_at = set()

    def produce(self, topic, value=None, key=None, partition=-1, callback=None, on_delivery=None, timestamp=0,
                headers=None):
        from confluent_kafka import KafkaException

        i = len(self.queued)
        if i in self.full_once_at:
            self.full_once_at.discard(i)
            raise BufferError("Local: Queue full")
        if self.refuse_at == i:
            raise KafkaException("refused")
        self.queued.append((topic, value, key, partition, callback or on_delivery, timestamp, headers))

    def poll(self, timeout=0):
        while self.reported < self.released:
            cb = self.queued[self.reported][4]
            err = self.errors.get(self.reported)
            self.reported += 1
            cb(err, None)
        return 0

    def flush(self, timeout=0):
        self.released = len(self.queued)
        self.poll()
        return 0

    def ack(self, n):
        self.released = min(len(self.queued), self.released + n)


@pytest.fixture
def fake(monkeypatch):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from connectors.kafka_clients import make_producer

    made = []

    def factory(conf):
        made.append(FakeClient(conf))
        return made[-1]

    monkeypatch.setattr(confluent_kafka, "Producer", factory)
    prod = make_producer("confluent", "fake:9092")
    return prod, made[0]


def test_wait_acked_waits_for_the_marked_messages_only(fake):
    from connectors.kafka_clients import SinkError

    prod, client = fake
    prod.send_many("t", [b"1", b"2", b"3"], [b"a", b"b", b"c"], [("seq", b"1")])
    prod.send("t", key=b"k", value=b"d", headers=[("seq", b"1")])
    token = prod.mark()
    prod.send_many("t", [b"4", b"5"], [b"e", b"f"], [("seq", b"2")])
    assert [(m[1], m[2], m[3], m[5], m[6]) for m in client.queued[:3]] == [
        (b"a", b"1", -1, 0, [("seq", b"1")]), (b"b", b"2", -1, 0, [("seq", b"1")]), (b"c", b"3", -1, 0, [("seq", b"1")])]
    client.ack(3)  # three of the four marked messages
    with pytest.raises(SinkError, match="1 messages unacknowledged"):
        prod.wait_acked(token, timeout_s=0.05)
    client.ack(1)  # the fourth: the two later ones stay unacknowledged
    prod.wait_acked(token, timeout_s=1.0)
    token2 = prod.mark()
    with pytest.raises(SinkError, match="2 messages unacknowledged"):
        prod.wait_acked(token2, timeout_s=0.05)
    client.ack(2)
    prod.wait_acked(token2, timeout_s=1.0)
    prod.wait_acked(token, timeout_s=0.0)  # an old token: done at once
    assert prod.failed == 0


def test_a_failed_report_raises_delivery_failed_everywhere_after(fake):
    from connectors.kafka_clients import DeliveryFailed

    prod, client = fake
    prod.send_many("t", [b"1", b"2"], [b"a", b"b"], [])
    token = prod.mark()
    client.errors[1] = "Local: Message timed out"
    client.ack(2)
    with pytest.raises(DeliveryFailed, match="1 messages were not delivered .last: Local: Message timed out"):
        prod.wait_acked(token, timeout_s=1.0)
    prod.send_many("t", [b"3"], [b"c"], [])
    client.ack(1)
    with pytest.raises(DeliveryFailed):
        prod.wait_acked(prod.mark(), timeout_s=1.0)  # a later mark whose own messages were delivered
    with pytest.raises(DeliveryFailed):
        prod.flush(timeout_s=1.0)


def test_full_queue_resumes_with_the_refused_message(fake):
    from connectors.kafka_clients import SinkError

    prod, client = fake
    client.full_once_at = {2, 5}
    keys = [b"%d" % i for i in range(8)]
    prod.send_many("t", keys, [k + b"v" for k in keys], [])
    assert [m[2] for m in client.queued] == keys  # each once, in order
    token = prod.mark()
    client.ack(8)
    prod.wait_acked(token, timeout_s=1.0)
    client.refuse_at = 10
    with pytest.raises(SinkError, match="refused"):
        prod.send_many("t", keys[:4], keys[:4], [])  # messages 8 and 9 go, 10 is refused
    token = prod.mark()
    assert len(client.queued) == 10
    client.ack(1)
    with pytest.raises(SinkError, match="1 messages unacknowledged"):  # the two that went are counted
        prod.wait_acked(token, timeout_s=0.05)
    client.ack(1)
    prod.wait_acked(token, timeout_s=1.0)


def test_reports_are_served_under_one_lock(fake):
    """Callbacks never run on two threads at once: ``poll`` from the sending thread returns
    without serving while another thread serves."""
    prod, client = fake
    prod.send_many("t", [b"1"], [b"a"], [])
    with prod._serving:  # as if the checkpoint worker were inside poll()
        client.ack(1)
        assert prod.poll() is False
        assert client.reported == 0
    assert prod.poll() is True and client.reported == 1


def test_kafka_python_send_many_reports_failures():
    from connectors.kafka_clients import DeliveryFailed, KafkaPythonProducer

    class Future:
        def __init__(self, fail):
            self.fail = fail

        def add_errback(self, fn):
            if self.fail:
                fn(RuntimeError("gone"))

    class Client:
        def __init__(self):
            self.sent = []

        def send(self, topic, *, key, value, headers):
            self.sent.append((topic, key, value, headers))
            return Future(key == b"2")

        def flush(self, timeout=None):
            pass

    prod = KafkaPythonProducer.__new__(KafkaPythonProducer)
    prod._p, prod.failed, prod._err = Client(), 0, None
    prod.send_many("t", [b"1", b"2", b"3"], [b"a", b"b", b"c"], [("seq", b"4")])
    assert prod._p.sent == [("t", b"1", b"a", [("seq", b"4")]), ("t", b"2", b"b", [("seq", b"4")]),
                            ("t", b"3", b"c", [("seq", b"4")])]
    with pytest.raises(DeliveryFailed, match="1 messages were not delivered .last: gone"):
        prod.wait_acked(prod.mark())
