"""Tests for connectors.files (edge file sources) and connectors.ordering (time order)."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import connectors.ordering as ordering
from connectors.files import (
    TEXT_KEPT,
    EdgeFileReader,
    detect_format,
    iter_batches,
    list_edge_files,
    open_edge_file,
    read_edges,
)
from streamrank.batch import EdgeBatch
from streamrank.errors import InvalidArgumentError, SourceError, StreamrankError

REPO = Path(__file__).resolve().parents[1]
COLLEGE_MSG = REPO / "streamrank" / "data" / "CollegeMsg.txt.gz"
EMAIL_EU = REPO.parent / "shared" / "data" / "email-Eu-core-temporal.txt.gz"
I64_MAX = np.iinfo(np.int64).max


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def cols(table: pa.Table) -> dict[str, list]:
    return {name: table.column(name).to_pylist() for name in table.column_names}


def random_edges(n: int, *, seed: int, ts_range: int = 50):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 1000, n)
    dst = rng.integers(0, 1000, n)
    op = np.where(rng.random(n) < 0.3, -1, 1).astype(np.int8)
    ts = rng.integers(0, ts_range, n)  # many ties: stability is tested
    return src, dst, op, ts


def snap_text(src, dst, ts=None, sep=" ") -> str:
    if ts is None:
        return "".join(f"{s}{sep}{d}\n" for s, d in zip(src, dst))
    return "".join(f"{s}{sep}{d}{sep}{t}\n" for s, d, t in zip(src, dst, ts))


def stable_order(ts) -> np.ndarray:
    return np.argsort(np.asarray(ts), kind="stable")


# ---------------------------------------------------------------------------------------------
# format detection and arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("a.txt", "snap"),
        ("a.txt.gz", "snap"),
        ("a.TSV", "snap"),
        ("g.edges.gz", "snap"),
        ("a.csv", "csv"),
        ("a.csv.gz", "csv"),
        ("a.parquet", "parquet"),
        ("a.jsonl", "jsonl"),
        ("a.ndjson.gz", "jsonl"),
    ],
)
def test_detect_format(name, fmt):
    assert detect_format(name) == fmt


@pytest.mark.parametrize("name", ["a.xml", "a", "a.gz", "a.parquet.gz"])
def test_detect_format_unknown(name):
    with pytest.raises(InvalidArgumentError, match="--format"):
        detect_format(name)


def test_format_override(tmp_path):
    path = write(tmp_path / "edges.dat", "src,dst\n1,2\n3,4\n")
    with pytest.raises(InvalidArgumentError):
        open_edge_file(path)
    table, report = read_edges(path, format="csv")
    assert cols(table) == {"src": [1, 3], "dst": [2, 4], "op": [1, 1]}
    assert report.format == "csv"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chunk_rows": 0},
        {"chunk_rows": -5},
        {"chunk_rows": True},
        {"chunk_rows": 2.5},
        {"keep_order": "yes"},
        {"strict": 1},
        {"format": "xml"},
        {"max_bad_kept": -1},
    ],
)
def test_bad_arguments(tmp_path, kwargs):
    path = write(tmp_path / "a.txt", "1 2\n")
    with pytest.raises(InvalidArgumentError):
        open_edge_file(path, **kwargs)


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        open_edge_file(tmp_path / "nope.txt")
    with pytest.raises(SourceError, match="not a regular file"):
        open_edge_file(tmp_path, format="snap")
    with pytest.raises(InvalidArgumentError):
        open_edge_file(42)


def test_iter_batches_bad_batch_size(tmp_path):
    path = write(tmp_path / "a.txt", "1 2\n")
    for size in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError):
            iter_batches(path, batch_size=size)


# ---------------------------------------------------------------------------------------------
# round trips, one per format
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["g.txt", "g.txt.gz", "g.tsv"])
@pytest.mark.parametrize("chunk_rows", [1, 4, 1000])
def test_snap_round_trip(tmp_path, name, chunk_rows):
    src, dst, _, ts = random_edges(40, seed=1, ts_range=10**9)
    ts = np.sort(ts)
    sep = "\t" if name.endswith(".tsv") else " "
    path = write(tmp_path / name, snap_text(src, dst, ts, sep))
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert table.schema.names == ["src", "dst", "op", "ts"]
    assert table.schema.field("ts").type == pa.int64()
    assert cols(table) == {"src": src.tolist(), "dst": dst.tolist(), "op": [1] * 40, "ts": ts.tolist()}
    assert (report.good, report.bad, report.skipped, report.has_ts) == (40, 0, 0, True)
    assert report.sorted_input is True


def test_snap_two_columns_and_odd_whitespace(tmp_path):
    text = "1 2\n  3\t\t4  \r\n5    6\n\n7 8"  # leading/trailing blanks, tabs, CRLF, blank line, no final newline
    path = write(tmp_path / "g.edges", text)
    table, report = read_edges(path)
    assert cols(table) == {"src": [1, 3, 5, 7], "dst": [2, 4, 6, 8], "op": [1, 1, 1, 1]}
    assert (report.good, report.bad, report.skipped, report.has_ts) == (4, 0, 1, False)


@pytest.mark.parametrize("chunk_rows", [1, 2, 100])
def test_snap_comments_are_skipped(tmp_path, chunk_rows):
    text = "# Directed graph\n% also a comment\n1 2 10\n  # indented comment\n3 4 20\n\n5 6 30\n"
    path = write(tmp_path / "g.txt.gz", text)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {"src": [1, 3, 5], "dst": [2, 4, 6], "op": [1, 1, 1], "ts": [10, 20, 30]}
    assert (report.good, report.bad, report.skipped) == (3, 0, 4)


@pytest.mark.parametrize("name", ["e.csv", "e.csv.gz"])
@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_csv_round_trip_with_ops(tmp_path, name, chunk_rows):
    ops = ["+", "-", "insert", "delete", "1", "-1", "", "INSERT", " Delete "]
    expected_op = [1, -1, 1, -1, 1, -1, 1, 1, -1]
    lines = ["TS,Src,dst,op,extra"]  # any order and case, extra column ignored
    for i, op in enumerate(ops):
        lines.append(f"{100 + i},{i},{i + 10},{op},x{i}")
    path = write(tmp_path / name, "\n".join(lines) + "\n")
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {
        "src": list(range(9)),
        "dst": [i + 10 for i in range(9)],
        "op": expected_op,
        "ts": [100 + i for i in range(9)],
    }
    assert (report.good, report.bad) == (9, 0)


def test_csv_without_op_or_ts(tmp_path):
    path = write(tmp_path / "e.csv", 'src,dst\n1,2\n"3","4"\n')
    table, report = read_edges(path)
    assert cols(table) == {"src": [1, 3], "dst": [2, 4], "op": [1, 1]}
    assert report.has_ts is False


def test_csv_header_errors(tmp_path):
    with pytest.raises(SourceError, match="lacks column"):
        read_edges(write(tmp_path / "a.csv", "a,b\n1,2\n"))
    with pytest.raises(SourceError, match="repeats"):
        read_edges(write(tmp_path / "b.csv", "src,dst,src\n1,2,3\n"))
    table, report = read_edges(write(tmp_path / "c.csv", ""))
    assert table.num_rows == 0 and report.good == 0


def test_csv_header_only_keeps_schema(tmp_path):
    table, report = read_edges(write(tmp_path / "a.csv", "src,dst,op,ts\n"))
    assert table.num_rows == 0
    assert table.schema.names == ["src", "dst", "op", "ts"]


@pytest.mark.parametrize("op_kind", ["string", "int8", "absent"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 1000])
def test_parquet_round_trip(tmp_path, op_kind, chunk_rows):
    src, dst, op, ts = random_edges(50, seed=2)
    ts = np.sort(ts)
    data = {"src": src, "dst": dst, "ts": ts}
    if op_kind == "string":
        data["op"] = pa.array(np.where(op > 0, "+", "delete"))
    elif op_kind == "int8":
        data["op"] = pa.array(op, pa.int8())
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table(data), path, row_group_size=9)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    expected_op = op.tolist() if op_kind != "absent" else [1] * 50
    assert cols(table) == {"src": src.tolist(), "dst": dst.tolist(), "op": expected_op, "ts": ts.tolist()}
    assert (report.good, report.bad) == (50, 0)


def test_parquet_types(tmp_path):
    path = tmp_path / "e.parquet"
    ts = pa.array(np.array([3, 1, 2], dtype="datetime64[ms]"))  # timestamps: integers in their unit
    src, dst = pa.array([1, 2, 3], pa.uint32()), pa.array([4, 5, 6], pa.int16())
    pq.write_table(pa.table({"src": src, "dst": dst, "ts": ts}), path)
    table, _ = read_edges(path)
    assert cols(table) == {"src": [2, 3, 1], "dst": [5, 6, 4], "op": [1, 1, 1], "ts": [1, 2, 3]}
    pq.write_table(pa.table({"src": [1, 2], "dst": [3, 4], "ts": [2.5, 1.5]}), path)
    table, _ = read_edges(path)
    assert table.schema.field("ts").type == pa.float64()
    assert cols(table)["ts"] == [1.5, 2.5]
    pq.write_table(pa.table({"src": ["1"], "dst": [3]}), path)
    with pytest.raises(SourceError, match="column src holds string ids but dst int ids"):
        read_edges(path)
    pq.write_table(pa.table({"src": [[1]], "dst": [[3]]}), path)
    with pytest.raises(SourceError, match="column src has type"):
        read_edges(path)
    pq.write_table(pa.table({"src": [1]}), path)
    with pytest.raises(SourceError, match="lacks column"):
        read_edges(path)


@pytest.mark.parametrize("name", ["e.jsonl", "e.ndjson.gz"])
@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_jsonl_round_trip(tmp_path, name, chunk_rows):
    records = [
        {"op": "+", "src": 1, "dst": 2, "ts": 5},
        {"op": "-", "src": 3, "dst": 4, "ts": 6},
        {"op": "insert", "src": 5, "dst": 6, "ts": 7},
        {"op": "delete", "src": 7, "dst": 8, "ts": 8, "weight": 0.5},
        {"src": 9, "dst": 10, "ts": 9},
    ]
    path = write(tmp_path / name, "".join(json.dumps(r) + "\n" for r in records))
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {
        "src": [1, 3, 5, 7, 9],
        "dst": [2, 4, 6, 8, 10],
        "op": [1, -1, 1, -1, 1],
        "ts": [5, 6, 7, 8, 9],
    }
    assert (report.good, report.bad) == (5, 0)


def test_jsonl_int_ops_string_ids_no_ts(tmp_path):
    text = '{"op": 1, "src": 1, "dst": 2}\n{"op": -1, "src": "3", "dst": 4}\n\n{"src": 5, "dst": 6, "ts": 99}\n'
    table, report = read_edges(write(tmp_path / "e.jsonl", text))
    # the first record has no ts: the file has none, later ts fields are ignored
    assert cols(table) == {"src": [1, 3, 5], "dst": [2, 4, 6], "op": [1, -1, 1]}
    assert (report.good, report.bad, report.skipped, report.has_ts) == (3, 0, 1, False)


# ---------------------------------------------------------------------------------------------
# bad lines
# ---------------------------------------------------------------------------------------------

SNAP_WITH_BAD = (
    "# header comment\n"  # 1
    "1 2 10\n"  # 2
    "3 4\n"  # 3 wrong field count
    "5 6 20\n"  # 4
    "x 6 21\n"  # 5 non-integer src
    "7 -8 22\n"  # 6 negative dst
    "9223372036854775808 1 23\n"  # 7 beyond int64
    "9223372036854775807 1 24\n"  # 8 largest id: good
    "1 2 3x\n"  # 9 non-integer ts
    "1 2 3 4\n"  # 10 wrong field count
    "1.0 2 25\n"  # 11 non-integer src
    "+1 2 26\n"  # 12 non-integer src (no sign allowed)
    "11 12 30\n"  # 13
)
SNAP_BAD_LINES = {
    3: "expected 3 fields, got 2",
    5: "non-integer src id",
    6: "negative dst id -8",
    7: "beyond int64",
    9: "non-integer ts",
    10: "expected 3 fields, got 4",
    11: "non-integer src id",
    12: "non-integer src id",
}


@pytest.mark.parametrize("chunk_rows", [1, 2, 5, 1000])
def test_snap_bad_lines(tmp_path, chunk_rows):
    path = write(tmp_path / "g.txt", SNAP_WITH_BAD)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {
        "src": [1, 5, I64_MAX, 11],
        "dst": [2, 6, 1, 12],
        "op": [1, 1, 1, 1],
        "ts": [10, 20, 24, 30],
    }
    assert (report.good, report.bad, report.skipped) == (4, 8, 1)
    assert [b.line for b in report.bad_lines] == sorted(SNAP_BAD_LINES)
    for bad in report.bad_lines:
        assert SNAP_BAD_LINES[bad.line] in bad.reason
    assert report.bad_lines[0].text == "3 4"
    assert report.bad_lines[1].text == "x 6 21"


def test_snap_first_line_bad_then_field_count_fixed(tmp_path):
    path = write(tmp_path / "g.txt", "1 2 3 4\n1 2\n3 4 5\n6 7\n")
    table, report = read_edges(path, keep_order=True)
    assert cols(table) == {"src": [1, 6], "dst": [2, 7], "op": [1, 1]}
    assert [(b.line, b.reason) for b in report.bad_lines] == [
        (1, "expected 2 or 3 fields, got 4"),
        (3, "expected 2 fields, got 3"),
    ]


CSV_WITH_BAD = (
    "src,dst,op,ts\n"  # 1
    "1,2,+,10\n"  # 2
    "3,4,+\n"  # 3 field count
    "5,6,?,11\n"  # 4 unknown op
    "7,8,-,\n"  # 5 missing ts
    "a,8,-,12\n"  # 6 non-integer src
    "9,-1,-,13\n"  # 7 negative dst
    "9,99999999999999999999,-,14\n"  # 8 beyond int64
    "\n"  # 9 blank: skipped
    "13,14,delete,15\n"  # 10
    "15,16,,x\n"  # 11 non-integer ts
)


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_csv_bad_lines(tmp_path, chunk_rows):
    path = write(tmp_path / "e.csv.gz", CSV_WITH_BAD)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {"src": [1, 13], "dst": [2, 14], "op": [1, -1], "ts": [10, 15]}
    assert (report.good, report.bad, report.skipped) == (2, 7, 1)
    assert [b.line for b in report.bad_lines] == [3, 4, 5, 6, 7, 8, 11]


def test_csv_bad_line_reasons(tmp_path):
    path = write(tmp_path / "e.csv", CSV_WITH_BAD)
    _, report = read_edges(path)
    reasons = {b.line: b.reason for b in report.bad_lines}
    assert reasons == {
        3: "expected 4 fields, got 3",
        4: "unknown op '?'",
        5: "missing ts",
        6: "non-integer src id 'a' (a string id in an integer-id stream)",
        7: "negative dst id -1",
        8: "dst id 99999999999999999999 beyond int64",
        11: "non-integer ts 'x'",
    }
    assert report.bad == 7
    assert report.bad_lines[1].text == "5,6,?,11"


JSONL_WITH_BAD = (
    '{"op": "+", "src": 1, "dst": 2, "ts": 1}\n'  # 1
    '{"op": "+", "src": 1, "dst": 2, "ts": 1\n'  # 2 bad JSON
    "[1, 2]\n"  # 3 not an object
    '{"op": "+", "dst": 2, "ts": 2}\n'  # 4 missing src
    '{"op": "?", "src": 1, "dst": 2, "ts": 3}\n'  # 5 unknown op
    '{"src": 1, "dst": 99999999999999999999, "ts": 4}\n'  # 6 beyond int64
    '{"src": -1, "dst": 2, "ts": 5}\n'  # 7 negative
    '{"src": 1.5, "dst": 2, "ts": 6}\n'  # 8 non-integer
    '{"src": 1, "dst": 2}\n'  # 9 missing ts (the file has ts)
    '{"src": true, "dst": 2, "ts": 7}\n'  # 10 bool is not an id
    '{"op": "-", "src": 5, "dst": 6, "ts": 8}\n'  # 11
)


@pytest.mark.parametrize("chunk_rows", [1, 4, 1000])
def test_jsonl_bad_lines(tmp_path, chunk_rows):
    path = write(tmp_path / "e.jsonl", JSONL_WITH_BAD)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {"src": [1, 5], "dst": [2, 6], "op": [1, -1], "ts": [1, 8]}
    reasons = {b.line: b.reason for b in report.bad_lines}
    assert sorted(reasons) == list(range(2, 11))
    assert reasons[2].startswith("bad JSON")
    assert reasons[3] == "JSON line is a list, not an object"
    assert reasons[4] == "missing field src"
    assert reasons[5] == "unknown op '?'"
    assert "beyond int64" in reasons[6]
    assert reasons[7] == "negative src id -1"
    assert reasons[8] == "non-integer src id 1.5"
    assert reasons[9] == "missing field ts"
    assert reasons[10] == "non-integer src id True"
    assert (report.good, report.bad) == (2, 9)


@pytest.mark.parametrize("chunk_rows", [2, 1000])
def test_parquet_bad_rows(tmp_path, chunk_rows):
    path = tmp_path / "e.parquet"
    data = pa.table(
        {
            "src": pa.array([1, None, 3, 4, 2**63, 6], pa.uint64()),
            "dst": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "op": pa.array(["+", "+", "bogus", "-", "+", None]),
            "ts": pa.array([1, 2, 3, None, 5, 6], pa.int64()),
        }
    )
    pq.write_table(data, path)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert cols(table) == {"src": [1, 6], "dst": [1, 6], "op": [1, 1], "ts": [1, 6]}
    assert [(b.line, b.reason) for b in report.bad_lines] == [
        (2, "missing src"),
        (3, "unknown op 'bogus'"),
        (4, "missing ts"),
        (5, "src id beyond int64"),
    ]
    assert report.unit == "row"
    assert json.loads(report.bad_lines[1].text)["op"] == "bogus"


def test_parquet_negative_ids_and_bad_int_op(tmp_path):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": [1, -2, 3], "dst": [4, 5, 6], "op": pa.array([1, -1, 2], pa.int8())}), path)
    table, report = read_edges(path)
    assert cols(table) == {"src": [1], "dst": [4], "op": [1]}
    assert [(b.line, b.reason) for b in report.bad_lines] == [(2, "negative src id"), (3, "unknown op 2")]


def test_bad_line_records_are_capped_but_counted(tmp_path):
    long_bad = "y" * 500
    text = "1 2\n" + "".join(f"{long_bad} {i}\n" for i in range(10)) + "3 4\n"
    table, report = read_edges(write(tmp_path / "g.txt", text), max_bad_kept=3)
    assert table.num_rows == 2
    assert report.bad == 10
    assert [b.line for b in report.bad_lines] == [2, 3, 4]
    assert len(report.bad_lines[0].text) == TEXT_KEPT
    assert "10 bad lines" in report.summary()


@pytest.mark.parametrize(
    "name, text, where",
    [
        ("g.txt", "1 2 3\n4 5 6\n7 x 9\n1 2 3\n", "line 3"),
        ("g.txt.gz", "# c\n\n1 2 3\n4 5\n", "line 4"),
        ("e.csv", "src,dst\n1,2\n1,2,3\n", "line 3"),
        ("e.jsonl", '{"src": 1, "dst": 2}\n{"src": 1}\n', "line 2"),
    ],
)
@pytest.mark.parametrize("chunk_rows", [1, 1000])
def test_strict_raises_with_line_number(tmp_path, name, text, where, chunk_rows):
    path = write(tmp_path / name, text)
    with pytest.raises(SourceError, match=where):
        read_edges(path, strict=True, chunk_rows=chunk_rows)
    _, report = read_edges(path, chunk_rows=chunk_rows)
    assert report.bad == 1


def test_strict_parquet_names_the_row(tmp_path):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": [1, 2, -3], "dst": [1, 2, 3]}), path)
    with pytest.raises(SourceError, match="row 3: negative src id"):
        read_edges(path, strict=True)


def test_corrupt_gzip_is_a_source_error(tmp_path):
    path = tmp_path / "g.txt.gz"
    payload = gzip.compress(b"1 2 3\n" * 1000)
    path.write_bytes(payload[: len(payload) // 2])
    with pytest.raises(SourceError, match="cannot read snap edges") as info:
        read_edges(path)
    assert isinstance(info.value, StreamrankError)
    assert info.value.__cause__ is not None


def test_not_parquet_is_a_source_error(tmp_path):
    path = write(tmp_path / "e.parquet", "this is not parquet\n")
    with pytest.raises(SourceError):
        read_edges(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(
        st.one_of(
            st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 9)).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            st.sampled_from(["", "# c", "1 2", "a 1 2", "1 -2 3", "1 2 3 4", "99999999999999999999 1 1", "1 2 z"]),
        ),
        max_size=30,
    ),
    chunk_rows=st.integers(1, 8),
)
def test_snap_chunking_never_changes_the_result(tmp_path, lines, chunk_rows):
    """Small chunks put good lines on the fast path and bad ones on the line-by-line path; one big
    chunk parses everything line by line when any line is bad: both must agree exactly."""
    path = write(tmp_path / "h.txt", "".join(line + "\n" for line in lines))
    small, rep_small = read_edges(path, chunk_rows=chunk_rows, keep_order=True)
    big, rep_big = read_edges(path, chunk_rows=10_000, keep_order=True)
    assert cols(small) == cols(big)
    assert (rep_small.good, rep_small.bad, rep_small.skipped) == (rep_big.good, rep_big.bad, rep_big.skipped)
    assert rep_small.bad_lines == rep_big.bad_lines
    assert rep_big.good + rep_big.bad + rep_big.skipped == len(lines)


IDS = st.integers(0, 50)
CSV_LINES = st.one_of(
    st.tuples(IDS, IDS, st.sampled_from(["+", "-", "", "delete"]), st.integers(-5, 9)).map(
        lambda t: f"{t[0]},{t[1]},{t[2]},{t[3]}"
    ),
    st.sampled_from(
        ["", "1,2,+", "1,2,?,3", "a,1,+,2", "1,-2,+,3", "1,2,+,", "1,2,+,3,4", '"1","2","-","3"', " 1,2,+,3"]
    ),
)
JSON_LINES = st.one_of(
    st.tuples(IDS, IDS, st.sampled_from(["+", "-", "insert", None]), st.integers(0, 9)).map(
        lambda t: json.dumps({"src": t[0], "dst": t[1], "op": t[2], "ts": t[3]})
    ),
    st.sampled_from(
        [
            "",
            "{",
            "[]",
            '{"src": 1}',
            '{"src": 1, "dst": 2, "op": 1, "ts": 3}',
            '{"src": "7", "dst": 2, "ts": 1}',
            '{"src": 1, "dst": 2, "op": "x", "ts": 1}',
            '{"src": 1, "dst": 2}',
            '{"src": 1, "dst": 2, "ts": 1.5}',
        ]
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), fmt=st.sampled_from(["csv", "jsonl"]), chunk_rows=st.integers(1, 8))
def test_csv_jsonl_chunking_never_changes_the_result(tmp_path, data, fmt, chunk_rows):
    lines = data.draw(st.lists(CSV_LINES if fmt == "csv" else JSON_LINES, max_size=25))
    header = "src,dst,op,ts\n" if fmt == "csv" else ""
    path = write(tmp_path / f"h.{fmt}", header + "".join(line + "\n" for line in lines))
    small, rep_small = read_edges(path, chunk_rows=chunk_rows, keep_order=True)
    big, rep_big = read_edges(path, chunk_rows=10_000, keep_order=True)
    assert cols(small) == cols(big)
    assert rep_small.bad_lines == rep_big.bad_lines
    assert (rep_small.good, rep_small.bad, rep_small.skipped) == (rep_big.good, rep_big.bad, rep_big.skipped)
    assert rep_big.good + rep_big.bad + rep_big.skipped == len(lines)


# ---------------------------------------------------------------------------------------------
# time order
# ---------------------------------------------------------------------------------------------


def _unsorted_snap(tmp_path, n=500, seed=3):
    src, dst, _, ts = random_edges(n, seed=seed, ts_range=60)
    return write(tmp_path / "u.txt", snap_text(src, dst, ts)), src, dst, ts


def _assert_stably_sorted(table, src, dst, ts):
    order = stable_order(ts)
    assert cols(table)["ts"] == ts[order].tolist()
    assert cols(table)["src"] == src[order].tolist()
    assert cols(table)["dst"] == dst[order].tolist()


def test_unsorted_in_memory(tmp_path):
    path, src, dst, ts = _unsorted_snap(tmp_path)
    table, report = read_edges(path)
    _assert_stably_sorted(table, src, dst, ts)
    assert report.sorted_input is False and report.runs == 0


@pytest.mark.parametrize("chunk_rows", [1, 7, 64])
def test_unsorted_spills_runs_and_merges(tmp_path, chunk_rows):
    path, src, dst, ts = _unsorted_snap(tmp_path)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    _assert_stably_sorted(table, src, dst, ts)
    assert report.sorted_input is False
    assert report.runs > 2


def test_multi_pass_merge(tmp_path, monkeypatch):
    monkeypatch.setattr(ordering, "MERGE_FANIN", 3)
    path, src, dst, ts = _unsorted_snap(tmp_path, n=300, seed=4)
    stats = ordering.OrderStats()
    with open_edge_file(path, chunk_rows=5, keep_order=True) as reader:
        tables = list(ordering.order_by_time(reader, chunk_rows=5, stats=stats))
    table = pa.concat_tables(tables)
    _assert_stably_sorted(table, src, dst, ts)
    assert stats.runs > 9
    assert stats.merge_passes >= 3  # at least two levels of merging


def test_sorted_input_streams_as_one_run(tmp_path):
    src, dst, _, ts = random_edges(200, seed=5, ts_range=30)
    ts = np.sort(ts)
    path = write(tmp_path / "s.txt", snap_text(src, dst, ts))
    table, report = read_edges(path, chunk_rows=16)
    assert cols(table)["src"] == src.tolist()
    assert report.sorted_input is True and report.runs == 1


def test_spill_files_are_removed_even_when_stopped_early(tmp_path, monkeypatch):
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    path, *_ = _unsorted_snap(tmp_path)
    with open_edge_file(path, chunk_rows=10) as reader:
        first = next(iter(reader))
        assert first.num_rows > 0
        assert any(spill.iterdir())  # runs exist while the merge is in progress
    assert not any(spill.iterdir())
    read_edges(path, chunk_rows=10)
    assert not any(spill.iterdir())


@pytest.mark.parametrize("chunk_rows", [3, 1000])
def test_keep_order(tmp_path, chunk_rows):
    path, src, dst, ts = _unsorted_snap(tmp_path, n=100)
    table, report = read_edges(path, keep_order=True, chunk_rows=chunk_rows)
    assert cols(table) == {"src": src.tolist(), "dst": dst.tolist(), "op": [1] * 100, "ts": ts.tolist()}
    assert report.sorted_input is None


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_ordering_keeps_ops_in_every_format(tmp_path, fmt):
    src, dst, op, ts = random_edges(120, seed=6, ts_range=15)
    if fmt == "csv":
        body = "".join(f"{s},{d},{'+' if o > 0 else '-'},{t}\n" for s, d, o, t in zip(src, dst, op, ts))
        path = write(tmp_path / "e.csv", "src,dst,op,ts\n" + body)
    elif fmt == "jsonl":
        body = "".join(
            json.dumps({"op": "+" if o > 0 else "-", "src": int(s), "dst": int(d), "ts": int(t)}) + "\n"
            for s, d, o, t in zip(src, dst, op, ts)
        )
        path = write(tmp_path / "e.jsonl", body)
    else:
        path = tmp_path / "e.parquet"
        pq.write_table(pa.table({"src": src, "dst": dst, "op": pa.array(op, pa.int8()), "ts": ts}), path)
    order = stable_order(ts)
    for chunk_rows in (8, 10_000):
        table, report = read_edges(path, chunk_rows=chunk_rows)
        assert cols(table)["op"] == op[order].tolist()
        assert cols(table)["src"] == src[order].tolist()
        assert cols(table)["ts"] == ts[order].tolist()
        assert report.sorted_input is False
        assert (report.runs == 0) if chunk_rows == 10_000 else (report.runs > 1)


def test_order_by_time_passes_through_tables_without_ts():
    tables = [pa.table({"src": [3, 1], "dst": [1, 2]}), pa.table({"src": [0], "dst": [9]})]
    out = list(ordering.order_by_time(tables, chunk_rows=1))
    assert [t.to_pydict() for t in out] == [t.to_pydict() for t in tables]
    with pytest.raises(InvalidArgumentError):
        ordering.order_by_time(tables, chunk_rows=0)


def test_float_ts_order_across_runs():
    rng = np.random.default_rng(7)
    ts = rng.random(100)
    ts[::10] = 0.5  # ties
    tables = [pa.table({"src": np.arange(i, i + 10), "ts": ts[i : i + 10]}) for i in range(0, 100, 10)]
    stats = ordering.OrderStats()
    out = pa.concat_tables(list(ordering.order_by_time(tables, chunk_rows=15, stats=stats)))
    order = stable_order(ts)
    assert out.column("src").to_pylist() == order.tolist()
    assert stats.runs > 1


@settings(max_examples=60, deadline=None)
@given(
    ts=st.lists(st.integers(-3, 6), min_size=1, max_size=80),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=10),
    chunk_rows=st.integers(1, 12),
    fanin=st.integers(2, 4),
)
def test_order_by_time_is_a_stable_sort(ts, sizes, chunk_rows, fanin):
    ts = np.array(ts)
    tables, start, k = [], 0, 0
    while start < len(ts):  # cut the input into tables of the drawn sizes
        size = sizes[k % len(sizes)]
        tables.append(pa.table({"src": np.arange(start, min(start + size, len(ts))), "ts": ts[start : start + size]}))
        start, k = start + size, k + 1
    old = ordering.MERGE_FANIN
    ordering.MERGE_FANIN = fanin
    try:
        stats = ordering.OrderStats()
        out = pa.concat_tables(list(ordering.order_by_time(tables, chunk_rows=chunk_rows, stats=stats)))
    finally:
        ordering.MERGE_FANIN = old
    assert out.column("src").to_pylist() == stable_order(ts).tolist()
    assert stats.sorted_input == bool(np.all(np.diff(ts) >= 0))


# ---------------------------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------------------------


def test_college_msg():
    table, report = read_edges(COLLEGE_MSG)
    assert table.num_rows == 59_835
    assert (report.good, report.bad, report.format) == (59_835, 0, "snap")
    ids = np.unique(np.concatenate([table.column("src").to_numpy(), table.column("dst").to_numpy()]))
    assert ids.size == 1_899
    ts = table.column("ts").to_numpy()
    assert np.all(np.diff(ts) >= 0)
    assert report.sorted_input is True
    assert table.slice(0, 1).to_pylist() == [{"src": 1, "dst": 2, "op": 1, "ts": 1082040961}]


def test_college_msg_chunked_matches_whole():
    whole, _ = read_edges(COLLEGE_MSG)
    chunked, report = read_edges(COLLEGE_MSG, chunk_rows=5_000)
    assert whole.equals(chunked)
    assert report.runs == 1


@pytest.mark.skipif(not EMAIL_EU.exists(), reason="../shared/data not available")
def test_email_eu_core_unsorted_file():
    kept, _ = read_edges(EMAIL_EU, keep_order=True)
    ts = kept.column("ts").to_numpy()
    assert not np.all(np.diff(ts) >= 0)
    order = stable_order(ts)
    expected = kept.take(pa.array(order))
    for chunk_rows in (1_000_000, 20_000):
        table, report = read_edges(EMAIL_EU, chunk_rows=chunk_rows)
        assert table.num_rows == 332_334
        assert table.equals(expected)
        assert report.sorted_input is False
    ids = np.unique(np.concatenate([table.column("src").to_numpy(), table.column("dst").to_numpy()]))
    assert ids.size == 986


# ---------------------------------------------------------------------------------------------
# iter_batches, reader behaviour, directories
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_rows", [700, 1_000_000])
def test_iter_batches_sizes(chunk_rows):
    batches = list(iter_batches(COLLEGE_MSG, batch_size=1_000, chunk_rows=chunk_rows))
    assert [len(b) for b in batches] == [1_000] * 59 + [835]
    assert all(isinstance(b, EdgeBatch) for b in batches)
    whole, _ = read_edges(COLLEGE_MSG)
    assert np.array_equal(np.concatenate([b.src for b in batches]), whole.column("src").to_numpy())
    assert np.array_equal(np.concatenate([b.dst for b in batches]), whole.column("dst").to_numpy())
    assert batches[0].src.dtype == np.int64 and batches[0].insert.dtype == bool


def test_iter_batches_ops_and_small_chunks(tmp_path):
    src, dst, op, ts = random_edges(23, seed=8)
    body = "".join(f"{s},{d},{o}\n" for s, d, o in zip(src, dst, op))
    path = write(tmp_path / "e.csv", "src,dst,op\n" + body)
    batches = list(iter_batches(path, batch_size=5, chunk_rows=3))
    assert [len(b) for b in batches] == [5, 5, 5, 5, 3]
    assert np.concatenate([b.insert for b in batches]).tolist() == (op > 0).tolist()
    assert list(iter_batches(write(tmp_path / "empty.txt", ""), batch_size=5)) == []


def test_reader_attributes_and_reiteration(tmp_path):
    path = write(tmp_path / "g.txt", "1 2 5\nbad\n3 4 1\n")
    with open_edge_file(path) as reader:
        assert isinstance(reader, EdgeFileReader)
        assert (reader.format, reader.path) == ("snap", path)
        first = [t.to_pydict() for t in reader]
        assert (reader.report.good, reader.report.bad) == (2, 1)
        second = [t.to_pydict() for t in reader]
        assert first == second == [{"src": [3, 1], "dst": [4, 2], "op": [1, 1], "ts": [1, 5]}]
        assert (reader.report.good, reader.report.bad) == (2, 1)  # reset, not doubled
    with pytest.raises(SourceError, match="closed"):
        iter(reader)


def test_list_edge_files(tmp_path):
    for name in ["b.csv", "a.txt.gz", "c.parquet", "d.jsonl", ".hidden.csv", "notes.md", "e.tmp", "a.txt"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "sub.csv").mkdir()
    names = [p.name for p in list_edge_files(tmp_path)]
    assert names == ["a.txt", "a.txt.gz", "b.csv", "c.parquet", "d.jsonl"]
    assert list_edge_files(str(tmp_path))[0] == tmp_path / "a.txt"
    with pytest.raises(SourceError, match="not a directory"):
        list_edge_files(tmp_path / "missing")
    with pytest.raises(InvalidArgumentError):
        list_edge_files(None)
