"""Send rank updates to your own sink: an in-memory top-k that prints its changes, and SQLite.

    python examples/custom_sink.py                        # the bundled CollegeMsg graph
    python examples/custom_sink.py --file graph.txt.gz --batch-size 5000 --db ranks.sqlite

The daemon (``streamrank serve``) has no hook for a sink object of your own: its outputs are
the Kafka rank topic (``--publish-topic``), Parquet snapshots (``--snapshot-every``) and its
checkpoints. To feed another store from the daemon, consume its rank topic or read its
snapshots. To push rank updates straight from Python, drive the :class:`~streamrank.Engine`
yourself, as here: read an edge file in batches (:func:`connectors.files.iter_batches`), apply
each batch, and hand the vertices whose rank moved by more than ``--threshold`` since they were
last sent (new vertices included: the daemon's publishing rule, :class:`connectors.kafka_sink.MovedRanks`)
to each sink. After the last
batch every vertex that moved at all is sent, so the sinks end exactly at the engine's ranks.

A sink here is any object with ``write(seq, vertices, ranks)`` and ``close()``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.files import iter_batches  # noqa: E402
from connectors.kafka_sink import MovedRanks  # noqa: E402
from streamrank import Engine, RankConfig  # noqa: E402
from streamrank.replay.run import BUNDLED_GRAPH  # noqa: E402


class TopKSink:
    """Keeps the best ``k`` vertices in memory and prints the list whenever it changes."""

    def __init__(self, k: int):
        self.k = int(k)
        self.ranks: dict = {}
        self.top: list = []

    def write(self, seq: int, vertices, ranks) -> None:
        self.ranks.update(zip(vertices.tolist(), ranks.tolist()))
        top = sorted(self.ranks, key=lambda v: (-self.ranks[v], v))[:self.k]
        if top != self.top:
            came = [v for v in top if v not in self.top]
            left = [v for v in self.top if v not in top]
            moves = f" (in: {came}, out: {left})" if self.top and (came or left) else ""
            print(f"batch {seq:3d}: top {self.k} {top}{moves}")
            self.top = top

    def close(self) -> None:
        pass


class SQLiteSink:
    """Upserts ``(vertex, rank, seq)`` into a SQLite table ``ranks``, one transaction per batch."""

    def __init__(self, path: str):
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS ranks (vertex INTEGER PRIMARY KEY, rank REAL NOT NULL, "
                        "seq INTEGER NOT NULL)")
        self.rows = 0

    def write(self, seq: int, vertices, ranks) -> None:
        with self.db:  # commits, or rolls back on an error
            self.db.executemany("INSERT INTO ranks (vertex, rank, seq) VALUES (?, ?, ?) "
                                "ON CONFLICT (vertex) DO UPDATE SET rank = excluded.rank, seq = excluded.seq",
                                zip(vertices.tolist(), ranks.tolist(), [seq] * len(vertices)))
        self.rows += len(vertices)

    def top(self, k: int) -> list:
        return self.db.execute("SELECT vertex, rank, seq FROM ranks ORDER BY rank DESC, vertex LIMIT ?",
                               (k,)).fetchall()

    def close(self) -> None:
        self.db.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(BUNDLED_GRAPH), help="edge file (integer ids; default: bundled CollegeMsg)")
    ap.add_argument("--batch-size", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=1e-6, help="send a vertex when its rank moved by more")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--db", default=":memory:", help="SQLite database file (default: in memory)")
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    args = ap.parse_args(argv)

    engine = Engine(args.device, "dfp", config=RankConfig())
    moved = MovedRanks(args.threshold)
    top, db = TopKSink(args.top_k), SQLiteSink(args.db)
    sinks = [top, db]
    sent = 0
    step = None
    try:
        for batch in iter_batches(args.file, batch_size=args.batch_size):
            step = engine.apply(batch)
            ids, p = engine.ranks()
            idx = moved.moved(p)
            for sink in sinks:
                sink.write(step.seq, ids[idx], p[idx])
            moved.mark(idx, p)
            sent += idx.size
        if step is None:
            sys.exit(f"{args.file}: no edges")
        ids, p = engine.ranks()
        idx = moved.moved(p, threshold=0.0)  # the end of the stream: send whatever still differs
        for sink in sinks:
            sink.write(step.seq, ids[idx], p[idx])
        moved.mark(idx, p)
        sent += idx.size
        print(f"\n{step.seq} batches, {engine.num_vertices:,} vertices on {engine.backend.name}: "
              f"{sent:,} rank updates sent to each sink ({sent / step.seq:,.0f} per batch)")
        stored = dict((v, r) for v, r, _ in db.db.execute("SELECT vertex, rank, seq FROM ranks"))
        diff = max(abs(stored[v] - r) for v, r in zip(ids.tolist(), p.tolist()))
        print(f"SQLite holds {len(stored):,} vertices; largest difference from the engine's ranks: {diff:.3g}")
        print(f"SQLite top {args.top_k}:")
        for i, (v, r, seq) in enumerate(db.top(args.top_k), 1):
            print(f"  {i:>3}. vertex {v:<8} {r:.10f}  (last written at batch {seq})")
    finally:
        for sink in sinks:
            sink.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
