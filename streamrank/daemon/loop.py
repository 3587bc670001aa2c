"""The daemon's event loop.

``source -> batch (size/time window) -> engine.apply -> sinks -> checkpoint -> commit``

One thread does it all, in that order, so the rules are easy to check, except polling and
decoding, which run ahead on the ingest thread (:mod:`.ingest`) and only hand over decoded items:

- a batch closes when it holds ``batch_size`` edges or ``batch_wait_ms`` after its first record
  was polled (:mod:`.batching`; a message is never split);
- rejected records go to the dead letters before the batch they arrived in is applied;
- source positions advance only with the batch that consumed them, are written in the next
  checkpoint, and are committed to the consumer group only after that checkpoint is on disk;
- publishing only hands messages to the client; a checkpoint is written only once every message
  published before it is acknowledged by the broker, so it never claims work whose output could
  still be lost (a message the client gave up on stops the daemon without a checkpoint);
- checkpoints are full now and then and incremental (a log of the batches) in between
  (:mod:`.checkpoints`); the loop takes what a checkpoint holds at a batch boundary, and the wait
  for acknowledgements, the write and the commit run on a worker (:mod:`.checkpoint_worker`)
  while the loop goes on (the final checkpoint at shutdown runs on the loop's thread); one that
  falls due by time while the last is still being written is taken at the first batch boundary
  after it, so a slow write (a full checkpoint of a large graph) does not hold the loop back; a
  fresh start from a base graph checkpoints it before the first record is read;
- a shutdown request (signal) ends the batch in hand, publishes, checkpoints, commits, exits 0.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import os
import threading
import time

import numpy as np

from ..batch import EdgeBatch
from ..checkpoints.full import MANIFEST
from ..engine import Engine
from ..errors import GraphCapacityError, SourceError, StateUnreadableError, StreamrankError
from ..ids.kinds import IdTypeLock, concat_ids, id_kind, to_string_array
from .base_graph import base_engine
from .batching import BatchWindow, batch_weights
from .checkpoint_worker import CheckpointWorker
from .checkpoints import CheckpointStage
from . import endpoints
from .config import DaemonConfig
from .drift import DriftGuard
from .ingest import Ingest
from .live import LiveState, batch_info
from .metrics import DaemonMetrics
from .publishing import RankOutput
from .signals import ShutdownFlag
from .staleness import staleness_fields
from .warmup import wants_warm_up, warm_up
from .http_process import start_http

log = logging.getLogger("streamrank.daemon")

#: Longest a shutdown waits for the broker to acknowledge published messages.
SHUTDOWN_FLUSH_DEADLINE_S = 30.0
#: Exit status when a batch does not fit the graph store (GraphCapacityError): restarting
#: unchanged would fail on the same batch, so supervisors should not restart on it
#: (systemd: ``RestartPreventExitStatus=3``).
EXIT_GRAPH_CAPACITY = 3
#: Exit status when the checkpoint directory holds state but no full checkpoint reads (the
#: operator chooses: a backup, or ``--reset-unreadable-state``); restarting unchanged fails the same way.
EXIT_STATE_UNREADABLE = 4


class Daemon:
    """``streamrank serve``.

    Parameters
    ----------
    config : DaemonConfig
    shutdown : ShutdownFlag, optional
        Default: a new flag (the CLI installs its signal handlers).
    metrics : DaemonMetrics, optional
        Default: new metrics on a registry of their own.
    """

    def __init__(self, config: DaemonConfig, *, shutdown: ShutdownFlag | None = None,
                 metrics: DaemonMetrics | None = None):
        self.cfg = config.validate()
        self.shutdown = shutdown or ShutdownFlag()
        self.metrics = metrics or DaemonMetrics()
        self.engine: Engine | None = None
        self.positions: dict = {}
        self.source = None
        self.ingest = None
        self.ckpt = CheckpointStage(config.checkpoint_dir, full_every=config.full_checkpoint_every,
                                    keep=config.checkpoint_keep)
        self.producer = None
        self.publisher = None
        self.dead_letters = None
        self.snapshots = None
        self.output: RankOutput | None = None
        self.drift = DriftGuard(every=config.drift_every, bound=config.drift_bound,
                                alpha=config.rank.alpha, dangling=config.rank.dangling)
        self.window: BatchWindow | None = None
        self._ckpt_worker = CheckpointWorker()
        self._log_lock = threading.Lock()  # the applied log is written by the loop and the checkpoint worker
        self._dirty = False            # positions or state not yet checkpointed
        self._since_ckpt = 0           # batches since the last checkpoint
        self._last_ckpt = time.monotonic()
        self._first_ckpt = True        # the first batch is checkpointed at once (``query`` can read it)
        self._last_lag = 0.0
        self._broker_ok = True
        self._applied_log = None
        self._ranks = None             # (ids, p) of the last batch, when a snapshot copied them
        self.edges_applied = 0
        self.id_lock: IdTypeLock | None = None  # the stream's vertex id kind, shared by the source
        self._exit_status = 0
        self.live = LiveState() if config.http_port is not None else None  # what the HTTP API reads
        #: held while the engine changes, so the HTTP API never reads a half-applied batch
        self._engine_guard = self.live.engine_lock if self.live is not None else contextlib.nullcontext()
        self.http = None
        self._lag_total = None         # records behind the input's end, last measured (Kafka)

    # ================================================================== setup
    def _restore(self) -> None:
        cfg = self.cfg
        ck = self.ckpt.restore(device=cfg.device, algorithm=cfg.algorithm, config=cfg.rank, id_type=cfg.id_type,
                               max_id_bytes=cfg.max_id_bytes, reset_unreadable=cfg.reset_unreadable_state,
                               weighted=cfg.is_weighted, multi_edges=cfg.multi_edges)
        if ck is not None:
            self.engine = ck.engine
            self.engine.max_graph_bytes = cfg.max_graph_bytes
            self.positions = dict(ck.positions)
            log.info("restored checkpoint %s + %d logged batches: seq=%d, %d vertices, %d edges, positions=%s",
                     ck.snapshot.path, ck.replayed, ck.seq, self.engine.graph.num_vertices,
                     self.engine.graph.num_edges, self.positions)
        else:
            self.engine = base_engine(cfg)  # empty, or --base-graph
            log.info("no checkpoint in %s: starting from %s", cfg.checkpoint_dir,
                     f"base graph {cfg.base_graph}" if cfg.base_graph else "an empty graph")
        self.id_lock = IdTypeLock(cfg.id_type)
        if cfg.id_type == "auto" and self.engine.id_type != "auto":
            self.id_lock.admit(self.engine.id_type)  # the restored (or base) graph fixed the stream's id kind
        log.info("engine: device=%s (%s), algorithm=%s, vertex ids: %s", self.engine.backend.name,
                 self.engine.backend.reason, cfg.algorithm, self.id_lock.current)
        self._log_event("restore", seq=self.engine.seq, positions=self.positions,
                        checkpoint=ck.snapshot.path if ck else None, replayed=ck.replayed if ck else 0)

    def _open_io(self) -> None:
        cfg = self.cfg
        self.source = endpoints.make_source(cfg, stop=lambda: self.shutdown.requested, id_lock=self.id_lock,
                                            on_stats=self._client_stats)
        if cfg.publish_topic or cfg.dead_letter_topic:
            self.producer = self._retry(lambda: endpoints.make_producer(cfg, on_stats=self._client_stats),
                                        "creating the producer")
        if cfg.publish_topic:
            self.publisher = endpoints.make_publisher(cfg, self.producer)
        self.dead_letters = endpoints.make_dead_letters(cfg, self.producer)
        self.snapshots = endpoints.make_snapshots(cfg)
        self.output = RankOutput(self.engine, self.publisher, self.snapshots, threshold=cfg.publish_threshold)
        self.output.prime(self.engine)  # a restored or base graph: only later moves are published
        self.source.open(self.positions)
        self.ingest = Ingest(self.source, shutdown=self.shutdown, metrics=self.metrics,
                             threaded=cfg.input_dir is None, max_edges=4 * cfg.batch_size,
                             decode_threads=cfg.decode_threads)
        self.ingest.start()
        self.window = BatchWindow(self.ingest, batch_size=cfg.batch_size, batch_wait_ms=cfg.batch_wait_ms,
                                  stop=lambda: self.shutdown.requested)

    # ================================================================== helpers
    def _log_event(self, event: str, **fields) -> None:
        if self._applied_log is None:
            return
        line = json.dumps({"event": event, **fields}) + "\n"
        with self._log_lock:
            self._applied_log.write(line)
            self._applied_log.flush()

    def _client_stats(self, stats: dict) -> None:
        """The Kafka client's condensed statistics (``--kafka-stats-interval``), from the thread that
        polled the client: a ``kafka_stats`` event in the applied log and a DEBUG line."""
        log.debug("kafka client statistics: %s", stats)
        self._log_event("kafka_stats", **stats)

    def _retry(self, fn, what: str, *, deadline: float | None = None):
        """Call ``fn`` until it succeeds, backing off and logging on StreamrankError.

        Gives up (re-raises) once shutdown is requested and ``deadline`` (monotonic) has passed.
        """
        from connectors.kafka_clients import DeliveryFailed
        from connectors.kafka_source import Backoff

        backoff = Backoff(initial=0.2, maximum=10.0)
        while True:
            try:
                return fn()
            except DeliveryFailed:
                raise  # output is lost: no retry can make a checkpoint true; restart re-publishes
            except StreamrankError as exc:
                self.metrics.source_errors.labels(where=what).inc()
                if self.shutdown.requested and (deadline is None or time.monotonic() > deadline):
                    raise
                d = backoff.next()
                log.warning("%s failed (%s); retrying in %.1fs", what, exc, d)
                self.shutdown.wait(d) if not self.shutdown.requested else time.sleep(d)

    # ================================================================== one batch
    def _dead_letter(self, bad: list) -> None:
        for b in bad:
            self._retry(lambda b=b: self.dead_letters.send(b), "dead-lettering")
            self.metrics.dead_letters.labels(reason=b.reason).inc()
            log.warning("dead letter: %s at %s[%s]@%s: %s", b.reason, b.topic, b.partition, b.offset, b.detail)

    def _step(self, w) -> None:
        """Apply one closed batch, publish, record; under ``--stall-dump-s`` a batch that takes
        longer dumps every thread's stack to stderr (faulthandler's watchdog thread, which needs
        no GIL: it also shows a thread that holds the GIL)."""
        if self.cfg.stall_dump_s > 0:
            faulthandler.dump_traceback_later(float(self.cfg.stall_dump_s), repeat=False)
        try:
            self._apply_step(w)
        finally:
            if self.cfg.stall_dump_s > 0:
                faulthandler.cancel_dump_traceback_later()

    def _apply_step(self, w) -> None:
        eng = self.engine
        chunks, pos = w.chunks, w.positions
        if len(chunks) == 1:
            c = chunks[0]
            src, dst, ins = c.src, c.dst, c.insert
        else:
            src = concat_ids([c.src for c in chunks])  # int64 arrays or Arrow strings (one kind per stream)
            dst = concat_ids([c.dst for c in chunks])
            ins = np.concatenate([c.insert for c in chunks])
        weight = batch_weights(chunks, ins) if eng.weighted else None
        if id_kind(src) == "string":  # Arrow once, for the engine's encoding and the checkpoint log alike
            src, dst = to_string_array(src), to_string_array(dst)
        batch = EdgeBatch(src, dst, ins, weight)  # records were validated when parsed; apply() moves it to the device
        with self._engine_guard:
            step = eng.apply(batch)
            if self.live is not None:  # the HTTP API's view of this batch, swapped in under the lock
                self.live.publish(eng, info=batch_info(step, w, {**self.positions, **pos}, self._lag_total))
        self.ckpt.record(step.seq, src, dst, ins, weight)
        self.metrics.observe_step(step)
        self.positions.update(pos)
        self._dirty = True
        self._since_ckpt += 1
        self.edges_applied += len(batch)
        t0 = time.perf_counter()
        sent = self._publish(step.seq)
        t_pub = time.perf_counter() - t0
        self.metrics.stage_seconds.labels(stage="publish").observe(t_pub)
        ch = step.changes
        self.metrics.vertices.set(eng.graph.num_vertices)
        self.metrics.edges.set(eng.graph.num_edges)
        log.info("batch seq=%d edges=%d inserted=%d deleted=%d dropped=%d new_vertices=%d algorithm=%s "
                 "iterations=%d affected=%d graph=%.2fms rank=%.2fms publish=%.2fms published=%d vertices=%d "
                 "graph_edges=%d", step.seq, ch.received, ch.num_insertions, ch.num_deletions,
                 sum(ch.dropped.values()), ch.num_new_vertices, step.rank.algorithm, step.rank.iterations,
                 step.rank.affected_total, step.graph_ms, step.rank_ms, t_pub * 1e3, sent, eng.graph.num_vertices,
                 eng.graph.num_edges)
        self._log_event("apply", seq=step.seq, edges=len(batch), algorithm=step.rank.algorithm, positions=pos,
                        t=time.time(), polled=w.polled_at, closed=w.closed_at,
                        **(staleness_fields(chunks) if self._applied_log is not None else {}))
        if self.drift.due(step.seq):
            self.drift.submit(step.seq, eng)

    def _capacity_stop(self, exc: GraphCapacityError, chunks: list) -> None:
        """A batch that does not fit the graph store: stop cleanly, never skip it.

        The engine refused the batch before changing anything, so the state is that of the last
        applied batch; its records' positions were not taken, so the final checkpoint holds every
        batch before it and a restart (with more room) reads the refused records again. Skipping
        them to the dead letters would lose valid edges and leave later deletions of them
        inconsistent, and retrying in place would fail the same way.
        """
        edges = sum(len(c) for c in chunks)
        log.error("graph capacity: the batch after seq=%d (%d edges) does not fit: %s. Stopping with exit "
                  "status %d after a final checkpoint of everything applied before it; its records stay "
                  "unconsumed and are applied after a restart with more room (a device with more memory, "
                  "--device cpu, or a higher --max-graph-bytes). Restarting unchanged fails the same way.",
                  self.engine.seq, edges, exc, EXIT_GRAPH_CAPACITY)
        self.metrics.capacity_stops.inc()
        self._log_event("capacity", seq=self.engine.seq, edges=edges, needed=exc.needed, available=exc.available)
        self._exit_status = EXIT_GRAPH_CAPACITY

    def _publish(self, seq: int) -> int:
        out, self._ranks = self.output.publish(self.engine, seq, retry=self._retry)
        for kind, k in out.items():
            if k:
                self.metrics.published.labels(kind=kind).inc(k)
        return sum(out.values())

    def _drift_results(self) -> None:
        for r in self.drift.results():
            self.metrics.drift_l1.set(r.l1)
            if r.l1 > self.drift.bound:
                log.warning("drift check seq=%d: L1 error %.3e > bound %.1e over %d vertices; replacing ranks "
                            "with a static recompute", r.seq, r.l1, self.drift.bound, r.num_vertices)
                with self._engine_guard:
                    self.engine.recompute()
                    if self.live is not None:
                        self.live.publish(self.engine, info=dict(self.live.view().info, drift_corrected=True))
                self._ranks = None  # ranks of before the recompute
                self.ckpt.force_full()  # the log replays batches only
                self.metrics.drift_corrections.inc()
                self._dirty = True
            else:
                log.info("drift check seq=%d: L1 error %.3e (bound %.1e, %d vertices, %.2fs)", r.seq, r.l1,
                         self.drift.bound, r.num_vertices, r.seconds)

    # ================================================================== checkpoint + commit
    def _checkpoint(self, *, final: bool = False) -> None:
        """Take a checkpoint at this batch boundary: on the worker, or with ``final`` on this thread."""
        self._ckpt_worker.join()  # one checkpoint in flight at a time, in order (a slow one holds the loop back)
        self._ckpt_worker.raise_error()
        eng = self.engine
        t0 = time.perf_counter()
        deadline = time.monotonic() + SHUTDOWN_FLUSH_DEADLINE_S
        # 1. the output so far: a token for the published messages (acknowledged before the write),
        #    and the dead-letter file made durable (Kafka dead letters go through the producer)
        token = self.producer.mark() if self.producer is not None else None
        if not self.dead_letters.acked_by_producer:
            self._retry(self.dead_letters.flush, "flushing dead letters", deadline=deadline)
        # 2. what the checkpoint holds, taken now: the batches since the last one (or a copy of the state)
        meta = {"algorithm": self.cfg.algorithm, "device": eng.backend.name, "rank": self.cfg.rank.to_dict(),
                "vertices": eng.graph.num_vertices, "edges": eng.graph.num_edges}
        plan = self.ckpt.prepare(eng, positions=self.positions, meta=meta, ranks=self._full_ranks)
        self._dirty = False
        self._since_ckpt = 0
        self._first_ckpt = False
        self._last_ckpt = time.monotonic()
        if final:
            self._finish_checkpoint(plan, token, t0, final=True)
        else:
            self._ckpt_worker.submit(lambda: self._finish_checkpoint(plan, token, t0, final=False))

    def _finish_checkpoint(self, plan, token, t0: float, *, final: bool) -> None:
        """Wait for the acknowledgements, write the checkpoint, then commit its positions."""
        deadline = time.monotonic() + SHUTDOWN_FLUSH_DEADLINE_S
        # 3. everything published before the checkpoint must be acknowledged before it claims it
        if self.producer is not None:
            self._retry(lambda: self.producer.wait_acked(token, timeout_s=10.0), "waiting for acknowledgements",
                        deadline=deadline)
        t_acked = time.perf_counter()
        # 4. the checkpoint itself: a frame of the batch log, or now and then a full one
        info = self._retry(lambda: self.ckpt.write_plan(plan), "writing the checkpoint", deadline=deadline)
        # 5. only now may the positions be committed to the group
        self.ingest.call(lambda: self.source.commit(plan.positions))
        dt = time.perf_counter() - t0
        if self.live is not None:
            self.live.set_status(checkpoint={"seq": plan.seq, "at": time.time(), "kind": info.kind, "path": info.path})
        self.metrics.stage_seconds.labels(stage="checkpoint").observe(dt)
        self.metrics.checkpoints.inc()
        self._log_event("checkpoint", seq=plan.seq, positions=plan.positions, final=final, kind=info.kind,
                        bytes=info.bytes, ms=round(dt * 1e3, 3), ack_ms=round((t_acked - t0) * 1e3, 3),
                        write_ms=round(info.seconds * 1e3, 3))
        log.info("checkpoint seq=%d (%s, %d bytes) -> %s (%.1f ms)%s", plan.seq, info.kind, info.bytes, info.path,
                 dt * 1e3, " [final]" if final else "")

    def _full_ranks(self):
        """Ranks saved with a full checkpoint (those of the last batch when at hand)."""
        return self._ranks if self._ranks is not None else self.engine.ranks()

    def _checkpoint_due(self) -> bool:
        if not self._dirty:
            return False
        if self._first_ckpt or self._since_ckpt >= self.cfg.checkpoint_every:
            return True
        # due by time while the last is still being written: the first batch boundary after it
        return self.cfg.checkpoint_interval > 0 and time.monotonic() - self._last_ckpt >= \
            self.cfg.checkpoint_interval and not self._ckpt_worker.busy

    def _update_lag(self) -> None:
        if not hasattr(self.source, "lags") or self.cfg.lag_interval <= 0:
            return
        now = time.monotonic()
        if now - self._last_lag < self.cfg.lag_interval:
            return
        self._last_lag = now
        try:
            lags = self.ingest.call(lambda: self.source.lags(self.positions))
        except SourceError as exc:
            if self._broker_ok:
                log.warning("broker unreachable (%s); retrying with backoff", exc)
            self._broker_ok = False
            self.metrics.source_errors.labels(where="lag").inc()
            return
        if not self._broker_ok:
            log.warning("broker reachable again; resuming at positions %s", self.positions)
        self._broker_ok = True
        for (topic, part), lag in lags.items():
            self.metrics.lag.labels(topic=topic, partition=str(part)).set(lag)
        self._lag_total = int(sum(lags.values()))
        if self.live is not None:
            self.live.set_status(lag={f"{t}:{p}": int(v) for (t, p), v in lags.items()}, lag_total=self._lag_total)

    # ================================================================== run
    def run(self) -> int:
        """Run until shutdown (or, with ``exit_when_done`` in directory mode, the input ends).

        Returns
        -------
        int
            0 after a clean shutdown with a final checkpoint; 1 when the final checkpoint could
            not be completed or the Kafka client gave up on a published message (the previous
            checkpoint stands, nothing is lost; a restart re-applies and re-publishes the rest);
            3 (:data:`EXIT_GRAPH_CAPACITY`) when a batch did not fit the graph store: the final
            checkpoint holds everything before it, and the batch's records are read again on restart;
            4 (:data:`EXIT_STATE_UNREADABLE`) when the checkpoint directory holds state but no full
            checkpoint reads (nothing is read, written or moved).
        """
        from connectors.kafka_clients import DeliveryFailed

        try:
            return self._run()
        except DeliveryFailed as exc:
            log.error("%s: stopping without a checkpoint (the previous one stands; a restart re-publishes)", exc)
            return 1

    def _run(self) -> int:
        cfg = self.cfg
        os.makedirs(cfg.checkpoint_dir, exist_ok=True)
        if cfg.applied_log:
            self._applied_log = open(cfg.applied_log, "a", encoding="utf-8")
        try:
            try:
                self._restore()
            except StateUnreadableError as exc:
                log.error("%s", exc)
                self._log_event("unreadable_state", files=exc.files, unreadable=[p for p, _ in exc.unreadable])
                return EXIT_STATE_UNREADABLE
            if wants_warm_up(cfg.warm_up, self.engine.backend.name):
                secs = warm_up(self.engine.backend.name, config=cfg.rank, weighted=self.engine.weighted,
                               multi_edges=self.engine.multi_edges)
                log.info("warm-up: the engine's kernels compiled or loaded in %.1f s", secs)
            if cfg.metrics_port:
                self.metrics.serve(cfg.metrics_port)
            if self.live is not None:
                self.http = start_http(cfg, self.live, self.engine, self.positions)
            self._open_io()
            if self.engine.seq == 0 and self.engine.graph.num_vertices and \
                    not os.path.exists(os.path.join(cfg.checkpoint_dir, MANIFEST)):
                self._dirty = True
                self._checkpoint()  # the base graph, on the worker, before the first record is read
            log.info("serving: %s -> %s", cfg.input_dir or f"{cfg.bootstrap_servers} {cfg.topic}",
                     cfg.publish_topic or "(no publish topic)")
            while True:
                w = self.window.collect()
                if w.bad:
                    self._dead_letter(w.bad)
                if w.chunks:
                    try:
                        self._step(w)
                    except GraphCapacityError as exc:
                        self._capacity_stop(exc, w.chunks)
                        break
                    if self.producer is not None:  # the client's delivery reports, after the hand-over
                        self.producer.poll()
                elif w.positions:
                    self.positions.update(w.positions)  # only rejected records or file ends: no batch
                    self._dirty = True
                self._drift_results()
                self._ckpt_worker.raise_error()
                if self.shutdown.requested:
                    break
                if self._checkpoint_due():
                    self._checkpoint()
                self._update_lag()
                if cfg.exit_when_done and getattr(self.source, "exhausted", False) and not self.window.held:
                    log.info("input exhausted: stopping")
                    break
            self.drift.join(5.0)
            self._drift_results()
            log.info("shutting down%s: final checkpoint",
                     f" on signal {self.shutdown.signum}" if self.shutdown.signum else "")
            try:
                self._ckpt_worker.join()
                self._ckpt_worker.raise_error()
                if self._dirty or not os.path.exists(os.path.join(cfg.checkpoint_dir, MANIFEST)):
                    self._checkpoint(final=True)
            except StreamrankError as exc:
                log.error("final checkpoint failed: %s (the previous checkpoint stands)", exc)
                return 1
            return self._exit_status
        finally:
            self.drift.join(1.0)
            if self.http is not None:
                self.http.stop()
            if not self._ckpt_worker.join(SHUTDOWN_FLUSH_DEADLINE_S):
                log.error("a checkpoint is still being written; exiting without waiting for it")
            if self.ingest is not None:
                self.ingest.stop()
            if self.source is not None:
                self.source.close()
            self.ckpt.close()
            if self.producer is not None:
                try:
                    self.producer.close(timeout_s=5)
                except Exception as exc:  # closing must not mask the exit path
                    log.debug("producer close: %s", exc)
            if self.dead_letters is not None:
                self.dead_letters.close()
            if self._applied_log is not None:
                self._applied_log.close()

