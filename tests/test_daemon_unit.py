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
])
def test_invalid_settings(kw):
    with pytest.raises(InvalidArgumentError):
        load_config(env={}, overrides=kw)


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
    (tmp_path / "in" / "a.csv").write_text("src,dst\n" + "".join(f"{i},{(i * 7) % 50}\n" for i in range(300)))
    cfg = load_config(env={}, overrides={"input_dir": str(tmp_path / "in"), "checkpoint_dir": str(tmp_path / "c"),
                                         "batch_size": 50, "batch_wait_ms": 5, "drift_every": 1,
                                         "drift_bound": 0.0, "exit_when_done": True})
    d = Daemon(cfg, shutdown=ShutdownFlag())
    t0 = time.monotonic()
    assert d.run() == 0
    assert time.monotonic() - t0 < 30
    text = generate_latest(d.metrics.registry).decode()
    assert "streamrank_batches_total 6.0" in text
    assert "streamrank_drift_corrections_total" in text
    assert d.metrics.drift_corrections._value.get() >= 1
    assert 'streamrank_stage_seconds_count{stage="checkpoint"}' in text
