"""What the daemon sends after each batch, found where the ranks live.

The rank updates of a batch are the vertices whose published rank moved by more than
``--publish-threshold`` since they were last sent (new vertices included), the rule of
:class:`connectors.kafka_sink.MovedRanks`. The engine finds them on its backend
(:meth:`streamrank.engine.Engine.moved`: one elementwise pass and a compaction on the device),
so a batch costs host work and transfer in proportion to the vertices that moved, not to the
graph. The top-k message, when due, compacts the vertices at or above a cut on the device and
orders only those (:func:`streamrank.rank.moved.top_candidates`). A Parquet snapshot, when due,
copies every rank (that is what it writes). Private to :mod:`.loop`.
"""

from __future__ import annotations

import logging

import numpy as np

from ..backend import to_host
from ..errors import StreamrankError
from ..rank.moved import MovedTracker, mark_sent, top_candidates

log = logging.getLogger("streamrank.daemon")


class RankOutput:
    """The publisher's and the snapshots' side of the loop.

    Parameters
    ----------
    engine : Engine
    publisher : connectors.kafka_sink.RankPublisher or None
    snapshots : connectors.parquet_sink.ParquetSnapshots or None
    threshold : float
        ``--publish-threshold``.
    """

    def __init__(self, engine, publisher, snapshots, *, threshold: float):
        self.publisher = publisher
        self.snapshots = snapshots
        self.tracker = MovedTracker(engine.backend.xp, threshold) if publisher is not None else None
        self._cut = None  # the last top-k message's k-th rank: where the next search starts

    def prime(self, engine) -> None:
        """Take the engine's current ranks as already published (a restored or base graph: only
        later moves are sent)."""
        if self.tracker is not None and engine.graph.num_vertices:
            self.tracker.prime(engine.published())

    def top(self, engine, k: int) -> tuple:
        """``(external ids, ranks)`` of the ``k`` best vertices (rank descending, then id)."""
        p = engine.published()
        cand, self._cut = top_candidates(engine.backend.xp, p, k, hint=self._cut)
        xp = engine.backend.xp
        dev = xp.asarray(cand)
        ids = to_host(engine.graph.ids.external[dev])
        if engine.string_ids is not None:
            ids = engine.string_ids.decode(ids)
        vals = np.asarray(to_host(p[dev]), dtype=np.float64)
        order = np.lexsort((ids, -vals))[:k]
        return ids[order], vals[order]

    def publish(self, engine, seq: int, *, retry) -> tuple:
        """Send batch ``seq``'s rank updates (and the top-k, the snapshot, when due).

        ``retry(fn, what)`` calls ``fn`` until it succeeds (the loop's backoff). Returns
        ``(messages sent by kind, (ids, p) when every rank was copied for a snapshot, else None)``.
        """
        snapshot = self.snapshots is not None and self.snapshots.due(seq)
        sent, ranks = {}, None
        pub = self.publisher
        if pub is not None and engine.graph.num_vertices:
            moved = engine.moved(self.tracker)
            top = None
            if pub.top_k_due(seq):
                top = self.top(engine, min(pub.top_k, engine.graph.num_vertices))
            sent = retry(lambda: pub.send(seq, moved.ids, moved.p, top=top), "publishing")
            mark_sent(self.tracker, moved)
        if snapshot:
            ranks = engine.ranks()
            try:
                self.snapshots.write(seq, *ranks)
            except StreamrankError as exc:
                log.error("snapshot failed: %s", exc)
        return sent, ranks
