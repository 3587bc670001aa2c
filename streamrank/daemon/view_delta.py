"""What each slot of the HTTP API's shared view holds, kept where the engine's iterate lives.

The shared view (:mod:`.shared_view`) has two slots, written in turn. A slot holds the ranks in
the engine's form: the iterate ``x``, a flag per vertex (no in-edges, in self-loop mode) and two
factors (:func:`streamrank.rank.published.published_form`), so the normalization of a batch
changes two numbers, not every rank. :class:`SlotMirror` keeps a copy of what each slot was
given, on the engine's backend (the device for the GPU engine): writing a slot compares the
iterate with the slot's copy there, compacts the entries that differ, and only they cross to the
host and into shared memory: O(changed entries) per batch, not O(vertices).
"""

from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..rank.published import published_form


class SlotMirror:
    """The shared view's slots as last written, on the engine's backend (see the module docstring)."""

    def __init__(self):
        self._held = [None, None]  # per slot: (x, flags) of the backend, with room to grow

    def source(self, engine) -> tuple:
        """``(n, form, changes)`` of the engine's current ranks, for
        :meth:`~streamrank.daemon.shared_view.SnapshotWriter.publish_changes`."""
        xp = engine.backend.xp
        cfg = engine.config
        x = xp.asarray(engine.x, dtype=xp.float64)
        divide, f0, f1, exact = published_form(xp, x, engine.graph.in_degree, alpha=cfg.alpha, dangling=cfg.dangling)
        n = int(x.shape[0])
        flags = exact.astype(xp.uint8) if exact is not None else xp.zeros(n, dtype=xp.uint8)

        def changes(slot: int, full: bool):
            return self._changes(xp, slot, full, x, flags)

        return n, (divide, f0, f1), changes

    def _changes(self, xp, slot: int, full: bool, x, flags):
        n = int(x.shape[0])
        held = None if full else self._held[slot]
        if held is None or held[0].shape[0] < n:
            hx = xp.full(max(n, 1024) if held is None else max(n, held[0].shape[0] * 5 // 4), xp.nan)
            hf = xp.full(hx.shape[0], 255, dtype=xp.uint8)  # never a flag: every new entry differs
            if held is not None:
                k = held[0].shape[0]
                hx[:k], hf[:k] = held
            held = (hx, hf)
        hx, hf = held
        idx = xp.flatnonzero((hx[:n] != x) | (hf[:n] != flags))
        xs, fs = x[idx], flags[idx]
        hx[idx], hf[idx] = xs, fs
        self._held[slot] = held
        return np.asarray(to_host(idx)), np.asarray(to_host(xs)), np.asarray(to_host(fs))
