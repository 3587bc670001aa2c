"""The engine: a graph store and its ranks, advanced one batch at a time.

Used by the replay tool, the daemon, personalized PageRank queries and the benchmarks. It picks
the backend (:func:`streamrank.backend.resolve_backend`) and with it the graph store and the rank
code; the rest of the package only sees this class.
"""

from __future__ import annotations

import time
import numpy as np

from .backend import resolve_backend, to_host
from .backend_modules import backend_modules
from .step_result import StepResult
from .batch import EdgeBatch, check_weights
from .engine_load import StreamLoading
from .rank.auto_policy import AutoPolicy
# MULTI_EDGES is re-exported (the daemon's settings read it from here)
from .config import MULTI_EDGES, RankConfig, check_algorithm, check_weighting  # noqa: F401
from .errors import (BatchFormatError, ConfigError, DeviceMemoryError, GraphCapacityError, InvalidArgumentError,
                     StreamrankError)
from .rank.published import published_ranks, published_ranks_on
from .rank.result import RankResult
from .ids.strings import StringIdMap
from .ids.kinds import DEFAULT_MAX_ID_BYTES, IdTypeLock, check_id_type, check_max_id_bytes, to_string_array


#: A small GPU batch runs with one host wait (graph and rank updates queued back to back,
#: :mod:`streamrank.rank.gpu.step`). False applies every batch as two synchronized steps: the
#: reference the one-wait path is tested against (tests/test_gpu_one_sync.py sets it).
ONE_SYNC = True


def _id_list(ids, name: str) -> np.ndarray:
    """``ids`` as a one-dimensional NumPy array, else :class:`InvalidArgumentError` naming ``name``."""
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise InvalidArgumentError(f"{name} must be one-dimensional, got shape {ids.shape}")
    return ids


