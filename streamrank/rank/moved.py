"""Which vertices' published ranks moved, found where the ranks live.

The daemon publishes, after each batch, the vertices whose published rank moved by more than a
threshold since it was last sent (new vertices included: their last sent rank is 0), the rule
of :class:`connectors.kafka_sink.MovedRanks`. Scanning every vertex on the host costs a copy of
all ranks and ids per batch, O(|V|) however few vertices moved (tens of milliseconds at R-MAT
24). :class:`MovedTracker` keeps the last sent ranks beside the iterate (on the device for the
GPU backend): the comparison is one elementwise pass there, the moved vertices are compacted
there (``flatnonzero``), and only they cross to the host: O(moved) host work and transfer.

The comparison covers every vertex rather than the rank update's frontier: the published ranks
are normalized (``x / sum(x)``), so a vertex outside the frontier moves too when the total does,
and the set must be the one a full scan finds.

:func:`top_candidates` finds the ``k`` best vertices the same way: the vertices at or above a cut
are compacted on the device, and only they are ordered on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import to_host
from ..errors import InvalidArgumentError


@dataclass
class Moved:
    """The vertices of one batch whose published rank moved (host arrays, by internal id ascending).

    Attributes
    ----------
    idx : numpy.ndarray
        Internal ids (int64).
    ids : numpy.ndarray
        Their external ids (int64, or an object array of ``str``).
    p : numpy.ndarray
        Their published ranks (float64).
    num_vertices : int
        Vertices of the graph the ranks are of.
    """

    idx: np.ndarray
    ids: np.ndarray
    p: np.ndarray
    num_vertices: int
    _dev_idx: object = None
    _dev_p: object = None

    def __len__(self) -> int:
        return int(self.idx.shape[0])


class MovedTracker:
    """The last sent published rank of every vertex, on the backend of ``xp``.

    Parameters
    ----------
    xp : module
        :mod:`numpy` or :mod:`cupy`: where the ranks live.
    threshold : float
        A vertex is due when ``|p - p_sent| > threshold`` (>= 0).
    """

    def __init__(self, xp, threshold: float = 1e-6):
        threshold = float(threshold)
        if not threshold >= 0.0:
            raise InvalidArgumentError(f"threshold must be >= 0, got {threshold}")
        self.xp = xp
        self.threshold = threshold
        self._sent = xp.zeros(0, dtype=xp.float64)

    def prime(self, p) -> None:
        """Take ``p`` (published ranks, on the tracker's backend or the host) as already sent."""
        self._sent = self.xp.array(p, dtype=self.xp.float64, copy=True)

    def _grow(self, n: int) -> None:
        """Room for ``n`` vertices; the new ones count as sent at 0 (grown by a quarter at least,
        so that a stream of new vertices costs amortized O(new))."""
        have = self._sent.shape[0]
        if n > have:
            grown = self.xp.zeros(max(n, have + have // 4), dtype=self.xp.float64)
            grown[:have] = self._sent
            self._sent = grown

    def moved_idx(self, p):
        """Internal ids (on the backend, int64, ascending) whose rank in ``p`` moved by more than
        the threshold since last marked; vertices beyond the last sent ones count as sent at 0."""
        n = int(p.shape[0])
        self._grow(n)
        sent = self._sent[:n]
        return self.xp.flatnonzero(self.xp.abs(p - sent) > self.threshold).astype(self.xp.int64, copy=False)

    def mark(self, idx, values) -> None:
        """Record ``values`` (on the backend) as sent for internal ids ``idx``."""
        if int(idx.shape[0]):
            self._sent[idx] = values


def collect_moved(tracker: MovedTracker, p, external, *, decode=None) -> Moved:
    """The moved vertices of published ranks ``p`` (on the tracker's backend).

    Parameters
    ----------
    tracker : MovedTracker
    p : array
        Published ranks by internal id, on the tracker's backend.
    external : array
        External ids by internal id (at least ``len(p)`` of them), on the same backend; integer
        codes of string ids when ``decode`` is given.
    decode : callable, optional
        Host int64 codes -> object array of ``str`` (:meth:`streamrank.ids.strings.StringIdMap.decode`).

    Returns
    -------
    Moved
        Only the moved vertices are copied to the host. :func:`mark_sent` records them once sent.
    """
    idx = tracker.moved_idx(p)
    vals = p[idx]
    ids = to_host(external[idx])
    if decode is not None:
        ids = decode(ids)
    return Moved(np.asarray(to_host(idx), dtype=np.int64), ids, np.asarray(to_host(vals), dtype=np.float64),
                 int(p.shape[0]), idx, vals)


def mark_sent(tracker: MovedTracker, moved: Moved) -> None:
    """Record the ranks of ``moved`` (from :func:`collect_moved` on ``tracker``) as sent."""
    if moved._dev_idx is None:
        raise InvalidArgumentError("mark_sent takes what collect_moved returned")
    tracker.mark(moved._dev_idx, moved._dev_p)


def top_candidates(xp, p, k: int, *, hint: float | None = None) -> tuple:
    """``(idx, cut)``: internal ids (host int64) holding the ``k`` largest values of ``p`` and every
    vertex tied with the ``k``-th (the caller orders them), and the ``k``-th largest value.

    Compacts ``p >= c`` on the backend for a cut ``c`` that leaves at least ``k`` vertices,
    starting from ``hint`` (the last batch's cut: the top moves little between batches) and
    halving; so the host sees about ``k`` vertices instead of all of them.
    """
    n = int(p.shape[0])
    k = int(k)
    if k < 1:
        raise InvalidArgumentError(f"k must be >= 1, got {k}")
    if k >= n:
        return np.arange(n, dtype=np.int64), float(to_host(p.min())) if n else 0.0
    c = float(hint) if hint is not None and hint > 0.0 else float(to_host(p.max()))
    for _ in range(64):
        if int(to_host(xp.count_nonzero(p >= c))) >= k or c <= 0.0:
            break
        c *= 0.5 if c > 1e-300 else 0.0
    cand = xp.flatnonzero(p >= c) if c > 0.0 else xp.arange(n)
    vals = p[cand]
    if int(cand.shape[0]) > k:  # the k-th value, then every vertex tied with it
        kth = float(to_host(xp.sort(vals)[-k]))
        keep = vals >= kth
        cand, vals = cand[keep], vals[keep]
    else:
        kth = float(to_host(vals.min()))
    return np.asarray(to_host(cand), dtype=np.int64), kth
