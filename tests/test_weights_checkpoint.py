"""Weighted engines in checkpoints on both backends: full checkpoints and the batch log carry the
weights (a checkpoint of one backend restores on the other), and checkpoints written before weights
existed restore (weight 1 in a weighted engine)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from streamrank import ConfigError, EdgeBatch, Engine
from streamrank.backend import to_host
from streamrank.checkpoints.full import read_checkpoint, save_checkpoint
from streamrank.checkpoints.log import BatchLog, LoggedBatch, log_path, read_log
from streamrank.checkpoints.recovery import restore_latest
from streamrank.errors import CheckpointError
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

DATA = Path(__file__).parent / "data" / "checkpoints_0_1_0"


def _batches(seed, count):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = 40
        s, d = rng.integers(0, 90, k), rng.integers(0, 90, k)
        ins = rng.random(k) < 0.7
        w = rng.integers(1, 5, k).astype(float)
        w[~ins & (rng.random(k) < 0.5)] = np.nan
        out.append(EdgeBatch.from_arrays(s, d, ins, weight=w))
    return out


def _weights(eng):
    s, d = eng.edges_external()
    return dict(zip(zip(s.tolist(), d.tolist()), to_host(eng.graph.edge_weights()).tolist()))


def _other(device):
    return "cpu" if device == "gpu" else device


def test_full_checkpoint_and_log_round_trip(tmp_path, device):
    batches = _batches(3, 6)
    eng = Engine(device, "dfp", weighted=True, multi_edges="sum")
    rng = np.random.default_rng(4)
    eng.load_edges(rng.integers(0, 80, 300), rng.integers(0, 80, 300), weight=rng.random(300) + 0.5)
    for b in batches[:3]:
        eng.apply(b)
    save_checkpoint(tmp_path, eng.state(), seq=eng.seq, positions={"f": 3}, meta={"algorithm": "dfp"})
    log = BatchLog(log_path(tmp_path, eng.seq))
    logged = []
    for b in batches[3:]:
        step = eng.apply(b)
        logged.append(LoggedBatch(step.seq, b.src, b.dst, b.insert, b.weight))
    log.append(logged, {"f": 6})
    log.close()
    frames = read_log(log_path(tmp_path, 3)).frames
    np.testing.assert_array_equal(frames[0].batches[0].weight, batches[3].weight)  # NaN where NaN
    for where in sorted({device, _other(device)}):  # the same backend, and the CPU for a GPU checkpoint
        restored = restore_latest(tmp_path, device=where)
        r = restored.engine
        assert r.weighted and r.multi_edges == "sum" and restored.replayed == 3 and r.seq == eng.seq
        assert _weights(r) == _weights(eng)
        assert l1_error(r.ranks()[1], eng.ranks()[1]) <= (1e-12 if where == device else 2e-6)
        assert l1_error(r.ranks()[1], oracle_pagerank(r.graph)) <= 1e-6
    # the saved ranks' weights would be lost in an unweighted engine: refused, not dropped
    with pytest.raises(ConfigError, match="weighted=True"):
        restore_latest(tmp_path, device="cpu", weighted=False)
    with pytest.raises(ConfigError, match="weighted=True"):
        Engine.from_state(eng.state(), device="cpu", weighted=False)


def test_an_unweighted_batch_in_a_weighted_log_means_weight_one(tmp_path, device):
    eng = Engine(device, "dfp", weighted=True)
    eng.load_edges([1, 2], [2, 3], weight=[2.0, 3.0])
    save_checkpoint(tmp_path, eng.state(), seq=0, positions={})
    plain = EdgeBatch.from_arrays([1, 3, 2], [3, 1, 3], [True, True, False])
    weighted = EdgeBatch.from_arrays([3], [1], weight=[4.0])
    log = BatchLog(log_path(tmp_path, 0))
    log.append([LoggedBatch(1, plain.src, plain.dst, plain.insert), LoggedBatch(2, weighted.src, weighted.dst,
                                                                                  weighted.insert, weighted.weight)], {})
    log.close()
    eng.apply(plain)
    eng.apply(weighted)
    r = restore_latest(tmp_path, device=device).engine
    assert _weights(r) == _weights(eng) == {(1, 2): 2.0, (1, 3): 1.0, (3, 1): 4.0}


@pytest.mark.parametrize("kind", ["int", "str"])
def test_checkpoint_of_an_earlier_version_restores_weighted(kind, tmp_path, device):
    directory = tmp_path / "ckpt"
    shutil.copytree(DATA / kind, directory)
    expected = np.load(directory / "expected.npz", allow_pickle=False)
    unweighted = restore_latest(str(directory), device=device).engine
    assert not unweighted.weighted
    restored = restore_latest(str(directory), device=device, weighted=True, multi_edges="sum")
    eng = restored.engine
    assert eng.weighted and eng.multi_edges == "sum" and restored.seq == int(expected["seq"])
    assert eng.graph.num_edges == int(expected["num_edges"])
    assert np.all(to_host(eng.graph.edge_weights()) == 1.0)
    ids, p = eng.ranks()
    want = dict(zip((str(i) for i in expected["ids"]), expected["p"]))
    got = dict(zip((str(i) for i in ids), p))
    assert got.keys() == want.keys()
    # the logged batches ran through the weighted DF-P: within its error of the earlier ranks
    assert sum(abs(got[k] - want[k]) for k in want) <= 2e-6
    assert l1_error(p, oracle_pagerank(eng.graph)) <= 1e-6


@pytest.mark.parametrize("bad, why", [(np.array([1.0, 1.0, -1.0]), "finite and positive"),
                                      (np.array([1.0, np.inf, 1.0]), "finite and positive"),
                                      (np.array([1.0, 1.0]), "edge weights for")])
def test_a_damaged_weight_member_does_not_read(tmp_path, bad, why):
    eng = Engine("cpu", "dfp", weighted=True)
    eng.load_edges([1, 2, 3], [2, 3, 1], weight=[1.0, 2.0, 3.0])
    state = eng.state()
    assert state["weight"].shape == (3,)
    state["weight"] = bad
    path = save_checkpoint(tmp_path, state, seq=0, positions={})
    with pytest.raises(CheckpointError, match=why):
        read_checkpoint(path)
