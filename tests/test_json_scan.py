"""The compiled scan of single-edge JSON objects takes only what the per-message parser accepts,
with the same edge, and takes the common spellings (so the fast path is not dead)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.json_scan import scan_edge_objects
from connectors.records import RecordError, parse_message


def scan(values, max_bytes=1 << 20):
    lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    starts = np.zeros(len(values), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    return scan_edge_objects(np.frombuffer(b"\n".join(values), dtype=np.uint8), starts, lens, max_bytes=max_bytes)


def reference(value):
    try:
        e = parse_message(value)
    except RecordError as exc:
        return exc.reason
    return e.src.tolist(), e.dst.tolist(), e.insert.tolist()


def assert_agrees(values, max_bytes=1 << 20):
    ok, src, dst, ins = scan(values, max_bytes)
    for i, v in enumerate(values):
        if ok[i]:
            assert reference(v) == ([int(src[i])], [int(dst[i])], [bool(ins[i])]), v
    return ok


OPS = [b'"+"', b'"-"', b'"insert"', b'"delete"', b"1", b"-1", b'"Insert"', b'" +"', b'"x"', b"1.0", b"-1e0", b"01",
       b"2", b"null", b"true", b'"1"', b"-", b'"+', b"11", b"-10"]
ID_TEXT = st.one_of(st.integers(0, 2**64).map(lambda i: b"%d" % i), st.integers(0, 99).map(lambda i: b"%d" % i),
                    st.sampled_from([b"0", b"00", b"01", b"-1", b"-0", b"1.5", b"1e3", b'"7"', b"null", b"true",
                                     b"999999999999999999", b"1000000000000000000", b"9223372036854775807", b""]))
FOREIGN_NAMES = [b'"Src"', b'"s\\u0072c"', b'"ts"', b'"src', b"src", b'"dst" ', b'"op"']


@st.composite
def near_edges(draw):
    """Messages near the strict form: src, dst and maybe op in any order, then now and then a
    member dropped, doubled or foreign, a value from the edges of the grammar, or the frame broken."""
    names = draw(st.permutations([b'"src"', b'"dst"', b'"op"']))[:draw(st.integers(2, 3))]
    change = draw(st.integers(0, 5))
    if change == 1:
        names = names[1:]
    elif change == 2:
        names = names + [draw(st.sampled_from(names))]
    elif change == 3:
        names = names + [draw(st.sampled_from(FOREIGN_NAMES))]
    members = []
    for name in names:
        value = draw(st.sampled_from(OPS)) if name == b'"op"' else draw(ID_TEXT)
        blank = st.sampled_from([b"", b"", b" ", b"  ", b"\t"])
        members.append(draw(blank) + name + draw(blank) + b":" + draw(blank) + value + draw(blank))
    text = b"{" + b",".join(members) + b"}"
    if change == 4:
        text = draw(st.sampled_from([b" ", b"[", b""])) + text[1:] + draw(st.sampled_from([b"", b"}", b" ", b","]))
    elif change == 5:
        text = text[:-draw(st.integers(1, 3))]
    return text


@settings(max_examples=300, deadline=None)
@given(st.lists(near_edges(), min_size=1, max_size=40))
def test_taken_only_where_the_parser_agrees(values):
    assert_agrees(values)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**18 - 1), st.integers(0, 10**18 - 1),
       st.sampled_from(["+", "-", "insert", "delete", 1, -1, None]), st.booleans(),
       st.permutations(["src", "dst", "op"]))
def test_common_spellings_are_taken(s, d, op, compact, order):
    obj = {k: {"src": s, "dst": d, "op": op}[k] for k in order if not (k == "op" and op is None)}
    value = json.dumps(obj, separators=(",", ":") if compact else None).encode()
    ok = assert_agrees([value])
    assert ok[0], value


@pytest.mark.parametrize("value", [
    b'{"src":1,"dst":2,"op":"+"}extra', b'{"src":1,"dst":2', b'{"src":1,"src":2,"dst":3}', b'{"dst":2}',
    b'{"src":10000000000000000000,"dst":1}', b'{"src":1,"dst":2,"op":"+","ts":5}', b'{"src":1 ,"dst":2}x',
])
def test_left_to_the_general_decoders(value):
    ok, *_ = scan([value])
    assert not ok[0]


def test_oversize_is_left_to_the_general_decoders():
    value = b'{"src":1,"dst":2}'
    assert not scan([value], max_bytes=len(value) - 1)[0][0]
    assert scan([value], max_bytes=len(value))[0][0]
