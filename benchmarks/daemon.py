"""Benchmark of ``streamrank serve``: Kafka in, ranks out, on this host.

For each run it starts the daemon (a real ``python -m streamrank serve`` process publishing rank
updates, checkpointing every few seconds) and producers (``examples/produce_edges.py --loop``:
the file's edges inserted, then deleted, again and again) against one local broker (or
``--bootstrap-servers``). Two modes (``--mode``), named in every output line:

- ``sustained`` (default): the producers run beside the daemon at the run's RATE (edges/s over
  all producers; 0 or absent: as fast as they go), and after ``--warmup`` seconds the daemon is
  measured for ``--seconds``. With a RATE the report says whether the daemon kept up (applied
  >= 95% of it); staleness is meaningful only then.
- ``drain``: the topic is filled first (``--drain-edges``, or the run's 5th field), then the daemon
  starts on the backlog and its rate of applying it is measured, from ``--warmup`` (default 2 s)
  after its first batch until the backlog is applied or ``--seconds`` have passed. The
  producers' CPU is then not shared with the daemon: this is the daemon's own rate.

Per run it reports:

- edges/s applied *and published* (from the daemon's applied log), and the producers' rate;
- staleness: time from a record's produce timestamp (Kafka CreateTime) to the hand-over of the
  rank updates of its batch to the Kafka client, p50/p99 over edges;
- checkpoint time and bytes, full and incremental;
- the daemon's RSS over time; its time per applied edge in each stage (Prometheus metrics);
- the Kafka clients' statistics over the window (``--client-stats``, on by default with
  confluent-kafka; :mod:`_client_stats`): the daemon consumer's fetch requests, records per fetch,
  fetch round trip and local fetch queue, the producers' messages per record batch, queue
  latency (linger included) and produce round trip, so a starved consumer or a slow broker shows.

A run is ``FORMAT:EDGES_PER_MESSAGE:CLIENT:PUBLISH_FORMAT[:RATE]`` (drain mode: ``[:EDGES]``)::

    python benchmarks/daemon.py --runs json:1:confluent:keyed,json:1:kafka-python:keyed \\
        --seconds 30 --json docs/results/daemon_2core.json --plot docs/results/daemon_2core.png
    python benchmarks/daemon.py --runs json:1:confluent:keyed:20000 --seconds 30   # staleness at a fixed rate
    python benchmarks/daemon.py --mode drain --runs json:1:confluent:arrow --drain-edges 3000000
    python benchmarks/daemon.py --mode drain --runs json:1:confluent:arrow \\
        --daemon-root before=/tmp/old-checkout --daemon-root after=.     # before/after, alternated
    python benchmarks/daemon.py --runs json:1:confluent:keyed --seconds 30 --string-ids  # ids user_<id>
    python benchmarks/daemon.py --runs arrow:1000:confluent:arrow:1000000 --producers 4 \
        --base-graph rmat:24 --stream-rmat 24 --seconds 20        # on a base of R-MAT 24 (see below)

On a large base (``--base-graph``: the daemon's own option, an edge file, a checkpoint or
``rmat:SCALE`` generated on the device when the daemon starts), ``--stream-rmat SCALE`` makes the
streamed file ``--stream-edges`` R-MAT edges over the same id range (the R-MAT quadrant
probabilities, ids relabelled by a permutation of their own: the stream's endpoints are spread
over the base's vertices, hubs and leaves alike), inserted then deleted again and again. The
daemon is given ``--start-timeout`` seconds to load the base before its first batch.

Prints a table and writes the JSON report and the plot when asked.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, child_env, start_broker, start_daemon
from _client_stats import print_table as print_client_stats
from _client_stats import read_json_lines as read_applied
from _client_stats import summarize as summarize_client_stats
from _rmat_stream import rmat_stream_file

sys.path.insert(0, str(ROOT))
from streamrank.daemon.staleness import STALENESS_EDGES_MS  # noqa: E402
from streamrank.replay.run import BUNDLED_GRAPH  # noqa: E402


def stage_split(metrics_text: str) -> dict:
    """``stage -> {"sum": seconds, "count": n}`` from Prometheus text."""
    out = {}
    for m in re.finditer(r'streamrank_stage_seconds_(sum|count)\{stage="(\w+)"\} ([0-9.e+-]+)', metrics_text):
        kind, stage, v = m.groups()
        out.setdefault(stage, {})[kind] = float(v)
    return out


def hist_quantiles(events, qs=(0.5, 0.99)):
    """Quantiles (ms) of the staleness histograms of ``events`` (upper bucket edge)."""
    total = np.zeros(len(STALENESS_EDGES_MS) - 1, dtype=np.int64)
    for e in events:
        if "stale_hist" in e:
            first, counts = e["stale_hist"]
            total[first:first + len(counts)] += np.asarray(counts, dtype=np.int64)
    if total.sum() == 0:
        return [None] * len(qs)
    cum = np.cumsum(total)
    return [round(float(STALENESS_EDGES_MS[1 + int(np.searchsorted(cum, q * cum[-1]))]), 1) for q in qs]


def latency_split(events) -> dict:
    """Where the oldest record of each batch spent its staleness, p50/p99 over batches (ms):
    ``produce_to_poll`` (producer, broker, fetch, decode), ``poll_to_close`` (queue and batch
    window), ``close_to_publish`` (graph, ranks, publish hand-over)."""
    parts = {"produce_to_poll": [], "poll_to_close": [], "close_to_publish": []}
    for e in events:
        if "stale_ms" not in e or e.get("polled") is None:
            continue
        oldest = e["stale_ms"][2]
        parts["produce_to_poll"].append(oldest - (e["t"] - e["polled"]) * 1e3)
        parts["poll_to_close"].append((e["closed"] - e["polled"]) * 1e3)
        parts["close_to_publish"].append((e["t"] - e["closed"]) * 1e3)
    return {k: [round(float(np.percentile(v, 50)), 1), round(float(np.percentile(v, 99)), 1)] if v else None
            for k, v in parts.items()}


class RssSampler(threading.Thread):
    """Samples a process's resident set size (MiB) every ``period`` seconds."""

    def __init__(self, pid: int, period: float = 0.5):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples = []
        self._stop = threading.Event()

    def run(self):
        t0 = time.time()
        while not self._stop.is_set():
            try:
                with open(f"/proc/{self.pid}/status") as fh:
                    kb = int(re.search(r"VmRSS:\s+(\d+)", fh.read()).group(1))
                self.samples.append((round(time.time() - t0, 2), round(kb / 1024, 1)))
            except (OSError, AttributeError):
                pass
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()


