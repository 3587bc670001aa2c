"""Checkpoints already written restore on this tree, on both backends.

``tests/data/checkpoints_0_1_0/{int,str}`` are checkpoint directories written by streamrank 0.1.0
(``streamrank serve --input-dir ... --base-graph ... --checkpoint-every 1 --full-checkpoint-every 2
--batch-size 100 --device cpu``: 300-edge CSV files of CollegeMsg with 40 deletions each, integer and
string ids): three full checkpoints, each with the batch log after it. ``expected.npz`` holds
what that version restored from them on the CPU (ids, ranks, sequence number, edge count).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank
from streamrank.checkpoints.recovery import restore_latest

DATA = Path(__file__).parent / "data" / "checkpoints_0_1_0"


@pytest.mark.parametrize("kind", ["int", "str"])
def test_checkpoint_of_an_earlier_version_restores(kind, device, tmp_path):
    directory = tmp_path / "ckpt"
    shutil.copytree(DATA / kind, directory)  # restore may set unreadable files aside: work on a copy
    expected = np.load(directory / "expected.npz", allow_pickle=False)
    restored = restore_latest(str(directory), device=device)
    assert restored.seq == int(expected["seq"]) == 16
    assert restored.engine.graph.num_edges == int(expected["num_edges"])
    ids, p = restored.engine.ranks()
    got = dict(zip((str(i) for i in ids), np.asarray(p, dtype=np.float64)))
    want = dict(zip((str(i) for i in expected["ids"]), expected["p"]))
    assert got.keys() == want.keys()
    if device == "cpu":  # the CPU restore is deterministic: the earlier version's ranks exactly
        assert all(got[k] == want[k] for k in want)
    else:  # the GPU applies the logged batch with its own DF-P arithmetic: within DF-P's error of it
        l1 = sum(abs(got[k] - want[k]) for k in want)
        assert l1 <= 2e-6, l1
    # and independently of the earlier version: the restored ranks are PageRank of the restored graph
    assert l1_error(np.asarray(restored.engine.ranks()[1]), oracle_pagerank(restored.engine.graph)) <= 1e-6
