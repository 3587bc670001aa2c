"""How fast a plain confluent-kafka consumer drains a backlog, per librdkafka setting (no daemon).

Starts a local broker (or uses ``--bootstrap-servers``), pre-fills a topic with single-edge JSON
messages (``examples/produce_edges.py``), then reads the whole backlog with a consumer assigned
to every partition, as ``streamrank serve`` does, once per ``--settings`` entry, and prints the
messages per second. The daemon's consumer is built with the same settings
(``connectors/kafka_confluent.py``); this separates the client's own ceiling from the daemon's::

    python benchmarks/kafka_drain.py --messages 1000000 \\
        --settings '{}' '{"fetch.queue.backoff.ms": 10}' '{"queued.min.messages": 1000000}'
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, child_env, start_broker

sys.path.insert(0, str(ROOT))
from streamrank.replay.run import BUNDLED_GRAPH  # noqa: E402


def drain(bootstrap: str, topic: str, partitions: int, messages: int, settings: dict) -> dict:
    """Consume ``messages`` records of ``topic`` from the start; messages/s from the first record on."""
    from confluent_kafka import Consumer, TopicPartition

    conf = {"bootstrap.servers": bootstrap, "group.id": f"drain-{time.time_ns()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10, "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 8 * 1048576 + 1024, **settings}
    c = Consumer(conf)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, t0 = 0, None
    deadline = time.monotonic() + 300
    try:
        while got < messages and time.monotonic() < deadline:
            batch = c.consume(num_messages=5000, timeout=0.05)
            if batch and t0 is None:
                t0 = time.perf_counter()
            got += len(batch)
        dt = time.perf_counter() - (t0 or time.perf_counter())
    finally:
        c.close()
    return {"settings": settings, "messages": got, "seconds": round(dt, 2),
            "messages_per_s": round(got / dt) if dt > 0 else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--messages", type=int, default=1_000_000, help="single-edge JSON messages pre-filled")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--settings", nargs="+", default=["{}", '{"fetch.queue.backoff.ms": 10}'],
                    help="librdkafka consumer settings to try, one JSON object each")
    ap.add_argument("--file", default=str(BUNDLED_GRAPH))
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    tries = [json.loads(s) for s in args.settings]
    bootstrap, broker = start_broker(args.bootstrap_servers)
    out = []
    try:
        topic = f"drain-{int(time.time())}"
        if broker is not None:
            broker.create_topic(topic, partitions=args.partitions)
        t0 = time.time()
        subprocess.run([sys.executable, str(ROOT / "examples" / "produce_edges.py"), "--bootstrap-servers", bootstrap,
                        "--topic", topic, "--file", args.file, "--loop", "--limit", str(args.messages)],
                       env=child_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"pre-filled {args.messages:,} messages in {time.time() - t0:.1f}s", file=sys.stderr)
        for s in tries:
            out.append(drain(bootstrap, topic, args.partitions, args.messages, s))
            print(out[-1], file=sys.stderr)
    finally:
        if broker is not None:
            broker.stop()
    print(f"{'librdkafka settings':60} {'messages/s':>11}")
    for r in out:
        print(f"{json.dumps(r['settings']):60} {r['messages_per_s'] or 0:>11}")
    if args.json:
        Path(args.json).write_text(json.dumps({"messages": args.messages, "runs": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