def prime_kernels(device: str) -> str:
    """Compile the engine's kernels once (Numba's disk cache, CuPy's kernel cache) through every
    batch path, the daemon's own warm-up (:func:`streamrank.daemon.warmup.warm_up`), so that no
    measured run pays for it; returns the processor's name."""
    from streamrank.backend import device_name, resolve_backend
    from streamrank.config import RankConfig
    from streamrank.daemon.warmup import warm_up

    backend = resolve_backend(device)
    warm_up(backend.name, config=RankConfig())
    return device_name(backend)


def parse_run(spec: str) -> dict:
    parts = spec.split(":")
    if len(parts) not in (4, 5):
        raise SystemExit(f"run {spec!r}: FORMAT:EDGES_PER_MESSAGE:CLIENT:PUBLISH_FORMAT[:RATE]")
    return {"format": parts[0], "edges_per_message": int(parts[1]), "client": parts[2], "publish_format": parts[3],
            "rate": float(parts[4]) if len(parts) == 5 else 0.0}


def start_producers(run: dict, args, bootstrap: str, topic: str, rdir: Path, *, rate: float, limit: int = 0,
                    duration: float = 0.0) -> list:
    """``args.producers`` processes of ``examples/produce_edges.py``, each sending ``rate / N`` edges/s
    (0: as fast as it goes) for ``duration`` seconds or ``limit / N`` edges."""
    prods = []
    for k in range(args.producers):  # each replays the file at RATE / producers
        cmd = [sys.executable, str(ROOT / "examples" / "produce_edges.py"), "--bootstrap-servers", bootstrap,
               "--topic", topic, "--file", args.file, "--format", run["format"], "--edges-per-message",
               str(run["edges_per_message"]), "--loop", "--rate", str(rate / args.producers),
               "--client", args.producer_client]
        if args.producer_linger_ms is not None:
            cmd += ["--linger-ms", str(args.producer_linger_ms)]
        if args.client_stats:
            cmd += ["--stats", str(rdir / f"producer{k}.stats.jsonl")]
        if duration:
            cmd += ["--duration", str(duration)]
        if limit:
            cmd += ["--limit", str(-(-limit // args.producers))]
        prods.append(subprocess.Popen(cmd, env=child_env(), stdout=open(rdir / f"producer{k}.log", "w"),
                                      stderr=subprocess.STDOUT))
    return prods


def prefill(run: dict, args, bootstrap: str, topic: str, rdir: Path, edges: int) -> dict:
    """Drain mode: produce ``edges`` edges into ``topic`` before the daemon starts."""
    t0 = time.time()
    prods = start_producers(run, args, bootstrap, topic, rdir, rate=0.0, limit=edges)
    try:
        for p in prods:
            if p.wait(900) != 0:
                raise SystemExit(f"producer failed:\n{(rdir / 'producer0.log').read_text()[-2000:]}")
    finally:
        for p in prods:
            if p.poll() is None:
                p.kill()
                p.wait()
    dt = time.time() - t0
    sent = 0
    for k in range(len(prods)):
        m = re.search(r"sent (\d+) edges", (rdir / f"producer{k}.log").read_text())
        sent += int(m.group(1)) if m else 0
    print(f"  pre-filled {sent:,} edges in {dt:.1f}s ({sent / dt:,.0f} edges/s, {args.producers} producers)",
          file=sys.stderr)
    return {"edges": sent, "seconds": round(dt, 2)}


def one_run(run: dict, args, bootstrap: str, broker, work: Path, *, label: str = "", root: Path = ROOT) -> dict:
    mode = args.mode
    tag = (f"{run['format']}-{run['edges_per_message']}-{run['client']}-{run['publish_format']}-{mode}-"
           f"{int(run['rate'])}")
    if label:
        tag = f"{label}:{tag}"
    rdir = work / tag.replace(":", "_")
    k = 1
    while rdir.exists():  # the same run asked for again
        k += 1
        rdir = work / f"{tag.replace(':', '_')}-{k}"
    rdir.mkdir()
    topic, publish = (f"bench-{rdir.name}-{os.getpid()}", f"bench-ranks-{rdir.name}-{os.getpid()}")
    if broker is not None:
        broker.create_topic(topic, partitions=args.partitions)
        broker.create_topic(publish, partitions=args.partitions)
    from kafka_broker import free_port

    filled = None
    if mode == "drain":  # the whole backlog is in the topic before the daemon starts
        filled = prefill(run, args, bootstrap, topic, rdir, int(run["rate"]) or args.drain_edges)
    port = free_port()
    applied = rdir / "applied.jsonl"
    daemon = start_daemon(["--bootstrap-servers", bootstrap, "--topic", topic, "--publish-topic", publish,
                           "--checkpoint-dir", str(rdir / "ckpt"), "--batch-size", str(args.batch_size),
                           "--batch-wait-ms", str(args.batch_wait_ms), "--metrics-port", str(port),
                           "--applied-log", str(applied), "--device", args.device, "--publish-threshold",
                           str(args.publish_threshold), "--checkpoint-interval", str(args.checkpoint_interval),
                           "--checkpoint-every", "1000000", "--full-checkpoint-every", str(args.full_every),
                           "--kafka-client", run["client"], "--publish-format", run["publish_format"],
                           "--id-type", "string" if args.string_ids else "int",
                           *(["--base-graph", args.base_graph] if args.base_graph else []),
                           *(["--kafka-stats-interval", str(args.client_stats)] if args.client_stats else []),
                           *(["--decode-threads", str(args.decode_threads)] if args.decode_threads else [])],
                          rdir / "daemon.log", root=root)
    rss = RssSampler(daemon.pid)
    rss.start()
    prods = []
    try:
        deadline = time.time() + args.start_timeout
        while not (applied.exists() and "serving" in (rdir / "daemon.log").read_text()):
            if daemon.poll() is not None or time.time() > deadline:
                raise SystemExit(f"daemon did not start:\n{(rdir / 'daemon.log').read_text()[-2000:]}")
            time.sleep(0.1)
        t_prod = time.time()
        if mode == "drain":
            t_start, t_end = drain_window(daemon, applied, args, filled["edges"])
        else:
            prods = start_producers(run, args, bootstrap, topic, rdir, rate=run["rate"],
                                    duration=args.warmup + args.seconds + 5)
            time.sleep(args.warmup)
            t_start = time.time()
            time.sleep(args.seconds)
            t_end = time.time()
        load = os.getloadavg()[0]  # 1-minute load average of the host at the end of the window
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        daemon.send_signal(signal.SIGTERM)
        rc = daemon.wait(120)
    finally:
        rss.stop()
        for p in (*prods, daemon):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    events = read_applied(applied)
    win = [e for e in events if e["event"] == "apply" and t_start <= e["t"] <= t_end]
    span = (win[-1]["t"] - win[0]["t"]) if len(win) > 1 else 0.0
    edges_after_first = sum(e["edges"] for e in win[1:])
    ck = [e for e in events if e["event"] == "checkpoint"]
    stages = stage_split(metrics)
    total_stage = sum(v.get("sum", 0.0) for v in stages.values())
    applied_total = sum(e["edges"] for e in events if e["event"] == "apply")
    produced = None
    if mode != "drain":
        produced = 0
        for k in range(len(prods)):
            last = None
            for ln in (rdir / f"producer{k}.log").read_text().splitlines():
                m = re.match(r"(\d+) edges in ([0-9.]+)s", ln)
                if m and 0 < float(m.group(2)) <= t_end - t_prod:
                    last = int(m.group(1)) / float(m.group(2))
            produced += last or 0
        produced = round(produced) or None
    p50, p99 = hist_quantiles(win)
    split = latency_split(win)
    rate = round(edges_after_first / span) if span > 0 else None

    def ck_summary(kind):
        c = [e for e in ck if e.get("kind") == kind]
        if not c:
            return None
        return {"count": len(c), "median_ms": float(np.median([e["ms"] for e in c])),
                "median_write_ms": float(np.median([e["write_ms"] for e in c])),
                "max_ms": max(e["ms"] for e in c), "median_bytes": int(np.median([e["bytes"] for e in c])),
                "max_bytes": max(e["bytes"] for e in c)}

    return {
        **run, "daemon": label or "this checkout", "base_graph": args.base_graph, "daemon_root": str(root),
        "mode": mode,
        "mode_label": mode_label(mode, run, filled), "tag": tag, "producers": args.producers,
        "host_load_1min": round(load, 1), "id_type": "string" if args.string_ids else "int",
        "window_s": round(span, 1), "batches": len(win),
        "edges_per_s": rate,
        "offered_edges_per_s": run["rate"] if mode == "sustained" and run["rate"] else None,
        "kept_up": (rate is not None and rate >= 0.95 * run["rate"]) if mode == "sustained" and run["rate"] else None,
        "prefill": filled, "drained": (applied_total >= filled["edges"]) if filled else None,
        "producer_edges_per_s_reported": produced,
        "client_stats": summarize_client_stats(events, [rdir / f"producer{k}.stats.jsonl" for k in range(len(prods))],
                                               topic, t_start, t_end),
        "median_batch_edges": int(np.median([e["edges"] for e in win])) if win else 0,
        "staleness_ms_p50": p50, "staleness_ms_p99": p99, "latency_split_ms": split,
        "checkpoint_full": ck_summary("full"), "checkpoint_incremental": ck_summary("incremental"),
        "rss_mib_max": max((s[1] for s in rss.samples), default=None), "rss_mib": rss.samples,
        "stage_share": {k: round(v.get("sum", 0.0) / total_stage, 3) for k, v in stages.items()} if total_stage else {},
        "stage_us_per_edge": {k: round(v.get("sum", 0.0) / applied_total * 1e6, 3) for k, v in stages.items()}
        if applied_total else {},
        "rate_series": [(round(e["t"] - t_start, 2), e["edges"]) for e in events if e["event"] == "apply"],
        "daemon_exit": rc, "workdir": str(rdir),
    }


def drain_window(daemon, applied: Path, args, backlog: int):
    """Drain mode: wait until the daemon has applied ``backlog`` edges or ``warmup + seconds`` have passed
    since its first batch; returns the measured window ``(start, end)`` (wall-clock seconds), from
    ``warmup`` after the first batch to the end."""
    t_first = None
    deadline = time.time() + 60 + args.warmup + args.seconds  # the first batch comes within a minute
    done = 0
    while True:
        events = [e for e in read_applied(applied) if e["event"] == "apply"]
        if events and t_first is None:
            t_first = events[0]["t"]
            deadline = t_first + args.warmup + args.seconds
        done = sum(e["edges"] for e in events)
        if done >= backlog or time.time() > deadline or daemon.poll() is not None:
            break
        time.sleep(0.2)
    if t_first is None:
        raise SystemExit(f"drain: the daemon applied nothing within a minute (exit {daemon.poll()})")
    t_end = time.time()
    late = [e for e in events if e["t"] >= t_first + args.warmup]
    if len(late) < 3:  # drained within the warm-up: measure the whole drain (from its first batch) instead
        print(f"  the backlog was applied within the {args.warmup}s warm-up: measuring the whole drain",
              file=sys.stderr)
        return t_first, t_end
    return t_first + args.warmup, t_end


def mode_label(mode: str, run: dict, filled: dict | None = None) -> str:
    """``drain 2.0M`` (edges pre-filled), ``rate 100k`` (producers held to a rate) or ``rate max``."""
    if mode == "drain":
        return f"drain {filled['edges'] / 1e6:.1f}M" if filled else "drain"
    return f"rate {run['rate'] / 1e3:g}k" if run["rate"] else "rate max"


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for r in results:
        ts = np.array([t for t, _ in r["rate_series"]])
        ed = np.array([e for _, e in r["rate_series"]], dtype=float)
        if ts.size:
            bins = np.arange(np.floor(ts.min()), np.ceil(ts.max()) + 1, 1.0)
            h, _ = np.histogram(ts, bins=bins, weights=ed)
            axes[0].plot(bins[:-1], h / 1e3, label=r["tag"])
        if r["rss_mib"]:
            axes[1].plot([s[0] for s in r["rss_mib"]], [s[1] for s in r["rss_mib"]], label=r["tag"])
    axes[0].set(xlabel="seconds from the start of the window", ylabel="k edges/s applied", title="throughput")
    axes[1].set(xlabel="seconds from daemon start", ylabel="RSS (MiB)", title="daemon memory")
    tags = [r["tag"] for r in results]
    x = np.arange(len(tags))
    axes[2].bar(x - 0.2, [r["staleness_ms_p50"] or 0 for r in results], 0.4, label="p50")
    axes[2].bar(x + 0.2, [r["staleness_ms_p99"] or 0 for r in results], 0.4, label="p99")
    axes[2].set_xticks(x, tags, rotation=30, ha="right", fontsize=7)
    axes[2].set(ylabel="ms", title="staleness (produce -> rank update sent)", yscale="log")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def print_tables(results: list) -> None:
    """The throughput table and the time per applied edge of each daemon stage."""
    hdr = (f"{'run':44} {'mode':>12} {'edges/s':>9} {'window':>7} {'prod/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
           f"{'ckpt full':>16} {'ckpt incr':>16} {'RSS MiB':>8}")
    print(hdr)

    def ck(c):
        return f"{c['median_bytes'] / 1e6:.2f}MB {c['median_ms']:.0f}ms" if c else "-"

    for r in results:
        prod = r["producer_edges_per_s_reported"] or (round(r["prefill"]["edges"] / r["prefill"]["seconds"])
                                                      if r["prefill"] else 0)
        print(f"{r['tag']:44} {r['mode_label']:>12} {r['edges_per_s'] or 0:>9} {r['window_s']:>6}s {prod:>9} "
              f"{r['staleness_ms_p50'] or 0:>8} {r['staleness_ms_p99'] or 0:>8} {ck(r['checkpoint_full']):>16} "
              f"{ck(r['checkpoint_incremental']):>16} {r['rss_mib_max'] or 0:>8}")
    stages = ("poll", "decode", "graph", "rank", "publish", "checkpoint")
    print(f"\n{'daemon stage time, us per applied edge':44} " + " ".join(f"{s:>10}" for s in stages))
    for r in results:
        us = r["stage_us_per_edge"]
        print(f"{r['tag']:44} " + " ".join(f"{us.get(s, 0):>10.3f}" for s in stages))
    print("(poll: the client's fetch, waits included, on the ingest thread; decode: on the ingest or decode "
          "threads; both overlap the loop's graph, rank and publish; checkpoint: on its worker. A daemon from "
          "before the decode stage counts decode in poll)")
    print_client_stats(results)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="json:1:confluent:keyed", help="comma-separated run specs (see above)")
    ap.add_argument("--bootstrap-servers", help="existing broker (default: start Tansu locally)")
    ap.add_argument("--file", default=str(BUNDLED_GRAPH), help="edge file to stream (default: bundled CollegeMsg)")
    ap.add_argument("--seconds", type=float, default=30.0, help="measured window per run")
    ap.add_argument("--mode", choices=("sustained", "drain"), default="sustained",
                    help="sustained: producers run beside the daemon at each run's RATE (0: as fast as they go); "
                         "drain: the topic is pre-filled first, then the daemon's rate of applying it is measured")
    ap.add_argument("--drain-edges", type=int, default=3_000_000,
                    help="drain mode: edges pre-filled per run (a run's 5th field overrides it)")
    ap.add_argument("--warmup", type=float, default=None,
                    help="seconds left out at the start (default 8; drain mode: 2, from the daemon's first batch)")
    ap.add_argument("--decode-threads", type=int, default=0,
                    help="the daemon's --decode-threads (given to it only when not 0)")
    ap.add_argument("--batch-size", type=int, default=20000)
    ap.add_argument("--batch-wait-ms", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--publish-threshold", type=float, default=1e-6)
    ap.add_argument("--checkpoint-interval", type=float, default=5.0)
    ap.add_argument("--full-every", type=int, default=4, help="--full-checkpoint-every of the daemon")
    ap.add_argument("--producers", type=int, default=1,
                    help="producer processes (each sends RATE / N edges/s; one Python producer caps the rate)")
    ap.add_argument("--producer-client", default="auto", choices=("auto", "confluent", "kafka-python"))
    ap.add_argument("--producer-linger-ms", type=float, default=None,
                    help="the producers' --linger-ms (default theirs: 5 with confluent-kafka)")
    ap.add_argument("--client-stats", type=float, default=1.0, metavar="SECONDS",
                    help="the Kafka clients' statistics every SECONDS (the daemon's --kafka-stats-interval, the "
                         "producers' --stats), summed up per run (confluent-kafka; 0: off, needed for a daemon "
                         "root from before the flag)")
    ap.add_argument("--base-graph", default=None,
                    help="the daemon's --base-graph: an edge file, a checkpoint, or rmat:SCALE[:EF[:SEED]] "
                         "(generated on the device when the daemon starts)")
    ap.add_argument("--stream-rmat", type=int, default=None, metavar="SCALE",
                    help="stream --stream-edges R-MAT edges over ids 0 .. 2**SCALE - 1 instead of --file")
    ap.add_argument("--stream-edges", type=int, default=2_000_000)
    ap.add_argument("--start-timeout", type=float, default=60.0,
                    help="seconds the daemon has to start (load its base graph) before its first batch")
    ap.add_argument("--string-ids", action="store_true",
                    help="rewrite the file's ids as strings (user_<id>) and run the daemon with --id-type string")
    ap.add_argument("--daemon-root", action="append", default=[], metavar="LABEL=PATH",
                    help="run each run's daemon from this checkout too (repeatable; e.g. before=/tmp/base), "
                         "alternating with the others; default: only this checkout")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--plot", help="write the plot here (PNG)")
    args = ap.parse_args(argv)
    runs = [parse_run(s) for s in args.runs.split(",") if s]
    if args.warmup is None:
        args.warmup = 2.0 if args.mode == "drain" else 8.0
    roots = [("", ROOT)] if not args.daemon_root else []
    for spec in args.daemon_root:
        label, sep, path = spec.partition("=")
        if not sep or not label or not (Path(path) / "streamrank").is_dir():
            raise SystemExit(f"--daemon-root {spec!r}: LABEL=PATH of a streamrank checkout")
        roots.append((label, Path(path).resolve()))
    t0 = time.perf_counter()
    processor = prime_kernels(args.device)
    print(f"engine kernels ready on {processor} ({args.device}) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    bootstrap, broker = start_broker(args.bootstrap_servers)
    work = Path(tempfile.mkdtemp(prefix="streamrank-bench-"))
    if args.stream_rmat:
        t1 = time.perf_counter()
        args.file = str(rmat_stream_file(args.stream_rmat, args.stream_edges,
                                         work / f"rmat{args.stream_rmat}.parquet"))
        print(f"stream: {args.stream_edges:,} R-MAT {args.stream_rmat} edges drawn in "
              f"{time.perf_counter() - t1:.1f}s", file=sys.stderr)
    if args.string_ids:
        from bench_string_ids import rewrite

        rewrite(Path(args.file), work / "named.txt.gz", "user_{}")
        args.file = str(work / "named.txt.gz")
    results = []
    try:
        for run, (label, root) in itertools.product(runs, roots):  # checkouts alternate run by run
            results.append(one_run(run, args, bootstrap, broker, work, label=label, root=root))
            r = results[-1]
            print(f"{r['tag']} ({r['mode_label']}, base {args.base_graph or 'none'}): {r['edges_per_s']} edges/s "
                  f"over {r['window_s']}s, staleness "
                  f"p50/p99 {r['staleness_ms_p50']}/{r['staleness_ms_p99']} ms (host load {r['host_load_1min']}); "
                  f"oldest record per batch, p50/p99 ms: {r['latency_split_ms']}", file=sys.stderr)
    finally:
        if broker is not None:
            broker.stop()
    print_tables(results)
    report = {"host": {"cpus": os.cpu_count(), "processor": processor, "load_average": os.getloadavg()},
              "args": vars(args), "runs": results}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1))
    if args.plot:
        plot(results, args.plot)
    return 0 if all(r["daemon_exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
