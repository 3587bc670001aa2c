"""The sx-mathoverflow replay the profiling scripts share.

The published temporal protocol's base graph (the first 90% of the file's lines; in self-loop
mode the ids 0..248,179 created up front, as ``streamrank bench --protocol temporal --vertices
248180`` does) and the following lines in batches. Unlike the bench, lines ``u u`` are skipped
in uniform mode too (the figures in docs/architecture.md measured with these scripts were taken so).
``SXMO`` names the file (default ``.device-data/sx-mathoverflow.txt.gz``), ``SWITCH`` the switch
degree (default RankConfig's).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from streamrank.batch import EdgeBatch
from streamrank.bench.temporal import _read_lines
from streamrank.config import RankConfig
from streamrank.engine import Engine

#: Ids the published protocol creates up front for sx-mathoverflow (10x its vertices).
PADDED_VERTICES = 248180


class SxmoReplay:
    """An engine on the base graph and the batches of lines after it."""

    def __init__(self, dangling: str, *, device: str = "gpu", algorithm: str = "dfp"):
        self.dangling = dangling
        self.src, self.dst = _read_lines(os.environ.get("SXMO", ".device-data/sx-mathoverflow.txt.gz"))
        self.pos = int(0.9 * self.src.shape[0])
        switch = int(os.environ.get("SWITCH", "0")) or RankConfig().switch_degree
        self.engine = Engine(device, algorithm, config=RankConfig(dangling=dangling, switch_degree=switch))
        s, d = self.src[: self.pos], self.dst[: self.pos]
        keep = s != d
        padded = np.arange(PADDED_VERTICES) if dangling == "self-loop" else None
        self.engine.load_edges(s[keep], d[keep], vertices=padded)

    @property
    def lines_left(self) -> int:
        """Lines of the file not replayed yet."""
        return self.src.shape[0] - self.pos

    def next_batch(self, size: int) -> EdgeBatch:
        """The next ``size`` lines as a batch (self-loop lines left out)."""
        s, d = self.src[self.pos: self.pos + size], self.dst[self.pos: self.pos + size]
        self.pos += size
        keep = s != d
        return EdgeBatch.from_arrays(s[keep], d[keep])


def replay_from_env(*, device: str = "gpu", warmup: int = 5) -> SxmoReplay:
    """The replay of the scripts set by the environment: ``DANGLING`` (default self-loop) and
    ``SIZE`` lines per batch (default 5, kept as ``.size``), after ``warmup`` batches (kernels
    compiled, pools filled)."""
    replay = SxmoReplay(os.environ.get("DANGLING", "self-loop"), device=device)
    replay.size = int(os.environ.get("SIZE", "5"))
    for _ in range(warmup):
        replay.engine.apply(replay.next_batch(replay.size))
    return replay


def sized_replay_from_env(default_sizes: str, *, device: str = "gpu", default_batches: int = 100,
                          per_batch: int = 1):
    """``(replay, sizes, batches)`` for the scripts that run several batch sizes: ``SIZES``
    (comma-separated lines per batch, default ``default_sizes``), ``BATCHES`` per size (default
    ``default_batches``), the replay warmed up with the first size (:func:`replay_from_env`).
    Exits with a message when the file's lines after the base cannot hold the run: 5 warm-up
    batches and ``per_batch * BATCHES`` batches per size (an empty batch would take the slow path,
    and its time would mean nothing)."""
    sizes = [int(s) for s in os.environ.get("SIZES", default_sizes).split(",")]
    batches = int(os.environ.get("BATCHES", str(default_batches)))
    os.environ["SIZE"] = str(sizes[0])
    replay = replay_from_env(device=device)
    need = sum((per_batch * batches + 5) * s for s in sizes)
    if need > replay.lines_left:
        sys.exit(f"the replay has {replay.lines_left:,} lines left, the run needs {need:,}: fewer BATCHES or SIZES")
    return replay, sizes, batches
