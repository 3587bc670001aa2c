"""Clock wrappers the profiling scripts share: ``wrap(obj, name, label)`` replaces ``obj.name``
by a function that appends its wall time (us) to ``TIMES[label]``."""

import collections
import functools
import time

TIMES = collections.defaultdict(list)


def wrap(obj, name: str, label: str) -> None:
    f = getattr(obj, name)

    @functools.wraps(f)
    def timed(*a, **kw):
        t = time.perf_counter_ns()
        r = f(*a, **kw)
        TIMES[label].append((time.perf_counter_ns() - t) / 1e3)
        return r
    setattr(obj, name, timed)
