"""Kafka records whose edge fields have other names (``serve --src from --dst to --op action``):
the per-message parser and the whole-fetch decoder read JSON objects and Arrow columns by those
names, name the missing field in the dead-letter detail, and agree message by message; the usual
names keep the compiled scan."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from test_batch_decode import assert_like_per_message

from connectors import batch_decode
from connectors.batch_decode import decode_values
from connectors.fetch import FetchedRecords, fetch_items
from connectors.records import DEFAULT_FIELDS, RecordError, RecordFields, encode_arrow, parse_message
from streamrank.daemon.config import DaemonConfig
from streamrank.errors import InvalidArgumentError
from streamrank.ids.kinds import IdTypeLock

FROM_TO = RecordFields("from", "to", "action")


def per_message(values, fields, id_type):
    out = []
    for v in values:
        try:
            e = parse_message(v, fields=fields, id_type=id_type)
            out.append((list(e.src.to_pylist() if isinstance(e.src, pa.Array) else e.src.tolist()),
                        list(e.dst.to_pylist() if isinstance(e.dst, pa.Array) else e.dst.tolist()),
                        e.insert.tolist()))
        except RecordError as exc:
            out.append(exc.reason)
    return out


def test_json_object_with_other_field_names():
    e = parse_message(b'{"from": "alice", "to": "bob"}', id_type="string", fields=FROM_TO)
    assert e.src.tolist() == ["alice"] and e.dst.tolist() == ["bob"] and e.insert.tolist() == [True]
    e = parse_message(b'{"to": 2, "from": 1, "action": "delete", "src": 9}', fields=FROM_TO)
    assert (e.src.tolist(), e.dst.tolist(), e.insert.tolist()) == ([1], [2], [False])
    e = parse_message(b'[{"from": "a", "to": "b"}, {"from": "b", "to": "c", "action": "-"}]', id_type="auto",
                      fields=FROM_TO)
    assert (e.src.tolist(), e.dst.tolist(), e.insert.tolist()) == (["a", "b"], ["b", "c"], [True, False])


def test_missing_renamed_field_is_named_in_the_dead_letter():
    with pytest.raises(RecordError) as exc:
        parse_message(b'{"src": "alice", "to": "bob"}', id_type="string", fields=FROM_TO)
    assert exc.value.reason == "missing_field"
    assert exc.value.detail == "edge lacks from (it has src, to)"
    with pytest.raises(RecordError) as exc:
        parse_message(b'{"from": "x", "to": 3}', id_type="string", fields=FROM_TO)
    assert exc.value.reason == "mixed_id_types" and "to" in exc.value.detail
    with pytest.raises(RecordError) as exc:
        parse_message(b'{"from": 1, "to": 2, "action": "bogus"}', fields=FROM_TO)
    assert exc.value.reason == "unknown_op"
    with pytest.raises(RecordError) as exc:  # the usual names say nothing under other ones
        parse_message(b'{"src": 1, "dst": 2}', fields=FROM_TO)
    assert exc.value.detail == "edge lacks from, to (it has src, dst)"


def test_op_none_ignores_any_op_field_and_csv_keeps_its_order():
    no_op = RecordFields("from", "to", None)
    e = parse_message(b'{"from": 1, "to": 2, "op": "nonsense"}', fields=no_op)
    assert e.insert.tolist() == [True]
    assert parse_message(b"1,2,-", fields=no_op).insert.tolist() == [True]
    e = parse_message(b"3,4,-", fields=FROM_TO)  # CSV carries no names: src,dst,op
    assert (e.src.tolist(), e.dst.tolist(), e.insert.tolist()) == ([3], [4], [False])


def test_arrow_columns_with_other_names():
    table = pa.table({"to": pa.array(["b", "c"]), "from": pa.array(["a", "b"]),
                      "action": pa.array([1, -1], pa.int8())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    e = parse_message(sink.getvalue().to_pybytes(), id_type="string", fields=FROM_TO)
    assert (e.src.to_pylist(), e.dst.to_pylist(), e.insert.tolist()) == (["a", "b"], ["b", "c"], [True, False])
    with pytest.raises(RecordError) as exc:
        parse_message(encode_arrow(["a"], ["b"]), id_type="string", fields=FROM_TO)
    assert exc.value.reason == "missing_field" and "from and to" in exc.value.detail


def _messages(rng, kind: str) -> list:
    def ident(v):
        return f"n{v}" if kind == "string" else int(v)

    out = []
    for _ in range(300):
        s, d = ident(rng.integers(0, 50)), ident(rng.integers(0, 50))
        r = rng.random()
        if r < 0.5:
            obj = {"from": s, "to": d}
            if rng.random() < 0.5:
                obj["action"] = "+" if rng.random() < 0.7 else "-"
            if rng.random() < 0.2:
                obj["ts"] = int(rng.integers(0, 1000))
            out.append(json.dumps(obj).encode())
        elif r < 0.65:
            objs = [{"from": ident(rng.integers(0, 50)), "to": ident(rng.integers(0, 50)),
                     "action": -1 if rng.random() < 0.2 else 1} for _ in range(int(rng.integers(1, 5)))]
            out.append(json.dumps(objs).encode())
        elif r < 0.75:
            out.append(f"{s},{d},-".encode())
        elif r < 0.8:
            table = pa.table({"from": [s], "to": [d]})
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as w:
                w.write_table(table)
            out.append(sink.getvalue().to_pybytes())
        elif r < 0.86:
            out.append(json.dumps({"src": s, "dst": d}).encode())           # the usual names: missing_field
        elif r < 0.9:
            out.append(json.dumps({"from": s}).encode())                    # no "to"
        elif r < 0.94:
            out.append(json.dumps({"from": s, "to": d, "action": "?"}).encode())  # unknown op
        else:
            out.append(json.dumps({"from": s, "to": None}).encode())        # null
    return out


@pytest.mark.parametrize("kind", ["int", "string"])
def test_whole_fetch_with_other_names_matches_per_message(kind):
    values = _messages(np.random.default_rng(3 if kind == "int" else 4), kind)
    got = decode_values(values, id_type=kind, fields=FROM_TO)
    ref = per_message(values, FROM_TO, kind)
    assert_like_per_message(values, got, ref)
    assert sum(isinstance(r, str) for r in ref) > 20
    assert got.vectorized > 100  # renamed JSON objects take pyarrow's JSON reader, not one by one
    for i, err in got.errors.items():
        if err.reason == "missing_field" and values[i].startswith(b'{"src"'):
            assert err.detail.startswith("edge lacks from, to")


def test_usual_names_keep_the_compiled_scan_and_other_names_skip_it(monkeypatch):
    calls = []
    real = batch_decode.scan_edge_objects

    def counting(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(batch_decode, "scan_edge_objects", counting)
    usual = [b'{"op":"+","src":%d,"dst":%d}' % (i, i + 1) for i in range(50)]
    got = decode_values(usual)
    assert calls == [1] and got.vectorized == 50 and got.src.tolist() == list(range(50))
    assert decode_values(usual, fields=RecordFields()).vectorized == 50 and len(calls) == 2
    renamed = [b'{"action":"+","from":%d,"to":%d}' % (i, i + 1) for i in range(50)]
    got = decode_values(renamed, fields=FROM_TO)
    assert len(calls) == 2 and got.vectorized == 50 and got.dst.tolist() == list(range(1, 51))
    got = decode_values(usual, fields=FROM_TO)  # the usual names are missing fields now
    assert len(got.errors) == 50 and {e.reason for e in got.errors.values()} == {"missing_field"}


def test_fetch_items_pass_the_names_on():
    values = [b'{"from": "a", "to": "b"}', b'{"src": "a", "dst": "b"}', b'{"from": "b", "to": "c"}']
    rec = FetchedRecords.from_records(["kafka:t:0"] * 3, ["t"] * 3, [0] * 3, [10, 11, 12], [None] * 3, values)
    items = fetch_items(rec, id_type="string", id_lock=IdTypeLock("string"), fields=FROM_TO)
    assert [type(i).__name__ for i in items] == ["EdgeRun", "BadRecord", "EdgeRun"]
    assert items[1].reason == "missing_field" and items[1].detail == "edge lacks from, to (it has src, dst)"
    assert items[2].src.to_pylist() == ["b"]


def test_field_names_from_the_daemon_settings():
    assert RecordFields.from_settings() == DEFAULT_FIELDS and DEFAULT_FIELDS.is_default
    assert RecordFields.from_settings("from", "to", "none") == RecordFields("from", "to", None)
    assert not RecordFields.from_settings(op="action").is_default
    with pytest.raises(InvalidArgumentError, match="--dst 2: Kafka records are read by field name"):
        RecordFields.from_settings("from", "2")
    with pytest.raises(InvalidArgumentError, match="same field"):
        RecordFields("a", "a")
    with pytest.raises(InvalidArgumentError):
        RecordFields("", "b")
    with pytest.raises(InvalidArgumentError):
        decode_values([b"1,2"], fields={"src": "a"})
    kafka = dict(checkpoint_dir="c", bootstrap_servers="h:1", topic=["t"])
    assert DaemonConfig(**kafka, src_column="from", dst_column="to").validate().record_fields() == \
        RecordFields("from", "to", "op")
    with pytest.raises(InvalidArgumentError, match="--src 1"):
        DaemonConfig(**kafka, src_column="1").validate()
    DaemonConfig(checkpoint_dir="c", input_dir="d", src_column="1").validate()  # files: column numbers
