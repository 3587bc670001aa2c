"""A small batch on the GPU with one host wait: the graph update and the rank update queued back
to back (docs/architecture.md).

The fast path of the graph store (:meth:`streamrank.store.gpu.GpuGraph.launch_fast`) writes the
batch's sizes (overflow, new vertices, applied insertions and deletions) into device counters;
the cooperative DF/DF-P loop (:func:`streamrank.rank.gpu.pagerank.launch_update`) reads them there.
The host queues both launches and the copies of their results into pinned memory, waits for the
graph update's event and does its bookkeeping, then, while the rank loop still runs, the store's
upkeep for the next batch (room; the next host batch's graph update staged:
:meth:`~streamrank.store.gpu.GpuGraph.upkeep`) and the next batch's rank loop packed ahead
(:func:`streamrank.rank.gpu.pagerank.arm_update`), then waits for the loop and does the rank's
bookkeeping (:data:`OVERLAP_BOOKKEEPING`). While the graph kernel runs, the
host queues the rank update (from its armed image, or packing its arguments), so that host work
and device work overlap. A batch that took longer than a few milliseconds ends with the host's
rehearsal of the next batch's first steps (:mod:`streamrank.rank.gpu.rehearsal`).

When the graph update reports that the batch did not fit the room reserved ahead (it then wrote
nothing, and the loop returned at once), the caller applies the batch the usual way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import rehearsal as host_rehearsal
from ... import settings
from ...batch import EdgeBatch
from ...store.changes import AppliedChanges
from ...errors import GraphCapacityError, KernelError
from ...store.memory import out_of_memory
from .capture import BatchGraphs
from ..result import RankResult

#: Host batches replay two captured CUDA graphs (:mod:`streamrank.rank.gpu.capture`); False queues
#: them call by call. None (the default): ``STREAMRANK_CUDA_GRAPHS``
#: (:data:`streamrank.settings.CUDA_GRAPHS`), read when an engine's stepper is made.
CUDA_GRAPHS: bool | None = None

#: The graph's bookkeeping after a batch (counters, ends) and its upkeep (room for the next
#: batch, compaction) run while the rank loop is still on the device: the host waits for the
#: graph update's event, does them, then waits for the loop. False: one wait for both, then both
#: bookkeepings (the simpler order, which tests/test_gpu_one_sync.py compares against).
OVERLAP_BOOKKEEPING = True

#: Algorithms that can run behind a pending graph update.
STEP_ALGORITHMS = ("df", "dfp", "auto")


@dataclass
class OneSyncStep:
    """A batch applied by :meth:`OneSyncStepper.apply`.

    ``graph_ms`` is the host time until the graph kernel was queued plus the device time until
    it finished (CUDA events) plus the graph's bookkeeping after the wait, until the graph is up
    to date on the host too (:meth:`~streamrank.store.gpu.GpuGraph.finish_fast`); the upkeep for
    the next batch that follows (:meth:`~streamrank.store.gpu.GpuGraph.upkeep`: compaction, room
    reserved ahead, the next changes buffer) is not in it (:attr:`OneSyncStepper.upkeep_ms`).
    ``total_ms`` is the wall time of the whole batch, upkeep included; the rank update's time is
    the rest.
    """

    changes: AppliedChanges
    rank: RankResult
    graph_ms: float
    total_ms: float


class OneSyncStepper:
    """One engine's one-wait batches: the timing events, the captured graphs and counts (created on
    the GPU only)."""

    def __init__(self, cp):
        self.cp = cp
        self.start = cp.cuda.Event()
        self.graph_done = cp.cuda.Event()
        graphs = settings.cuda_graphs() if CUDA_GRAPHS is None else CUDA_GRAPHS
        #: The captured CUDA graphs a host batch replays (None: queued call by call, :data:`CUDA_GRAPHS`).
        self.graphs = BatchGraphs(cp) if graphs else None
        #: The host's rehearsal after a long batch (:mod:`streamrank.rank.gpu.rehearsal`; None: off, or
        #: no capture here).
        self.rehearsal = None
        if host_rehearsal.ENABLED and self.graphs is not None:
            try:
                self.rehearsal = host_rehearsal.make_rehearsal(cp)
            except KernelError:  # its kernel does not compile here: no rehearsal
                self.rehearsal = None
        #: Batches applied with one wait, and fast launches that did not fit (then applied the
        #: usual way).
        self.steps = 0
        self.misfits = 0
        #: Batches whose loop was packed ahead (:func:`streamrank.rank.gpu.pagerank.arm_update`).
        self.armed_ranks = 0
        #: Host time of the last batch's :meth:`~streamrank.store.gpu.GpuGraph.upkeep` (ms): the
        #: room and buffers for the next batch, after ``graph_ms`` ends and, with the overlap,
        #: while the rank loop runs.
        self.upkeep_ms = 0.0
        #: The last batch's graph update on the host clock alone (ms): from the batch's start to
        #: the end of the graph's bookkeeping, the host's wait for the update included. An upper
        #: bound of ``graph_ms``: it also holds what the host did before that wait (the rank loop's
        #: launch) beyond the update's device time, and the wait's wake-up.
        self.graph_wall_ms = 0.0

    def eligible(self, graph, m: int, algorithm: str) -> bool:
        """Whether a batch of ``m`` edges can take the one-wait path: a fast-path batch,
        DF/DF-P/auto, and a graph with vertices (the rank module decides the rest at launch)."""
        return algorithm in STEP_ALGORITHMS and graph.fast_eligible(m) and graph.num_vertices > 0

    def apply(self, graph, batch: EdgeBatch, x_prev, algorithm: str, config, rank_module, t0: float):
        """Queue the graph update and the rank update, wait once, finish both.

        Returns
        -------
        OneSyncStep or None
            None when the batch did not fit the room reserved ahead: the graph update wrote
            nothing (and the loop returned at once); apply it with ``graph.apply(batch,
            fast=False)``.

        Raises
        ------
        GraphCapacityError
            When the device memory for the batch's arrays ran out before anything changed.
        """
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        # a device batch is passed to the graph update by address: nothing to replay
        replay = None if isinstance(batch.src, cp.ndarray) else self.graphs
        try:
            self.start.record(stream)
            t_graph = time.perf_counter()
            pending = graph.launch_fast(batch, replay=replay)
        except GraphCapacityError:
            raise
        except MemoryError as exc:  # CuPy's OutOfMemoryError or thrust's bad_alloc, before the kernel was queued
            raise out_of_memory(exc, xp=cp, what=f"queueing a batch of {len(batch):,} edges",
                                held=graph.nbytes) from exc
        self.graph_done.record(stream)
        try:
            rank = rank_module.launch_update(algorithm, graph, pending, x_prev, config=config, replay=replay)
        except MemoryError:  # DeviceMemoryError (or a raw allocation failure)
            rank = None  # the graph update is queued: finish it, then rank the usual way
        except BaseException:
            stream.synchronize()  # sync: the queued graph update completes; its bookkeeping follows
            graph.complete_fast(pending)
            raise
        overlap = rank is not None and OVERLAP_BOOKKEEPING
        if overlap:
            # sync: the graph update only (its counters are in pinned memory); the rank loop queued
            # behind it keeps the device busy during the graph's bookkeeping below
            self.graph_done.synchronize()
        else:
            stream.synchronize()  # sync: the one wait of the batch (graph counters, loop status)
        t_wait = time.perf_counter()
        try:
            changes = graph.finish_fast(pending)  # the graph is up to date, on the host too
            t_book = time.perf_counter()
            if changes is not None:
                # room and buffers for the next batch, and its staged header and captured graph when
                # host batches replay (beside the loop when overlapped)
                graph.upkeep(replay=replay)
                if rank is not None:  # and the next batch's loop, packed ahead
                    rank_module.arm_update(rank, graph, replay=replay)
            self.upkeep_ms = (time.perf_counter() - t_book) * 1e3
        finally:
            if overlap:  # also before a misfit returns or an error propagates
                stream.synchronize()  # sync: the rank loop (its status, the ranks)
        if changes is None:  # did not fit the reserved room: nothing changed, the loop returned
            self.misfits += 1
            return None
        graph_ms = ((t_graph - t0) * 1e3 + cp.cuda.get_elapsed_time(self.start, self.graph_done)
                    + (t_book - t_wait) * 1e3)
        self.graph_wall_ms = (t_book - t0) * 1e3
        if rank is None:  # the loop could not be compiled or launched here: the usual rank update
            res = rank_module.update_pagerank(algorithm, graph, changes, x_prev, config=config)
            stream.synchronize()  # sync: so that the batch's time includes its device work
        else:
            res = rank_module.finish_update(rank, graph, changes)
            if rank.continued:
                stream.synchronize()  # sync: the hand-over's continuation ran after the wait
        if (replay is not None and self.rehearsal is not None and host_rehearsal.ENABLED
                and time.perf_counter() - t0 > host_rehearsal.AFTER_MS * 1e-3):
            # a long batch: the host's caches lost the next batch's first steps; re-run them
            # (in this batch's time)
            self.rehearsal.run(graph, batch)
        total_ms = (time.perf_counter() - t0) * 1e3
        self.steps += 1
        self.armed_ranks += rank is not None and rank.armed
        return OneSyncStep(changes, res, graph_ms, total_ms)
