"""Daemon pieces in-process: settings precedence, the signal flag, drift guard, metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamrank.daemon.config import load_config
from streamrank.daemon.loop import Daemon
from streamrank.daemon.signals import ShutdownFlag
from streamrank.errors import InvalidArgumentError


def test_toml_env_flags_precedence(tmp_path):
    toml = tmp_path / "serve.toml"
    toml.write_text('bootstrap_servers = "a:1"\ntopic = ["t1", "t2"]\nbatch_size = 10\n'
                    'checkpoint_dir = "/tmp/x"\n[serve]\nbatch_wait_ms = 7\n[rank]\nalpha = 0.5\n')
    cfg = load_config(path=str(toml), env={})
    assert (cfg.bootstrap_servers, cfg.topic, cfg.batch_size, cfg.batch_wait_ms) == ("a:1", ["t1", "t2"], 10, 7)
    assert cfg.rank.alpha == 0.5
    env = {"STREAMRANK_BATCH_SIZE": "20", "STREAMRANK_TOPIC": "e1,e2", "STREAMRANK_RANK_TOL": "1e-8",
           "STREAMRANK_UNRELATED": "x"}
    cfg = load_config(path=str(toml), env=env)
    assert (cfg.batch_size, cfg.topic, cfg.rank.tol) == (20, ["e1", "e2"], 1e-8)
    cfg = load_config(path=str(toml), env=env, overrides={"batch_size": 30, "topic": ["f"], "rank_alpha": 0.9,
                                                          "publish_topic": None})
    assert (cfg.batch_size, cfg.topic, cfg.rank.alpha, cfg.publish_topic) == (30, ["f"], 0.9, None)


@pytest.mark.parametrize("kw", [
    {"checkpoint_dir": None, "input_dir": "d"},
    {"checkpoint_dir": "c"},
    {"checkpoint_dir": "c", "bootstrap_servers": "a:1"},
    {"checkpoint_dir": "c", "input_dir": "d", "algorithm": "nope"},
    {"checkpoint_dir": "c", "input_dir": "d", "batch_size": 0},
    {"checkpoint_dir": "c", "input_dir": "d", "publish_topic": "p"},
    {"checkpoint_dir": "c", "input_dir": "d", "decode_threads": -1},
    {"checkpoint_dir": "c", "input_dir": "d", "warm_up": "sometimes"},
])
def test_invalid_settings(kw):
    with pytest.raises(InvalidArgumentError):
        load_config(env={}, overrides=kw)


def test_decode_threads_from_the_environment():
    cfg = load_config(env={"STREAMRANK_DECODE_THREADS": "2"}, overrides={"checkpoint_dir": "c", "input_dir": "d"})
    assert cfg.decode_threads == 2


def test_unknown_toml_key(tmp_path):
    toml = tmp_path / "serve.toml"
    toml.write_text('batch_sise = 3\n')
    with pytest.raises(InvalidArgumentError, match="batch_sise"):
        load_config(path=str(toml), env={}, overrides={"checkpoint_dir": "c", "input_dir": "d"})


def test_second_signal_exits_at_once():
    code = ("import os, signal, time\n"
            "from streamrank.daemon.signals import ShutdownFlag\n"
            "f = ShutdownFlag().install()\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "assert f.requested and f.signum == signal.SIGTERM\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "time.sleep(5)\n"
            "raise SystemExit(3)\n")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, timeout=30,
                       env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 128 + signal.SIGTERM, r.stderr


def test_drift_guard_replaces_ranks_and_metrics(tmp_path):
    """In-process daemon in directory mode: a drift bound of 0 forces a correction."""
    from prometheus_client import generate_latest

    (tmp_path / "in").mkdir()
    # not a permutation (whose uniform ranks a check could match exactly, L1 = 0 not above 0): every
    # check that runs sees a nonzero error, however few run before the daemon is done
    (tmp_path / "in" / "a.csv").write_text("src,dst\n" + "".join(f"{i},{(i * 7) % 50 + i % 3}\n" for i in range(300)))
    cfg = load_config(env={}, overrides={"input_dir": str(tmp_path / "in"), "checkpoint_dir": str(tmp_path / "c"),
                                         "batch_size": 50, "batch_wait_ms": 5, "drift_every": 1,
                                         "drift_bound": 0.0, "exit_when_done": True})
    d = Daemon(cfg, shutdown=ShutdownFlag())
    t0 = time.monotonic()
    assert d.run() == 0
    assert time.monotonic() - t0 < 30
    text = generate_latest(d.metrics.registry).decode()
    per_algorithm = {s.labels["algorithm"]: s.value for m in d.metrics.registry.collect()
                     if m.name == "streamrank_batches" for s in m.samples if s.name == "streamrank_batches_total"}
    assert sum(per_algorithm.values()) == 6 and set(per_algorithm) <= {"dfp", "warm", "dfp>warm"}
    assert "streamrank_drift_corrections_total" in text
    assert d.metrics.drift_corrections._value.get() >= 1
    assert 'streamrank_stage_seconds_count{stage="checkpoint"}' in text


def test_arrow_publish_format_one_message_per_batch():
    import numpy as np

    from connectors.kafka_sink import BATCH_KEY, RankPublisher, decode_rank_batch

    class Capture:
        def __init__(self):
            self.sent = []

        def send(self, topic, *, key, value, headers):
            self.sent.append((topic, key, value, headers))

    prod = Capture()
    pub = RankPublisher(prod, "ranks", threshold=1e-3, top_k=0, publish_format="arrow")
    ids = np.array([10, 20, 30])
    out = pub.publish(1, ids, np.array([0.5, 0.3, 0.2]))
    assert out == {"vertex": 0, "batch": 1, "top_k": 0}
    (topic, key, value, headers), = prod.sent
    assert (topic, key, headers) == ("ranks", BATCH_KEY, [("seq", b"1")])
    seq, v, r = decode_rank_batch(value)
    assert seq == 1 and v.tolist() == [10, 20, 30] and r.tolist() == [0.5, 0.3, 0.2]
    out = pub.publish(2, ids, np.array([0.5, 0.31, 0.19]))  # both moved by 0.01 > 1e-3
    assert decode_rank_batch(prod.sent[-1][2])[1].tolist() == [20, 30]
    assert pub.publish(3, ids, np.array([0.5, 0.31, 0.19]))["batch"] == 0  # nothing moved: no message
    with pytest.raises(InvalidArgumentError):
        RankPublisher(prod, "ranks", publish_format="parquet")


def test_staleness_fields_weighted_by_edges():
    import numpy as np

    from connectors.fetch import EdgeRun
    from streamrank.daemon.staleness import STALENESS_EDGES_MS, staleness_fields

    z = np.zeros(101, dtype=np.int64)
    # message 1: 1 edge produced 500 ms ago; message 2: 100 edges produced 10 ms ago
    run = EdgeRun(z, z, np.ones(101, bool), "k", 2, ends=np.array([1, 101]), positions=np.array([1, 2]),
                  timestamps_ms=np.array([9500, 9990]))
    f = staleness_fields([run], now_ms=10000.0)
    assert f["stale_ms"] == [10.0, 10.0, 500.0]
    first, counts = f["stale_hist"]
    assert sum(counts) == 101 and counts[0] == 100
    assert STALENESS_EDGES_MS[first] <= 10 < STALENESS_EDGES_MS[first + 1]
    assert staleness_fields([EdgeRun(z, z, z > 0, "k", 1, ends=np.array([101]), positions=np.array([1]),
                                     timestamps_ms=np.array([-1]))]) == {}
    # records re-read long after they were produced (past the last bucket edge) count in the last bucket
    old = staleness_fields([EdgeRun(z, z, z > 0, "k", 1, ends=np.array([101]), positions=np.array([1]),
                                    timestamps_ms=np.array([0.5]))], now_ms=10 * STALENESS_EDGES_MS[-1])
    assert old["stale_hist"] == [len(STALENESS_EDGES_MS) - 2, [101]]


@pytest.mark.parametrize("dump_s, dumped", [(0.05, True), (0.0, False)])
def test_stall_dump_writes_every_threads_stack(tmp_path, monkeypatch, capfd, dump_s, dumped):
    """--stall-dump-s: a batch slower than the setting dumps the stacks (the slow frame among
    them); a fast one, or the setting at 0, dumps nothing."""
    from streamrank.engine import Engine

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("src,dst\n" + "".join(f"{i},{(i * 7) % 50}\n" for i in range(100)))
    apply = Engine.apply

    def slow_apply(self, batch):
        time.sleep(0.3)
        return apply(self, batch)

    monkeypatch.setattr(Engine, "apply", slow_apply)
    cfg = load_config(env={"STREAMRANK_STALL_DUMP_S": str(dump_s)},
                      overrides={"input_dir": str(tmp_path / "in"), "checkpoint_dir": str(tmp_path / "c"),
                                 "batch_size": 50, "batch_wait_ms": 5, "exit_when_done": True})
    assert cfg.stall_dump_s == dump_s
    capfd.readouterr()
    assert Daemon(cfg, shutdown=ShutdownFlag()).run() == 0
    err = capfd.readouterr().err
    assert ("slow_apply" in err) is dumped, err[-2000:]
