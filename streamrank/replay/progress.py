"""A small progress line for long work, on stderr (no dependency)."""

from __future__ import annotations

import sys
import time


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

    def update(self, done: int, extra: str = ""):
        self.done = done
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < (0.2 if self.tty else 5.0) and done < self.total:
            return
        self._last = now
        elapsed = now - self.start
        frac = done / self.total if self.total else 1.0
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        line = (f"{self.label} {done}/{self.total} ({100 * frac:5.1f}%) "
                f"elapsed {elapsed:6.1f}s eta {eta:6.1f}s {extra}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
