"""Where the daemon's threads spend their time while draining a backlog: a stack-sampling profile.

Starts a local broker (or uses ``--bootstrap-servers``), pre-fills a topic with ``--edges`` edges
(``examples/produce_edges.py``), then runs the daemon *in this process* (``Daemon.run`` on the main
thread, publishing rank updates) and samples every thread's Python stack every ``--interval-ms``
until the backlog is applied. Prints the rate and, per thread (the loop, the ingest thread, the
decode and checkpoint workers), the share of samples in each function, inclusive and self::

    python benchmarks/profile_daemon.py --edges 3000000 --format json --publish-format arrow
    python benchmarks/profile_daemon.py --edges 3000000 --no-sampling      # the rate without the sampler

A sample lands in the function a thread was in, whether it ran Python, waited in C with the GIL
released (``consume()``, pyarrow, compiled kernels) or waited for the GIL: shares are of wall time.
The sampler itself needs the GIL, which it gets when a thread lets go of it, so places where a
thread releases the GIL (a NumPy call on a large array, the client's ``consume()``) are
over-represented; read the shares as where time goes roughly, and the stage times of
``benchmarks/daemon.py`` (Prometheus histograms) for figures. The sampler takes the GIL every
interval, so the rate with sampling is somewhat lower.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, child_env, start_broker

sys.path.insert(0, str(ROOT))
from streamrank.daemon.config import DaemonConfig  # noqa: E402
from streamrank.daemon.loop import Daemon  # noqa: E402
from streamrank.replay.run import BUNDLED_GRAPH  # noqa: E402


class StackSampler(threading.Thread):
    """Counts, per thread name, the functions on each sampled stack (inclusive) and at its top (self)."""

    def __init__(self, interval_s: float):
        super().__init__(daemon=True, name="sampler")
        self.interval_s = interval_s
        self.inclusive = collections.defaultdict(collections.Counter)
        self.own = collections.defaultdict(collections.Counter)
        self.samples = collections.Counter()
        self._stop = threading.Event()

    def run(self):
        me = threading.get_ident()
        while not self._stop.is_set():
            names = {t.ident: t.name for t in threading.enumerate()}
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                name = names.get(tid, str(tid))
                self.samples[name] += 1
                seen = set()
                top = True
                while frame is not None:
                    key = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}"
                    if top:
                        self.own[name][key] += 1
                        top = False
                    if key not in seen:
                        self.inclusive[name][key] += 1
                        seen.add(key)
                    frame = frame.f_back
            self._stop.wait(self.interval_s)

    def stop(self):
        self._stop.set()

    def report(self, top: int) -> None:
        for name, n in self.samples.most_common():
            if n < 20 or name == "watcher":
                continue
            print(f"\n== thread {name}: {n} samples")
            print("   inclusive                                            self")
            inc = [(k, v) for k, v in self.inclusive[name].most_common() if not k.startswith(("threading.py",
                                                                                                "<frozen"))][:top]
            own = self.own[name].most_common(top)
            for i in range(max(len(inc), len(own))):
                left = f"{100 * inc[i][1] / n:5.1f}% {inc[i][0]}" if i < len(inc) else ""
                right = f"{100 * own[i][1] / n:5.1f}% {own[i][0]}" if i < len(own) else ""
                print(f"   {left:52} {right}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--edges", type=int, default=3_000_000, help="edges pre-filled")
    ap.add_argument("--format", choices=("json", "csv", "arrow"), default="json")
    ap.add_argument("--edges-per-message", type=int, default=1)
    ap.add_argument("--publish-format", choices=("keyed", "arrow", "both"), default="arrow")
    ap.add_argument("--kafka-client", default="confluent", choices=("confluent", "kafka-python"))
    ap.add_argument("--batch-size", type=int, default=20000)
    ap.add_argument("--decode-threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--interval-ms", type=float, default=2.0)
    ap.add_argument("--no-sampling", action="store_true", help="measure the rate only")
    ap.add_argument("--top", type=int, default=25, help="functions listed per thread")
    ap.add_argument("--file", default=str(BUNDLED_GRAPH))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    bootstrap, broker = start_broker(args.bootstrap_servers)
    try:
        topic = f"profile-{int(time.time())}"
        if broker is not None:
            broker.create_topic(topic, partitions=args.partitions)
            broker.create_topic(topic + "-ranks", partitions=args.partitions)
        subprocess.run([sys.executable, str(ROOT / "examples" / "produce_edges.py"), "--bootstrap-servers", bootstrap,
                        "--topic", topic, "--file", args.file, "--format", args.format, "--edges-per-message",
                        str(args.edges_per_message), "--loop", "--limit", str(args.edges)],
                       env=child_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cfg = DaemonConfig(checkpoint_dir=tempfile.mkdtemp(prefix="streamrank-profile-"), bootstrap_servers=bootstrap,
                           topic=[topic], publish_topic=topic + "-ranks", batch_size=args.batch_size,
                           batch_wait_ms=100, device=args.device, checkpoint_interval=5.0, checkpoint_every=10**6,
                           full_checkpoint_every=4, kafka_client=args.kafka_client,
                           publish_format=args.publish_format, id_type="int", decode_threads=args.decode_threads)
        daemon = Daemon(cfg)
        sampler = StackSampler(args.interval_ms / 1e3)
        first = {}

        def watch():  # the rate from the first applied batch to the last edge of the backlog
            while daemon.edges_applied < args.edges and not daemon.shutdown.requested:
                if daemon.edges_applied and not first:
                    first.update(t=time.perf_counter(), edges=daemon.edges_applied)
                time.sleep(0.005)
            first["end"] = time.perf_counter()
            daemon.shutdown.request()

        threading.Thread(target=watch, daemon=True, name="watcher").start()
        if not args.no_sampling:
            sampler.start()
        rc = daemon.run()
        sampler.stop()
    finally:
        if broker is not None:
            broker.stop()
    span = first["end"] - first["t"]
    print(f"daemon exit {rc}: {(daemon.edges_applied - first['edges']) / span:,.0f} edges/s over {span:.1f}s "
          f"({args.format}, {args.edges_per_message} edges per message, {args.publish_format} publishing, "
          f"{args.kafka_client}, decode threads {args.decode_threads}, sampling "
          f"{'off' if args.no_sampling else f'every {args.interval_ms} ms'})")
    if not args.no_sampling:
        sampler.report(args.top)
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
