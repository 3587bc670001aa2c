"""A corpus of edge files shaped like public ones (headerless CSV, TSV, blank-separated, named columns
in another order, fractional and ISO-8601 timestamps, extra columns, Parquet and JSON lines with
other field names) replays to the same ranks as the same edges in the canonical layout, and
NetworkX agrees with those ranks.

Every file lists the edges in a shuffled order with timestamps and deletions, so a file read in
file order (a timestamp column missed) ends in another graph and fails the comparison.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.files import Layout, read_edges
from streamrank.replay.run import read_stream, replay

N_EDGES = 400


def _edges():
    """Rows ``(src, dst, op, ts)``: unique inserts, a fifth of them deleted later, in shuffled file order."""
    rng = np.random.default_rng(7)
    pairs = set()
    while len(pairs) < N_EDGES:
        s, d = (int(x) for x in rng.integers(0, 60, 2))
        if s != d:
            pairs.add((s, d))
    pairs = sorted(pairs)
    ts = rng.permutation(10 * N_EDGES)[: N_EDGES] + 1_600_000_000
    rows = [(s, d, 1, int(t)) for (s, d), t in zip(pairs, ts)]
    for s, d, _, t in rows[: N_EDGES // 5]:
        rows.append((s, d, -1, t + int(rng.integers(1, 50)) * 10 + 3))  # after its insert, never on a tie
    order = rng.permutation(len(rows))
    return [rows[k] for k in order]


ROWS = _edges()
OPS = {1: "+", -1: "-"}


def _iso(t: int, *, zone: bool) -> str:
    when = datetime.fromtimestamp(t, timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if zone else when.strftime("%Y-%m-%d %H:%M:%S")


def _text(path, lines, *, gz=False):
    data = "".join(line + "\n" for line in lines)
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(data)
    else:
        path.write_text(data)
    return path


def _write(tmp, name):
    """Write corpus file ``name``; returns (path, Layout the user states)."""
    p = tmp / name
    if name == "canonical.csv":
        return _text(p, ["src,dst,op,ts"] + [f"{s},{d},{OPS[o]},{t}" for s, d, o, t in ROWS]), Layout()
    if name == "snap-otc-headerless.csv":  # src,dst,rating,fractional time (as soc-sign-bitcoinotc)
        return _text(p, [f"{s},{d},{o},{t}.25" for s, d, o, t in ROWS]), Layout(op=3, ts=4)
    if name == "headerless.csv.gz":
        return _text(p, [f"{s},{d},{o},{t}" for s, d, o, t in ROWS], gz=True), Layout(op=3, ts=4)
    if name == "aliases.tsv":  # header with other common names, tab-separated
        return _text(p, ["from\tto\taction\ttime"] + [f"{s}\t{d}\t{OPS[o]}\t{t}" for s, d, o, t in ROWS]), Layout()
    if name == "blanks.txt":  # runs of blanks, comment lines, no header
        return (_text(p, ["# a SNAP-style comment", "% another"] + [f"{s}   {d} {o}\t {t}" for s, d, o, t in ROWS]),
                Layout(op=3, ts=4))
    if name == "other-order.csv":  # named columns in another order, names of the user's own
        return (_text(p, ["when,weight,kind,to_node,from_node"]
                      + [f"{t},0.5,{'insert' if o > 0 else 'delete'},{d},{s}" for s, d, o, t in ROWS]),
                Layout(src="from_node", dst="to_node", ts="when", op="kind"))
    if name == "iso-zone.csv":
        return _text(p, ["src,dst,op,created_at"] + [f"{s},{d},{o},{_iso(t, zone=True)}" for s, d, o, t in ROWS]), \
            Layout(ts="created_at")
    if name == "iso-naive.tsv":  # ISO times without a zone (UTC), no header, timestamp first
        return (_text(p, [f"{_iso(t, zone=False)}\t{s}\t{d}\t{o}" for s, d, o, t in ROWS]),
                Layout(ts=1, src=2, dst=3, op=4))
    if name == "extra-columns.csv":
        return (_text(p, ["src,dst,ts,op,weight,label"] + [f"{s},{d},{t},{OPS[o]},1.5,x{s}" for s, d, o, t in ROWS]),
                Layout())
    if name == "semicolons.csv":
        return _text(p, ["src;dst;op;ts"] + [f"{s};{d};{o};{t}" for s, d, o, t in ROWS]), Layout()
    if name == "pipes-by-position.txt":
        return (_text(p, [f"{t}|{d}|{s}|{o}" for s, d, o, t in ROWS]),
                Layout(delimiter="pipe", header=False, src=3, dst=2, ts=1, op=4))
    if name == "fields.parquet":
        cols = list(zip(*ROWS))
        pq.write_table(pa.table({"t": pa.array(cols[3], pa.float64()), "u_id": cols[0], "v_id": cols[1],
                                 "change": cols[2], "note": ["n"] * len(ROWS)}), p, row_group_size=97)
        return p, Layout(src="u_id", dst="v_id", ts="t", op="change")
    if name == "iso.parquet":
        cols = list(zip(*ROWS))
        pq.write_table(pa.table({"source": cols[0], "target": cols[1], "op": [OPS[o] for o in cols[2]],
                                 "timestamp": [_iso(t, zone=True) for t in cols[3]]}), p)
        return p, Layout()
    if name == "fields.jsonl":
        lines = [json.dumps({"at": t + 0.5, "who": s, "whom": d, "act": OPS[o], "extra": [1]}) for s, d, o, t in ROWS]
        return _text(p, lines), Layout(src="who", dst="whom", ts="at", op="act")
    if name == "iso.ndjson":
        lines = [json.dumps({"from": s, "to": d, "op": o, "time": _iso(t, zone=True)}) for s, d, o, t in ROWS]
        return _text(p, lines), Layout()
    raise AssertionError(name)


CORPUS = ["snap-otc-headerless.csv", "headerless.csv.gz", "aliases.tsv", "blanks.txt", "other-order.csv",
          "iso-zone.csv", "iso-naive.tsv", "extra-columns.csv", "semicolons.csv", "pipes-by-position.txt",
          "fields.parquet", "iso.parquet", "fields.jsonl", "iso.ndjson"]


def _final_ranks(path, layout):
    stream = read_stream(path, layout=layout)
    report = replay(stream, algorithms=["auto"], base_fraction=0.5, batch_size=20, device="cpu", progress=False)
    ids, p = report.runs[0].engine.ranks()
    return dict(zip(ids.tolist(), p.tolist())), report


@pytest.fixture(scope="module")
def canonical(tmp_path_factory):
    path, layout = _write(tmp_path_factory.mktemp("canon"), "canonical.csv")
    return _final_ranks(path, layout)


def _networkx_ranks():
    g = nx.DiGraph()
    for s, d, o, _t in sorted(ROWS, key=lambda r: r[3]):
        g.add_nodes_from((s, d))
        if o > 0:
            g.add_edge(s, d)
        else:
            g.remove_edge(s, d)
    return nx.pagerank(g, alpha=0.85, tol=1e-14, max_iter=10_000)


def test_canonical_matches_networkx(canonical):
    ranks, report = canonical
    ref = _networkx_ranks()
    assert set(ranks) == set(ref)
    assert sum(abs(ranks[v] - ref[v]) for v in ref) <= 1e-6
    assert report.graph["edges"] == N_EDGES - N_EDGES // 5


def test_file_order_would_differ():
    """The corpus is meaningful: replaying in file order gives another graph."""
    g = set()
    for s, d, o, _t in ROWS:
        (g.add if o > 0 else g.discard)((s, d))
    assert len(g) != N_EDGES - N_EDGES // 5


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_file_replays_to_the_canonical_ranks(tmp_path, canonical, name):
    path, layout = _write(tmp_path, name)
    ranks, report = _final_ranks(path, layout)
    want, want_report = canonical
    assert report.graph["edges"] == want_report.graph["edges"]
    assert set(ranks) == set(want)
    assert max(abs(ranks[v] - want[v]) for v in want) <= 1e-12
    ref = _networkx_ranks()
    assert sum(abs(ranks[v] - ref[v]) for v in ref) <= 1e-6


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_file_reads_every_row_and_names_unused_columns(tmp_path, name):
    path, layout = _write(tmp_path, name)
    table, report = read_edges(path, layout=layout)
    assert (report.good, report.bad) == (len(ROWS), 0)
    assert report.has_ts and table.column_names == ["src", "dst", "op", "ts"]
    assert report.columns
    unused = {"other-order.csv": ["weight"], "extra-columns.csv": ["weight", "label"], "fields.parquet": ["note"],
              "fields.jsonl": ["extra"]}.get(name, [])
    assert report.unused_columns == unused
    for column in unused:
        assert column in report.columns


def test_headerless_four_columns_without_ts_names_the_unused_columns(tmp_path):
    path = _text(tmp_path / "e.csv", ["6,2,4,1289241911.72836", "6,5,2,1289241941.53378"])
    table, report = read_edges(path)
    assert table.column_names == ["src", "dst", "op"] and report.good == 2
    assert report.unused_columns == ["column 3", "column 4"]
    assert "pass --ts COL" in report.columns
