"""Replay of a string-id file: the same ranks as the integer file, and as NetworkX on string nodes."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest

from streamrank.replay.run import BUNDLED_GRAPH, read_stream, replay

REPO = Path(__file__).resolve().parents[1]


def rewrite_with_names(src_path: Path, out_path: Path, limit: int | None = None) -> None:
    """The SNAP file with every id ``v`` rewritten as ``u<v>·x`` (never integer-looking)."""
    with gzip.open(src_path, "rt") as fin, gzip.open(out_path, "wt", encoding="utf-8") as fout:
        for k, line in enumerate(fin):
            if limit is not None and k >= limit:
                break
            s, d, t = line.split()
            fout.write(f"u{s}·x u{d}·x {t}\n")


def name_of(v) -> str:
    return f"u{int(v)}·x"


@pytest.fixture(scope="module")
def named_college(tmp_path_factory):
    out = tmp_path_factory.mktemp("named") / "college-names.txt.gz"
    rewrite_with_names(BUNDLED_GRAPH, out, limit=20000)
    ints = tmp_path_factory.mktemp("ints") / "college-ints.txt.gz"
    with gzip.open(BUNDLED_GRAPH, "rt") as fin, gzip.open(ints, "wt") as fout:
        for k, line in enumerate(fin):
            if k >= 20000:
                break
            fout.write(line)
    return ints, out


@pytest.mark.parametrize("delete_fraction", [0.0, 0.2])
def test_replay_string_file_matches_integer_file(device, named_college, delete_fraction):
    ints, names = named_college
    s_int, s_str = read_stream(ints), read_stream(names)
    assert s_int.id_type == "int" and s_str.id_type == "string"
    kw = dict(algorithms=["dfp"], batch_size=40, delete_fraction=delete_fraction, device=device, check=True,
              progress=False, max_batches=60)
    r_int, r_str = replay(s_int, **kw), replay(s_str, **kw)
    assert r_str.graph["id_type"] == "string"
    ids_i, p_i = r_int.runs[0].engine.ranks()
    ids_s, p_s = r_str.runs[0].engine.ranks()
    got = dict(zip(ids_s.tolist(), p_s.tolist()))
    if delete_fraction == 0:  # random deletions pick edges by store position, which differs between the two
        assert r_str.graph["vertices"] == r_int.graph["vertices"] and r_str.graph["edges"] == r_int.graph["edges"]
        want = {name_of(v): r for v, r in zip(ids_i.tolist(), p_i.tolist())}
        assert set(got) == set(want)
        assert sum(abs(got[k] - want[k]) for k in want) < 1e-6  # DF-P: rounding can flip frontier decisions
    assert r_str.runs[0].summary()["l1_error"] < 1e-5
    # NetworkX on string nodes, over the final graph
    es, ed = r_str.runs[0].engine.edges_external()
    g = nx.DiGraph()
    g.add_nodes_from(ids_s.tolist())
    g.add_edges_from(zip(es.tolist(), ed.tolist()))
    ref = nx.pagerank(g, alpha=0.85, tol=1e-13, max_iter=1000)
    assert sum(abs(got[k] - ref[k]) for k in ref) < 1e-5


def test_replay_cli_with_string_ids(tmp_path, named_college):
    _, names = named_college
    out = tmp_path / "ranks.parquet"
    proc = subprocess.run([sys.executable, "-m", "streamrank", "replay", str(names), "--device", "cpu",
                           "--batch-size", "50", "--max-batches", "5", "--no-progress", "--top", "3",
                           "--ranks-out", str(out), "--id-type", "string"],
                          capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "string ids" in proc.stdout and re.search(r"^\s+1\s+u\S+\s+\d\.\d+e-\d+$", proc.stdout, re.M)
    table = pq.read_table(out)
    assert str(table.schema.field("vertex").type) == "string"
    assert abs(float(np.sum(table.column("rank").to_numpy())) - 1.0) < 1e-12


def test_replay_cli_three_names(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("alice bob 1\nbob carol 2\ncarol alice 3\n")
    proc = subprocess.run([sys.executable, "-m", "streamrank", "replay", str(path), "--device", "cpu",
                           "--base-fraction", "0.5", "--no-progress", "--check"],
                          capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^\s+\d\s+alice\s", proc.stdout, re.M) and re.search(r"^\s+\d\s+carol\s", proc.stdout, re.M)


def test_ppr_cli_on_string_file_matches_integer_file(tmp_path, named_college):
    import json

    from streamrank.cli import main as cli_main

    ints, names = named_college
    out_i, out_s = tmp_path / "i.json", tmp_path / "s.json"
    assert cli_main(["ppr", str(ints), "--seed", "9", "--seed", "9,12", "--k", "10", "--device", "cpu",
                     "--json", str(out_i)]) == 0
    assert cli_main(["ppr", str(names), "--seed", name_of(9), "--seed", f"{name_of(9)},{name_of(12)}", "--k", "10",
                     "--device", "cpu", "--json", str(out_s)]) == 0
    for ri, rs in zip(json.loads(out_i.read_text())["results"], json.loads(out_s.read_text())["results"]):
        assert [name_of(v) for v in ri["seeds"]] == rs["seeds"]
        assert [name_of(v) for v, _ in ri["top_k"]] == [v for v, _ in rs["top_k"]]
        np.testing.assert_allclose([s for _, s in ri["top_k"]], [s for _, s in rs["top_k"]], rtol=1e-9)
