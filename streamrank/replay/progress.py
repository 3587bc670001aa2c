"""A small progress line for long work, on stderr (no dependency)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


class Progress:
    """Progress of ``total`` steps, redrawn in place on a terminal, every few seconds otherwise.

    Parameters
    ----------
    total : int
    label : str
    stream : file, optional
        Default ``sys.stderr``.
    enabled : bool
        ``False`` prints nothing.
    """

    def __init__(self, total: int, label: str = "", *, stream=None, enabled: bool = True):
        self.total = max(int(total), 0)
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self._last = 0.0
        self.done = 0
        self._first = None  # (time, steps) at the first update: the rate is measured from there

    def _note(self, done: int) -> None:
        if self._first is None and done > 0:
            self._first = (time.perf_counter(), done)

    def _draw(self, done: int, extra: str = ""):
        self.done = done
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < (0.2 if self.tty else 5.0) and done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        frac = done / self.total if self.total else 1.0
        line = f"{self.label} {done}/{self.total} ({100 * frac:5.1f}%) elapsed {elapsed:6.1f}s {self._eta(now, done)} {extra}"
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _eta(self, now: float, done: int) -> str:
        """The time left at the rate since the first update (the first step pays one-off costs such as
        compiling kernels, so it has no rate); ``eta --`` until there is one."""
        if self._first is None:
            return "eta    --"
        t0, d0 = self._first
        if done <= d0 or now <= t0:
            return "eta    --"
        left = (self.total - done) * (now - t0) / (done - d0)
        return f"eta {left:6.1f}s"

    def update(self, done: int, extra: str = ""):
        """Record ``done`` steps finished (``extra``: text appended to the line)."""
        self._note(done)
        self._draw(done, extra)

    def close(self):
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def cpu_kernels_cached() -> bool:
    """Whether the CPU kernels look compiled already (Numba's on-disk cache has index files).

    Looks in ``NUMBA_CACHE_DIR`` when set, else next to the kernel sources; a cold cache means the
    first batch compiles them (a minute or more, once).
    """
    kernels = Path(__file__).resolve().parents[1] / "kernels" / "cpu"
    root = os.environ.get("NUMBA_CACHE_DIR")
    where = Path(root) if root else kernels / "__pycache__"
    try:
        return where.is_dir() and any(where.rglob("frontier*.nbi"))
    except OSError:
        return False
