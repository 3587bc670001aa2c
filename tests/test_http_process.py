"""The HTTP API's process layout: the shared-memory view a writer process fills while a reader
reads it (every view read is one whole batch, never older than the last), and a real daemon's
server process: restarted when it is killed or ends, stopped by the daemon's shutdown, and gone
when the daemon dies.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time

import numpy as np
import pytest
from http_helpers import get, wait_http
from kafka_broker import DaemonProcess, free_port

from streamrank.daemon.shared_view import HISTORY_BATCHES, SnapshotReader, SnapshotWriter

VIEWS = 400


def _names(n: int) -> np.ndarray:
    return np.array([f"v{i}-é" for i in range(n)], dtype=object)


def _size(seq: int) -> int:
    return 50 + 40 * seq  # grows past the data segment's first sizes: the writer replaces it


def _write_views(name_q, go, done, string: bool) -> None:
    """A writer publishing VIEWS batches once the reader reads: batch ``seq`` has ``_size(seq)``
    vertices, every rank ``seq`` (not normalized: each value says which batch wrote it)."""
    w = SnapshotWriter()
    name_q.put(w.name)
    n_max = _size(VIEWS)
    ids = _names(n_max) if string else np.arange(n_max, dtype=np.int64) * 3
    go.wait(60)
    for seq in range(1, VIEWS + 1):
        n = _size(seq)
        w.publish(seq=seq, ids=ids, p=np.full(n, float(seq)), info={"edges": seq, "seq_again": seq},
                  applied_at=time.time())
        w.set_status(checkpoint={"seq": seq, "pad": "x" * (seq % 7)})
        if seq % 4 == 0:
            time.sleep(0.001)  # a second or so of writing, while the reader reads
    done.wait(60)
    w.close()


@pytest.mark.parametrize("string", [False, True])
def test_views_read_while_a_process_writes_are_whole_batches_in_order(string):
    ctx = multiprocessing.get_context("spawn")
    q, go, done = ctx.Queue(), ctx.Event(), ctx.Event()
    writer = ctx.Process(target=_write_views, args=(q, go, done, string))
    writer.start()
    try:
        name = q.get(timeout=60)
        r = SnapshotReader(name)
        assert r.view() is None and r.status() == {} and r.history(60) == []
        go.set()
        seen, last, deadline = 0, 0, time.monotonic() + 60
        while last < VIEWS and time.monotonic() < deadline:
            v = r.view()
            if v is None:
                continue
            assert v.seq >= last, "a reader saw an older batch after a newer one"
            assert v.n == _size(v.seq) and v.info["seq_again"] == v.seq
            assert (v.p == v.seq).all(), f"batch {v.seq} holds ranks of another batch"
            want = _names(v.n) if string else np.arange(v.n, dtype=np.int64) * 3
            assert list(v.ids[-3:]) == list(want[-3:]) and v.ids[0] == want[0]
            assert r.index.lookup(v, [want[v.n - 1]])[0] == v.n - 1
            st = r.status()
            assert st["checkpoint"]["pad"] == "x" * (st["checkpoint"]["seq"] % 7)
            seen += v.seq != last
            last = v.seq
        assert last == VIEWS and seen > 5, (last, seen)
        rows = r.history(3600)
        assert [row[1] for row in rows] == list(range(max(1, VIEWS - HISTORY_BATCHES + 1), VIEWS + 1))
        assert all(row[2] == row[1] and row[6] is None for row in rows)
    finally:
        done.set()
        writer.join(60)
    assert writer.exitcode == 0
    assert not any(f.startswith(name) for f in os.listdir("/dev/shm")), "the writer left segments behind"


def test_a_view_without_room_in_shared_memory_stays_at_the_last_batch_that_fitted(monkeypatch):
    import errno

    w = SnapshotWriter()
    try:
        r = SnapshotReader(w.name)
        w.publish(seq=1, ids=np.arange(10), p=np.full(10, 0.1), info={"edges": 10}, applied_at=time.time())
        assert r.view().seq == 1

        def full(fd, offset, length):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "posix_fallocate", full)
        w.publish(seq=2, ids=np.arange(5000), p=np.full(5000, 2e-4), info={"edges": 4990}, applied_at=time.time())
        v = r.view()
        assert v.seq == 1 and v.n == 10 and w.failed and "--shm-size" in w.failed
        assert "no room" in r.status()["view_error"]
        monkeypatch.undo()
        w.set_status(checkpoint={"seq": 2})
        assert r.status()["checkpoint"] == {"seq": 2} and "view_error" in r.status()
        w.publish(seq=3, ids=np.arange(5000), p=np.full(5000, 2e-4), info={"edges": 1}, applied_at=time.time())
        assert r.view().seq == 3 and r.view().n == 5000 and w.failed is None and "view_error" not in r.status()
    finally:
        w.close()
    assert not any(f.startswith(w.name) for f in os.listdir("/dev/shm"))


# ---------------------------------------------------------------------------- a real daemon


def _csv(directory, name: str, rows) -> None:
    tmp = directory / f".{name}.part"
    tmp.write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in rows))
    os.replace(tmp, directory / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie no one reaped yet counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _segments(pid: int) -> list:
    return [f for f in os.listdir("/dev/shm") if f.startswith(f"streamrank-{pid}-")]


@pytest.fixture
def daemon(tmp_path):
    (tmp_path / "in").mkdir()
    _csv(tmp_path / "in", "a.csv", [(i, (i * 7 + 1) % 50) for i in range(50)])
    port = free_port()
    d = DaemonProcess(["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--warm-up", "off",
                       "--device", "cpu", "--http-port", port], tmp_path)
    wait_http(port, d)
    d.wait_edges(50, timeout=120)
    yield d, port, tmp_path
    if d.proc.poll() is None:
        d.kill()


def _raw(port: int, path: str) -> tuple:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders() if k.lower() not in ("date", "server")}, r.read()
    conn.close()
    return out


def test_the_fast_reads_answer_byte_for_byte_as_the_routes(daemon):
    _, port, _ = daemon
    for fast, routed in (("/ranks/top?k=7", "/ranks/top?k=7&format=json"), ("/ranks/top", "/ranks/top?format=json"),
                         ("/ranks/5", "/ranks/5?via=route"), ("/ranks/0005", "/ranks/5?via=route")):
        _raw(port, fast)  # the first top-k answer of a view is encoded by the route
        a, b = _raw(port, fast), _raw(port, routed)
        assert a[0] == 200 and a == b, (fast, a, b)
        assert int(a[1]["x-streamrank-seq"]) >= 1 and a[1]["content-type"] == "application/json"
    status, _, body = _raw(port, "/ranks/777")  # an unknown vertex: the route's 404
    assert status == 404 and b"unknown vertex 777" in body


def test_the_fast_reads_take_the_two_frequent_reads_only():
    import asyncio

    pytest.importorskip("starlette")
    from streamrank.daemon.http_api import make_app

    w = SnapshotWriter()
    try:
        w.publish(seq=4, ids=np.arange(100, 110), p=np.full(10, 0.1), info={"edges": 10}, applied_at=time.time())
        app = make_app(SnapshotReader(w.name), None)
        routed = []
        inner = app.app

        async def record(scope, receive, send):
            routed.append(scope["path"] + "?" + scope["query_string"].decode())
            await inner(scope, receive, send)

        app.app = record

        def ask(path, query=b"", headers=()):
            sent = []

            async def receive():
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(msg):
                sent.append(msg)

            scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": query,
                     "headers": list(headers), "http_version": "1.1", "scheme": "http", "root_path": "",
                     "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1)}
            asyncio.run(app(scope, receive, send))
            return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

        assert ask("/ranks/top", b"k=3")[0] == 200 and routed == ["/ranks/top?k=3"]  # encodes the answer
        assert ask("/ranks/top", b"k=3") == ask("/ranks/top", b"k=3") and len(routed) == 1
        status, body = ask("/ranks/105")
        assert status == 200 and b'"vertex":105' in body and b'"seq":4' in body and len(routed) == 1
        for path, query, headers in (("/ranks/top", b"k=4", ()), ("/ranks/999", b"", ()), ("/ranks/105", b"x=1", ()),
                                     ("/ranks/top", b"k=3", [(b"accept", b"application/vnd.apache.arrow.stream")])):
            ask(path, query, headers)
        assert len(routed) == 5, routed
    finally:
        w.close()


def test_a_killed_or_ended_server_process_is_restarted_on_the_same_port(daemon):
    d, port, work = daemon
    st, s = get(port, "/status")
    first = s["http_server"]["pid"]
    assert s["http_server"]["restarts"] == 0 and first != d.proc.pid and _alive(first)
    seq = s["seq"]
    os.kill(first, signal.SIGKILL)
    _wait(lambda: not _alive(first), "the killed server to go")
    # the port stays bound by the daemon: requests wait in its backlog until the new server takes them
    st, s = get(port, "/status", timeout=60)
    assert st == 200 and s["http_server"]["restarts"] == 1 and s["seq"] >= seq
    second = s["http_server"]["pid"]
    assert second != first
    _csv(work / "in", "b.csv", [(60, 61), (61, 62)])  # ingest went on, and the new server shows it
    d.wait_edges(52, timeout=60)
    _wait(lambda: get(port, "/ranks/62")[0] == 200, "the new batch in the answers")
    st, ans = get(port, "/ppr?seed=60&k=3")  # PPR goes through the new server's link
    assert st == 200 and ans["seq"] >= seq + 1
    os.kill(second, signal.SIGTERM)  # a server that ends cleanly is restarted as well
    _wait(lambda: not _alive(second), "the ended server to go")
    st, s = get(port, "/status", timeout=60)
    assert st == 200 and s["http_server"]["restarts"] == 2
    assert "the HTTP server's process exited" in d.output.read_text()
    assert d.terminate() == 0, d.log_tail()


def test_daemon_shutdown_stops_the_server_and_frees_the_port_and_memory(daemon):
    d, port, _ = daemon
    server = get(port, "/status")[1]["http_server"]["pid"]
    assert _segments(d.proc.pid)
    assert d.terminate() == 0, d.log_tail()
    assert not _alive(server), "the server process outlived the daemon"
    assert _refused(port)
    assert not _segments(d.proc.pid), "shared-memory segments left behind"


def test_server_exits_when_the_daemon_dies(daemon):
    d, port, _ = daemon
    server = get(port, "/status")[1]["http_server"]["pid"]
    d.kill()
    _wait(lambda: not _alive(server), "the server to notice its daemon died", timeout=30)
    assert _refused(port)
    # the resource tracker of the dead daemon unlinks its segments
    _wait(lambda: not _segments(d.proc.pid), "the segments of the dead daemon to go", timeout=30)
