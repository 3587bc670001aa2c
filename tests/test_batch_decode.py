"""The whole-fetch decoder gives exactly what parsing each message alone gives."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.batch_decode import decode_values
from connectors.records import RecordError, encode_arrow, encode_json, parse_message

MAX_BYTES = 400


def per_message(values):
    """Reference: :func:`parse_message` on each value alone."""
    out = []
    for v in values:
        try:
            e = parse_message(v, max_bytes=MAX_BYTES)
            out.append((e.src.tolist(), e.dst.tolist(), e.insert.tolist()))
        except RecordError as exc:
            out.append(exc.reason)
    return out


def _list(ids):
    """Ids of a decoded run as a Python list (int64 NumPy arrays or Arrow string arrays)."""
    import pyarrow as pa

    return ids.to_pylist() if isinstance(ids, pa.Array) else np.asarray(ids).tolist()


def assert_like_per_message(values, got, ref):
    """``got`` (a decoded fetch of ``values``) holds, message by message, what ``ref`` (the
    per-message reference: edge lists or a dead-letter reason) says."""
    assert len(got) == len(values)
    src, dst = _list(got.src), _list(got.dst)
    pos = 0
    for i, r in enumerate(ref):
        n = int(got.counts[i])
        if isinstance(r, str):
            assert i in got.errors and got.errors[i].reason == r, (values[i], r, got.errors.get(i))
            assert n == 0
        else:
            assert i not in got.errors, (values[i], got.errors[i])
            assert (src[pos:pos + n], dst[pos:pos + n], got.insert[pos:pos + n].tolist()) == r, values[i]
        pos += n
    assert pos == len(src) == len(dst) == got.insert.shape[0]


def check_same(values):
    got = decode_values(values, max_bytes=MAX_BYTES)
    assert_like_per_message(values, got, per_message(values))
    assert got.src.dtype == np.int64 and got.insert.dtype == bool
    return got


# one message from a template and two ids
TEMPLATES = [
    lambda s, d: b'{"op":"+","src":%d,"dst":%d}' % (s, d),
    lambda s, d: b'{"op":"-","src":%d,"dst":%d}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d,"op":-1}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d,"op":1}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d,"op":"delete","extra":[1,2]}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d,"op":null}' % (s, d),
    lambda s, d: b'{"src":%d,"dst":%d,"op":" Insert "}' % (s, d),
    lambda s, d: b'{"src":"%d","dst":%d}' % (s, d),             # digit-string id: per-message path
    lambda s, d: b'{"src":%d.5,"dst":%d}' % (s, d),             # non_integer_id
    lambda s, d: b'{"src":-%d,"dst":%d}' % (s + 1, d),          # negative_id
    lambda s, d: b'{"src":%d,"dst":%d}' % (s + 2**64, d),        # id_out_of_range
    lambda s, d: b'{"src":true,"dst":%d}' % d,                  # non_integer_id (bool)
    lambda s, d: b'{"src":%d}' % s,                             # missing_field
    lambda s, d: b'{"src":null,"dst":%d}' % d,                  # missing_field
    lambda s, d: b'{"src":%d,"dst":%d,"op":"upsert"}' % (s, d),  # unknown_op
    lambda s, d: b'{"src":%d,"dst":%d,"op":2}' % (s, d),         # unknown_op
    lambda s, d: b'{"src":%d,"dst":%d,"op":true}' % (s, d),      # unknown_op
    lambda s, d: b'{"src":%d,"dst":%d}{"src":1,"dst":2}' % (s, d),  # bad_json (extra data)
    lambda s, d: b'{"src":%d,"src":%d,"dst":1}' % (s, d),         # duplicate key: last wins
    lambda s, d: b'{"src":%d,\n"dst":%d}' % (s, d),              # multi-line JSON
    lambda s, d: b'  {"src":%d,"dst":%d}' % (s, d),              # leading blanks
    lambda s, d: b'{"src":%d,"dst":' % s,                       # bad_json
    lambda s, d: b"{}",
    lambda s, d: b"",
    lambda s, d: b'{"src":%d,"dst":%d,"pad":"%s"}' % (s, d, b"x" * MAX_BYTES),  # oversize
    lambda s, d: b"%d,%d" % (s, d),
    lambda s, d: b"%d,%d,-" % (s, d),
    lambda s, d: b"%d, %d ,+" % (s, d),
    lambda s, d: b"%d,%d," % (s, d),
    lambda s, d: b"%d,%d,nope" % (s, d),                        # unknown_op
    lambda s, d: b"%d,-%d" % (s, d + 1),                        # negative_id
    lambda s, d: b'"%d",%d' % (s, d),                           # quoted: non_integer_id
    lambda s, d: b'%d,"%d"' % (s, d),                           # quoted: non_integer_id
    lambda s, d: b"%d,%d,+,x" % (s, d),                         # bad_csv
    lambda s, d: b"%d,,+" % s,                                  # missing_field
    lambda s, d: b"%d %d" % (s, d),                             # whitespace separated
    lambda s, d: b"%d,%d\n%d,%d,-" % (s, d, d, s),              # two CSV lines
    lambda s, d: b"# comment",
    lambda s, d: b"%d,1e3" % s,                                 # non_integer_id
    lambda s, d: b"%d,%d" % (s, d + 2**63),                     # id_out_of_range
    lambda s, d: b"\xff\xfe,%d" % d,                            # bad_csv (not UTF-8)
    lambda s, d: encode_json([s, d], [d, s], [True, False]),
    lambda s, d: encode_json([s, d, s], [d, d, 0], [False, True, True]),
    lambda s, d: b'[{"src":%d,"dst":%d},{"src":%d,"dst":%d,"op":"x"}]' % (s, d, d, s),  # unknown_op
    lambda s, d: b'[{"src":%d,"dst":%d},null]' % (s, d),                             # bad_json
    lambda s, d: b'[[%d,%d,"+"],[%d,%d]]' % (s, d, d, s),        # lists of lists
    lambda s, d: b'[%d,%d,"-"]' % (s, d),                        # a single list edge
    lambda s, d: b"[]",
    lambda s, d: b'[{"src":%d,"dst":-1}]' % s,
    lambda s, d: encode_arrow([s, d], [d, s], [True, False]),
    lambda s, d: b"\xff\xff\xff\xffbroken",
]

ids = st.integers(min_value=0, max_value=2**40)
messages = st.lists(st.tuples(st.integers(0, len(TEMPLATES) - 1), ids, ids), min_size=0, max_size=60)


@settings(max_examples=150, deadline=None)
@given(messages)
def test_same_as_per_message(msgs):
    check_same([TEMPLATES[t](s, d) for t, s, d in msgs])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), ids, ids), min_size=1, max_size=200),
       st.lists(st.tuples(st.integers(0, len(TEMPLATES) - 1), ids, ids, st.integers(0, 199)), max_size=3))
def test_few_bad_among_many_good(good, bad):
    values = [TEMPLATES[t](s, d) for t, s, d in good]
    for t, s, d, at in bad:
        values.insert(at % (len(values) + 1), TEMPLATES[t](s, d))
    check_same(values)


@pytest.mark.parametrize("make", [
    lambda i: b'{"op":"+","src":%d,"dst":%d}' % (i, i + 1),
    lambda i: b"%d,%d,-" % (i, i + 1),
    lambda i: b"%d,%d" % (i, i + 1),
    lambda i: encode_json([i, i + 1], [i + 2, i], [True, False]),
])
def test_clean_fetch_is_decoded_in_one_pass(make):
    values = [make(i) for i in range(500)]
    got = check_same(values)
    assert got.vectorized == 500 and not got.errors


def test_bad_records_found_by_bisection_keep_their_reasons():
    values = [b'{"src":%d,"dst":%d}' % (i, i) for i in range(1000)]
    values[3] = b'{"src":1.5,"dst":2}'
    values[500] = b'{"src":1,"dst":2}{"src":3,"dst":4}'
    values[999] = json.dumps({"src": 2**64, "dst": 1}).encode()
    got = check_same(values)
    assert {i: e.reason for i, e in got.errors.items()} == {3: "non_integer_id", 500: "bad_json",
                                                            999: "id_out_of_range"}
    assert got.vectorized > 900


def test_empty_fetch_and_none_values():
    got = decode_values([])
    assert len(got) == 0 and got.src.shape == (0,)
    got = decode_values([None, b"1,2"])
    assert got.errors[0].reason == "empty" and got.counts.tolist() == [0, 1]


def test_fetch_items_runs_split_between_messages():
    from connectors.fetch import EdgeRun, FetchedRecords, fetch_items

    values = [b"1,2", b'[{"src":3,"dst":4},{"src":5,"dst":6}]', b"bad", b"7,8,-", b"9,10"]
    items = fetch_items(FetchedRecords.from_records(["k:0"] * 3 + ["k:1"] * 2, ["t"] * 5, [0, 0, 0, 1, 1],
                                                    [10, 11, 12, 0, 1], [None] * 5, values,
                                                    [1000, 1001, 1002, 1003, 1004]))
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["EdgeRun", "BadRecord", "EdgeRun"]
    run, bad, run2 = items
    assert run.src.tolist() == [1, 3, 5] and run.ends.tolist() == [1, 3] and run.pos_value == 12
    assert (bad.reason, bad.offset, bad.pos_value) == ("bad_csv", 12, 13)
    assert run2.insert.tolist() == [False, True] and run2.pos_key == "k:1" and run2.pos_value == 2
    head, tail = run.split(2)  # room for 2 edges: only the first message fits
    assert head.src.tolist() == [1] and head.pos_value == 11 and head.timestamps_ms.tolist() == [1000]
    assert tail.src.tolist() == [3, 5] and tail.ends.tolist() == [2] and tail.pos_value == 12
    assert run.split(0) == (None, run) and run.split(3) == (run, None)
    assert isinstance(head, EdgeRun) and head.message_edges().tolist() == [1]
