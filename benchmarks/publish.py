"""How long the keyed rank publish of one batch takes, by batch size and Kafka client (no daemon).

Starts a local broker (or uses ``--bootstrap-servers``), and for each client, id kind and number
of moved vertices times :meth:`connectors.kafka_sink.RankPublisher.publish` of a batch in which
every vertex moved (``--publish-format keyed``, no top-k), then the wait until the broker
acknowledged it (``wait_acked(mark())``, which serves the client's delivery reports)::

    python benchmarks/publish.py --sizes 1000,5000,20000 --rounds 3 \\
        --compare /tmp/before --json docs/results/bench_publish_2core.json

``--compare ROOT`` loads ``ROOT/connectors`` (another checkout, e.g. ``git worktree add /tmp/before
COMMIT``) beside this one and alternates the two round by round, each with its own producer; the
table gives medians over all rounds. ``publish`` is the time until the messages are handed to
the client (what the daemon's staleness ends at); ``+ acked`` adds, as the daemon does, serving
the delivery reports at hand (``producer.poll()``, where the producer has it) and the wait for the
broker's acknowledgements.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # _broker: the examples' broker start-up
from _broker import ROOT, start_broker
from kafka_broker import create_topic  # on sys.path through _broker

sys.path.insert(0, str(ROOT))


def load_connectors(root: Path | None, name: str):
    """``(kafka_sink, kafka_clients)`` of ``root``'s ``connectors`` package (this checkout's when None)."""
    if root is None:
        return importlib.import_module("connectors.kafka_sink"), importlib.import_module("connectors.kafka_clients")
    pkg = Path(root) / "connectors"
    spec = importlib.util.spec_from_file_location(name, pkg / "__init__.py", submodule_search_locations=[str(pkg)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return importlib.import_module(f"{name}.kafka_sink"), importlib.import_module(f"{name}.kafka_clients")


def make_batch(kind: str, n: int, seed: int):
    """External ids (int64, or ``str`` objects) and two rank vectors that differ in every vertex."""
    rng = np.random.default_rng(seed)
    if kind == "int":
        ids = rng.choice(1_000_000_000, size=n, replace=False).astype(np.int64)
    else:
        ids = np.array([f"user-{i:x}" for i in rng.choice(1_000_000_000, size=n, replace=False)], dtype=object)
    a = rng.random(n) + 0.5
    a /= a.sum()
    b = a * (1.0 + 1e-3 * rng.random(n)) + 1e-12
    return ids, a, b


def run_case(sink, prod, topic: str, ids, ranks, reps: int, seq0: int) -> list:
    """``reps`` publishes of the whole batch; per rep ``(publish_ms, publish_plus_acked_ms)``."""
    pub = sink.RankPublisher(prod, topic, threshold=0.0, top_k=0, top_k_every=0, publish_format="keyed")
    pub.prime(ranks[1])
    out = []
    for r in range(reps):
        p = ranks[r % 2]
        t0 = time.perf_counter()
        sent = pub.publish(seq0 + r, ids, p)
        t1 = time.perf_counter()
        if hasattr(prod, "poll"):  # as the daemon does after the hand-over (a checkout from before has none)
            prod.poll()
        prod.wait_acked(prod.mark(), timeout_s=120.0)
        t2 = time.perf_counter()
        assert sent["vertex"] == ids.shape[0], sent
        out.append(((t1 - t0) * 1e3, (t2 - t0) * 1e3))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000,20000", help="moved vertices per batch (comma-separated)")
    ap.add_argument("--clients", default="confluent,kafka-python")
    ap.add_argument("--ids", default="int,string", help="id kinds: int, string")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="publishes per case and round (kafka-python: 2)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--compare", default=None, help="another checkout's root to alternate with")
    ap.add_argument("--bootstrap-servers", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    clients = args.clients.split(",")
    kinds = args.ids.split(",")
    variants = {"this": load_connectors(None, "connectors")}
    if args.compare:
        variants = {"compare": load_connectors(Path(args.compare), "sr_compare_connectors"), **variants}
    bootstrap, broker = start_broker(args.bootstrap_servers)
    results = {}  # (variant, client, kind, size) -> list of (publish_ms, acked_ms)
    try:
        topic = create_topic(bootstrap, partitions=args.partitions)
        producers = {(v, c): mods[1].make_producer(c, bootstrap) for v, mods in variants.items() for c in clients}
        batches = {(k, n): make_batch(k, n, seed=n) for k in kinds for n in sizes}
        seq = 1
        for rnd in range(args.rounds):
            order = list(variants) if rnd % 2 == 0 else list(variants)[::-1]
            for v in order:
                sink = variants[v][0]
                for c in clients:
                    reps = args.reps if c == "confluent" else min(args.reps, 2)
                    for (k, n), (ids, a, b) in batches.items():
                        got = run_case(sink, producers[(v, c)], topic, ids, (a, b), reps, seq)
                        seq += reps
                        results.setdefault((v, c, k, n), []).extend(got)
                        print(f"round {rnd} {v:8s} {c:12s} {k:6s} {n:6d}: publish "
                              f"{statistics.median(x[0] for x in got):8.2f} ms", file=sys.stderr, flush=True)
        for p in producers.values():
            p.close()
    finally:
        if broker is not None:
            broker.stop()
    rows = []
    print(f"{'client':12s} {'ids':6s} {'moved':>6s} " + " ".join(
        f"{v + ' publish ms':>18s} {v + ' +acked ms':>18s} {v + ' us/msg':>13s}" for v in variants))
    for c in clients:
        for k in kinds:
            for n in sizes:
                row = {"client": c, "ids": k, "moved": n}
                cells = []
                for v in variants:
                    got = results[(v, c, k, n)]
                    pm = statistics.median(x[0] for x in got)
                    am = statistics.median(x[1] for x in got)
                    row[v] = {"publish_ms": round(pm, 3), "acked_ms": round(am, 3), "runs": len(got),
                              "publish_ms_all": [round(x[0], 3) for x in got]}
                    cells.append(f"{pm:18.2f} {am:18.2f} {pm * 1e3 / n:13.2f}")
                rows.append(row)
                print(f"{c:12s} {k:6s} {n:6d} " + " ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps({"argv": sys.argv[1:], "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
