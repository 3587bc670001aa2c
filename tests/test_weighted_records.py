"""Weights in Kafka messages (JSON objects and arrays, ``[src, dst, op, weight]`` lists, CSV lines,
Arrow IPC columns): read only by a weighted stream, every bad weight a rejected message with reason
``bad_weight``, the per-message parser and the vectorized decoder agreeing."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

from connectors.batch_decode import decode_values
from connectors.fetch import FetchedRecords, fetch_items
from connectors.records import REASONS, RecordError, encode_arrow, encode_json, parse_message
from connectors.record_fields import RecordFields
from connectors.weights import column_weights, parse_weight
from streamrank.errors import InvalidArgumentError

WEIGHTED = RecordFields(weight="weight", weighted=True)

#: (JSON weight value as written, detail of the rejection)
BAD_JSON = [
    ("0", "weight 0 is zero"),
    ("0.0", "weight 0.0 is zero"),
    ("-2", "weight -2 is negative"),
    ("NaN", "weight nan is NaN"),
    ("Infinity", "weight inf is infinite"),
    ("-Infinity", "weight -inf is infinite"),
    ('"abc"', "weight 'abc' is not a number"),
    ('""', "weight is empty"),
    ('"nan"', "weight 'nan' is NaN"),
    ("true", "weight True is not a number"),
    ("[1]", "weight [1] is not a number"),
]


def _obj(weight_text: str, op: str = "+") -> bytes:
    return b'{"src": 1, "dst": 2, "op": "%s", "weight": %s}' % (op.encode(), weight_text.encode())


def test_bad_weight_is_a_reason():
    assert "bad_weight" in REASONS


@pytest.mark.parametrize("text,detail", BAD_JSON)
def test_json_object_with_a_bad_weight_is_rejected(text, detail):
    for op in ("+", "-"):  # a delete's weight is checked as well when it has one
        with pytest.raises(RecordError) as err:
            parse_message(_obj(text, op), fields=WEIGHTED)
        assert err.value.reason == "bad_weight"
        assert err.value.detail == detail


@pytest.mark.parametrize("text,_detail", BAD_JSON)
def test_unweighted_streams_never_read_weights(text, _detail):
    e = parse_message(_obj(text), fields=RecordFields())
    assert e.weight is None and e.src.tolist() == [1] and e.insert.tolist() == [True]
    d = decode_values([_obj(text), b"3,4"])
    assert d.weight is None and d.counts.tolist() == [1, 1] and not d.errors


def test_json_weights_and_their_absence():
    e = parse_message(b'[{"src":1,"dst":2,"weight":2.5},{"src":1,"dst":3},{"src":1,"dst":2,"op":"-"},'
                      b'{"src":1,"dst":3,"op":"-","weight":null},{"src":4,"dst":5,"weight":"7e-1"},'
                      b'{"src":4,"dst":6,"weight":3}]', fields=WEIGHTED)
    assert e.weight[[0, 1, 4, 5]].tolist() == [2.5, 1.0, 0.7, 3.0]  # an insert without one weighs 1
    assert np.isnan(e.weight[[2, 3]]).all()  # a delete without one: NaN
    assert e.weight.dtype == np.float64


def test_lists_csv_lines_and_other_field_names():
    assert parse_message(b"[1, 2, \"+\", 4.5]", fields=WEIGHTED).weight.tolist() == [4.5]
    with pytest.raises(RecordError, match="more than 3 items"):
        parse_message(b"[1, 2, \"+\", 4.5]")
    assert parse_message(b"1,2,+,4.5\n2,3", fields=WEIGHTED).weight.tolist() == [4.5, 1.0]
    e = parse_message(b"1,2,-,", fields=WEIGHTED)  # CSV: an empty field on a delete is no weight
    assert math.isnan(e.weight[0])
    for line, detail in ((b"1,2,+,", "weight is empty"), (b"1,2,+,0", "weight 0 is zero"),
                         (b"1,2,+,-1", "weight -1 is negative"), (b"1,2,+,inf", "weight 'inf' is infinite"),
                         (b"1,2,+,x", "weight 'x' is not a number"), (b"1,2,+,nan", "weight 'nan' is NaN")):
        with pytest.raises(RecordError) as err:
            parse_message(line, fields=WEIGHTED)
        assert (err.value.reason, err.value.detail) == ("bad_weight", detail)
    named = RecordFields.from_settings("from", "to", None, "w", weighted=True)
    assert named.weight == "w"
    assert parse_message(b'{"from": 1, "to": 2, "w": 2, "weight": 0}', fields=named).weight.tolist() == [2.0]
    no_field = RecordFields.from_settings(weight="none", weighted=True)
    assert no_field.weight is None and no_field.weighted
    assert parse_message(b'{"src": 1, "dst": 2, "weight": 0}', fields=no_field).weight.tolist() == [1.0]


def test_weight_settings_are_checked():
    with pytest.raises(InvalidArgumentError, match="--weighted"):
        RecordFields.from_settings(weight="w")
    with pytest.raises(InvalidArgumentError, match="unweighted"):
        RecordFields(weight="weight")
    with pytest.raises(InvalidArgumentError, match="same field"):
        RecordFields(src="w", weight="w", weighted=True)
    with pytest.raises(InvalidArgumentError, match="field name"):
        RecordFields.from_settings(weight="3", weighted=True)


@pytest.mark.parametrize("column,detail", [
    (pa.array([1.0, 0.0]), "weight 0.0 is zero"),
    (pa.array([1, -3]), "weight -3 is negative"),
    (pa.array([1.0, float("nan")]), "weight nan is NaN"),
    (pa.array([1.0, float("inf")]), "weight inf is infinite"),
    (pa.array(["1", "abc"]), "weight 'abc' is not a number"),
    (pa.array(["1", ""]), "weight is empty"),
    (pa.array([True, False]), "weight True is not a number"),
])
def test_arrow_message_with_a_bad_weight_is_rejected(column, detail):
    table = pa.table({"src": [1, 2], "dst": [3, 4], "weight": column})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    value = sink.getvalue().to_pybytes()
    with pytest.raises(RecordError) as err:
        parse_message(value, fields=WEIGHTED)
    assert err.value.reason == "bad_weight" and err.value.detail.startswith(detail.split(" is ")[0])
    assert err.value.detail.endswith(")")  # names the row
    d = decode_values([value, b"5,6"], fields=WEIGHTED)
    assert d.errors[0].reason == "bad_weight" and d.counts.tolist() == [0, 1]
    assert parse_message(value).weight is None  # unweighted: the column is not read


def test_arrow_weights_round_trip_with_nulls():
    value = encode_arrow([1, 2, 3], [4, 5, 6], [True, False, False], weight=[2.0, np.nan, 0.5])
    e = parse_message(value, fields=WEIGHTED)
    assert e.weight[[0, 2]].tolist() == [2.0, 0.5] and math.isnan(e.weight[1])
    e = parse_message(encode_arrow([1], [4]), fields=WEIGHTED)  # no weight column: inserts weigh 1
    assert e.weight.tolist() == [1.0]


def _random_messages(rng, n: int) -> list:
    values = []
    for k in range(n):
        r = rng.random()
        s, d = int(rng.integers(0, 50)), int(rng.integers(0, 50))
        w = [1.5, 2, "3.25", 0, -1, None, "x", ""][int(rng.integers(0, 8))]
        if r < 0.4:
            obj = {"src": s, "dst": d, "op": "+" if rng.random() < 0.8 else "-"}
            if w is not None:
                obj["weight"] = w
            values.append(json.dumps(obj).encode())
        elif r < 0.6:
            objs = [{"src": s, "dst": d, "weight": 2.0}, {"src": d, "dst": s, "op": "-"}]
            if w is not None:
                objs[1]["weight"] = w
            values.append(json.dumps(objs).encode())
        elif r < 0.7:
            values.append(f"{s},{d}".encode())
        elif r < 0.8:
            values.append(f"{s},{d},+,{'' if w is None else w}".encode())
        elif r < 0.9:
            values.append(encode_arrow([s, d], [d, s], [True, False], weight=[3.0, np.nan]))
        else:
            values.append(json.dumps({"src": s, "dst": d, "weight": float("nan")}).encode())
    return values


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorized_decoding_matches_the_per_message_parser(seed):
    values = _random_messages(np.random.default_rng(seed), 300)
    d = decode_values(values, fields=WEIGHTED)
    src, dst, ins, w, counts = [], [], [], [], []
    for i, v in enumerate(values):
        try:
            e = parse_message(v, fields=WEIGHTED)
        except RecordError as exc:
            assert d.errors[i].reason == exc.reason and d.errors[i].detail == exc.detail
            counts.append(0)
            continue
        assert i not in d.errors
        src += e.src.tolist()
        dst += e.dst.tolist()
        ins += e.insert.tolist()
        w += e.weight.tolist()
        counts.append(len(e))
    assert d.counts.tolist() == counts and d.src.tolist() == src and d.dst.tolist() == dst
    assert d.insert.tolist() == ins
    np.testing.assert_array_equal(d.weight, np.asarray(w))  # NaN where NaN
    assert d.vectorized > 0 and len(d.errors) > 10
    assert {e.reason for e in d.errors.values()} == {"bad_weight"}


def test_fetch_items_carry_weights_and_dead_letters():
    values = [encode_json([1], [2], weight=[2.0]), _obj("0"), encode_json([3, 4], [5, 6], [True, False],
                                                                          weight=[1.5, np.nan])]
    recs = FetchedRecords.from_records(["kafka:t:0"] * 3, ["t"] * 3, [0] * 3, [10, 11, 12], [None] * 3, values)
    items = fetch_items(recs, fields=WEIGHTED)
    assert [type(i).__name__ for i in items] == ["EdgeRun", "BadRecord", "EdgeRun"]
    assert items[0].weight.tolist() == [2.0]
    assert items[1].reason == "bad_weight" and items[1].detail == "weight 0 is zero" and items[1].offset == 11
    assert items[2].weight[0] == 1.5 and math.isnan(items[2].weight[1])
    head, tail = items[2].split(1)
    assert head is None and tail is items[2]
    assert all(i.weight is None for i in fetch_items(recs) if hasattr(i, "weight"))


def test_parse_weight_and_column_weights():
    assert parse_weight(None, insert=True) == 1.0 and math.isnan(parse_weight(None, insert=False))
    assert parse_weight(b" 2.5 ", insert=True, text=True) == 2.5
    assert math.isnan(parse_weight("", insert=False, text=True))
    w, bad = column_weights(pa.array([1.0, None, None, -1.0]), np.array([True, True, False, True]))
    assert w[:2].tolist() == [1.0, 1.0] and math.isnan(w[2]) and bad == {3: "weight -1.0 is negative"}
    w, bad = column_weights(None, np.array([True, False]))
    assert w[0] == 1.0 and math.isnan(w[1]) and not bad
