"""Staleness of a batch: time from each edge's produce timestamp to the publication of its batch.

Kafka records carry their produce time (CreateTime); once a batch's rank updates are handed to
the client, every edge of the batch has a staleness of ``now - produce time``. The loop writes
per batch the p50/p99/max and a histogram over fixed buckets (:data:`STALENESS_EDGES_MS`) to the
applied log, from which ``benchmarks/daemon.py`` sums quantiles over a whole run.
"""

from __future__ import annotations

import time

import numpy as np

from connectors.fetch import EdgeRun

#: Histogram bucket edges (milliseconds).
STALENESS_EDGES_MS = np.concatenate([[0.0], np.geomspace(1.0, 120000.0, 86)])


def staleness_fields(chunks: list, *, now_ms: float | None = None) -> dict:
    """``{"stale_ms": [p50, p99, max], "stale_hist": [first bucket, counts...]}`` weighted by edges,
    or ``{}`` when no chunk carries produce timestamps."""
    runs = [c for c in chunks if isinstance(c, EdgeRun) and c.timestamps_ms is not None]
    if not runs:
        return {}
    ts = np.concatenate([c.timestamps_ms for c in runs])
    w = np.concatenate([c.message_edges() for c in runs])
    keep = ts > 0  # a client without timestamps reports 0 or -1
    if not keep.any():
        return {}
    now_ms = time.time() * 1e3 if now_ms is None else now_ms
    age = np.maximum(0.0, now_ms - ts[keep])
    w = w[keep]
    order = np.argsort(age)
    cum = np.cumsum(w[order])
    q = [float(age[order][min(len(cum) - 1, int(np.searchsorted(cum, f * cum[-1])))]) for f in (0.5, 0.99)]
    # ages past the last edge (records re-read minutes after they were produced) count in the last bucket
    hist = np.histogram(np.minimum(age, STALENESS_EDGES_MS[-1]), bins=STALENESS_EDGES_MS, weights=w)[0]
    hist = hist.astype(np.int64)
    nz = np.flatnonzero(hist)
    return {"stale_ms": [round(q[0], 2), round(q[1], 2), round(float(age.max()), 2)],
            "stale_hist": [int(nz[0]), hist[nz[0]:nz[-1] + 1].tolist()]}
