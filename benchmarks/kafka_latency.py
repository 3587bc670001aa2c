"""The Kafka floor under the daemon's staleness: produce-to-consume latency without the daemon.

Starts a local broker (or uses ``--bootstrap-servers``), runs ``examples/produce_edges.py`` at a
fixed rate of single-edge JSON messages, and reads the topic with a plain confluent-kafka
consumer (explicit assignment, as ``streamrank serve`` does) for each ``fetch.wait.max.ms`` in
``--fetch-wait-ms``; prints the latency (consume time minus the record's produce timestamp)
p50/p90/p99 after a warm-up::

    python benchmarks/kafka_latency.py --rate 100000 --fetch-wait-ms 20,10,5,1 --seconds 18
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, child_env, start_broker

sys.path.insert(0, str(ROOT))
from streamrank.replay.run import BUNDLED_GRAPH  # noqa: E402


def measure(bootstrap: str, topic: str, *, fetch_wait_ms: int, seconds: float, warmup: float, rate: float,
            file: str, partitions: int) -> dict:
    """Produce at ``rate`` for ``warmup + seconds`` and return the consumer's latency quantiles (ms)."""
    from confluent_kafka import Consumer, TopicPartition

    prod = subprocess.Popen([sys.executable, str(ROOT / "examples" / "produce_edges.py"), "--bootstrap-servers",
                             bootstrap, "--topic", topic, "--file", file, "--loop", "--duration",
                             str(warmup + seconds + 2), "--rate", str(rate)], env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}", "enable.auto.commit": False,
                  "fetch.wait.max.ms": fetch_wait_ms, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    lat = []
    t0 = time.time()
    try:
        while time.time() - t0 < warmup + seconds:
            msgs = c.consume(5000, 0.02)
            now_ms = time.time() * 1e3
            if time.time() - t0 > warmup:
                lat.extend(now_ms - m.timestamp()[1] for m in msgs if m.error() is None)
    finally:
        prod.kill()
        prod.wait()
        c.close()
    q = np.percentile(lat, [50, 90, 99]) if lat else [float("nan")] * 3
    return {"fetch_wait_ms": fetch_wait_ms, "records": len(lat), "records_per_s": round(len(lat) / seconds),
            "p50_ms": round(float(q[0]), 1), "p90_ms": round(float(q[1]), 1), "p99_ms": round(float(q[2]), 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--rate", type=float, default=100000.0, help="edges (messages) per second")
    ap.add_argument("--fetch-wait-ms", default="20,10,5", help="comma-separated fetch.wait.max.ms values")
    ap.add_argument("--seconds", type=float, default=18.0)
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--file", default=str(BUNDLED_GRAPH))
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    bootstrap, broker = start_broker(args.bootstrap_servers)
    out = []
    try:
        for i, fw in enumerate(int(v) for v in args.fetch_wait_ms.split(",") if v):
            topic = f"latency-{fw}-{i}-{int(time.time())}"
            if broker is not None:
                broker.create_topic(topic, partitions=args.partitions)
            out.append(measure(bootstrap, topic, fetch_wait_ms=fw, seconds=args.seconds, warmup=args.warmup,
                               rate=args.rate, file=args.file, partitions=args.partitions))
            print(out[-1], file=sys.stderr)
    finally:
        if broker is not None:
            broker.stop()
    print(f"{'fetch.wait.max.ms':>17} {'records/s':>10} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for r in out:
        print(f"{r['fetch_wait_ms']:>17} {r['records_per_s']:>10} {r['p50_ms']:>8} {r['p90_ms']:>8} {r['p99_ms']:>8}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rate": args.rate, "runs": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
