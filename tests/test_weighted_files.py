"""Weights in edge files (CSV/TSV, SNAP text, JSON lines, Parquet) and the directory source: read
only for a weighted stream, every bad weight a bad line (reason code ``bad_weight``) while the
rest of the file goes on, and a headerless file's third column a timestamp, never a weight."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.dir_source import DirectorySource
from connectors.files import Layout, iter_batches, read_edges
from connectors.records import BadRecord, EdgeChunk
from streamrank.errors import InvalidArgumentError, SourceError

W = Layout(weighted=True)

#: (weight field as written in text, reason of the bad line)
BAD_TEXT = [
    ("0", "weight 0 is zero"),
    ("-1.5", "weight -1.5 is negative"),
    ("nan", "weight 'nan' is NaN"),
    ("NaN", "weight 'NaN' is NaN"),
    ("inf", "weight 'inf' is infinite"),
    ("-Infinity", "weight '-Infinity' is infinite"),
    ("abc", "weight 'abc' is not a number"),
    ("1e999", "weight 1e999 is infinite"),
    ("", "weight is empty"),
]


def _write(path, text: str):
    path.write_text(text)
    return path


def _bad(report):
    return [(b.line, b.reason, b.code) for b in report.bad_lines]


@pytest.mark.parametrize("sep", [",", "\t"])
def test_csv_every_bad_weight_is_a_bad_line(tmp_path, sep):
    lines = ["src,dst,op,weight".replace(",", sep), sep.join(["1", "2", "+", "2.5"])]
    for k, (text, _) in enumerate(BAD_TEXT):
        lines.append(sep.join([str(10 + k), "3", "+", text]))
    lines += [sep.join(["2", "3", "-", ""]), sep.join(["4", "5", "insert", "3"])]
    name = "e.csv" if sep == "," else "e.tsv"
    for chunk_rows in (1000, 3):  # the fast path and the line-by-line path give the same
        table, report = read_edges(_write(tmp_path / name, "\n".join(lines) + "\n"), layout=W, keep_order=True,
                                   chunk_rows=chunk_rows)
        assert table.column_names == ["src", "dst", "op", "weight"]
        assert table.column("src").to_pylist() == [1, 2, 4]
        w = table.column("weight").to_numpy()
        assert w[0] == 2.5 and math.isnan(w[1]) and w[2] == 3.0  # an empty field on a delete: no weight
        assert _bad(report) == [(3 + k, reason, "bad_weight") for k, (_, reason) in enumerate(BAD_TEXT)]


def test_csv_without_weighted_reads_no_weight(tmp_path):
    path = _write(tmp_path / "e.csv", "src,dst,weight\n1,2,0\n2,3,abc\n")
    table, report = read_edges(path)
    assert table.column_names == ["src", "dst", "op"] and report.bad == 0
    assert "not used: weight" in report.columns


def test_snap_third_column_is_a_timestamp_never_a_weight(tmp_path):
    path = _write(tmp_path / "g.txt", "1 2 100\n2 3 99\n1 2 101\n")
    table, _ = read_edges(path, layout=W)
    assert table.column("ts").to_pylist() == [99, 100, 101]
    assert table.column("weight").to_pylist() == [1.0, 1.0, 1.0]  # no weight column: inserts weigh 1
    table, report = read_edges(path, layout=Layout(weighted=True, weight=3, ts="none"))
    assert table.column("weight").to_pylist() == [100.0, 99.0, 101.0] and "weight=column 3" in report.columns


def test_headerless_weight_named_by_number(tmp_path):
    path = _write(tmp_path / "g.tsv", "1\t2\t100\t0.5\n2\t3\t101\t0\n3\t4\t102\t2\n")
    table, report = read_edges(path, layout=Layout(weighted=True, weight="4", ts=3))
    assert table.column("weight").to_pylist() == [0.5, 2.0] and table.column("ts").to_pylist() == [100, 102]
    assert _bad(report) == [(2, "weight 0 is zero", "bad_weight")]
    with pytest.raises(SourceError, match="--weight 'w'"):
        read_edges(path, layout=Layout(weighted=True, weight="w"))


def test_layout_refuses_a_weight_column_of_an_unweighted_stream():
    with pytest.raises(InvalidArgumentError, match="--weighted"):
        Layout(weight="w")
    with pytest.raises(InvalidArgumentError, match="both name"):
        Layout(weighted=True, ts=3, weight=3)


def test_jsonl_every_bad_weight_is_a_bad_line(tmp_path):
    bad = ["0", "-2", "NaN", "Infinity", '"abc"', '""', "true", '"inf"']
    lines = ['{"src": 1, "dst": 2}', '{"src": 1, "dst": 3, "weight": 2.5}', '{"src": 1, "dst": 2, "op": "-"}']
    lines += ['{"src": %d, "dst": 9, "weight": %s}' % (20 + k, v) for k, v in enumerate(bad)]
    lines += ['{"src": 5, "dst": 6, "weight": "0.25"}', '{"src": 5, "dst": 7, "weight": null}']
    table, report = read_edges(_write(tmp_path / "e.jsonl", "\n".join(lines) + "\n"), layout=W)
    assert table.column("src").to_pylist() == [1, 1, 1, 5, 5]
    w = table.column("weight").to_numpy()
    assert w[[0, 1, 3, 4]].tolist() == [1.0, 2.5, 0.25, 1.0] and math.isnan(w[2])
    assert [b.line for b in report.bad_lines] == list(range(4, 4 + len(bad)))
    assert {b.code for b in report.bad_lines} == {"bad_weight"}
    assert [b.reason for b in report.bad_lines][:4] == ["weight 0 is zero", "weight -2 is negative",
                                                       "weight nan is NaN", "weight inf is infinite"]
    table, report = read_edges(tmp_path / "e.jsonl")  # unweighted: weights never read
    assert "weight" not in table.column_names and report.bad == 0 and table.num_rows == 5 + len(bad)


def test_jsonl_good_weights_take_the_fast_path(tmp_path):
    lines = [json.dumps({"src": i, "dst": i + 1, "weight": 0.5 + i, "ts": i}) for i in range(50)]
    table, report = read_edges(_write(tmp_path / "e.jsonl", "\n".join(lines) + "\n"),
                               layout=Layout(weighted=True, weight="weight"))
    assert table.column("weight").to_pylist() == [0.5 + i for i in range(50)] and report.bad == 0


def test_parquet_every_bad_weight_is_a_bad_row(tmp_path):
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"src": [1, 2, 3, 4, 5, 6, 7], "dst": [2, 3, 4, 5, 6, 7, 8],
                             "op": ["+", "-", "+", "+", "+", "+", "-"],
                             "weight": [2.0, None, 0.0, -1.0, float("nan"), float("inf"), 4.0]}), path)
    table, report = read_edges(path, layout=W, keep_order=True)
    assert table.column("src").to_pylist() == [1, 2, 7]
    w = table.column("weight").to_numpy()
    assert w[0] == 2.0 and math.isnan(w[1]) and w[2] == 4.0
    assert _bad(report) == [(3, "weight 0.0 is zero", "bad_weight"), (4, "weight -1.0 is negative", "bad_weight"),
                            (5, "weight nan is NaN", "bad_weight"), (6, "weight inf is infinite", "bad_weight")]
    pq.write_table(pa.table({"src": [1, 2, 3, 4], "dst": [2, 3, 4, 5], "w": ["2", "", "x", None]}), path)
    table, report = read_edges(path, layout=Layout(weighted=True, weight="w"))
    assert table.column("weight").to_pylist() == [2.0, 1.0]  # null: no weight, an insert weighs 1
    assert _bad(report) == [(2, "weight is empty", "bad_weight"), (3, "weight 'x' is not a number", "bad_weight")]
    table, _ = read_edges(path)
    assert table.column_names == ["src", "dst", "op"]


def test_iter_batches_carry_weights(tmp_path):
    path = _write(tmp_path / "e.csv", "src,dst,op,weight\n1,2,+,2\n2,3,+,3\n1,2,-,\n")
    batches = list(iter_batches(path, batch_size=2, layout=W, keep_order=True))
    assert batches[0].weight.tolist() == [2.0, 3.0] and math.isnan(batches[1].weight[0])
    assert all(b.weight is None for b in iter_batches(path, batch_size=2, keep_order=True))


def test_directory_source_dead_letters_bad_weights(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _write(d / "a.csv", "src,dst,op,weight\n1,2,+,2\n2,3,+,0\n3,4,+,x\n1,2,-,\n")
    _write(d / "b.txt", "5 6\n6 7\n")  # no weight column: inserts weigh 1
    src = DirectorySource(str(d), chunk_rows=100, layout=W)
    src.open({})
    items = []
    while not src.exhausted:
        items += src.poll(0.01)
    bad = [i for i in items if isinstance(i, BadRecord)]
    assert [(b.reason, b.detail, b.topic, b.offset) for b in bad] == [
        ("bad_weight", "weight 0 is zero", "a.csv", 3), ("bad_weight", "weight 'x' is not a number", "a.csv", 4)]
    chunks = [i for i in items if isinstance(i, EdgeChunk) and len(i)]
    assert chunks[0].weight[0] == 2.0 and math.isnan(chunks[0].weight[1])
    assert chunks[1].weight.tolist() == [1.0, 1.0]
    plain = DirectorySource(str(d), chunk_rows=100)
    plain.open({})
    items = []
    while not plain.exhausted:
        items += plain.poll(0.01)
    assert not [i for i in items if isinstance(i, BadRecord)]
    assert all(i.weight is None for i in items if isinstance(i, EdgeChunk))
    assert np.concatenate([i.insert for i in items if isinstance(i, EdgeChunk)]).tolist() == \
        [True, True, True, False, True, True]
