"""The second half of a checkpoint, on a thread of its own.

The loop takes what a checkpoint writes at a batch boundary (the batches since the last one, or
for a full checkpoint a copy of the engine's state, together with the source positions and a
token for the messages published so far: :meth:`Daemon._checkpoint`) and goes on with the next
batch. The worker then waits for the broker to acknowledge those messages, writes the
checkpoint and commits the positions to the consumer group. One checkpoint is in flight at a
time; the next one waits for it. An error is kept and raised on the loop's thread
(:meth:`CheckpointWorker.raise_error`), which stops the daemon as before.
"""

from __future__ import annotations

import threading


class CheckpointWorker:
    """Runs one job (a callable) at a time on a thread of its own."""

    def __init__(self):
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def busy(self) -> bool:
        """True while a job runs."""
        return self._thread is not None and self._thread.is_alive()

    def submit(self, job) -> None:
        """Run ``job()`` on a new thread, after the previous job has ended."""
        self.join()
        self._thread = threading.Thread(target=self._run, args=(job,), name="streamrank-checkpoint", daemon=True)
        self._thread.start()

    def _run(self, job) -> None:
        try:
            job()
        except BaseException as exc:  # handed to the loop's thread, which decides
            self._error = exc

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the job in flight; False when it still runs after ``timeout_s``."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                return False
            self._thread = None
        return True

    def raise_error(self) -> None:
        """Raise the error of a finished job, once."""
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc
