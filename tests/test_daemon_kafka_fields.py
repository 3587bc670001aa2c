"""``streamrank serve --src from --dst to --op action`` against a real broker: Kafka JSON records
(single objects, arrays of objects) and Arrow messages with other field names are applied, and a
record with the usual names instead is dead-lettered as ``missing_field`` naming the field."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from kafka_broker import DaemonProcess, kafka_broker, lineage  # noqa: F401

from streamrank.checkpoints.recovery import load_latest_state as load_latest
from streamrank.ids.strings import StringIdMap

pytestmark = pytest.mark.kafka

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace"]


def _arrow(src, dst, action) -> bytes:
    table = pa.table({"from": pa.array(src), "to": pa.array(dst), "action": pa.array(action, pa.int8())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _messages(rng):
    """``(values, edges in order, dead letters expected)``."""
    values, edges = [], []
    for k in range(120):
        s, d = (NAMES[i] for i in rng.choice(len(NAMES), 2, replace=False))
        r = rng.random()
        if r < 0.6:
            values.append(json.dumps({"from": s, "to": d}).encode())
            edges.append((s, d, True))
        elif r < 0.8:
            objs = [{"from": s, "to": d}, {"from": d, "to": s, "action": "insert"}]
            if edges:  # delete an edge inserted before
                a, b, _ = edges[int(rng.integers(0, len(edges)))]
                objs.append({"to": b, "from": a, "action": "-"})
            values.append(json.dumps(objs).encode())
            edges += [(o["from"], o["to"], o.get("action", "+") != "-") for o in objs]
        else:
            values.append(_arrow([s, d], [d, s], [1, 1]))
            edges += [(s, d, True), (d, s, True)]
        if k in (30, 90):
            values.append(json.dumps({"src": s, "dst": d}).encode())  # the usual names: not this stream's
    return values, edges


def test_kafka_records_with_other_field_names(kafka_broker, tmp_path):
    values, edges = _messages(np.random.default_rng(11))
    topic = kafka_broker.create_topic(partitions=1)
    dlq = kafka_broker.create_topic(partitions=1)
    prod = kafka_broker.producer()
    for v in values:
        prod.send(topic, value=v, partition=0)
    prod.flush()
    prod.close()
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--dead-letter-topic", dlq,
                       "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 40, "--batch-wait-ms", 30,
                       "--id-type", "string", "--src", "from", "--dst", "to", "--op", "action"], tmp_path)
    d.wait_edges(len(edges))
    assert d.terminate() == 0, d.log_tail()
    assert lineage(d.events())[1] == len(edges)
    letters = kafka_broker.read_all(dlq, expect=2)
    assert [dict(x.headers)["reason"].decode() for x in letters] == ["missing_field"] * 2
    assert [dict(x.headers)["detail"] for x in letters] == [b"edge lacks from, to (it has src, dst)"] * 2
    assert all(x.value.startswith(b'{"src"') for x in letters)
    present = set()
    for s, d_, ins in edges:
        (present.add if ins else present.discard)((s, d_))
    st = load_latest(tmp_path / "ckpt").engine_state
    names = StringIdMap.from_state(st).decode(np.asarray(st["external"]))
    got = set(zip(names[st["src"]].tolist(), names[st["dst"]].tolist()))
    assert got == present and len(got) > 10
