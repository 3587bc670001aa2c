"""A ``consume()`` result read as columns by the confluent source: partitions grouped (order within
each kept), positions per partition, fetch errors left out, keys kept for rejected records."""

from __future__ import annotations

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from connectors.fetch import EdgeRun  # noqa: E402
from connectors.kafka_confluent import ConfluentEdgeSource  # noqa: E402


def msg(topic, partition, offset, value, *, key=None, ts=1000):
    return confluent_kafka.Message(topic=topic, partition=partition, offset=offset, key=key, value=value,
                                   timestamp=(confluent_kafka.TIMESTAMP_CREATE_TIME, ts + offset))


def source(topics):
    return ConfluentEdgeSource(bootstrap_servers="127.0.0.1:1", topics=topics, id_type="int")


def edge(s, d):
    return b'{"op":"+","src":%d,"dst":%d}' % (s, d)


def test_interleaved_partitions_are_grouped_in_order():
    src = source(["a"])
    msgs = [msg("a", 1, 10, edge(1, 2)), msg("a", 0, 5, edge(3, 4)), msg("a", 1, 11, edge(5, 6)),
            msg("a", 0, 6, edge(7, 8)), msg("a", 2, 0, edge(9, 10))]
    rec = src._columns(msgs)
    assert [(s.pos_key, s.partition, s.start, s.stop) for s in rec.segments] == \
        [("kafka:a:0", 0, 0, 2), ("kafka:a:1", 1, 2, 4), ("kafka:a:2", 2, 4, 5)]
    assert rec.offsets.tolist() == [5, 6, 10, 11, 0] and rec.timestamps_ms.tolist() == [1005, 1006, 1010, 1011, 1000]
    items = src.decode(rec)
    assert [(i.pos_key, i.pos_value, i.src.tolist(), i.positions.tolist()) for i in items] == \
        [("kafka:a:0", 7, [3, 7], [6, 7]), ("kafka:a:1", 12, [1, 5], [11, 12]), ("kafka:a:2", 1, [9], [1])]
    assert all(isinstance(i, EdgeRun) for i in items)


def test_two_topics_errors_and_rejected_records():
    src = source(["a", "b"])
    err = confluent_kafka.Message(topic="a", partition=0, offset=7,
                                  error=confluent_kafka.KafkaError(confluent_kafka.KafkaError._PARTITION_EOF))
    msgs = [msg("b", 0, 3, edge(1, 2)), err, msg("a", 0, 8, b"not an edge", key=b"k8"), msg("b", 0, 4, edge(3, 4)),
            msg("a", 0, 9, edge(5, 6))]
    items = src.decode(src._columns(msgs))
    got = [(type(i).__name__, i.pos_key, i.pos_value) for i in items]
    assert got == [("BadRecord", "kafka:a:0", 9), ("EdgeRun", "kafka:a:0", 10), ("EdgeRun", "kafka:b:0", 5)]
    bad = items[0]
    assert (bad.topic, bad.partition, bad.offset, bad.key, bad.value, bad.reason) == \
        ("a", 0, 8, b"k8", b"not an edge", "non_integer_id")


def test_an_empty_consume():
    src = source(["a"])
    rec = src._columns([])
    assert len(rec) == 0 and src.decode(rec) == []
