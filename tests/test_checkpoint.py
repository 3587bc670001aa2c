"""Checkpoints: atomic write, manifest, keep-last-K, restore into an engine, crash leftovers."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.checkpoints.full import MANIFEST, list_checkpoints, load_latest, read_checkpoint, save_checkpoint
from streamrank.engine import Engine
from streamrank.errors import CheckpointError


def _engine():
    rng = np.random.default_rng(3)
    eng = Engine("cpu", "dfp")
    eng.load_edges(rng.integers(0, 50, 300), rng.integers(0, 50, 300))
    eng.apply(EdgeBatch.from_arrays(rng.integers(0, 60, 40), rng.integers(0, 60, 40)))
    return eng


def test_roundtrip_restores_engine(tmp_path):
    eng = _engine()
    pos = {"kafka:t:0": 17, "kafka:t:1": 4}
    path = save_checkpoint(tmp_path, eng.state(), seq=eng.seq, positions=pos, meta={"algorithm": "dfp"},
                           ranks=eng.ranks())
    assert os.path.basename(path) == "ckpt-000000000001.npz"
    ck = load_latest(tmp_path)
    assert ck.seq == 1 and ck.positions == pos and ck.meta == {"algorithm": "dfp"}
    back = Engine.from_state(ck.engine_state, device="cpu", algorithm="dfp")
    assert back.seq == eng.seq
    ids, p = back.ranks()
    ids0, p0 = eng.ranks()
    assert np.array_equal(ids, ids0) and np.array_equal(p, p0)
    assert np.array_equal(ck.ranks[0], ids0) and np.array_equal(ck.ranks[1], p0)
    # the restored engine goes on exactly like the original
    b = EdgeBatch.from_arrays([1, 2, 70], [70, 3, 1], [True, False, True])
    eng.apply(b)
    back.apply(b)
    assert np.array_equal(eng.ranks()[1], back.ranks()[1])
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]


def test_keep_last_k_and_manifest(tmp_path):
    eng = _engine()
    for seq in range(1, 7):
        save_checkpoint(tmp_path, eng.state(), seq=seq, positions={"dir": {"rows": seq}}, keep=3)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [4, 5, 6]
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert [e["seq"] for e in manifest["checkpoints"]] == [4, 5, 6]
    assert load_latest(tmp_path).positions == {"dir": {"rows": 6}}


def test_corrupt_latest_falls_back(tmp_path):
    eng = _engine()
    save_checkpoint(tmp_path, eng.state(), seq=1, positions={"a": 1})
    p2 = save_checkpoint(tmp_path, eng.state(), seq=2, positions={"a": 2})
    with open(p2, "r+b") as fh:  # a torn file (cannot happen through rename, but disks lie)
        fh.truncate(100)
    ck = load_latest(tmp_path)
    assert ck.seq == 1 and ck.positions == {"a": 1}
    with pytest.raises(CheckpointError):
        read_checkpoint(p2)


def test_file_without_manifest_entry_is_found(tmp_path):
    """A crash between the rename and the manifest update leaves a complete, usable file."""
    eng = _engine()
    save_checkpoint(tmp_path, eng.state(), seq=1, positions={"a": 1})
    manifest = (tmp_path / MANIFEST).read_bytes()
    save_checkpoint(tmp_path, eng.state(), seq=2, positions={"a": 2})
    (tmp_path / MANIFEST).write_bytes(manifest)  # as if the manifest write never happened
    assert load_latest(tmp_path).seq == 2
    (tmp_path / MANIFEST).write_text("{not json")
    assert load_latest(tmp_path).seq == 2


def test_empty_and_missing_directory(tmp_path):
    assert load_latest(tmp_path) is None
    assert load_latest(tmp_path / "nope") is None
    (tmp_path / ".tmp-1-ckpt-000000000009.npz").write_bytes(b"partial")
    assert load_latest(tmp_path) is None


def test_unwritable_directory_raises(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(CheckpointError):
        save_checkpoint(target, {"x": np.zeros(1)}, seq=1, positions={})
