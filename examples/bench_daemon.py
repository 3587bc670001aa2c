"""Throughput of ``streamrank serve``: edges per second from Kafka through to published ranks.

Starts a local broker (unless ``--bootstrap-servers`` is given), a producer process
(``examples/produce_edges.py --loop``: the file's edges inserted, then deleted, again and again)
and the daemon (a real ``python -m streamrank serve`` process, publishing rank updates and
serving metrics), all on this host. After a warm-up it measures for ``--seconds`` the edges the
daemon applied *and published* (from its applied log), then stops everything and reads the
per-stage time split from the daemon's Prometheus metrics.

    python examples/bench_daemon.py --format json --seconds 60           # one JSON edge per message
    python examples/bench_daemon.py --format arrow --edges-per-message 1000 --seconds 60
    python examples/bench_daemon.py --format json --seconds 60 --string-ids  # ids rewritten as user_<id>

Prints one JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _broker import ROOT, child_env, start_broker, start_daemon

DEFAULT_DATA = ROOT / "streamrank" / "data" / "CollegeMsg.txt.gz"


def stage_split(metrics_text: str) -> dict:
    """``stage -> (count, total seconds)`` from Prometheus text."""
    out = {}
    for m in re.finditer(r'streamrank_stage_seconds_(sum|count)\{stage="(\w+)"\} ([0-9.e+-]+)', metrics_text):
        kind, stage, v = m.groups()
        out.setdefault(stage, {})[kind] = float(v)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--file", default=str(DEFAULT_DATA), help="edge file to stream (default: bundled CollegeMsg)")
    ap.add_argument("--format", choices=("json", "csv", "arrow"), default="json")
    ap.add_argument("--edges-per-message", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=60.0, help="measured window")
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--batch-size", type=int, default=20000)
    ap.add_argument("--batch-wait-ms", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--publish-threshold", type=float, default=1e-6)
    ap.add_argument("--string-ids", action="store_true",
                    help="rewrite the file's ids as strings (user_<id>) and run the daemon with --id-type string")
    args = ap.parse_args(argv)

    from kafka_broker import free_port

    bootstrap, broker = start_broker(args.bootstrap_servers)
    work = Path(tempfile.mkdtemp(prefix="streamrank-bench-"))
    procs = []
    if args.string_ids:
        from bench_string_ids import rewrite

        rewrite(Path(args.file), work / "named.txt.gz", "user_{}")
        args.file = str(work / "named.txt.gz")
    try:
        topic, publish = f"bench-{os.getpid()}", f"bench-ranks-{os.getpid()}"
        if broker is not None:
            broker.create_topic(topic, partitions=args.partitions)
            broker.create_topic(publish, partitions=args.partitions)
        prod = subprocess.Popen([sys.executable, str(ROOT / "examples" / "produce_edges.py"), "--bootstrap-servers",
                                 bootstrap, "--topic", topic, "--file", args.file, "--format", args.format,
                                 "--edges-per-message", str(args.edges_per_message), "--loop", "--duration",
                                 str(args.warmup + args.seconds + 30)],
                                env=child_env(), stdout=open(work / "producer.log", "w"), stderr=subprocess.STDOUT)
        procs.append(prod)
        port = free_port()
        applied = work / "applied.jsonl"
        daemon = start_daemon(["--bootstrap-servers", bootstrap, "--topic", topic, "--publish-topic", publish,
                               "--checkpoint-dir", str(work / "ckpt"), "--batch-size", str(args.batch_size),
                               "--batch-wait-ms", str(args.batch_wait_ms), "--metrics-port", str(port),
                               "--applied-log", str(applied), "--device", args.device, "--publish-threshold",
                               str(args.publish_threshold), "--checkpoint-interval", "30",
                               "--checkpoint-every", "1000000", "--id-type", "string" if args.string_ids else "int"],
                              work / "daemon.log")
        procs.append(daemon)
        time.sleep(args.warmup)
        t_start = time.time()
        time.sleep(args.seconds)
        t_end = time.time()
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        daemon.send_signal(signal.SIGTERM)
        rc = daemon.wait(120)
        prod.send_signal(signal.SIGTERM)
        prod.wait(30)
        events = [json.loads(line) for line in applied.read_text().splitlines() if line.strip()]
        win = [e for e in events if e["event"] == "apply" and t_start <= e["t"] <= t_end]
        edges = sum(e["edges"] for e in win)
        span = (win[-1]["t"] - win[0]["t"]) if len(win) > 1 else float("nan")
        edges_in_span = edges - (win[0]["edges"] if win else 0)  # edges applied after the first batch in the window
        stages = stage_split(metrics)
        total_stage = sum(v.get("sum", 0.0) for v in stages.values())
        lag = sum(float(v) for v in re.findall(r"streamrank_consumer_lag\{[^}]*\} ([0-9.e+-]+)", metrics))
        pub = sum(float(v) for v in re.findall(r'streamrank_published_messages_total\{kind="vertex"\} ([0-9.e+-]+)',
                                               metrics))
        report = {
            "format": args.format, "edges_per_message": args.edges_per_message, "file": os.path.basename(args.file),
            "id_type": "string" if args.string_ids else "int",
            "window_s": round(t_end - t_start, 1), "batches": len(win), "edges": edges,
            "edges_per_s": round(edges_in_span / span) if span == span and span > 0 else None,
            "median_batch_edges": sorted(e["edges"] for e in win)[len(win) // 2] if win else 0,
            "consumer_lag_at_end (broker batches, see KAFKA.md)": lag,
            "vertex_messages_published_total": pub,
            "stage_seconds_total": {k: round(v.get("sum", 0.0), 2) for k, v in stages.items()},
            "stage_share": {k: round(v.get("sum", 0.0) / total_stage, 3) for k, v in stages.items()} if total_stage else {},
            "daemon_exit": rc,
            "producer_log_tail": (work / "producer.log").read_text().splitlines()[-1:],
            "workdir": str(work),
        }
        print(json.dumps(report, indent=1))
        return 0 if rc == 0 else 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
