"""``streamrank replay --weighted / --multi-edges sum`` end to end (CPU): files with weights, repeats,
deletions with and without weights and bad weights, replayed in set and sum mode, end with the
ranks NetworkX's weighted PageRank gives the graph the records leave behind (built here from the
records, not by the engine), to L1 <= 1e-6. So does a prefix of sx-mathoverflow (repeated answers)
in sum mode; the whole file is the ``slow`` test::

    python -m pytest -q -m slow tests/test_weighted_replay.py
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from weighted_helpers import l1_to_networkx, make_records, text_weight

from streamrank.cli import main

REPO = Path(__file__).resolve().parents[1]
MATHOVERFLOW = REPO.parent / "shared" / "data" / "sx-mathoverflow.txt.gz"
TOLS = ["--frontier-tol", "1e-9", "--prune-tol", "1e-9"]  # DF-P's accuracy well under the 1e-6 asked


BAD_LINES = [("7", "8", "+", "0"), ("7", "8", "+", "-1"), ("7", "8", "+", "nan"), ("7", "8", "+", "inf"),
             ("7", "8", "+", "x")]


def write(path: Path, records, fmt: str) -> Path:
    """``records`` as a file of format ``fmt`` (with bad-weight lines in the text formats)."""
    op = {True: "+", False: "-"}
    if fmt == "csv":
        lines = ["src,dst,op,weight"] + [f"{s},{d},{op[i]},{text_weight(i, w)}" for s, d, i, w in records]
        for k, bad in enumerate(BAD_LINES):
            lines.insert(5 + 40 * k, ",".join(bad))
        path.write_text("\n".join(lines) + "\n")
    elif fmt == "jsonl":
        objs = [{"src": s, "dst": d, "op": op[i], **({} if w is None else {"weight": w})} for s, d, i, w in records]
        lines = [json.dumps(o) for o in objs]
        for k, bad in enumerate(BAD_LINES):
            lines.insert(5 + 40 * k, '{"src": 7, "dst": 8, "weight": %s}' % json.dumps(bad[3]))
        path.write_text("\n".join(lines) + "\n")
    else:
        pq.write_table(pa.table({"src": [r[0] for r in records], "dst": [r[1] for r in records],
                                 "op": [op[r[2]] for r in records],
                                 "weight": pa.array([r[3] for r in records], pa.float64())}), path)
    return path


def replay_ranks(tmp_path, path, *flags, device="cpu"):
    out = tmp_path / "ranks.parquet"
    rc = main(["replay", str(path), *flags, "--ranks-out", str(out), "--no-progress", "--device", device,
               "--top", "0", *TOLS])
    assert rc == 0
    t = pq.read_table(out)
    return t.column("vertex").to_numpy(), t.column("rank").to_numpy()


@pytest.mark.parametrize("fmt,mode", [("csv", "set"), ("csv", "sum"), ("jsonl", "sum"), ("parquet", "set")])
def test_weighted_replay_matches_networkx(tmp_path, capsys, fmt, mode):
    records = make_records(3, 1500, 120)
    path = write(tmp_path / f"e.{fmt}", records, fmt)
    flags = ["--multi-edges", mode] + (["--weighted"] if mode == "set" else [])
    ids, p = replay_ranks(tmp_path, path, *flags, "--base-fraction", "0.3", "--batch-size", "37")
    assert l1_to_networkx(ids, p, records, mode) <= 1e-6
    err = capsys.readouterr()
    if fmt != "parquet":
        assert "5 bad line(s) skipped" in err.err and "weight 0 is zero" in err.err
    assert "weighted, multi-edges " + mode in err.out


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["set", "sum"])
def test_weighted_replay_on_the_gpu_matches_networkx(tmp_path, mode):
    records = make_records(5, 1500, 120)
    path = write(tmp_path / "e.csv", records, "csv")
    flags = ["--multi-edges", mode] + (["--weighted"] if mode == "set" else [])
    ids, p = replay_ranks(tmp_path, path, *flags, "--base-fraction", "0.3", "--batch-size", "37", device="gpu")
    assert l1_to_networkx(ids, p, records, mode) <= 1e-6


def test_set_and_sum_differ_and_unweighted_ignores_weights(tmp_path):
    records = make_records(4, 600, 60)
    path = write(tmp_path / "e.csv", records, "csv")
    results = {}
    for mode in ("set", "sum"):
        ids, p = replay_ranks(tmp_path, path, "--weighted", "--multi-edges", mode, "--batch-size", "50")
        results[mode] = dict(zip(ids.tolist(), p.tolist()))
        assert l1_to_networkx(ids, p, records, mode) <= 1e-6
    assert sum(abs(results["set"][k] - results["sum"][k]) for k in results["set"]) > 1e-3
    ids, p = replay_ranks(tmp_path, path, "--batch-size", "50")  # unweighted: weights not read, bad ones fine
    rows = [line.split(",") for line in path.read_text().splitlines()[1:]]  # the bad weights' lines too
    unweighted = [(int(r[0]), int(r[1]), r[2] == "+", None) for r in rows]
    assert l1_to_networkx(ids, p, unweighted, "set") <= 1e-6


def _mathoverflow(lines: int | None):
    """``(src, dst, insert, None)`` records of the file's first ``lines`` lines (all: None), time-ordered
    as the replay reads them."""
    rows = []
    with gzip.open(MATHOVERFLOW, "rt") as fh:
        for k, line in enumerate(fh):
            if lines is not None and k >= lines:
                break
            s, d, t = line.split()
            rows.append((int(t), int(s), int(d)))
    rows.sort(key=lambda r: r[0])  # stable: the replay's time order
    return [(s, d, True, None) for _, s, d in rows]


@pytest.mark.skipif(not MATHOVERFLOW.exists(), reason="../shared/data not available")
def test_mathoverflow_prefix_sum_mode_counts_repeated_answers(tmp_path):
    with gzip.open(MATHOVERFLOW, "rt") as fh:
        head = [next(fh) for _ in range(30_000)]
    path = tmp_path / "mo.txt"
    path.write_text("".join(head))
    records = _mathoverflow(30_000)
    ids, p = replay_ranks(tmp_path, path, "--multi-edges", "sum", "--batch-size", "500")
    edges = {}
    for s, d, _, _ in records:
        edges[(s, d)] = edges.get((s, d), 0) + 1
    assert max(edges.values()) > 5  # repeated answers: counts above 1
    assert l1_to_networkx(ids, p, records, "sum") <= 1e-6


@pytest.mark.slow
@pytest.mark.skipif(not MATHOVERFLOW.exists(), reason="../shared/data not available")
def test_mathoverflow_full_sum_mode(tmp_path):
    ids, p = replay_ranks(tmp_path, MATHOVERFLOW, "--multi-edges", "sum", "--batch-size", "5000")
    assert l1_to_networkx(ids, p, _mathoverflow(None), "sum") <= 1e-6


def test_delete_without_weight_in_sum_mode_removes_the_edge(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("src,dst,op,weight\n1,2,+,3\n1,3,+,1\n2,1,+,1\n1,2,+,2\n1,2,-,4\n1,3,-,\n3,1,+,1\n")
    ids, p = replay_ranks(tmp_path, path, "--multi-edges", "sum", "--base-fraction", "0", "--batch-size", "1")
    records = [(1, 2, True, 3.0), (1, 3, True, 1.0), (2, 1, True, 1.0), (1, 2, True, 2.0), (1, 2, False, 4.0),
               (1, 3, False, None), (3, 1, True, 1.0)]
    assert l1_to_networkx(ids, p, records, "sum") <= 1e-9
    assert math.isclose(sum(p), 1.0)
