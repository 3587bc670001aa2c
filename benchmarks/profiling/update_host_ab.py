"""The graph update's host clock (``StepResult.graph_ms``) of two or more builds in one process,
batch by batch: the same batch goes to one engine per build, in turn, the order turned round every
batch. A host-side change is measured this way because the host's speed differs between processes
on the lent machines by up to 2x, more than the changes being compared.

Each build is a package folder imported under a name of its own (``BUILDS``, name:dir pairs, dir
holding ``streamrank/``; default ``new:. base:.ab-base``, the base made with
``rm -rf .ab-base && mkdir .ab-base && git archive <rev> streamrank | tar -x -C .ab-base``).
Graphs and batches as in graph_update_scale.py (``_update_batches.py``: ``GRAPHS`` sxmo|rmat|both,
``SCALE``, ``EDGE_FACTOR``): batches of ``SIZES`` edges, ``BATCHES`` per size after 5 warm-up
batches, DF-P in ``DANGLING`` mode (default uniform); ``PAD=N`` creates ids ``0..N-1`` up front, as
the published protocol does (then self-loop mode is its setting). Prints per build and size the medians of
``graph_ms``, of its device span (the one-wait batch's CUDA events from before the graph update's
launch to its end; the rest of ``graph_ms`` is host time before that launch and the bookkeeping
after the wait), of the upkeep beside the rank loop (``OneSyncStepper.upkeep_ms``: the room for the
next batch, its staged graph update and its rank loop packed ahead) and of the whole
batch, and a fixed piece of host work timed before each batch (the host's speed). ``wall ms`` (nan for
older builds) is the graph update on the host clock alone, from the batch's start to
the end of its bookkeeping, the wait included (``OneSyncStepper.graph_wall_ms``, an upper bound of
``graph_ms``).

    SXMO=path/sx-mathoverflow.txt.gz PYTHONPATH=. python3 benchmarks/profiling/update_host_ab.py
"""
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _update_batches import graphs, random_batch  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work_us  # noqa: E402


def load_build(name: str, folder: str):
    """The package ``folder/streamrank`` imported as ``sr_<name>`` (relative imports inside it
    resolve within that copy, its kernels from its own folder)."""
    root = os.path.join(folder, "streamrank")
    pkg = f"sr_{name}"
    spec = importlib.util.spec_from_file_location(pkg, os.path.join(root, "__init__.py"),
                                                  submodule_search_locations=[root])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[pkg] = mod
    spec.loader.exec_module(mod)
    return (importlib.import_module(f"{pkg}.engine"), importlib.import_module(f"{pkg}.batch"),
            importlib.import_module(f"{pkg}.config"))


def main() -> None:
    builds = [b.split(":", 1) for b in os.environ.get("BUILDS", "new:. base:.ab-base").split()]
    mods = {name: load_build(name, folder) for name, folder in builds}
    sizes = [int(s) for s in os.environ.get("SIZES", "5,50,506,1000").split(",")]
    batches = int(os.environ.get("BATCHES", "60"))
    dangling = os.environ.get("DANGLING", "uniform")
    pad = int(os.environ.get("PAD", "0"))
    rng = np.random.default_rng(3)
    import cupy as cp

    print(f"{'graph':<34} {'batch':>6} {'build':>8} {'graph ms median':>16} {'p90':>7} {'span ms':>8} {'wall ms':>8} "
          f"{'upkeep ms':>10} {'batch ms median':>16} {'host probe us':>14}", flush=True)
    for gname, src, dst in graphs():
        engines = {}
        for name, (engm, _, cfgm) in mods.items():
            eng = engm.Engine("gpu", "dfp", config=cfgm.RankConfig(dangling=dangling))
            if pad:
                eng.add_vertices(np.arange(pad))
            eng.load_edges(src, dst)
            engines[name] = eng
        ids = np.unique(np.concatenate([src, dst]))
        names = list(engines)
        for size in sizes:
            g_ms = {n: [] for n in names}
            t_ms = {n: [] for n in names}
            probe = {n: [] for n in names}
            span = {n: [] for n in names}
            upkeep = {n: [] for n in names}
            wall = {n: [] for n in names}
            for b in range(batches + 5):
                bs, bd, ins = random_batch(rng, ids, src, dst, size)
                order = names if b % 2 == 0 else names[::-1]
                for n in order:
                    batch = mods[n][1].EdgeBatch.from_arrays(bs, bd, ins)
                    p = fixed_host_work_us()
                    st = engines[n].apply(batch)
                    if b >= 5:
                        g_ms[n].append(st.graph_ms)
                        t_ms[n].append(st.graph_ms + st.rank_ms)
                        probe[n].append(p)
                        stepper = engines[n]._stepper  # its events: the last one-wait batch's
                        span[n].append(cp.cuda.get_elapsed_time(stepper.start, stepper.graph_done))
                        wall[n].append(getattr(stepper, "graph_wall_ms", float("nan")))
                        upkeep[n].append(stepper.upkeep_ms)
            for n in names:
                print(f"{gname:<34} {size:>6} {n:>8} {np.median(g_ms[n]):>16.4f} {np.percentile(g_ms[n], 90):>7.4f} "
                      f"{np.median(span[n]):>8.4f} {np.median(wall[n]):>8.4f} {np.median(upkeep[n]):>10.4f} {np.median(t_ms[n]):>16.4f} "
                      f"{np.median(probe[n]):>14.1f}",
                      flush=True)
        del engines


if __name__ == "__main__":
    main()
