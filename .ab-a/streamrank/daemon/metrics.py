"""Prometheus metrics of the daemon, on a registry of its own (one per daemon instance)."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from ..errors import StreamrankError

log = logging.getLogger(__name__)

#: Stages timed per batch.
STAGES = ("poll", "decode", "graph", "rank", "publish", "checkpoint")

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_COUNT_BUCKETS = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)


class DaemonMetrics:
    """All metrics of one daemon.

    Parameters
    ----------
    registry : CollectorRegistry, optional
        Default: a new registry (so several daemons in one process, as in tests, do not clash).
    """

    def __init__(self, *, registry: CollectorRegistry | None = None):
        r = self.registry = registry or CollectorRegistry()
        self.batches = Counter("streamrank_batches", "Batches applied, by the rank update that ran "
                               "(auto: dfp, warm or dfp>warm)", ["algorithm"], registry=r)
        self.edges_received = Counter("streamrank_edges_received", "Edges received in batches", registry=r)
        self.edges_applied = Counter("streamrank_edges_applied", "Edges that changed the graph",
                                     ["op"], registry=r)
        self.edges_dropped = Counter("streamrank_edges_dropped", "Edges counted and dropped",
                                     ["reason"], registry=r)
        self.dead_letters = Counter("streamrank_dead_letters", "Records sent to the dead letters",
                                    ["reason"], registry=r)
        self.published = Counter("streamrank_published_messages", "Rank messages published",
                                 ["kind"], registry=r)
        self.stage_seconds = Histogram("streamrank_stage_seconds", "Latency per stage of a batch",
                                       ["stage"], buckets=_LATENCY_BUCKETS, registry=r)
        self.affected = Histogram("streamrank_affected_vertices", "Vertices processed per batch (summed over iterations)",
                                  buckets=_COUNT_BUCKETS, registry=r)
        self.iterations = Histogram("streamrank_iterations", "Rank iterations per batch",
                                    buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500), registry=r)
        self.lag = Gauge("streamrank_consumer_lag", "Records between position and end of partition",
                         ["topic", "partition"], registry=r)
        self.seq = Gauge("streamrank_batch_seq", "Sequence number of the last applied batch", registry=r)
        self.vertices = Gauge("streamrank_vertices", "Vertices in the graph", registry=r)
        self.edges = Gauge("streamrank_edges", "Edges in the graph", registry=r)
        self.drift_l1 = Gauge("streamrank_drift_l1_error",
                              "L1 distance of the ranks to a static recompute (last drift check)", registry=r)
        self.drift_corrections = Counter("streamrank_drift_corrections", "Rank replacements by the drift guard",
                                         registry=r)
        self.source_errors = Counter("streamrank_source_errors", "Source/sink errors retried", ["where"],
                                     registry=r)
        self.checkpoints = Counter("streamrank_checkpoints", "Checkpoints written", registry=r)
        self.capacity_stops = Counter("streamrank_graph_capacity_stops",
                                      "Stops because a batch did not fit the graph store", registry=r)
        for s in STAGES:
            self.stage_seconds.labels(stage=s)

    def serve(self, port: int, *, addr: str = "0.0.0.0"):
        """Expose the metrics on ``http://addr:port/metrics``.

        Raises
        ------
        StreamrankError
            When the port cannot be bound.
        """
        try:
            server, thread = start_http_server(port, addr=addr, registry=self.registry)
        except OSError as exc:
            raise StreamrankError(f"cannot serve metrics on port {port}: {exc}") from exc
        log.info("metrics on http://%s:%d/metrics", addr, port)
        return server

    def observe_step(self, step) -> None:
        """Record one :class:`StepResult` of the engine."""
        ch = step.changes
        self.batches.labels(algorithm=step.rank.algorithm).inc()
        self.edges_received.inc(ch.received)
        self.edges_applied.labels(op="insert").inc(ch.num_insertions)
        self.edges_applied.labels(op="delete").inc(ch.num_deletions)
        for reason, n in ch.dropped.items():
            if n:
                self.edges_dropped.labels(reason=reason).inc(n)
        self.stage_seconds.labels(stage="graph").observe(step.graph_ms / 1e3)
        self.stage_seconds.labels(stage="rank").observe(step.rank_ms / 1e3)
        self.affected.observe(step.rank.affected_total)
        self.iterations.observe(step.rank.iterations)
        self.seq.set(step.seq)
