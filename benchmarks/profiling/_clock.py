"""Clock wrappers the profiling scripts share: ``wrap(obj, name, label)`` replaces ``obj.name``
by a function that appends its wall time (us) to ``TIMES[label]``; :func:`wrap_graph_update`
splits a one-wait batch's ``graph_ms`` into its host parts (graph_ms_parts.py,
graph_update_scale.py)."""

import collections
import functools
import time

TIMES = collections.defaultdict(list)
#: CUDA event recorded on the current stream just before the graph update's captured graph is
#: launched (set by :func:`wrap_graph_update`): ``elapsed(LAUNCH["event"], stepper.graph_done)``
#: is the device time from the launch to the update's end, without the host's queueing.
LAUNCH = {}


def wrap(obj, name: str, label: str) -> None:
    f = getattr(obj, name)

    @functools.wraps(f)
    def timed(*a, **kw):
        t = time.perf_counter_ns()
        r = f(*a, **kw)
        TIMES[label].append((time.perf_counter_ns() - t) / 1e3)
        return r
    setattr(obj, name, timed)


#: The host pieces of the graph update that wrap_graph_update times, by label.
GRAPH_PIECES = ("launch_armed", "FastUpdater.launch", "stage", "staged_key", "replay", "counts", "arm", "_maybe_compact",
                "_ensure_room")


def wrap_graph_update() -> None:
    """Time a one-wait batch's graph update on the host: ``TIMES["pre"]`` the engine's work before
    queueing (from the batch's start to ``OneSyncStepper.apply``), ``"queue"`` the queueing
    (``GpuGraph.launch_fast``), ``"book"`` the bookkeeping after the wait (``finish_fast``),
    ``"upkeep"`` the upkeep for the next batch after it (``GpuGraph.upkeep``, not in ``graph_ms``;
    older builds do it inside ``finish_fast``), and the pieces inside them
    (:data:`GRAPH_PIECES`)."""
    from streamrank.rank.gpu import capture as gpu_batch_graph, step as gpu_step
    from streamrank.store import gpu as graph_gpu, gpu_fast as graph_gpu_fast

    apply = gpu_step.OneSyncStepper.apply

    def timed_apply(self, graph, batch, x_prev, algorithm, config, rank_module, t0):
        TIMES["pre"].append((time.perf_counter() - t0) * 1e6)
        return apply(self, graph, batch, x_prev, algorithm, config, rank_module, t0)

    gpu_step.OneSyncStepper.apply = timed_apply
    wrap(graph_gpu.GpuGraph, "launch_fast", "queue")
    wrap(graph_gpu.GpuGraph, "finish_fast", "book")
    if hasattr(graph_gpu.GpuGraph, "upkeep"):  # compaction and room after the bookkeeping (older builds: inside finish_fast)
        wrap(graph_gpu.GpuGraph, "upkeep", "upkeep")
    fu, gg = graph_gpu_fast.FastUpdater, graph_gpu.GpuGraph
    targets = (fu, fu, fu, fu, gpu_batch_graph.BatchGraphs, fu, fu, gg, gg)
    names = ("launch_armed", "launch", "stage", "staged_key", "replay", "counts", "arm", "_maybe_compact",
             "_ensure_room")
    for obj, name, label in zip(targets, names, GRAPH_PIECES):
        if hasattr(obj, name):  # older builds have no launch_armed, counts, arm
            wrap(obj, name, label)
    import cupy as cp

    LAUNCH["event"] = cp.cuda.Event()
    replay = gpu_batch_graph.BatchGraphs.replay  # (wrapped above: the event goes before its clock)

    def replay_after_event(self, slot, key, queue):
        if slot == "graph":
            LAUNCH["event"].record(cp.cuda.get_current_stream())
        return replay(self, slot, key, queue)

    gpu_batch_graph.BatchGraphs.replay = replay_after_event
    if hasattr(fu, "launch_armed"):  # an armed batch replays without BatchGraphs.replay
        armed = fu.launch_armed

        def armed_after_event(self, *a, **kw):
            LAUNCH["event"].record(cp.cuda.get_current_stream())
            return armed(self, *a, **kw)

        fu.launch_armed = armed_after_event
