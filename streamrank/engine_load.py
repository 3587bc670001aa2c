"""The engine's streamed first load: an edge list given as chunks, applied with bounded memory
(:meth:`StreamLoading.load_edge_chunks`), and its progress (:class:`LoadProgress`,
:class:`ProgressLog`).

A mixin of :class:`streamrank.engine.Engine` (it uses the engine's backend, graph store, id
encoding and rank code); no module imports it but ``engine``.

What stays in memory while the chunks are read:

- host: the chunk being applied (the caller's reader holds one chunk at a time);
- GPU, unweighted engine, integer ids or string ids' codes, insertions: the chunk on the device
  once, packed into a growing buffer of keys ``src << 32 | dst`` (8 bytes per edge,
  :class:`~streamrank.store.key_buffer.KeyBuffer`), then the bounded build
  (:mod:`streamrank.store.gpu_build`) of the store from those keys: the peak is the store plus
  the build's stated working set, as for :meth:`~streamrank.engine.Engine.load_edges`;
- every other case (the CPU, a weighted engine, a chunk with deletions, ids of 2**31 - 1 or
  more): the graph store, each chunk applied to it as one batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from .batch import EdgeBatch
from .errors import InvalidArgumentError
from .rank.result import RankResult
from .store.key_buffer import PACK_LIMIT, KeyBuffer


@dataclass(frozen=True)
class LoadProgress:
    """Where a streamed load stands (passed to its ``progress`` callback).

    Attributes
    ----------
    edges : int
        Edges (rows) taken from the chunks so far.
    chunks : int
        Chunks taken so far.
    elapsed_s : float
        Seconds since the load began.
    stage : {"reading", "built"}
        ``"reading"`` after each chunk; ``"built"`` once, when the graph store holds every edge
        (before the static rank computation).
    """

    edges: int
    chunks: int
    elapsed_s: float
    stage: str

    @property
    def edges_per_s(self) -> float:
        """Edges taken per second since the load began (0 before any time passed)."""
        return self.edges / self.elapsed_s if self.elapsed_s > 0 else 0.0


class ProgressLog:
    """A ``progress`` callback for :meth:`StreamLoading.load_edge_chunks` that writes a line
    (edges read, rate, elapsed time) through ``emit`` at most every ``every_s`` seconds while
    reading, and one when the store is built.

    Parameters
    ----------
    emit : callable
        Takes one ``str``: a logger's ``info``, ``print``, ...
    label : str
        What is loaded (``"base graph edges.txt"``), at the start of every line.
    every_s : float
        Fewest seconds between two reading lines (default 10).
    """

    def __init__(self, emit: Callable[[str], object], label: str, *, every_s: float = 10.0):
        if not callable(emit):
            raise InvalidArgumentError("emit must be callable")
        if isinstance(every_s, bool) or not isinstance(every_s, (int, float)) or not every_s >= 0:
            raise InvalidArgumentError(f"every_s must be a non-negative number, got {every_s!r}")
        self.emit, self.label, self.every_s = emit, str(label), float(every_s)
        self._last = 0.0
        self.lines = 0

    def __call__(self, p: LoadProgress) -> None:
        if p.stage == "reading":
            if p.elapsed_s - self._last < self.every_s:
                return
            self._last = p.elapsed_s
            self.emit(f"{self.label}: {p.edges:,} edges read in {p.elapsed_s:.1f} s "
                      f"({p.edges_per_s:,.0f} edges/s, {p.chunks:,} chunks)")
        else:
            self.emit(f"{self.label}: {p.edges:,} edges read and stored in {p.elapsed_s:.1f} s; ranking")
        self.lines += 1


def _chunk_batch(chunk, *, xp, max_id_bytes: int) -> EdgeBatch:
    """One chunk as a validated batch: an :class:`EdgeBatch` as it is, or a tuple
    ``(src, dst[, insert[, weight]])`` through :meth:`EdgeBatch.from_arrays`."""
    if isinstance(chunk, EdgeBatch):
        return chunk
    if not isinstance(chunk, (tuple, list)) or not 2 <= len(chunk) <= 4:
        raise InvalidArgumentError("each chunk must be an EdgeBatch or a tuple (src, dst[, insert[, weight]]), "
                                   f"got {type(chunk).__name__}")
    src, dst, insert, weight = (*chunk, None, None)[:4]
    return EdgeBatch.from_arrays(src, dst, insert, weight=weight, xp=xp, max_id_bytes=max_id_bytes)


class StreamLoading:
    """The streamed first load of :class:`~streamrank.engine.Engine` (a mixin)."""

    def load_edge_chunks(self, chunks, *, progress: Callable[[LoadProgress], object] | None = None,
                         expected_edges: int | None = None) -> RankResult:
        """Load base edges given as chunks into this empty engine, then compute the ranks
        statically: :meth:`load_edges` of all the chunks' rows in order, without ever holding
        them in one table.

        Parameters
        ----------
        chunks : iterable
            Chunks in arrival order, each an :class:`~streamrank.batch.EdgeBatch` or a tuple
            ``(src, dst[, insert[, weight]])`` of arrays as :meth:`load_edges` takes them
            (integer or string ids; ``weight`` on weighted engines only). Consumed once.
        progress : callable, optional
            Called with a :class:`LoadProgress` after every chunk and once when the graph store
            holds every edge (:class:`ProgressLog` writes lines from it).
        expected_edges : int, optional
            The rows the chunks hold, when known (a Parquet file's row count): sizes the GPU key
            buffer once instead of growing it. A wrong value costs memory or growth steps only.

        Returns
        -------
        RankResult
            The static computation over the loaded graph, as :meth:`load_edges` returns.

        Raises
        ------
        InvalidArgumentError
            For an engine that already holds vertices, a malformed chunk, or a bad option.
        BatchFormatError, IdError
            For a chunk :meth:`load_edges` would refuse (bad ids or weights, mixed id kinds).
        GraphCapacityError
            When the edges or their ranks do not fit.

        Notes
        -----
        On the GPU, an unweighted engine whose chunks hold only insertions of ids below
        ``2**31 - 1`` (integers, or string ids' codes) moves each chunk to the device once and
        packs it into one growing buffer of keys ``src << 32 | dst`` (8 bytes per edge; a growth
        step briefly holds 20 bytes per edge read); the store is then built from the keys by the
        bounded build (:mod:`streamrank.store.gpu_build`) when the ids are dense, as
        :meth:`load_edges` builds it, else applied as one batch of the distinct edges. The first
        chunk with a deletion or a larger id ends the key buffer: the keys so far are applied as
        one batch and every chunk after as its own batch. Everywhere else (the CPU, weighted
        engines) each chunk is applied as one batch in order, deletions and repeats included.
        Where a deletion left a vertex without edges (its insertions deleted in a later chunk),
        the store is rebuilt once from its edges at the end, as :meth:`load_edges` of one table
        creates no such vertex. Internal ids may then differ from :meth:`load_edges`' numbering;
        the edges, their weights and the ranks by external id do not.

        Any error while the chunks are taken (an unreadable file included) leaves the engine
        empty, as it was; the string-id dictionary and the id type keep no trace of the load.
        """
        if self.graph.num_vertices:
            raise InvalidArgumentError("load_edge_chunks loads an empty engine; this one holds "
                                       f"{self.graph.num_vertices:,} vertices (apply batches instead)")
        if progress is not None and not callable(progress):
            raise InvalidArgumentError("progress must be callable or None")
        if expected_edges is not None and (isinstance(expected_edges, bool) or not isinstance(expected_edges, int)
                                           or expected_edges < 0):
            raise InvalidArgumentError(f"expected_edges must be a non-negative integer, got {expected_edges!r}")
        if isinstance(chunks, (str, bytes, EdgeBatch)) or not hasattr(chunks, "__iter__"):
            raise InvalidArgumentError("chunks must be an iterable of chunks (EdgeBatch or (src, dst, ...))")
        xp = self.backend.xp
        keys = KeyBuffer(xp, capacity=expected_edges or 0) if self.backend.is_gpu and not self._weighted else None
        saved = (self._ids_lock.kind, self.string_ids, len(self.string_ids) if self.string_ids is not None else 0)
        t0 = time.perf_counter()
        edges = n_chunks = 0
        deletions = False
        try:
            for chunk in chunks:
                batch = _chunk_batch(chunk, xp=xp, max_id_bytes=self.max_id_bytes)
                self._check_weights(batch)
                encoded = self._encode(batch)
                if len(encoded):
                    if keys is not None and not self._append_keys(keys, encoded):
                        self._apply_keys(keys)  # the key buffer ends: the edges so far as one batch
                        keys = None
                    if keys is None:
                        deletions = deletions or not bool(encoded.insert.all())
                        self.graph.apply(encoded, **self._headroom())
                edges += len(batch)
                n_chunks += 1
                if progress is not None:
                    progress(LoadProgress(edges, n_chunks, time.perf_counter() - t0, "reading"))
            if keys is not None:
                self._build_from_keys(keys)
            if deletions:
                self._drop_isolated()
        except BaseException:
            if keys is not None:
                keys.release()
            self._back_to_empty(*saved)
            raise
        if progress is not None:
            self.backend.synchronize()
            progress(LoadProgress(edges, n_chunks, time.perf_counter() - t0, "built"))
        return self.recompute()

    def _append_keys(self, keys: KeyBuffer, batch: EdgeBatch) -> bool:
        """Pack ``batch`` (ids encoded) into ``keys`` when it is all insertions of ids below
        :data:`~streamrank.store.key_buffer.PACK_LIMIT`; False (nothing appended) otherwise."""
        xp = keys.xp
        batch = batch.to(xp)  # the chunk's one host-to-device copy
        if not bool(batch.insert.all()):  # sync
            return False
        hi = int(xp.maximum(batch.src.max(), batch.dst.max()))  # sync; ids are validated >= 0
        if hi >= PACK_LIMIT:
            return False
        keys.append(batch.src, batch.dst, hi)
        return True

    def _apply_keys(self, keys: KeyBuffer) -> None:
        """Apply the keys gathered so far as one batch of their distinct edges."""
        if keys.size:
            self._apply_key_array(keys.xp, keys.take())

    def _apply_key_array(self, xp, k) -> None:
        """Apply the edges of keys ``k`` (consumed) as one batch of their distinct edges."""
        from .store.gpu_build import distinct_sorted
        from .store.gpu_lists import MASK32

        k = distinct_sorted(xp, k)
        s, d = k >> 32, k & MASK32
        del k
        self.graph.apply(EdgeBatch(s, d, xp.ones(s.shape[0], dtype=bool)), **self._headroom())

    def _build_from_keys(self, keys: KeyBuffer) -> None:
        """The store from all the keys: the bounded build when the ids are dense (as
        :meth:`load_edges` takes it), else one batch of the distinct edges."""
        if keys.size == 0:
            return
        hi, n_in = keys.hi, keys.size
        rank, graph, dtype = self._rank, self.graph, self.config.dtype
        k = keys.take()
        if graph.load_keys_into_empty(k, hi=hi, input_edges=n_in,
                                      headroom=lambda n: rank.rank_headroom(graph, n, dtype)):
            return
        self._apply_key_array(keys.xp, k)  # ids not dense: the general path

    def _drop_isolated(self) -> None:
        """Rebuild the store from its edges when deletions left vertices without any edge: one
        table given to :meth:`load_edges` creates a vertex only for an insertion that survives
        its batch, so an insertion deleted again in a later chunk must leave no vertex either."""
        g, xp = self.graph, self.backend.xp
        if g.num_vertices == 0:
            return
        s, d = g.edges()
        touched = xp.zeros(g.num_vertices, dtype=bool)
        touched[s] = True
        touched[d] = True
        if bool(touched.all()):  # sync
            return
        del touched
        ext = g.ids.external
        weight = g.edge_weights() if self._weighted else None
        batch = EdgeBatch(ext[s], ext[d], xp.ones(s.shape[0], dtype=bool), weight)
        del s, d
        from .backend_modules import backend_modules

        fresh = backend_modules(self.backend, self._weighted, self._multi_edges)[0](max_bytes=g.max_bytes)
        if self.backend.is_gpu:
            rank, dtype = self._rank, self.config.dtype
            fresh.apply(batch, headroom=lambda n: rank.rank_headroom(fresh, n, dtype))
        else:
            fresh.apply(batch)
        self.graph = fresh

    def _back_to_empty(self, id_kind, string_ids, known: int) -> None:
        """The engine as it was before a failed streamed load: an empty store, the id type and
        the string-id dictionary as they were."""
        from .backend_modules import backend_modules

        factory = backend_modules(self.backend, self._weighted, self._multi_edges)[0]
        self.graph = factory(max_bytes=self.graph.max_bytes)
        self._ids_lock.kind = id_kind
        if string_ids is None:
            self.string_ids = None
        else:
            self.string_ids = string_ids
            string_ids.truncate(known)
        self.x = self.backend.xp.zeros(0, dtype=self.x.dtype)
