"""The daemon and a batch that does not fit the graph store: a clean stop, never a loss.

In-process, directory mode, CPU store with ``max_graph_bytes`` (the same GraphCapacityError the
GPU store raises when free device memory runs out): the daemon checkpoints everything before
the refused batch, exits with status 3, leaves the refused records unconsumed, and a restart
with room applies them exactly once.
"""

from __future__ import annotations

import json
import logging

import numpy as np

from streamrank.daemon.config import load_config
from streamrank.daemon.loop import EXIT_GRAPH_CAPACITY, Daemon
from streamrank.daemon.signals import ShutdownFlag
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank
from streamrank.checkpoints.recovery import restore_latest


def _run(tmp_path, **overrides) -> tuple:
    cfg = load_config(env={}, overrides={"input_dir": str(tmp_path / "in"), "checkpoint_dir": str(tmp_path / "c"),
                                         "batch_size": 50, "batch_wait_ms": 5, "exit_when_done": True,
                                         "device": "cpu", "applied_log": str(tmp_path / "applied.jsonl"),
                                         **overrides})
    d = Daemon(cfg, shutdown=ShutdownFlag())
    return d.run(), d


def _events(tmp_path, kind):
    lines = (tmp_path / "applied.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


def test_refused_batch_stops_cleanly_and_applies_after_restart(tmp_path, caplog):
    (tmp_path / "in").mkdir()
    base = [(i, (i * 7) % 50 + i % 3) for i in range(300)]  # 6 batches among ids 0..51
    (tmp_path / "in" / "a.csv").write_text("src,dst\n" + "".join(f"{s},{d}\n" for s, d in base))
    code, d = _run(tmp_path)
    assert code == 0 and d.engine.seq == 6

    # 100 new vertices per batch of 50 edges: the store must grow, past a limit set just above it
    grow = [(1000 + 2 * i, 1001 + 2 * i) for i in range(150)] + [(1000 + 2 * i, i % 50) for i in range(150)]
    (tmp_path / "in" / "b.csv").write_text("src,dst\n" + "".join(f"{s},{d}\n" for s, d in grow))
    held = restore_latest(tmp_path / "c", device="cpu").engine.graph.nbytes
    with caplog.at_level(logging.ERROR, logger="streamrank.daemon"):
        code, d = _run(tmp_path, max_graph_bytes=held + 1)
    assert code == EXIT_GRAPH_CAPACITY
    assert d.engine.seq == 6 and d.metrics.capacity_stops._value.get() == 1
    assert "graph capacity" in caplog.text and "does not fit" in caplog.text and "exit status 3" in caplog.text
    stop = _events(tmp_path, "capacity")
    assert len(stop) == 1 and stop[0]["seq"] == 6 and stop[0]["edges"] == 50
    assert stop[0]["needed"] > stop[0]["available"]
    # the checkpoint holds the six batches and no position inside b.csv
    r = restore_latest(tmp_path / "c", device="cpu")
    assert r.seq == 6 and r.engine.graph.num_vertices == d.engine.graph.num_vertices
    pos = next(iter(r.positions.values()))
    assert not (pos["file"].endswith("b.csv") and pos["rows"] > 0), pos

    # restarted unchanged it stops the same way (no skipping, no partial apply)
    code, d = _run(tmp_path, max_graph_bytes=held + 1)
    assert code == EXIT_GRAPH_CAPACITY and d.engine.seq == 6

    # with room, every refused record is applied, once
    code, d = _run(tmp_path)
    assert code == 0 and d.engine.seq == 12
    src, dst = d.engine.edges_external()
    assert set(zip(src.tolist(), dst.tolist())) == set(base) | set(grow)
    assert l1_error(d.engine.ranks()[1], oracle_pagerank(d.engine.graph)) < 1e-5
    applied = [e["seq"] for e in _events(tmp_path, "apply")]
    assert applied == list(range(1, 13))
    assert np.isin(["dfp", "warm", "dfp>warm"], [e["algorithm"] for e in _events(tmp_path, "apply")]).any()


def test_max_graph_bytes_setting(tmp_path):
    import pytest

    from streamrank.errors import InvalidArgumentError

    base = {"input_dir": str(tmp_path), "checkpoint_dir": str(tmp_path / "c")}
    assert load_config(env={}, overrides=base).max_graph_bytes is None
    assert load_config(env={"STREAMRANK_MAX_GRAPH_BYTES": "123456"}, overrides=base).max_graph_bytes == 123456
    assert load_config(env={}, overrides={**base, "max_graph_bytes": 99}).max_graph_bytes == 99
    with pytest.raises(InvalidArgumentError):
        load_config(env={}, overrides={**base, "max_graph_bytes": 0})
    assert load_config(env={}, overrides=base).algorithm == "auto"
