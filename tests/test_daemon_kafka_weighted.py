"""``streamrank serve --multi-edges sum`` against a real broker: Kafka JSON objects, JSON arrays and
Arrow messages with weights end with NetworkX's weighted PageRank of the graph the records leave;
every message with a bad weight (zero, negative, NaN, infinite, not a number, empty), JSON or
Arrow, is dead-lettered with reason ``bad_weight`` and its detail, and the rest goes on."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from kafka_broker import DaemonProcess, kafka_broker, lineage  # noqa: F401
from weighted_helpers import l1_to_networkx, make_records

from connectors.records import encode_arrow

from streamrank.checkpoints.recovery import load_latest_state as load_latest

pytestmark = pytest.mark.kafka


def _arrow_table(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


#: (message value, dead-letter detail)
BAD = [
    (b'{"src": 1, "dst": 2, "weight": 0}', "weight 0 is zero"),
    (b'{"src": 1, "dst": 2, "weight": -1.5}', "weight -1.5 is negative"),
    (b'{"src": 1, "dst": 2, "weight": NaN}', "weight nan is NaN"),
    (b'{"src": 1, "dst": 2, "weight": Infinity}', "weight inf is infinite"),
    (b'{"src": 1, "dst": 2, "weight": "abc"}', "weight 'abc' is not a number"),
    (b'{"src": 1, "dst": 2, "weight": ""}', "weight is empty"),
    (b'[{"src": 1, "dst": 2, "weight": 1}, {"src": 2, "dst": 1, "op": "-", "weight": 0}]', "weight 0 is zero"),
    (encode_arrow([1, 2], [2, 3], weight=[1.0, 0.0]), "weight 0.0 is zero (row 1)"),
    (encode_arrow([1, 2], [2, 3], weight=[-2.0, 1.0]), "weight -2.0 is negative (row 0)"),
    (encode_arrow([1, 2], [2, 3], weight=[1.0, float("nan")]), None),  # NaN encodes as null: no weight, accepted
    (_arrow_table(pa.table({"src": [1], "dst": [2], "weight": [float("nan")]})), "weight nan is NaN (row 0)"),
    (_arrow_table(pa.table({"src": [1], "dst": [2], "weight": [float("inf")]})), "weight inf is infinite (row 0)"),
    (_arrow_table(pa.table({"src": [1], "dst": [2], "weight": ["abc"]})), "weight 'abc' is not a number (row 0)"),
    (_arrow_table(pa.table({"src": [1], "dst": [2], "weight": [""]})), "weight is empty (row 0)"),
]


def _messages(rng):
    """``(values, records in order, dead-letter details in order)``."""
    records = make_records(31, 700, 60)
    values, taken, details = [], [], []
    i, bad = 0, list(BAD)
    while i < len(records):
        k = min(int(rng.integers(1, 4)), len(records) - i)
        group = records[i:i + k]
        i += k
        r = rng.random()
        if r < 0.4 or k == 1:
            for s, d, ins, w in group:
                values.append(json.dumps({"src": s, "dst": d, "op": "+" if ins else "-",
                                          **({} if w is None else {"weight": w})}).encode())
        elif r < 0.7:
            values.append(json.dumps([{"src": s, "dst": d, "op": "+" if ins else "-",
                                       **({} if w is None else {"weight": w})} for s, d, ins, w in group]).encode())
        else:
            values.append(encode_arrow([g[0] for g in group], [g[1] for g in group], [g[2] for g in group],
                                       weight=[np.nan if g[3] is None else g[3] for g in group]))
        taken += group
        if bad and rng.random() < 0.1:
            value, detail = bad.pop(0)
            values.append(value)
            if detail is None:
                taken += [(1, 2, True, 1.0), (2, 3, True, None)]
            else:
                details.append(detail)
    for value, detail in bad:
        values.append(value)
        if detail is None:
            taken += [(1, 2, True, 1.0), (2, 3, True, None)]
        else:
            details.append(detail)
    return values, taken, details


def test_kafka_weighted_records_in_sum_mode(kafka_broker, tmp_path):
    values, records, details = _messages(np.random.default_rng(5))
    topic = kafka_broker.create_topic(partitions=1)
    dlq = kafka_broker.create_topic(partitions=1)
    prod = kafka_broker.producer()
    for v in values:
        prod.send(topic, value=v, partition=0)
    prod.flush()
    prod.close()
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--dead-letter-topic", dlq,
                       "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 40, "--batch-wait-ms", 30,
                       "--multi-edges", "sum", "--device", "cpu"], tmp_path,
                      env={"STREAMRANK_RANK_FRONTIER_TOL": "1e-9", "STREAMRANK_RANK_PRUNE_TOL": "1e-9"})
    d.wait_edges(len(records), timeout=300)
    assert d.terminate() == 0, d.log_tail()
    assert lineage(d.events())[1] == len(records)
    letters = kafka_broker.read_all(dlq, expect=len(details))
    assert [dict(x.headers)["reason"] for x in letters] == [b"bad_weight"] * len(details)
    assert [dict(x.headers)["detail"].decode() for x in letters] == details
    ids, p = load_latest(tmp_path / "ckpt").ranks
    assert l1_to_networkx(ids, p, records, "sum") <= 1e-6
