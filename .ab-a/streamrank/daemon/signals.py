"""Shutdown signals: the handler only sets a flag; a second signal exits at once."""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger(__name__)


class ShutdownFlag:
    """Set by SIGTERM/SIGINT; the event loop checks :attr:`requested` between steps.

    The first signal sets the flag (the loop finishes its batch, publishes, checkpoints and
    commits, then exits 0). A second signal ends the process immediately with status
    ``128 + signum`` and no cleanup.
    """

    def __init__(self):
        self._event = threading.Event()
        self.signum = None

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, signum: int | None = None) -> None:
        """Ask for shutdown (also usable from code and tests)."""
        if self.signum is None:
            self.signum = signum
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early when shutdown is requested."""
        return self._event.wait(timeout)

    def _handler(self, signum, _frame):
        if self._event.is_set():
            os.write(2, f"streamrank serve: second signal {signum}, exiting now\n".encode())
            os._exit(128 + signum)
        self.request(signum)

    def install(self, signals=(signal.SIGTERM, signal.SIGINT)) -> "ShutdownFlag":
        """Install the handler for ``signals`` (main thread only)."""
        for s in signals:
            signal.signal(s, self._handler)
        return self
