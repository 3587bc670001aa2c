"""How many threads the CPU frontier loop uses per batch: all of Numba's, or one.

The frontier loop forks and joins its threads several times per iteration. On an idle machine
two threads make a wide iteration about 1.5 times faster; on a machine whose cores other
processes keep busy, a descheduled worker holds every join up for a scheduler time slice, and
two threads become many times slower than one (a dense pass of sx-mathoverflow: 0.4 ms on two
threads idle, 6-7 ms at load average 40, against 0.5-0.7 ms on one thread). Results do not
depend on the thread count (fixed chunks), so each batch may pick.

:class:`ThreadChooser` keeps, for one thread and for all of Numba's threads
(``numba.get_num_threads()``, the ceiling), the wall time per vertex update of its last
:data:`KEEP` batches, runs each batch with the option of the lower median, and tries the other
every :data:`PROBE_EVERY` batches so that it notices when the load changes (a median: one
batch that met a burst of load does not swing the choice). On a graph too small for any step to
go parallel the caller does not ask it. ``STREAMRANK_CPU_THREADS=all``
(:data:`streamrank.settings.CPU_THREADS`) turns the choice off (every batch uses all of Numba's
threads), as the thread-count tests do.
"""

from __future__ import annotations

from collections import deque

import numba

from ... import settings

#: Every this many batches the option not in use runs once, to re-measure it (fewer than 5 %
#: of the batches: a probe of the slow option does not reach the 95th percentile).
PROBE_EVERY = 32
#: Measurements kept per option; its cost is their median.
KEEP = 5
#: The environment variable that turns the choice off (value ``all``).
ENV = settings.CPU_THREADS.name


class ThreadChooser:
    """Per-batch choice between one thread and all of Numba's (see the module docstring)."""

    def __init__(self):
        self.samples = {}  # threads -> deque of the last KEEP costs (ms per vertex update)
        self.medians = {}  # threads -> median of samples[threads]
        self.seen = {}  # threads -> batches observed (the first is not kept)
        self.batches = 0

    def cost(self, threads: int) -> float:
        """Median cost of an option (ms per vertex update); inf before it was measured."""
        return self.medians.get(threads, float("inf"))

    def choose(self) -> int:
        """Threads for the next batch."""
        top = numba.get_num_threads()
        if top == 1 or settings.cpu_threads() == "all":
            return top
        self.batches += 1
        options = (top, 1)
        for t in options:  # each option runs twice first (see observe)
            if self.seen.get(t, 0) < 2:
                return t
        best, other = sorted(options, key=self.cost)
        return other if self.batches % PROBE_EVERY == 0 else best

    def observe(self, threads: int, ms: float, work: int) -> None:
        """Record a batch run on ``threads`` threads: ``ms`` wall time for ``work`` vertex updates."""
        if work <= 0:
            return
        self.seen[threads] = self.seen.get(threads, 0) + 1
        if self.seen[threads] == 1:
            return  # the first run of an option may include compiling the kernels: not kept
        kept = self.samples.setdefault(threads, deque(maxlen=KEEP))
        kept.append(ms / work)
        ordered = sorted(kept)
        mid = len(ordered) // 2
        self.medians[threads] = ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


class threads_set:
    """Context manager: Numba's thread count set to ``n`` inside, restored after."""

    def __init__(self, n: int):
        self.n = int(n)
        self.before = None

    def __enter__(self):
        self.before = numba.get_num_threads()
        if self.n != self.before:
            numba.set_num_threads(self.n)
        return self.n

    def __exit__(self, *exc):
        if self.n != self.before:
            numba.set_num_threads(self.before)
        return False
