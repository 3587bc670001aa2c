"""Message parsing: every accepted format, and each rejection reason."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from connectors.records import REASONS, RecordError, encode_arrow, encode_json, parse_message


def edges(msg, **kw):
    e = parse_message(msg, **kw)
    return e.src.tolist(), e.dst.tolist(), e.insert.tolist()


def test_single_json_edge_ops():
    assert edges(b'{"op": "+", "src": 1, "dst": 2}') == ([1], [2], [True])
    assert edges(b'{"op": "-", "src": 1, "dst": 2}') == ([1], [2], [False])
    assert edges(b'{"op": "insert", "src": 3, "dst": 4}') == ([3], [4], [True])
    assert edges(b'{"op": "delete", "src": 3, "dst": 4}') == ([3], [4], [False])
    assert edges(b'{"src": 5, "dst": 6}') == ([5], [6], [True])
    assert edges(b'{"src": "7", "dst": 8, "op": -1}') == ([7], [8], [False])
    big = 2**63 - 1
    assert edges(json.dumps({"src": big, "dst": 0}).encode()) == ([big], [0], [True])


def test_json_array_and_csv():
    msg = b'[{"src": 1, "dst": 2}, {"op": "-", "src": 2, "dst": 3}, [4, 5, "+"]]'
    assert edges(msg) == ([1, 2, 4], [2, 3, 5], [True, False, True])
    assert edges(b"1,2") == ([1], [2], [True])
    assert edges(b"1,2,-\n3,4,insert\n") == ([1, 3], [2, 4], [False, True])
    assert edges(b"  9\t10  ") == ([9], [10], [True])


def test_arrow_ipc_roundtrip():
    src = np.arange(100, dtype=np.int64)
    dst = src[::-1].copy()
    ins = src % 3 != 0
    e = parse_message(encode_arrow(src, dst, ins))
    assert np.array_equal(e.src, src) and np.array_equal(e.dst, dst) and np.array_equal(e.insert, ins)
    e = parse_message(encode_json(src[:3], dst[:3], ins[:3]))
    assert e.insert.tolist() == ins[:3].tolist()


def _arrow(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("msg, reason", [
    (b'{"src": 1, "dst": ', "bad_json"),
    (b"\xff\xfe{", "bad_csv"),
    (b"hello", "bad_csv"),
    (b"1,2,3,4", "bad_csv"),
    (b'{"src": 1}', "missing_field"),
    (b'{"dst": 1}', "missing_field"),
    (b'{"src": null, "dst": 1}', "missing_field"),
    (b'{"src": 1.5, "dst": 1}', "non_integer_id"),
    (b'{"src": "abc", "dst": 1}', "non_integer_id"),
    (b'{"src": true, "dst": 1}', "non_integer_id"),
    (b"x,1", "non_integer_id"),
    (b'{"src": -1, "dst": 1}', "negative_id"),
    (b"-5,1", "negative_id"),
    (json.dumps({"src": 2**63, "dst": 1}).encode(), "id_out_of_range"),
    (json.dumps({"src": 2**70, "dst": 1}).encode(), "id_out_of_range"),
    (b'{"op": "upsert", "src": 1, "dst": 2}', "unknown_op"),
    (b"1,2,maybe", "unknown_op"),
    (b'[{"src": 1, "dst": 2}, {"src": -1, "dst": 2}]', "negative_id"),
    (b"", "empty"),
    (b"[]", "empty"),
    (b"\xff\xff\xff\xffgarbage", "bad_arrow"),
])
def test_rejections(msg, reason):
    assert reason in REASONS
    with pytest.raises(RecordError) as info:
        parse_message(msg)
    assert info.value.reason == reason, info.value


def test_oversize_and_arrow_rejections():
    with pytest.raises(RecordError) as info:
        parse_message(b'{"src": 1, "dst": 2}' + b" " * 100, max_bytes=50)
    assert info.value.reason == "oversize"
    cases = [
        (pa.table({"src": [1]}), "missing_field"),
        (pa.table({"src": [1.0], "dst": [2.0]}), "non_integer_id"),
        (pa.table({"src": pa.array([-1], pa.int64()), "dst": [2]}), "negative_id"),
        (pa.table({"src": pa.array([2**64 - 1], pa.uint64()), "dst": [2]}), "id_out_of_range"),
        (pa.table({"src": [1], "dst": [2], "op": pa.array([5], pa.int8())}), "unknown_op"),
        (pa.table({"src": pa.array([1, None], pa.int64()), "dst": [2, 3]}), "missing_field"),
    ]
    for table, reason in cases:
        with pytest.raises(RecordError) as info:
            parse_message(_arrow(table))
        assert info.value.reason == reason
    e = parse_message(_arrow(pa.table({"src": [1], "dst": [2], "op": ["-"]})))
    assert e.insert.tolist() == [False]
