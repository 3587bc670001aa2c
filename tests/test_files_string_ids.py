"""Edge files with string vertex ids: every format, detection, mixing, bad ids, chunking, ordering."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.files import iter_batches, read_edges
from streamrank.errors import InvalidArgumentError, SourceError


def write(path: Path, data) -> Path:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            f.write(raw)
    else:
        path.write_bytes(raw)
    return path


def cols(table):
    return {n: table.column(n).to_pylist() for n in table.column_names}


NAMES_SRC = ["alice", "bob", "carol", "dave@example.com", "ünïcode", "b0b"]
NAMES_DST = ["bob", "carol", "alice", "alice", "bob", "http://x.org/a?b=1"]
TS = [5, 1, 4, 2, 3, 3]
ORDER = np.argsort(TS, kind="stable")


def in_time_order(values):
    return [values[i] for i in ORDER]


def text_of(fmt):
    if fmt == "snap":
        return "# names\n" + "".join(f"{s}\t{d} {t}\n" for s, d, t in zip(NAMES_SRC, NAMES_DST, TS))
    if fmt == "csv":
        return "src,dst,op,ts\n" + "".join(f"{s}, {d} ,+,{t}\n" for s, d, t in zip(NAMES_SRC, NAMES_DST, TS))
    return "".join(json.dumps({"src": s, "dst": d, "ts": t}) + "\n" for s, d, t in zip(NAMES_SRC, NAMES_DST, TS))


@pytest.mark.parametrize("fmt, name", [("snap", "e.txt"), ("snap", "e.txt.gz"), ("csv", "e.csv"),
                                       ("jsonl", "e.jsonl")])
@pytest.mark.parametrize("chunk_rows", [1, 2, 1000])
@pytest.mark.parametrize("id_type", ["auto", "string"])
def test_text_formats_read_string_ids(tmp_path, fmt, name, chunk_rows, id_type):
    path = write(tmp_path / name, text_of(fmt))
    table, report = read_edges(path, chunk_rows=chunk_rows, id_type=id_type)
    assert report.bad == 0 and report.id_type == "string"
    assert table.schema.field("src").type == pa.string()
    assert cols(table)["src"] == in_time_order(NAMES_SRC)
    assert cols(table)["dst"] == in_time_order(NAMES_DST)
    assert cols(table)["ts"] == sorted(TS)


@pytest.mark.parametrize("kind", ["string", "large_string", "binary", "dictionary"])
@pytest.mark.parametrize("chunk_rows", [2, 1000])
def test_parquet_string_columns(tmp_path, kind, chunk_rows):
    def col(values):
        arr = pa.array(values)
        if kind == "large_string":
            return arr.cast(pa.large_string())
        if kind == "binary":
            return pa.array([v.encode() for v in values], pa.binary())
        if kind == "dictionary":
            return arr.dictionary_encode()
        return arr

    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": col(NAMES_SRC), "dst": col(NAMES_DST), "ts": TS}), path)
    table, report = read_edges(path, chunk_rows=chunk_rows)
    assert report.bad == 0 and report.id_type == "string"
    assert cols(table)["src"] == in_time_order(NAMES_SRC)
    assert cols(table)["dst"] == in_time_order(NAMES_DST)


def test_parquet_numeric_strings_stay_strings_and_bad_rows(tmp_path):
    path = tmp_path / "e.parquet"
    src = pa.array([b"12", b"", b"\xff\xfe", b"x" * 30, None, b"ok"], pa.binary())
    dst = pa.array([b"a", b"b", b"c", b"d", b"e", b"007"], pa.binary())
    pq.write_table(pa.table({"src": src, "dst": dst}), path)
    table, report = read_edges(path, max_id_bytes=20)
    assert cols(table)["src"] == ["12", "ok"] and cols(table)["dst"] == ["a", "007"]
    assert {b.line: b.code for b in report.bad_lines} == {2: "empty_id", 3: "bad_utf8_id", 4: "id_too_long", 5: None}
    assert "missing src" in report.bad_lines[3].reason
    # a declared integer stream: every row of a string column is a mixed-type bad row
    table, report = read_edges(path, id_type="int")
    assert table.num_rows == 0 and report.bad == 6
    assert {b.code for b in report.bad_lines} == {"mixed_id_types"}
    pq.write_table(pa.table({"src": [1, 2], "dst": [3, 4]}), path)
    _, report = read_edges(path, id_type="string")
    assert report.bad == 2 and report.bad_lines[0].code == "mixed_id_types"


def test_auto_detection_rejects_the_other_kind_both_ways(tmp_path):
    path = write(tmp_path / "e.txt", "alice bob\n1 2\nbob 3\ncarol dave\n")
    table, report = read_edges(path, keep_order=True)
    assert cols(table)["src"] == ["alice", "carol"]
    assert [(b.line, b.code) for b in report.bad_lines] == [(2, "mixed_id_types"), (3, "mixed_id_types")]
    assert "integer-looking src id '1' in a string-id stream" in report.bad_lines[0].reason
    path = write(tmp_path / "f.txt", "1 2\nalice bob\n3 4\n")
    table, report = read_edges(path, keep_order=True)
    assert cols(table)["src"] == [1, 3]
    assert report.bad_lines[0].code == "mixed_id_types" and "non-integer src id 'alice'" in report.bad_lines[0].reason
    # declared string: digits are names too
    table, report = read_edges(tmp_path / "e.txt", keep_order=True, id_type="string")
    assert report.bad == 0 and cols(table)["src"] == ["alice", "1", "bob", "carol"]
    # declared int: strings are non-integer ids (the integer reasons, unchanged)
    _, report = read_edges(tmp_path / "e.txt", keep_order=True, id_type="int")
    assert report.bad == 3 and report.bad_lines[0].code is None


def test_detection_does_not_depend_on_chunking(tmp_path):
    lines = "# c\n\nx y z w\n" + "".join(f"{'n' if i % 7 else ''}{i} v{i}\n" for i in range(1, 41))
    path = write(tmp_path / "e.txt", lines)
    ref = None
    for chunk_rows in (1, 2, 3, 5, 1000):
        table, report = read_edges(path, chunk_rows=chunk_rows, keep_order=True)
        got = (cols(table), [(b.line, b.reason, b.code) for b in report.bad_lines])
        assert ref is None or got == ref
        ref = got
    assert ref[0]["src"][0] == "n1" and len(ref[1]) == 1 + 5  # the 4-field line, then 7, 14, ... look like ints


def test_json_kinds(tmp_path):
    rows = [{"src": "a", "dst": "b"}, {"src": 5, "dst": "c"}, {"src": "7", "dst": "d"},
            {"src": "\ud800", "dst": "e"}, {"src": "", "dst": "f"}, {"src": ["x"], "dst": "g"}]
    path = write(tmp_path / "e.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    table, report = read_edges(path)
    assert cols(table)["src"] == ["a"]
    assert [b.code for b in report.bad_lines] == ["mixed_id_types", "mixed_id_types", "bad_utf8_id", "empty_id",
                                                  "mixed_id_types"]
    table, report = read_edges(path, id_type="string")
    assert cols(table)["src"] == ["a", "7"]  # a JSON number is not a string; "7" is
    # integer files keep reading digit strings as integers
    path = write(tmp_path / "i.jsonl", '{"src": "5", "dst": 6}\n{"src": 7, "dst": "8"}\n')
    table, report = read_edges(path)
    assert cols(table)["src"] == [5, 7] and report.id_type == "int"


def test_csv_bad_string_ids(tmp_path):
    text = "src,dst\na,b\n  ,c\n" + "x" * 40 + ",d\n"
    path = write(tmp_path / "e.csv", text.encode() + b"\xff\xfe,e\nz,y\n")
    table, report = read_edges(path, max_id_bytes=32, keep_order=True)
    assert cols(table) == {"src": ["a", "z"], "dst": ["b", "y"], "op": [1, 1]}
    assert [(b.line, b.code) for b in report.bad_lines] == [(3, "empty_id"), (4, "id_too_long"), (5, "bad_utf8_id")]


def test_bad_id_type_argument(tmp_path):
    path = write(tmp_path / "e.txt", "a b\n")
    with pytest.raises(InvalidArgumentError):
        read_edges(path, id_type="str")
    with pytest.raises(InvalidArgumentError):
        read_edges(path, max_id_bytes=0)


def test_strict_names_the_mixed_line(tmp_path):
    path = write(tmp_path / "e.txt", "a b\nc d\n3 4\n")
    with pytest.raises(SourceError, match="line 3: integer-looking src id"):
        read_edges(path, strict=True)


@pytest.mark.parametrize("chunk_rows", [3, 7])
def test_unsorted_string_file_spills_and_merges(tmp_path, chunk_rows):
    rng = np.random.default_rng(3)
    n = 60
    ts = rng.integers(0, 10, n)
    src = [f"s{i}" for i in range(n)]
    path = write(tmp_path / "e.txt", "".join(f"{s} d{i} {t}\n" for i, (s, t) in enumerate(zip(src, ts))))
    table, report = read_edges(path, chunk_rows=chunk_rows)
    order = np.argsort(ts, kind="stable")
    assert cols(table)["src"] == [src[i] for i in order]
    assert report.runs > 1


def test_iter_batches_with_string_ids(tmp_path):
    path = write(tmp_path / "e.txt", "".join(f"u{i} u{i + 1}\n" for i in range(10)))
    batches = list(iter_batches(path, batch_size=4))
    assert [len(b) for b in batches] == [4, 4, 2]
    assert batches[0].id_kind == "string" and batches[0].src.to_pylist() == ["u0", "u1", "u2", "u3"]
