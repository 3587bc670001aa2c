"""The daemon's side of the HTTP API: the server's process, started, watched and stopped.

The daemon binds the listening socket itself (so a bad address fails at start-up, and port 0
resolves at once), publishes each batch's view into shared memory
(:class:`~streamrank.daemon.shared_view.SnapshotWriter`, through
:meth:`~streamrank.daemon.live.LiveState.publish`), and starts the server's process
(:mod:`.http_serve`) with the socket, the view's name and one end of a Unix socket pair over
which PPR queries come in (:class:`PprBridge`, onto the bounded
:class:`~streamrank.daemon.ppr_pool.PprPool`). A watcher thread restarts the process should it
exit while the daemon runs (backing off when it keeps failing; the socket stays bound, so
clients wait in its backlog meanwhile). :meth:`HttpServer.stop` ends it at shutdown; should the
daemon die, the server sees its end of the socket pair close and exits.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time

from ..errors import InvalidArgumentError, StreamrankError
from .live import LiveState
from .ppr_pool import PprPool, QueueFull, UnknownSeed
from .shared_view import SnapshotWriter

log = logging.getLogger("streamrank.daemon")

#: Package root, put on the server process's PYTHONPATH (the daemon may run from a checkout).
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: First and longest wait before restarting a server process that exited.
RESTART_BACKOFF_S = (0.2, 30.0)
#: Longest the daemon waits at start-up for its server to answer before it starts ingesting.
READY_TIMEOUT_S = 30.0


class PprBridge(threading.Thread):
    """The daemon's end of the PPR link: reads the server's queries (one JSON line each), runs
    them on ``pool`` and writes each answer back as it completes (a refusal at once)."""

    def __init__(self, sock: socket.socket, pool: PprPool):
        super().__init__(name="streamrank-ppr-link", daemon=True)
        self.sock, self.pool = sock, pool
        self.ready = threading.Event()  # set when the server says it answers requests
        self._lock = threading.Lock()

    def run(self) -> None:
        try:
            with self.sock.makefile("rb") as lines:
                for line in lines:
                    self._one(json.loads(line))
        except (OSError, ValueError) as exc:
            log.debug("PPR link closed: %r", exc)
        finally:
            self.sock.close()

    def _one(self, req: dict) -> None:
        if req.get("ready"):
            self.ready.set()
            return
        qid = req["id"]
        try:
            fut = self.pool.submit(req["seeds"], k=int(req["k"]), options=req["options"])
        except QueueFull as exc:
            self._send({"id": qid, "error": str(exc), "kind": "queue"})
            return
        except StreamrankError as exc:
            self._send({"id": qid, "error": str(exc), "kind": "error"})
            return
        fut.add_done_callback(lambda f: self._done(qid, f))

    def _done(self, qid: int, fut) -> None:
        try:
            msg = {"id": qid, "body": fut.result()}
        except UnknownSeed as exc:
            msg = {"id": qid, "error": str(exc), "kind": "unknown_seed"}
        except InvalidArgumentError as exc:
            msg = {"id": qid, "error": str(exc), "kind": "invalid"}
        except StreamrankError as exc:
            msg = {"id": qid, "error": str(exc), "kind": "error"}
        except BaseException as exc:  # noqa: BLE001 -- the query failed; its client gets a 500
            log.error("PPR query failed: %r", exc)
            msg = {"id": qid, "error": f"internal error: {type(exc).__name__}", "kind": "error"}
        self._send(msg)

    def _send(self, msg: dict) -> None:
        data = json.dumps(msg).encode() + b"\n"
        with self._lock:
            try:
                self.sock.sendall(data)
            except OSError:  # the server process is gone; its successor asks again
                pass


class HttpServer:
    """The HTTP server's process, with its PPR pool and watcher.

    Parameters
    ----------
    live : LiveState
        Its :attr:`~LiveState.shared` writer must be attached.
    host, port : str, int
        Where to listen (port 0: any free port; :attr:`port` tells which).
    ppr_queue : int
        PPR queries admitted at once (:class:`~streamrank.daemon.ppr_pool.PprPool`).
    describe : dict, optional
        Static facts for ``/status``.

    Raises
    ------
    StreamrankError
        When uvicorn or Starlette is not installed (``pip install "streamrank[http]"``), or the
        address cannot be bound.
    """

    def __init__(self, live: LiveState, *, host: str, port: int, ppr_queue: int, describe: dict | None = None):
        if live.shared is None:
            raise InvalidArgumentError("the live state has no shared-memory writer attached")
        for mod in ("uvicorn", "starlette"):
            if importlib.util.find_spec(mod) is None:
                raise StreamrankError('the HTTP API needs uvicorn and starlette: pip install "streamrank[http]"')
        self.live = live
        self.ppr = PprPool(live, limit=ppr_queue)
        self.describe = dict(describe or {})
        try:
            info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
            # proto IPPROTO_TCP, so that asyncio sets TCP_NODELAY on each connection (with proto 0 it
            # does not, and a keep-alive client then waits ~40 ms per answer for a delayed ACK)
            self._sock = socket.socket(info[0], info[1], info[2] or socket.IPPROTO_TCP)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind(info[4])
            self._sock.listen(2048)  # connections wait in the backlog until the server's process takes them
        except OSError as exc:
            raise StreamrankError(f"cannot serve the HTTP API on {host}:{port}: {exc}") from exc
        self.host, self.port = host, self._sock.getsockname()[1]
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher = threading.Thread(target=self._watch, name="streamrank-http-watch", daemon=True)

    def _spawn(self) -> tuple:
        """A new server process and the bridge of its PPR link."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        level = logging.getLevelName(logging.getLogger("streamrank").getEffectiveLevel())
        cmd = [sys.executable, "-m", "streamrank.daemon.http_serve", "--snapshot", self.live.shared.name,
               "--listen-fd", str(self._sock.fileno()), "--ppr-fd", str(theirs.fileno()),
               "--ppr-limit", str(self.ppr.limit), "--ppr-workers", str(self.ppr.workers),
               "--describe", json.dumps(self.describe), "--started", repr(self.live.started), "--log-level", level]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([_ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        try:
            proc = subprocess.Popen(cmd, pass_fds=(self._sock.fileno(), theirs.fileno()), env=env,
                                    process_group=0, stdin=subprocess.DEVNULL)
        except OSError as exc:
            mine.close()
            raise StreamrankError(f"cannot start the HTTP server's process: {exc}") from exc
        finally:
            theirs.close()
        bridge = PprBridge(mine, self.ppr)
        bridge.start()
        return proc, bridge

    def _watch(self) -> None:
        delay = RESTART_BACKOFF_S[0]
        while True:
            with self._lock:
                proc = self.proc
            t0 = time.monotonic()
            rc = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - t0 > 60:  # it ran a while: not a crash loop
                delay = RESTART_BACKOFF_S[0]
            log.error("the HTTP server's process exited with status %s; restarting it in %.1f s", rc, delay)
            if self._stopping.wait(delay):
                return
            delay = min(2 * delay, RESTART_BACKOFF_S[1])
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    self.proc = self._spawn()[0]
                except StreamrankError as exc:
                    log.error("%s", exc)
                    continue  # proc stays the exited one: wait() returns at once, and the delay grows
                self.restarts += 1
            self.live.set_status(http_server={"pid": self.proc.pid, "restarts": self.restarts})

    def start(self) -> "HttpServer":
        """Start the server's process and wait (at most :data:`READY_TIMEOUT_S`) until it answers,
        so that the API is up before the first batch."""
        with self._lock:
            self.proc, bridge = self._spawn()
        self.live.set_status(http_server={"pid": self.proc.pid, "restarts": 0})
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not bridge.ready.wait(0.05) and self.proc.poll() is None and time.monotonic() < deadline:
            pass
        if not bridge.ready.is_set():
            log.warning("the HTTP server's process is not answering yet (%s); going on without waiting",
                        f"exit status {self.proc.returncode}" if self.proc.poll() is not None else "still starting")
        self._watcher.start()
        log.info("HTTP API and live page on http://%s:%d/ (server process %d)", self.host, self.port, self.proc.pid)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """End the server's process (SIGTERM, then SIGKILL after ``timeout``), the PPR pool and the
        shared-memory view."""
        self._stopping.set()
        with self._lock:
            proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("the HTTP server's process did not stop in %.0f s: killing it", timeout)
                proc.kill()
                proc.wait()
        if self._watcher.is_alive():
            self._watcher.join(timeout)
        self.ppr.close()
        self._sock.close()
        self.live.detach_shared().close()


def leave_a_core(engine) -> int | None:
    """On the CPU engine, cap the calling thread's Numba threads at one fewer than the cores this
    process may use, leaving a core to the HTTP server's process; returns the new count (None:
    unchanged, on a GPU or a single core).

    On two cores the rank update's second thread and the server share a core: an answer holds
    up the update's fork-join for its own time, and the update holds the answer up. In pairs of
    runs of benchmarks/http_queries.py on the 2-core development host, two rank threads lost up
    to 14% of the ingest rate at 200 queries/s with p99s of 6-8 ms; one thread lost none, with
    p99s of 4.3-4.6 ms, and ingests as fast as two there without queries. The setting is the
    calling thread's: call it on the loop's.
    """
    if engine.backend.name != "cpu":
        return None
    import numba

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    have = numba.get_num_threads()
    want = min(have, max(1, cores - 1))
    if want == have:
        return None
    numba.set_num_threads(want)
    log.info("CPU engine: %d thread(s) of %d, one core left to the HTTP server's process", want, have)
    return want


def start_http(cfg, live: LiveState, engine, positions: dict) -> HttpServer:
    """Publish the restored (or empty) graph's view and start the API of ``cfg`` (a DaemonConfig);
    call on the loop's thread (:func:`leave_a_core`)."""
    leave_a_core(engine)
    live.attach_shared(SnapshotWriter())
    try:
        with live.engine_lock:
            live.publish(engine, info={"edges": None, "algorithm": None, "positions": dict(positions),
                                       "restored": True})
        source = cfg.input_dir if cfg.input_dir is not None else f"kafka {cfg.bootstrap_servers} {','.join(cfg.topic)}"
        describe = {"device": engine.backend.name, "algorithm_setting": cfg.algorithm, "id_type": engine.id_type,
                    "source": source, "batch_size": cfg.batch_size}
        return HttpServer(live, host=cfg.http_host, port=int(cfg.http_port), ppr_queue=cfg.http_ppr_queue,
                          describe=describe).start()
    except BaseException:
        live.detach_shared().close()
        raise
