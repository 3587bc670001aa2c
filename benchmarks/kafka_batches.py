"""How fast a plain consumer drains a partition, by how its records were batched (no daemon).

A Kafka producer sends records in record batches (one per partition per request; ``linger.ms``
and the rate decide their size). Starts a local broker (or uses ``--bootstrap-servers``), writes
``N`` batches of ``K`` single-edge JSON messages into a one-partition topic per ``NxK`` case
(confluent-kafka, ``batch.num.messages=K``), then drains it with a consumer set up as the daemon's
(``fetch.wait.max.ms`` 10, ``fetch.queue.backoff.ms`` 10) for at most ``--seconds``, and prints the
records per second, the fetch requests and their round trip (librdkafka's statistics)::

    python benchmarks/kafka_batches.py 3000x1 10000x1 1000x100 10000x100

On the Tansu broker of the tests the drain rate falls with the number of batches stored in the
partition (its fetch lists every stored batch), so many small batches starve a consumer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, start_broker

sys.path.insert(0, str(ROOT))
from connectors.kafka_stats import stats_config  # noqa: E402

VALUE = b'{"op":"+","src":1,"dst":2}'


def fill(bootstrap: str, topic: str, batches: int, per_batch: int) -> float:
    """Write ``batches`` record batches of ``per_batch`` messages to partition 0; returns seconds."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000, "batch.num.messages": per_batch,
                  "queue.buffering.max.messages": 2_000_000, "batch.size": 16 * 1024 * 1024})
    t0 = time.perf_counter()
    for i in range(batches * per_batch):
        p.produce(topic, value=VALUE, partition=0)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(600):
        raise SystemExit("the broker did not acknowledge every message")
    return time.perf_counter() - t0


def drain(bootstrap: str, topic: str, total: int, seconds: float) -> dict:
    """Consume partition 0 from the start until ``total`` records or ``seconds``; the time runs from
    the assignment (connecting included)."""
    from confluent_kafka import Consumer, TopicPartition

    stats = []
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"batches-{topic}", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10, **stats_config(0.5, stats.append)})
    c.assign([TopicPartition(topic, 0, 0)])
    got, t0 = 0, time.perf_counter()
    deadline = time.monotonic() + seconds
    try:
        while got < total and time.monotonic() < deadline:
            got += len(c.consume(5000, 0.05))
        dt = time.perf_counter() - t0
        c.poll(0.6)  # one more statistics interval
    finally:
        c.close()
    brokers = [b for b in (stats[-1]["brokers"].values() if stats else [])]
    rtts = [b["rtt_ms"] for s in stats for b in s["brokers"].values() if b.get("rtt_ms")]
    return {"records": got, "seconds": round(dt, 2), "records_per_s": round(got / dt) if dt > 0 else None,
            "fetch_requests": sum(b["req"].get("Fetch", 0) for b in brokers),
            "fetch_rtt_ms_avg": round(sum(r[0] for r in rtts) / len(rtts), 1) if rtts else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", metavar="NxK", help="N record batches of K messages each")
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--seconds", type=float, default=30.0, help="longest drain per case")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    cases = []
    for c in args.cases:
        n, sep, k = c.partition("x")
        if not sep or not n.isdigit() or not k.isdigit() or int(n) < 1 or int(k) < 1:
            ap.error(f"case {c!r}: NxK with N, K >= 1")
        cases.append((int(n), int(k)))
    bootstrap, broker = start_broker(args.bootstrap_servers)
    out = []
    try:
        for n, k in cases:
            topic = f"batches-{n}x{k}-{time.time_ns()}"
            if broker is not None:
                broker.create_topic(topic, partitions=1)
            filled = fill(bootstrap, topic, n, k)
            out.append({"batches": n, "messages_per_batch": k, "fill_seconds": round(filled, 2),
                        **drain(bootstrap, topic, n * k, args.seconds)})
            print(out[-1], file=sys.stderr)
    finally:
        if broker is not None:
            broker.stop()
    print(f"{'batches x messages':>18} {'drained':>10} {'seconds':>8} {'records/s':>10} {'fetches':>8} "
          f"{'fetch rtt ms':>12}")
    for r in out:
        print(f"{r['batches']:>10} x {r['messages_per_batch']:<5} {r['records']:>10} {r['seconds']:>8} "
              f"{r['records_per_s'] or 0:>10} {r['fetch_requests']:>8} {r['fetch_rtt_ms_avg'] or '-':>12}")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
