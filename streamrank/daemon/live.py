"""What the daemon's HTTP API reads: an immutable view of the ranks after each applied batch.

The loop's thread applies a batch and publishes a :class:`RankView` (the external ids of that
batch, with what ``/status`` shows) by swapping one reference, both under
:attr:`LiveState.engine_lock`, and writes the batch's ranks to the shared-memory view the HTTP
server's process reads (:class:`~streamrank.daemon.shared_view.SnapshotWriter`; only the entries
that changed, found on the engine's backend by :class:`~streamrank.daemon.view_delta.SlotMirror`),
whose views carry the ranks. Readers never see a half-applied batch. The ids of a view are the
engine's append-only id array, copied to the host as it grows (internal ids are never reused,
so the prefix a view holds never changes).

A personalized PageRank query needs the graph itself: :meth:`LiveState.frozen_graph` copies the
store's arrays under the same lock (so the loop waits for at most one copy, and only while a
query asks for a graph version not yet copied) into a :class:`FrozenGraph`, kept for the next
queries until a batch changes the graph.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .view_delta import SlotMirror

#: Ids a new vertex index takes before the recent ones are merged into its sorted table.
_MERGE_MIN = 4096


@dataclass
class RankView:
    """The ranks of one applied batch (read-only).

    Attributes
    ----------
    seq : int
        The batch sequence number (0: the base graph or an empty one, before any batch).
    ids : numpy.ndarray
        External id of each internal id (int64, or an object array of ``str``; the prefix of
        an append-only array: read ``ids[:n]``).
    p : numpy.ndarray or None
        Published rank of each internal id (float64, sums to 1); None in the daemon's own view
        (the HTTP server's views, read from shared memory, carry them).
    info : dict
        What ``/status`` shows of this batch (edges, stage times, algorithm, graph size).
    applied_at : float
        Wall time (``time.time()``) the view was published.
    """

    seq: int
    ids: np.ndarray
    p: np.ndarray
    info: dict
    applied_at: float
    num: int = -1  # vertices, for a view without ranks
    _order: np.ndarray | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: encoded answers about this view, by request (the HTTP server's cache: one batch's top-k
    #: answer is the same for every client)
    answers: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return int(self.p.shape[0]) if self.p is not None else int(self.num)

    def top(self, k: int) -> np.ndarray:
        """Internal ids of the ``k`` best vertices, by rank descending then external id.

        The order of the first ``max(k, 128)`` is computed once per view and shared by readers.
        """
        k = min(int(k), self.n)
        with self._lock:
            have = self._order
            if have is None or (have.shape[0] < k and have.shape[0] < self.n):
                want = min(max(k, 128, 0 if have is None else 2 * have.shape[0]), self.n)
                if want >= self.n:
                    cand = np.arange(self.n)
                else:  # every vertex at or above the want-th value (ties at the cut included)
                    cut = np.partition(self.p, self.n - want)[self.n - want]
                    cand = np.flatnonzero(self.p >= cut)
                self._order = have = cand[np.lexsort((self.ids[cand], -self.p[cand]))]
        return have[:k]


class VertexIndex:
    """External id -> internal id, grown from the views' append-only id arrays.

    Integer ids: a sorted table plus a sorted table of recent ids, merged when the recent one
    passes an eighth of the main one (so growing costs O(new ids) amortized); string ids: a dict.
    """

    def __init__(self):
        self.n = 0
        self._keys = np.zeros(0, dtype=np.int64)
        self._vals = np.zeros(0, dtype=np.int64)
        self._new_keys = np.zeros(0, dtype=np.int64)
        self._new_vals = np.zeros(0, dtype=np.int64)
        self._names: dict | None = None
        self._lock = threading.Lock()

    def _advance(self, ids: np.ndarray) -> None:
        n = ids.shape[0]
        if n <= self.n:
            return
        fresh = ids[self.n:n]
        if ids.dtype == object:
            if self._names is None:
                self._names = {}
            self._names.update(zip(fresh.tolist(), range(self.n, n)))
        else:
            vals = np.arange(self.n, n, dtype=np.int64)
            keys = np.concatenate([self._new_keys, fresh.astype(np.int64)])
            vals = np.concatenate([self._new_vals, vals])
            o = np.argsort(keys, kind="stable")
            self._new_keys, self._new_vals = keys[o], vals[o]
            if self._new_keys.shape[0] > max(_MERGE_MIN, self._keys.shape[0] // 8):
                keys = np.concatenate([self._keys, self._new_keys])
                vals = np.concatenate([self._vals, self._new_vals])
                o = np.argsort(keys, kind="stable")
                self._keys, self._vals = keys[o], vals[o]
                self._new_keys = self._new_vals = np.zeros(0, dtype=np.int64)
        self.n = n

    def lookup(self, view: RankView, keys: list) -> np.ndarray:
        """Internal ids of ``keys`` in ``view`` (int64; -1 where a key is not a vertex of it).

        ``keys`` are ints for an integer-id graph and ``str`` for a string-id one; a key of the
        other kind is simply not found.
        """
        with self._lock:
            self._advance(view.ids)
            out = np.full(len(keys), -1, dtype=np.int64)
            if not keys:
                return out
            if view.ids.dtype == object:
                names = self._names or {}
                for i, k in enumerate(keys):
                    out[i] = names.get(k, -1) if isinstance(k, str) else -1
            else:
                ok = np.array([isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                               and -2**63 <= k < 2**63 for k in keys], dtype=bool)
                q = np.array([k if good else 0 for k, good in zip(keys, ok)], dtype=np.int64)
                for table_k, table_v in ((self._keys, self._vals), (self._new_keys, self._new_vals)):
                    if table_k.shape[0]:
                        pos = np.minimum(np.searchsorted(table_k, q), table_k.shape[0] - 1)
                        hit = ok & (table_k[pos] == q) & (out < 0)
                        out[hit] = table_v[pos[hit]]
        out[out >= view.n] = -1  # added after this view's batch
        return out


class _InternalIds:
    """The id map of a :class:`FrozenGraph`: its external ids are the internal ids (the HTTP
    layer translates the user's ids with the view's :class:`VertexIndex`)."""

    xp = np

    def __init__(self, n: int, xp):
        self.n = n
        self.external = xp.arange(n, dtype=xp.int64)

    def lookup(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where((ids >= 0) & (ids < self.n), ids, -1)

    def lookup_with(self, ids, attr):
        internal = self.lookup(ids)
        out = np.zeros((2, internal.shape[0]), dtype=np.int64)
        out[0] = internal
        found = internal >= 0
        out[1, found] = np.asarray(attr)[internal[found]]
        return out


class FrozenGraph:
    """A copy of the graph store's arrays at one batch, with the store contract that
    :func:`streamrank.ppr.personalized_pagerank` reads (on the store's backend)."""

    def __init__(self, graph, seq: int):
        xp = getattr(graph, "xp", np)
        self.xp = xp
        self.seq = seq
        self.num_vertices = int(graph.num_vertices)
        self.num_edges = int(graph.num_edges)
        for name in ("out_offset", "out_degree", "out_indices", "in_offset", "in_degree", "in_indices"):
            setattr(self, name, xp.array(getattr(graph, name), copy=True))
        self.ids = _InternalIds(self.num_vertices, xp)


class LiveState:
    """The views the loop publishes, for the HTTP API (one per daemon)."""

    def __init__(self):
        self.engine_lock = threading.Lock()  # held by the loop while it changes the engine
        self.index = VertexIndex()  # for PPR seeds, on the PPR worker
        self.started = time.time()
        #: the shared-memory view the HTTP server's process reads (None: none attached)
        self.shared = None
        self._view: RankView | None = None
        self._frozen: FrozenGraph | None = None
        self._engine = None
        self._ids = None  # (host buffer, filled): external ids, grown with the graph (prefix never changes)
        self._mirror = SlotMirror()  # what the shared view's slots hold, on the engine's backend

    def attach_shared(self, writer) -> None:
        """Publish into ``writer`` (a :class:`~streamrank.daemon.shared_view.SnapshotWriter`) from now on."""
        self.shared = writer

    def detach_shared(self):
        """Stop publishing into the shared view; returns it."""
        with self.engine_lock:
            writer, self.shared = self.shared, None
        return writer

    # ------------------------------------------------------------------ writer (the loop's thread)
    def _external(self, engine, n: int) -> np.ndarray:
        """The external ids of internal ids ``0 .. n-1`` (host; decoded names for string ids):
        only those past the last call are copied from the engine."""
        buf, have = self._ids if self._ids is not None else (None, 0)
        string = engine.string_ids is not None
        if buf is not None and (buf.dtype == object) != string:  # the first edges fixed the id kind
            buf, have = None, 0
        if buf is None or buf.shape[0] < n:
            grown = np.empty(max(2 * n, 1024), dtype=object if string else np.int64)
            if buf is not None:
                grown[:have] = buf[:have]
            buf = grown
        if n > have:
            fresh = engine.backend.to_host(engine.graph.ids.external[have:n])
            buf[have:n] = engine.string_ids.decode(fresh) if engine.string_ids is not None else fresh
        self._ids = (buf, max(n, have))
        return buf[:n]

    def publish(self, engine, *, info: dict) -> RankView:
        """Publish the state of ``engine`` after its last batch; call with :attr:`engine_lock` held.

        The daemon's own view holds the ids and ``info``; the shared view gets the ranks (the
        entries that changed since its slot was last written).
        """
        n = int(engine.x.shape[0])
        ids = self._external(engine, n)
        view = RankView(int(engine.seq), ids, None, dict(info, vertices=n, graph_edges=int(engine.graph.num_edges)),
                        time.time(), num=n)
        self._engine = engine
        self._view = view
        if self.shared is not None:
            n, form, changes = self._mirror.source(engine)
            self.shared.publish_changes(seq=view.seq, ids=ids, n=n, form=form, changes=changes, info=view.info,
                                        applied_at=view.applied_at)
        return view

    def set_status(self, **fields) -> None:
        """Merge ``fields`` into the status the loop reports (positions, lag, checkpoint)."""
        writer = self.shared
        if writer is not None:
            writer.set_status(**fields)

    def view(self) -> RankView | None:
        """The last published view (None before the first)."""
        return self._view

    def frozen_graph(self) -> tuple:
        """``(view, graph)``: the last view and a copy of the graph of the same batch.

        The copy is made under :attr:`engine_lock` when the graph changed since the last one.
        """
        with self.engine_lock:
            view = self._view
            if self._frozen is None or self._frozen.seq != view.seq:
                self._frozen = FrozenGraph(self._engine.graph, view.seq)
            return view, self._frozen


def batch_info(step, window, positions: dict, lag) -> dict:
    """What a view shows of the batch ``step`` (a :class:`~streamrank.engine.StepResult`) closed
    in ``window``: its size, stage times, the rank update that ran, the positions after it and the
    last measured lag (records behind the end of the input; None where the source has none)."""
    ch = step.changes
    wait = (window.closed_at - window.polled_at) * 1e3 if window.polled_at and window.closed_at else 0.0
    return {"edges": int(ch.received), "inserted": int(ch.num_insertions), "deleted": int(ch.num_deletions),
            "new_vertices": int(ch.num_new_vertices), "algorithm": step.rank.algorithm,
            "iterations": int(step.rank.iterations), "graph_ms": round(step.graph_ms, 3),
            "rank_ms": round(step.rank_ms, 3), "wait_ms": round(wait, 3), "positions": dict(positions), "lag": lag}
