"""The whole-fetch decoder with string vertex ids (and ``id_type="auto"``) gives exactly what
parsing each message alone, with one id kind per stream, gives."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.batch_decode import decode_values
from connectors.fetch import FetchedRecords, fetch_items
from connectors.records import RecordError, encode_arrow, encode_json, parse_message
from streamrank.ids.kinds import IdError, IdTypeLock
from test_batch_decode import _list, assert_like_per_message

MAX_BYTES = 4000  # Arrow messages fit
MAX_ID_BYTES = 24


def per_message(values, id_type, lock):
    """Reference: :func:`parse_message` on each value alone, the stream kept to one kind by ``lock``."""
    out = []
    for v in values:
        try:
            e = parse_message(v, max_bytes=MAX_BYTES, id_type=id_type, max_id_bytes=MAX_ID_BYTES)
            lock.admit(e.id_kind)
        except (RecordError, IdError) as exc:
            out.append(exc.reason)
            continue
        out.append((_list(e.src), _list(e.dst), e.insert.tolist()))
    return out


def check_same(values, id_type, lock=None):
    ref_lock = IdTypeLock(id_type) if lock is None else IdTypeLock(lock.current)
    ref = per_message(values, id_type, ref_lock)
    lock = IdTypeLock(id_type) if lock is None else lock
    got = decode_values(values, max_bytes=MAX_BYTES, id_type=id_type, id_lock=lock, max_id_bytes=MAX_ID_BYTES)
    assert lock.current == ref_lock.current
    assert_like_per_message(values, got, ref)
    return got


def j(v) -> bytes:
    return json.dumps(v, ensure_ascii=False).encode()


NAMES = ["alice", "bob", "é-ü", "user 7", "42", "x,y", "a\"q", "#c", " pad", "Alice", "ARROW", "z" * 30, ""]

TEMPLATES = [
    lambda s, d: j({"op": "+", "src": s, "dst": d}),
    lambda s, d: j({"src": s, "dst": d, "op": "-"}),
    lambda s, d: j({"src": s, "dst": d}),
    lambda s, d: j([{"src": s, "dst": d}, {"src": d, "dst": s, "op": "-"}]),
    lambda s, d: f"{s},{d}".encode(),
    lambda s, d: f"{s},{d},-".encode(),
    lambda s, d: f"{s} , {d},+".encode(),                   # blanks around fields: stripped
    lambda s, d: f"{s},{d}\n{d},{s},-".encode(),             # two CSV lines
    lambda s, d: encode_json([s, d], [d, s], [True, False]),
    lambda s, d: encode_arrow(pa.array([s, d]), pa.array([d, s]), [True, False]),
    lambda s, d: j({"src": 5, "dst": d}),                    # integer id: mixed_id_types
    lambda s, d: j({"src": s, "dst": None}),                 # missing_field
    lambda s, d: j({"src": s}),                              # missing_field
    lambda s, d: b'{"src":"\\ud800","dst":"x"}',              # bad_utf8_id
    lambda s, d: b'{"src":"a\\u00e9","dst":"x"}',             # escape: one by one, accepted
    lambda s, d: b"7,8",                                     # integer-looking text
    lambda s, d: encode_arrow([1, 2], [3, 4]),               # integer Arrow columns
    lambda s, d: b"\xff\xfe,x",                              # bad_csv
    lambda s, d: b"",
]

ids = st.sampled_from(NAMES)
messages = st.lists(st.tuples(st.integers(0, len(TEMPLATES) - 1), ids, ids), min_size=0, max_size=50)


@settings(max_examples=120, deadline=None)
@given(messages, st.sampled_from(["string", "auto"]))
def test_string_stream_same_as_per_message(msgs, id_type):
    check_same([TEMPLATES[t](s, d) for t, s, d in msgs], id_type)


@settings(max_examples=40, deadline=None)
@given(messages, messages)
def test_auto_lock_carries_across_fetches(first, second):
    lock = IdTypeLock("auto")
    check_same([TEMPLATES[t](s, d) for t, s, d in first], "auto", lock)
    check_same([TEMPLATES[t](s, d) for t, s, d in second], "auto", lock)


@pytest.mark.parametrize("make", [
    lambda i: j({"op": "+", "src": f"u{i}", "dst": f"v{i}"}),
    lambda i: f"u{i},v{i},-".encode(),
    lambda i: f"u{i},v{i}".encode(),
    lambda i: j([{"src": f"u{i}", "dst": f"v{i}"}, {"src": f"v{i}", "dst": f"u{i}", "op": "-"}]),
])
@pytest.mark.parametrize("id_type", ["string", "auto"])
def test_clean_string_fetch_is_vectorized(make, id_type):
    values = [make(i) for i in range(300)]
    got = check_same(values, id_type)
    assert not got.errors
    assert got.vectorized >= 299  # auto: the first message fixes the kind on its own
    assert isinstance(got.src, pa.Array) or got.src.dtype == object


def test_mixed_kinds_in_one_fetch_are_dead_lettered():
    values = [b"1,2", j({"src": "alice", "dst": "bob"}), b"3,4", encode_arrow(pa.array(["a"]), pa.array(["b"]))]
    got = check_same(values, "auto")
    assert sorted(got.errors) == [1, 3] and {e.reason for e in got.errors.values()} == {"mixed_id_types"}
    lock = IdTypeLock("auto")
    got = check_same([j({"src": "alice", "dst": "bob"}), b"1,2", b"carol,dave"], "auto", lock)
    assert lock.current == "string" and list(got.errors) == [1]
    assert got.errors[1].reason == "mixed_id_types"


def test_fetch_items_carry_string_runs():
    values = [b"a,b", j({"src": "c", "dst": "d", "op": "-"}), b"5,6", b"e,f"]
    lock = IdTypeLock("string")
    items = fetch_items(FetchedRecords.from_records(["k:0"] * 4, ["t"] * 4, [0] * 4, [0, 1, 2, 3], [None] * 4, values,
                                                    [1, 2, 3, 4]), id_type="string", id_lock=lock)
    assert [type(i).__name__ for i in items] == ["EdgeRun"]  # "5,6" is a string id in a string stream
    run = items[0]
    assert _list(run.src) == ["a", "c", "5", "e"] and run.insert.tolist() == [True, False, True, True]
    head, tail = run.split(2)
    assert _list(head.src) == ["a", "c"] and _list(tail.src) == ["5", "e"] and tail.pos_value == 4
    items = fetch_items(FetchedRecords.from_records(["k:0"] * 2, ["t"] * 2, [0] * 2, [0, 1], [None] * 2,
                                                    [b"a,b", b'{"src":1,"dst":2}']), id_type="string", id_lock=lock)
    assert [type(i).__name__ for i in items] == ["EdgeRun", "BadRecord"] and items[1].reason == "mixed_id_types"
