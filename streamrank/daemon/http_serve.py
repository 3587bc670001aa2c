"""The HTTP server's process: ``python -m streamrank.daemon.http_serve`` (started by the daemon).

It serves :func:`~streamrank.daemon.http_api.make_app` with uvicorn on the listening socket the
daemon bound and handed down (``--listen-fd``), answers rank, status and history requests from
the daemon's shared-memory view (``--snapshot``), and forwards PPR queries to the daemon over
a Unix socket (``--ppr-fd``, :class:`PprForwarder`). When that socket closes (the daemon ended
or died) it stops; SIGTERM stops it too. It runs in a process group of its own, so a
terminal's Ctrl-C reaches only the daemon, which then stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import socket
import sys

from ..errors import InvalidArgumentError, StreamrankError
from .ppr_pool import QueueFull, UnknownSeed

log = logging.getLogger("streamrank.daemon")

#: Longest line (one PPR answer) read from the daemon.
_LINE_LIMIT = 1 << 28
#: Seconds the server waits on SIGTERM for requests in flight before it closes their connections.
GRACEFUL_S = 3
#: Error kinds of a forwarded query's answer, and the exception each becomes here.
ERRORS = {"queue": QueueFull, "unknown_seed": UnknownSeed, "invalid": InvalidArgumentError,
          "error": StreamrankError}


class PprForwarder:
    """PPR queries of the HTTP API, sent to the daemon's :class:`~streamrank.daemon.http_process.PprBridge`.

    At most ``limit`` queries are admitted at once (sent and not yet answered); one past that is
    refused here at once (:class:`~streamrank.daemon.ppr_pool.QueueFull`). A query whose client
    went away still counts until the daemon answers it.

    Parameters
    ----------
    sock : socket.socket
        This end of the Unix socket pair shared with the daemon.
    limit, workers : int
        ``--http-ppr-queue`` and the daemon's PPR worker threads (for ``/status``).
    """

    def __init__(self, sock: socket.socket, *, limit: int, workers: int):
        self.limit, self.workers = int(limit), int(workers)
        self.admitted = 0
        self._sock = sock
        self._ids = itertools.count(1)
        self._pending: dict = {}
        self._writer = None
        self._closed = False

    async def start(self, on_close) -> None:
        """Connect the socket to the running loop; ``on_close()`` is called when the daemon's end closes."""
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock, limit=_LINE_LIMIT)
        self._task = asyncio.get_running_loop().create_task(self._read(reader, on_close))

    async def _read(self, reader, on_close) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                msg = json.loads(line)
                fut = self._pending.pop(msg["id"], None)
                self.admitted -= 1
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
            log.error("the HTTP server lost its link to the daemon: %r", exc)
        self._closed = True
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(StreamrankError("the daemon is stopping"))
        self._pending.clear()
        on_close()

    def ready(self) -> None:
        """Tell the daemon that this server answers requests now."""
        self._writer.write(json.dumps({"ready": True}).encode() + b"\n")

    async def query(self, seeds: list, *, k: int, options: dict) -> dict:
        """The answer's body of one PPR query.

        Raises
        ------
        QueueFull
            When ``limit`` queries are admitted already.
        UnknownSeed, InvalidArgumentError, StreamrankError
            As the daemon's worker raised them.
        """
        if self._closed:
            raise StreamrankError("the daemon is stopping")
        if self.admitted >= self.limit:
            raise QueueFull(f"too many personalized PageRank queries: {self.admitted} running or waiting "
                            f"(limit {self.limit}, --http-ppr-queue); retry later")
        qid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[qid] = fut
        self.admitted += 1
        self._writer.write(json.dumps({"id": qid, "seeds": seeds, "k": k, "options": options}).encode() + b"\n")
        msg = await asyncio.shield(fut)  # a client that goes away leaves the answer to the reader
        if "error" in msg:
            raise ERRORS.get(msg.get("kind"), StreamrankError)(msg["error"])
        return msg["body"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m streamrank.daemon.http_serve", description=__doc__)
    p.add_argument("--snapshot", required=True, help="the daemon's shared-memory view")
    p.add_argument("--listen-fd", type=int, required=True)
    p.add_argument("--ppr-fd", type=int, required=True)
    p.add_argument("--ppr-limit", type=int, required=True)
    p.add_argument("--ppr-workers", type=int, default=1)
    p.add_argument("--describe", default="{}", help="JSON: static facts for /status")
    p.add_argument("--started", type=float, required=True)
    p.add_argument("--log-level", default="WARNING")
    args = p.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: [http] %(message)s")

    import uvicorn

    from .http_api import make_app
    from .shared_view import SnapshotReader

    try:
        reader = SnapshotReader(args.snapshot, started=args.started)
    except StreamrankError as exc:
        log.error("%s", exc)
        return 1
    listen = socket.socket(fileno=args.listen_fd)
    link = socket.socket(fileno=args.ppr_fd)
    ppr = PprForwarder(link, limit=args.ppr_limit, workers=args.ppr_workers)
    app = make_app(reader, ppr, describe=json.loads(args.describe))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                           timeout_graceful_shutdown=GRACEFUL_S))

    def stop() -> None:
        server.should_exit = True

    async def run() -> None:
        await ppr.start(stop)
        serving = asyncio.get_running_loop().create_task(server.serve(sockets=[listen]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.005)
        if server.started:
            view = reader.view()  # the first answers need not build the id index
            if view is not None:
                reader.index.lookup(view, [])
            ppr.ready()
        await serving

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
