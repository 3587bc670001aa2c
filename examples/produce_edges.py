"""Produce an edge file into a Kafka topic, for ``streamrank serve`` to read.

Reads any edge file :mod:`connectors.files` understands (SNAP text, CSV, Parquet, JSON lines;
gzip welcome) and sends its edges, keyed by source vertex (so every op on an edge lands in one
partition, in order), as one of the message formats the daemon accepts:

    python examples/produce_edges.py --bootstrap-servers localhost:9092 --topic edges \\
        --file graph.txt.gz --format json                 # one JSON edge per message
    python examples/produce_edges.py ... --format arrow --edges-per-message 1000
    python examples/produce_edges.py ... --rate 5000 --loop --duration 120
    python examples/produce_edges.py ... --client kafka-python     # default: confluent-kafka where installed

``--loop`` replays the file again and again, alternating a pass of insertions with a pass of
deletions of the same edges, so a finite file becomes an endless stream. String vertex ids (a
file whose ids are names) are sent as JSON strings, CSV text or Arrow string columns.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.records import encode_arrow, encode_json  # noqa: E402
from streamrank.errors import SourceError  # noqa: E402
from streamrank.replay.run import read_stream  # noqa: E402


def read_edges(path: str):
    """``(src, dst, insert)`` host arrays of a whole edge file, in replay order."""
    try:
        stream = read_stream(path)
    except SourceError as exc:  # unreadable, or no edges
        raise SystemExit(str(exc)) from exc
    if stream.id_type == "string":  # Arrow string arrays -> NumPy object arrays of str
        return (stream.src.to_numpy(zero_copy_only=False), stream.dst.to_numpy(zero_copy_only=False),
                stream.insert)
    return stream.src, stream.dst, stream.insert


def _text(v) -> str:
    return v if isinstance(v, str) else str(int(v))


def partition_key(src) -> np.ndarray:
    """A non-negative integer per source vertex (the id itself, or a CRC of the string id)."""
    if src.dtype == object:
        return np.fromiter((zlib.crc32(v.encode()) for v in src.tolist()), dtype=np.int64, count=src.shape[0])
    return src


def messages(src, dst, ins, *, fmt: str, per_message: int):
    """Yield ``(key, value, edges)``: one message per edge (json/csv) or per group (json-array/arrow).

    Groups hold edges of one source-vertex partition key so that ordering per edge holds.
    """
    if per_message <= 1:
        for s, d, i in zip(src.tolist(), dst.tolist(), ins.tolist()):
            if fmt == "csv":
                value = f"{s},{d},{'+' if i else '-'}".encode()
            elif isinstance(s, str):
                value = json.dumps({"op": "+" if i else "-", "src": s, "dst": d}, ensure_ascii=False).encode()
            else:
                value = b'{"op":"%s","src":%d,"dst":%d}' % (b"+" if i else b"-", s, d)
            yield _text(s).encode(), value, 1
        return
    for start in range(0, src.shape[0], per_message):
        sl = slice(start, start + per_message)
        value = encode_arrow(src[sl], dst[sl], ins[sl]) if fmt == "arrow" else encode_json(src[sl], dst[sl], ins[sl])
        yield _text(src[start]).encode(), value, int(src[sl].shape[0])


def produce(producer, topic: str, src, dst, ins, *, fmt="json", per_message=1, rate=0.0, loop=False,
            duration=0.0, limit=0, stop=None, on_progress=None) -> int:
    """Send edges to ``topic``; returns the number of edges sent.

    Parameters
    ----------
    rate : float
        Edges per second (0: as fast as possible).
    loop : bool
        Repeat: insertion pass, deletion pass, insertion pass, ...
    duration, limit : float, int
        Stop after this many seconds / edges (0: no limit).
    stop : callable, optional
        Returns True to stop early.
    """
    t0 = time.monotonic()
    sent = 0
    npass = 0
    while True:
        pass_ins = ins if npass % 2 == 0 else np.zeros_like(ins)
        for key, value, n in messages(src, dst, pass_ins, fmt=fmt, per_message=per_message):
            producer.send(topic, key=key, value=value)
            sent += n
            if rate > 0:
                ahead = sent / rate - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
            if (limit and sent >= limit) or (duration and time.monotonic() - t0 >= duration) or (stop and stop()):
                producer.flush()
                return sent
            if on_progress and sent % 100000 < n:
                on_progress(sent, time.monotonic() - t0)
        npass += 1
        if not loop:
            producer.flush()
            return sent


class _ConfluentSender:
    """confluent-kafka's Producer with the ``send``/``flush``/``close`` calls used here.

    Delivery reports are served every :data:`POLL_EVERY` messages: confluent-kafka keeps each
    message until its report is served by ``poll()``, so without it the client's queue
    (``queue.buffering.max.messages``, 2,000,000) filled after 20 s at 100,000 messages/s and the
    producer stalled while serving them all at once (the rate then caught up in a burst), and its
    count of unacknowledged messages counted every message sent.
    """

    POLL_EVERY = 1000

    def __init__(self, bootstrap_servers: str, *, linger_ms: float = 5.0, stats_path: str | None = None):
        from confluent_kafka import Producer

        from connectors.kafka_stats import stats_config

        self._stats = open(stats_path, "a") if stats_path else None
        self._p = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": linger_ms, "acks": 1,
                            "queue.buffering.max.messages": 2_000_000, "batch.size": 1024 * 1024,
                            **(stats_config(1.0, self._write_stats) if self._stats else {})})
        self._since_poll = 0

    def _write_stats(self, stats: dict) -> None:
        self._stats.write(json.dumps(stats) + "\n")
        self._stats.flush()

    def send(self, topic, *, key, value):
        while True:
            try:
                self._p.produce(topic, value=value, key=key)
                break
            except BufferError:
                self._p.poll(0.01)
        self._since_poll += 1
        if self._since_poll >= self.POLL_EVERY:
            self._p.poll(0)
            self._since_poll = 0

    def flush(self):
        self._p.flush(60)

    def close(self):
        self._p.flush(60)
        if self._stats:
            self._stats.close()

    def in_flight(self) -> int:
        """Messages handed to the client that the broker has not acknowledged yet."""
        self._p.poll(0)
        return len(self._p)


def make_producer(client: str, bootstrap_servers: str, *, linger_ms: float | None = None, stats_path: str | None = None):
    """A producer for this script: confluent-kafka or kafka-python (acks from the leader).

    ``linger_ms``: how long the client gathers messages into a batch (default 5 with
    confluent-kafka, 20 with kafka-python); ``stats_path``
    (confluent-kafka only): a JSON line of the client's condensed statistics every second
    (:mod:`connectors.kafka_stats`).
    """
    if client == "confluent":
        return _ConfluentSender(bootstrap_servers, linger_ms=5.0 if linger_ms is None else linger_ms,
                                stats_path=stats_path)
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=bootstrap_servers.split(","), linger_ms=20 if linger_ms is None else int(linger_ms),
                         batch_size=512 * 1024, acks=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--file", required=True, help="edge file (SNAP text, CSV, Parquet, JSON lines)")
    ap.add_argument("--format", choices=("json", "csv", "arrow"), default="json")
    ap.add_argument("--edges-per-message", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0.0, help="edges per second (0: as fast as possible)")
    ap.add_argument("--loop", action="store_true", help="replay forever: insert pass, delete pass, ...")
    ap.add_argument("--duration", type=float, default=0.0, help="stop after SECONDS")
    ap.add_argument("--limit", type=int, default=0, help="stop after N edges")
    ap.add_argument("--client", choices=("auto", "confluent", "kafka-python"), default="auto",
                    help="Kafka client (default: confluent-kafka where installed)")
    ap.add_argument("--linger-ms", type=float,
                    help="how long the client gathers messages into one batch (default 5; kafka-python 20)")
    ap.add_argument("--stats", metavar="FILE",
                    help="confluent-kafka: append the client's condensed statistics to FILE every second")
    args = ap.parse_args(argv)
    if args.format == "arrow" and args.edges_per_message < 2:
        ap.error("--format arrow needs --edges-per-message >= 2")
    from connectors.kafka_clients import resolve_client

    src, dst, ins = read_edges(args.file)
    # a batched message must not mix source partitions: group edges by source, keeping per-edge order
    if args.edges_per_message > 1:
        order = np.argsort(partition_key(src) % 64, kind="stable")
        src, dst, ins = src[order], dst[order], ins[order]
    producer = make_producer(resolve_client(args.client), args.bootstrap_servers, linger_ms=args.linger_ms,
                             stats_path=args.stats)
    in_flight = getattr(producer, "in_flight", None)  # confluent-kafka only

    def progress(sent, t):
        # "sent" counts messages handed to the client; those the broker has not acknowledged yet
        # are the client's backlog (a broker that cannot keep up shows here, not in the rate)
        waiting = f", {in_flight():,} messages not yet acknowledged" if in_flight else ""
        print(f"{sent} edges in {t:.1f}s ({sent / t:,.0f}/s{waiting})", file=sys.stderr)

    t0 = time.monotonic()
    n = produce(producer, args.topic, src, dst, ins, fmt=args.format, per_message=args.edges_per_message,
                rate=args.rate, loop=args.loop, duration=args.duration, limit=args.limit, on_progress=progress)
    producer.close()
    dt = time.monotonic() - t0
    print(f"sent {n} edges to {args.topic} in {dt:.1f}s ({n / max(dt, 1e-9):,.0f} edges/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