class Engine(StreamLoading):
    """Dynamic PageRank over a changing graph.

    Parameters
    ----------
    device : {"auto", "cpu", "gpu"} or Backend
    algorithm : {"static", "nd", "dt", "df", "dfp", "warm", "auto"}
        Rank update used by :meth:`apply`. Default ``"auto"``: per batch DF-P or warm sweeps
        (:mod:`streamrank.rank.auto_policy`); ``step.rank.algorithm`` records what ran.
    config : RankConfig
    id_type : {"auto", "int", "string"}
        Kind of the external vertex ids (:mod:`streamrank.ids.kinds`); ``"auto"``: fixed by the
        first edges. A batch of the other kind is refused (:class:`~streamrank.ids.kinds.IdError`,
        reason ``mixed_id_types``), never coerced.
    max_id_bytes : int
        Longest string id accepted by :meth:`load_edges` (UTF-8 bytes, default 1 KiB).
    max_graph_bytes : int, optional
        Most bytes the graph store may hold while it grows (:attr:`max_graph_bytes`); default: no
        limit but the free device memory (GPU).
    weighted : bool
        Keep a weight per edge (default False: today's unweighted graph, no weight array). A
        vertex's out-weight then replaces its out-degree: ``u`` sends ``r[u] * w(u, v) / W[u]``
        along ``(u, v)``. Both backends (on the GPU a small host batch takes the weighted store's
        fused update and the weighted build of the rank kernels with one wait, as an unweighted
        one does, without the captured CUDA graphs).
    multi_edges : {"set", "sum"}
        How a repeated pair combines. ``"set"`` (default): an insertion makes the edge present
        with its weight (replacing the old one), a deletion removes it. ``"sum"`` (needs
        ``weighted=True``): an insertion adds its weight (1 when the batch is unweighted or the
        weight absent), a deletion with a weight subtracts it (the edge goes when its weight
        reaches zero), a deletion without one removes the edge.

    Raises
    ------
    ConfigError
        For a bad ``weighted`` or ``multi_edges`` value, or ``"sum"`` without ``weighted=True``.

    Notes
    -----
    String ids are encoded to integer codes by the engine's :class:`~streamrank.ids.strings.StringIdMap`
    (:attr:`string_ids`) before a batch reaches the graph store, whose id map then sees only
    integers; :meth:`ranks`, :meth:`top_k` and :meth:`edges_external` map back to the strings.
    The dictionary is part of :meth:`state`.
    """

    def __init__(self, device="auto", algorithm: str = "auto", *, config: RankConfig = RankConfig(),
                 id_type: str = "auto", max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
                 max_graph_bytes: int | None = None, weighted: bool = False, multi_edges: str = "set"):
        if not isinstance(config, RankConfig):
            raise InvalidArgumentError("config must be a RankConfig")
        self._weighted, self._multi_edges = check_weighting(weighted, multi_edges)
        self._ids_lock = IdTypeLock(check_id_type(id_type))
        self.max_id_bytes = check_max_id_bytes(max_id_bytes)
        self.string_ids: StringIdMap | None = StringIdMap() if id_type == "string" else None
        self.backend = resolve_backend(device)
        self.algorithm = check_algorithm(algorithm)
        self.config = config
        graph_cls, self._rank, self._rank_kw = backend_modules(self.backend, self._weighted, self._multi_edges)
        self.graph = graph_cls(max_bytes=max_graph_bytes)
        self.x = self.backend.xp.zeros(0, dtype=np.float64)
        self.seq = 0
        self.last: RankResult | None = None
        self.policy = AutoPolicy() if self.algorithm == "auto" else None
        self._stepper = None
        if self.backend.is_gpu and ONE_SYNC:
            from .rank.gpu.step import OneSyncStepper

            self._stepper = OneSyncStepper(self.backend.xp)

    @property
    def max_graph_bytes(self) -> int | None:
        """The graph store's limit (``graph.max_bytes``): a batch whose growth would pass it, or
        the free device memory, raises :class:`~streamrank.errors.GraphCapacityError` from
        :meth:`apply` and changes neither the graph nor the ranks. None: no limit."""
        return self.graph.max_bytes

    @max_graph_bytes.setter
    def max_graph_bytes(self, value) -> None:
        self.graph.max_bytes = value

    @property
    def weighted(self) -> bool:
        """Whether the graph keeps a weight per edge."""
        return self._weighted

    @property
    def multi_edges(self) -> str:
        """``"set"`` or ``"sum"``: how a repeated pair combines."""
        return self._multi_edges

    def _check_weights(self, batch: EdgeBatch) -> None:
        """Refuse a weighted batch on an unweighted engine, and bad weights (a batch built by the
        constructor was not validated) before the batch changes anything, string ids included."""
        if batch.weight is None:
            return
        if not self._weighted:
            raise BatchFormatError("this engine is unweighted: create it with weighted=True / --weighted "
                                   "to apply weighted batches")
        check_weights(np, to_host(batch.weight), to_host(batch.insert))

    # ------------------------------------------------------------------ ids
    @property
    def id_type(self) -> str:
        """``"int"`` or ``"string"``; ``"auto"`` while no edge has fixed it."""
        return self._ids_lock.current

    def _encode(self, batch: EdgeBatch) -> EdgeBatch:
        """``batch`` with its ids as the graph store takes them (string ids -> integer codes).

        Raises
        ------
        IdError
            For ids of the other kind than the engine's (``mixed_id_types``).
        """
        kind = batch.id_kind
        if kind == "int" and self._ids_lock.kind == "int":  # the usual batch, in two reads
            return batch
        if len(batch) == 0:
            return batch if kind == "int" else EdgeBatch.empty()
        self._ids_lock.admit(kind)
        if kind == "int":
            return batch
        if self.string_ids is None:
            self.string_ids = StringIdMap()
        insert = self.backend.to_host(batch.insert)
        src, dst = self.string_ids.encode_edges(to_string_array(batch.src), to_string_array(batch.dst), insert)
        return EdgeBatch(src, dst, insert, batch.weight)

    def _external(self, codes):
        """External ids (host) of the graph store's external ids ``codes`` (host int64)."""
        return codes if self.string_ids is None else self.string_ids.decode(codes)

    # ------------------------------------------------------------------ building
    def load_edges(self, src, dst, insert=None, *, weight=None, vertices=None) -> RankResult:
        """Apply base edges (external ids) and recompute the ranks statically.

        ``insert`` (default: all insertions) gives per-edge ops in arrival order, and ``weight``
        (weighted engines only) per-edge weights, as for :meth:`EdgeBatch.from_arrays`; ids are
        integers or strings. ``vertices`` (external ids): vertices the graph must have, edges or
        not; those the edges do not name are created after the edges' own (:meth:`add_vertices`),
        so the vertices with edges hold the first internal ids, numbered as a load numbers them
        (by degree), and the isolated ones cost the batches nothing (the published DF-P protocol
        creates ten times as many ids as it has vertices with edges). Does not advance
        :attr:`seq`. For an edge list too large to hold in one table (a large edge file),
        :meth:`load_edge_chunks` loads it chunk by chunk.

        On the GPU, a first load of insertions of dense integer ids into an unweighted engine
        (string ids' codes included) takes the bounded build (:mod:`streamrank.store.gpu_build`, docs/architecture.md).

        Raises
        ------
        GraphCapacityError
            When the edges or their ranks do not fit: the graph and the string-id dictionary stay
            as they were.
        """
        if vertices is not None:
            vertices = _id_list(vertices, "vertices")  # checked before the graph changes
        batch = EdgeBatch.from_arrays(src, dst, insert, weight=weight, xp=self.backend.xp,
                                      max_id_bytes=self.max_id_bytes)
        self._check_weights(batch)
        known = len(self.string_ids) if self.string_ids is not None else 0
        try:
            encoded = self._encode(batch)
            if not self._bulk_load(encoded):
                self.graph.apply(encoded, **self._headroom())
        except GraphCapacityError:
            if self.string_ids is not None:
                self.string_ids.truncate(known)  # the refused edges' new ids get no codes
            raise
        if vertices is not None:
            self.add_vertices(vertices)
        return self.recompute()

    def _bulk_load(self, batch: EdgeBatch) -> bool:
        """:meth:`GpuGraph.load_into_empty` of ``batch`` (ids encoded) when it is all insertions
        into an empty GPU store, the rank update's memory checked with it; False: not taken."""
        if not self.backend.is_gpu or self._weighted or len(batch) == 0 or self.graph.num_vertices:
            return False
        xp = self.backend.xp
        batch = batch.to(xp)
        if not bool(batch.insert.all()):  # sync: deletions keep the batch's arrival-order semantics
            return False
        rank, graph, dtype = self._rank, self.graph, self.config.dtype
        return graph.load_into_empty(batch.src, batch.dst, headroom=lambda n: rank.rank_headroom(graph, n, dtype))

    def _headroom(self) -> dict:
        """``graph.apply``'s keyword that checks the rank update's device memory with the batch's
        growth (GPU), so that a batch whose ranks would not fit is refused before it changes the
        graph; nothing on the CPU."""
        if not self.backend.is_gpu:
            return {}
        rank, graph, dtype = self._rank, self.graph, self.config.dtype
        return {"headroom": lambda n_after: rank.rank_headroom(graph, n_after, dtype)}

    def add_vertices(self, ids) -> int:
        """Create the vertices ``ids`` (external ids, in this order) that the graph lacks, without
        edges: isolated vertices, as the published DF-P protocol creates ``0 .. N-1`` up front.

        The ranks are not recomputed (call :meth:`recompute` or :meth:`load_edges` after).
        Returns how many vertices were created.
        """
        xp = self.backend.xp
        ids = _id_list(ids, "ids")
        fresh = ids[self.lookup(ids.tolist()) < 0] if ids.size else ids
        if fresh.shape[0] == 0:
            return 0
        # A vertex is created by its first insertion: insert a self-loop on every new id (no
        # unknown vertex can hold one already), then delete those loops again.
        before = self.graph.num_vertices
        loops = EdgeBatch.from_arrays(fresh, fresh, max_id_bytes=self.max_id_bytes)
        self.graph.apply(self._encode(loops))
        self.graph.apply(self._encode(EdgeBatch.from_arrays(fresh, fresh, np.zeros(fresh.shape[0], dtype=bool),
                                                            max_id_bytes=self.max_id_bytes)))
        n = self.graph.num_vertices
        x = xp.ones(n, dtype=self.x.dtype)
        x[: self.x.shape[0]] = self.x
        self.x = x
        return n - before

    def recompute(self, *, config: RankConfig | None = None) -> RankResult:
        """Replace the ranks with a static computation of the current graph.

        Parameters
        ----------
        config : RankConfig, optional
            Settings for this computation only (default: the engine's). The published DF-P
            protocol starts from base ranks converged to the iteration cap (its tolerance is
            1e-100): ``replace(engine.config, tol=0.0)``.
        """
        if config is not None and not isinstance(config, RankConfig):
            raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
        res = self._rank.static_pagerank(self.graph, config=self.config if config is None else config)
        self._take(res)
        return res

    # ------------------------------------------------------------------ one batch
    def apply(self, batch: EdgeBatch) -> StepResult:
        """Apply one batch to the graph and update the ranks.

        Parameters
        ----------
        batch : EdgeBatch
            Integer or string ids (string ids are encoded to codes first; ``graph_ms`` includes it).

        Returns
        -------
        StepResult

        Raises
        ------
        IdError
            For ids of the other kind than the engine's (reason ``mixed_id_types``).
        BatchFormatError
            For a weighted batch given to an unweighted engine.
        GraphCapacityError
            When the batch does not fit the graph store (free device memory, its cap
            ``STREAMRANK_GPU_MEMORY_LIMIT``, or :attr:`max_graph_bytes`) or, on the GPU, its rank
            update would not fit beside it: the graph, the ranks, :attr:`seq` and the string-id
            dictionary stay as they were, so a smaller batch (or a checkpoint) can follow.
        DeviceMemoryError
            When the device ran out of memory inside the rank update all the same (memory taken
            by another process meanwhile): the graph holds the batch, the ranks are those of
            before; recompute them or restore the last checkpoint.
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        if batch.weight is not None:
            self._check_weights(batch)
        t0 = time.perf_counter()  # the graph time includes encoding string ids
        known = len(self.string_ids) if self.string_ids is not None else 0
        try:
            encoded = self._encode(batch)
            if self._one_sync_eligible(encoded):
                step = self._stepper.apply(self.graph, encoded, self.x, self.algorithm, self.config, self._rank, t0)
                if step is not None:
                    return self._finish_step(step.changes, step.rank, step.graph_ms, step.total_ms - step.graph_ms)
                changes = self.graph.apply(encoded, fast=False, **self._headroom())  # the fast launch did not fit
            else:
                changes = self.graph.apply(encoded, **self._headroom())  # the store moves the batch to its backend
        except GraphCapacityError:
            if self.string_ids is not None:
                self.string_ids.truncate(known)  # the refused batch's new ids get no codes
            raise
        self.backend.synchronize()  # so that the stage timings include the device work
        t1 = time.perf_counter()
        algorithm = self.policy.choose(changes) if self.policy else self.algorithm
        try:
            res = self._rank.update_pagerank(algorithm, self.graph, changes, self.x, config=self.config,
                                             **self._rank_kw)
        except DeviceMemoryError as exc:
            raise DeviceMemoryError(
                f"{exc} The batch after seq={self.seq} was applied to the graph but its ranks were not "
                f"updated: recompute them (Engine.recompute) or restore the last checkpoint",
                needed=exc.needed, available=exc.available) from exc
        self.backend.synchronize()
        t2 = time.perf_counter()
        return self._finish_step(changes, res, (t1 - t0) * 1e3, (t2 - t1) * 1e3)

    def _finish_step(self, changes, res: RankResult, graph_ms: float, rank_ms: float) -> StepResult:
        if self.policy:
            self.policy.observe(res, changes, self.graph.num_vertices)
        self._take(res)
        self.seq += 1
        return StepResult(self.seq, changes, res, graph_ms, rank_ms)

    def _one_sync_eligible(self, batch: EdgeBatch) -> bool:
        """Whether the batch runs with one host wait (:mod:`streamrank.rank.gpu.step`): GPU, a small
        batch, DF/DF-P, or ``auto`` choosing DF-P whatever the batch's applied size."""
        stepper = self._stepper
        if stepper is None:
            return False
        m = len(batch)
        if self.policy is not None and not self.policy.dfp_for_any(m):
            return False
        return stepper.eligible(self.graph, m, self.algorithm)

    def _take(self, res: RankResult):
        self.x = res.x
        self.last = res

    # ------------------------------------------------------------------ reading
    @property
    def num_vertices(self) -> int:
        return self.graph.num_vertices

    def ranks(self):
        """``(external_ids, p)`` as host NumPy arrays by internal id; ``p`` sums to 1.

        ``p`` is :func:`~streamrank.rank.published.published_ranks` of the iterate: ``x / sum(x)``
        in uniform mode; in self-loop mode the vertices without in-edges at their exact rank and
        the others scaled to the rest of the mass. ``external_ids`` is int64 for integer ids and
        an object array of ``str`` for string ids.
        """
        ext = self._external(self.backend.to_host(self.graph.ids.external))  # device-to-host copy on the GPU
        cfg = self.config
        return ext, published_ranks(self.x, self.graph.in_degree, alpha=cfg.alpha, dangling=cfg.dangling)

    def top_k(self, k: int):
        """``(external_ids, p)`` of the ``k`` best vertices, descending."""
        from .oracle.metrics import top_k as _top

        if int(k) < 1:
            raise InvalidArgumentError(f"k must be >= 1, got {k}")
        ext, p = self.ranks()
        idx = _top(p, int(k))
        return ext[idx], p[idx]

    def published(self):
        """Published ranks by internal id (as :meth:`ranks`), left on the backend: a device array
        on the GPU."""
        cfg = self.config
        return published_ranks_on(self.backend.xp, self.x, self.graph.in_degree, alpha=cfg.alpha,
                                  dangling=cfg.dangling)

    def moved(self, tracker):
        """The vertices whose published rank moved by more than ``tracker.threshold`` since
        ``tracker`` (a :class:`~streamrank.rank.moved.MovedTracker` on this backend) last recorded
        them, a :class:`~streamrank.rank.moved.Moved`: compared and compacted on the backend, only
        they reach the host. :func:`~streamrank.rank.moved.mark_sent` records them once sent."""
        from .rank.moved import collect_moved

        return collect_moved(tracker, self.published(), self.graph.ids.external, decode=self._external)

    def edges_external(self):
        """All edges as host arrays of external ids ``(src, dst)`` (int64 or ``str`` objects)."""
        s, d = self.graph.edges_external()
        return self._external(self.backend.to_host(s)), self._external(self.backend.to_host(d))

    def lookup(self, ids) -> np.ndarray:
        """Internal vertex ids (host int64) of external ``ids`` (a sequence); -1 where unknown.

        Raises
        ------
        InvalidArgumentError
            For ids of the other kind than the engine's.
        """
        ids = list(ids)
        if self.string_ids is not None:
            if not all(isinstance(v, str) for v in ids):
                raise InvalidArgumentError("this engine has string vertex ids; look up strings")
            codes = self.string_ids.lookup(ids)
        else:
            if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in ids):
                raise InvalidArgumentError("this engine has integer vertex ids; look up integers")
            codes = np.asarray(ids, dtype=np.int64).reshape(-1)
        out = np.full(codes.shape[0], -1, dtype=np.int64)
        known = codes >= 0
        if known.any():
            out[known] = self.backend.to_host(self.graph.ids.lookup(self.backend.asarray(codes[known])))
        return out

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays and scalars that rebuild this engine exactly."""
        st = dict(self.graph.state())
        st["x"] = self.backend.to_host(self.x).astype(np.float64)
        st["seq"] = np.int64(self.seq)
        st["id_type"] = self.id_type
        if self._weighted:  # the graph's state holds the weights
            st["weighted"] = True
            st["multi_edges"] = self._multi_edges
        if self.string_ids is not None:
            st.update(self.string_ids.state())
        if self.policy is not None:
            st["auto_policy"] = self.policy.state()
        return st

    @classmethod
    def from_state(cls, state: dict, *, device="auto", algorithm: str = "auto",
                   config: RankConfig = RankConfig(), id_type: str = "auto",
                   max_id_bytes: int = DEFAULT_MAX_ID_BYTES, max_graph_bytes: int | None = None,
                   weighted: bool | None = None, multi_edges: str | None = None) -> "Engine":
        """Rebuild an engine saved by :meth:`state` (on any backend); ``max_graph_bytes`` applies
        to the batches after.

        ``id_type`` other than ``"auto"`` must agree with the saved one (a state without one,
        written before string ids existed, holds integer ids when it holds any vertex).
        ``weighted`` and ``multi_edges`` default to the saved ones (unweighted, ``"set"`` for a
        state written before weights existed); ``weighted=True`` restores an unweighted state
        with weight 1 on every edge.

        Raises
        ------
        StreamrankError
            When the state is incomplete or inconsistent, or its id type differs from ``id_type``,
            or it is weighted and ``weighted=False`` was asked (its weights would be lost).
        ConfigError
            For bad ``weighted`` / ``multi_edges`` values (as for the constructor).
        """
        check_id_type(id_type)
        saved_weighted = bool(state.get("weighted", False)) or "weight" in state
        if weighted is None:
            weighted = saved_weighted
        elif saved_weighted and not weighted:
            raise ConfigError("the saved engine is weighted: restore it with weighted=True (--weighted)")
        if multi_edges is None:
            multi_edges = str(state.get("multi_edges", "set")) if weighted else "set"
        saved = str(state.get("id_type", "int" if len(state.get("external", ())) else "auto"))
        if saved not in ("auto", "int", "string"):
            raise StreamrankError(f"engine state: unknown id_type {saved!r}")
        if id_type != "auto" and saved != "auto" and saved != id_type:
            raise StreamrankError(f"the saved engine has {saved} vertex ids but id_type={id_type!r} was asked")
        eng = cls(device, algorithm, config=config, id_type=saved if saved != "auto" else id_type,
                  max_id_bytes=max_id_bytes, max_graph_bytes=max_graph_bytes, weighted=weighted,
                  multi_edges=multi_edges)
        if saved == "string":
            eng.string_ids = StringIdMap.from_state(state)
        try:
            if eng.weighted:
                eng.graph = type(eng.graph).from_state(state, multi_edges=eng.multi_edges, max_bytes=max_graph_bytes)
            else:
                eng.graph = type(eng.graph).from_state(state, max_bytes=max_graph_bytes)
            x = np.asarray(state["x"], dtype=np.float64)
            seq = int(state["seq"])
        except KeyError as exc:
            raise StreamrankError(f"engine state lacks {exc}") from exc
        if x.shape[0] != eng.graph.num_vertices:
            raise StreamrankError("engine state: ranks and graph disagree in size")
        if eng.string_ids is not None and eng.graph.num_vertices and \
                int(np.max(np.asarray(state["external"]))) >= len(eng.string_ids):
            raise StreamrankError("engine state: the graph holds string-id codes the dictionary lacks")
        eng.x = eng.backend.asarray(x)
        eng.seq = seq
        if eng.policy is not None and isinstance(state.get("auto_policy"), dict):
            eng.policy.load_state(state["auto_policy"])  # choose as the saved engine would have
        return eng
