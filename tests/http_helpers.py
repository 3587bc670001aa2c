"""Helpers of the HTTP API tests: a small client, readers that query a live daemon from threads,
and the oracle check of a ranks answer against the graph of the batch it names."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
from kafka_broker import final_edges

from streamrank.oracle.static import scipy_pagerank


def get(port: int, path: str, *, data=None, timeout: float = 30.0):
    """``(status, body)`` of ``GET`` (or ``POST`` with ``data``, a JSON-able value) ``path``;
    the body is parsed JSON, or bytes when not JSON."""
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw, ctype = r.status, r.read(), r.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, ctype = exc.code, exc.read(), exc.headers.get("content-type", "")
    return status, (json.loads(raw) if "json" in ctype else raw)


def wait_http(port: int, daemon, *, timeout: float = 120.0) -> dict:
    """Wait until the daemon answers ``/status``; returns it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, body = get(port, "/status", timeout=2.0)
            if status == 200:
                return body
        except OSError:
            pass
        if daemon.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {daemon.proc.returncode}:\n{daemon.log_tail()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the HTTP API did not come up\n{daemon.log_tail()}")
        time.sleep(0.1)


class Readers:
    """``threads`` threads each asking ``path`` in a loop until :meth:`stop`; ``answers[i]`` is the
    list of thread ``i``'s bodies, in the order they came."""

    def __init__(self, port: int, path: str, *, threads: int = 3):
        self.port, self.path = port, path
        self.answers = [[] for _ in range(threads)]
        self.errors = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self, i: int) -> None:
        while not self._stop.is_set():
            try:
                status, body = get(self.port, self.path)
            except OSError as exc:
                self.errors.append(repr(exc))
                continue
            if status != 200:
                self.errors.append((status, body))
            else:
                self.answers[i].append(body)

    def stop(self) -> list:
        self._stop.set()
        for t in self._threads:
            t.join(30)
        return [a for per in self.answers for a in per]


def check_snapshots(answers: list) -> dict:
    """Answers of ``/ranks/top`` naming the same batch hold the same ranks, and each thread saw
    the batches in order; returns ``{seq: {vertex: rank}}``."""
    by_seq = {}
    for a in answers:
        ranks = {r["vertex"]: r["rank"] for r in a["top"]}
        assert len(ranks) == a["vertices"], "k covers every vertex"
        have = by_seq.setdefault(a["seq"], ranks)
        assert have == ranks, f"two answers for batch {a['seq']} differ"
    return by_seq


def check_monotonic(per_thread: list) -> None:
    for answers in per_thread:
        seqs = [a["seq"] for a in answers]
        assert seqs == sorted(seqs), "a reader saw an older batch after a newer one"


def oracle_l1(ranks: dict, events: list) -> float:
    """L1 distance of ``ranks`` (vertex -> rank, the vertices of one batch) to the oracle PageRank
    of the graph ``events`` (the edge events up to that batch) leave."""
    assert abs(sum(ranks.values()) - 1.0) < 1e-9, "the ranks of one batch sum to 1"
    ids = list(ranks)
    index = {v: i for i, v in enumerate(ids)}
    edges = sorted(final_edges(events))
    assert all(s in index and d in index for s, d in edges), "an edge endpoint is not a vertex of the answer"
    src = np.array([index[s] for s, _ in edges], dtype=np.int64)
    dst = np.array([index[d] for _, d in edges], dtype=np.int64)
    ref = scipy_pagerank(src, dst, len(ids))
    got = np.array([ranks[v] for v in ids])
    return float(np.abs(ref - got).sum())


def quote(v) -> str:
    return urllib.parse.quote(str(v), safe="")
