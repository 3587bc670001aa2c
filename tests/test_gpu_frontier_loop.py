"""The DF/DF-P loop as one cooperative launch (kernels/cuda/frontier_loop.cu) against the launch
sequence of pagerank.cu: same iterations, same per-iteration frontiers, same ranks; also when
the loop hands a grown frontier over to the sequence, and against the SciPy oracle."""

import zlib

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

pytestmark = pytest.mark.gpu


def _edges(rng, n=3000, m=20000, hubs=6):
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    hs = rng.choice(n, hubs, replace=False)
    s = np.concatenate([s, np.repeat(hs, 400), rng.integers(0, n, 400 * hubs)])
    d = np.concatenate([d, rng.integers(0, n, 400 * hubs), np.repeat(hs, 400)])
    # one hub past 1024 in- and out-edges: the block-per-vertex paths of the loop
    s = np.concatenate([s, np.full(1600, hs[0]), rng.integers(0, n, 1600)])
    d = np.concatenate([d, rng.integers(0, n, 1600), np.full(1600, hs[0])])
    return s, d


def _apply_random_batch(cp, gg, rng, k: int):
    """Apply ``k`` changes to ``gg`` as a device batch: 75% insertions between ids 0..3099 (some
    new vertices too), the rest deletions of stored edges; returns the applied changes."""
    es, ed = (_host(a) for a in gg.edges_external())
    ins = rng.random(k) < 0.75
    pick = rng.integers(0, len(es), k)
    bs = np.where(ins, rng.integers(0, 3100, k), es[pick])
    bd = np.where(ins, rng.integers(0, 3100, k), ed[pick])
    return gg.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(ins), xp=cp))


def _run(pagerank_gpu, monkeypatch, gg, ch, x, algorithm, cfg, *, loop, handover=None):
    from streamrank.rank.gpu import frontier_loop

    monkeypatch.setattr(frontier_loop, "_LOOP", loop)
    if handover is not None:
        monkeypatch.setattr(frontier_loop, "_LOOP_HANDOVER", handover)
    return pagerank_gpu.update_pagerank(algorithm, gg, ch, x, config=cfg)


def _record_handovers(monkeypatch, frontier_loop) -> list:
    """The iterations after which the loop handed its frontier over, as they happen."""
    done = []
    outcome = frontier_loop.loop_outcome

    def recording(*args):
        res = outcome(*args)
        if res[0] is None:
            done.append(res[1])
        return res

    monkeypatch.setattr(frontier_loop, "loop_outcome", recording)
    return done


def _later_handover(affected, grid: int, first: int):
    """A hand-over factor (frontier_loop._LOOP_HANDOVER) that makes the loop stop after iteration
    ``first + 1`` or a later one, given the launch sequence's frontier sizes: the largest of
    |F(1)| .. |F(j)| when |F(j + 1)| exceeds it (j >= first), and the iteration count j + 1 it
    stops after; None when the frontiers never grow so."""
    for j in range(first, len(affected) - 1):
        h = max(affected[1: j + 1])
        if affected[j + 1] > h:
            return (h + 0.5) / (grid * 256), j + 1
    return None


# handover 1e-9: after the first iteration (the loop's contributions then sit in the buffer of
# odd parity); "later": after a later iteration, chosen from the launch sequence's frontiers
@pytest.mark.parametrize("algorithm", ["df", "dfp"])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("handover", [None, 1e-9, "later"])
def test_loop_matches_launch_sequence(cp, monkeypatch, algorithm, dangling, handover):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop
    from streamrank.store.gpu import GpuGraph

    handed = _record_handovers(monkeypatch, frontier_loop)
    later = []  # the iteration counts after which a "later" hand-over happened
    default = frontier_loop._LOOP_HANDOVER

    rng = np.random.default_rng(zlib.crc32(f"{algorithm}/{dangling}/{handover}".encode()))
    s, d = _edges(rng)
    gg = GpuGraph.from_edges(s, d)
    # switch degree 8: both list kinds (thread and block per vertex) carry many vertices
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    x = pagerank_gpu.static_pagerank(gg, config=cfg).x
    for b, k in enumerate((1, 3, 40, 500)):
        ch = _apply_random_batch(cp, gg, rng, k)
        seq = _run(pagerank_gpu, monkeypatch, gg, ch, x, algorithm, cfg, loop=False)
        factor, stops = handover, None
        if handover == "later":  # after an even iteration count in some batches, odd in others
            grid = frontier_loop._loop_kernel("float64", int(dangling == "self-loop"), 2 if algorithm == "dfp" else 1)[1]
            factor, stops = _later_handover(seq.affected, grid, 1 + b % 2) or (default, None)
        handed.clear()
        loop = _run(pagerank_gpu, monkeypatch, gg, ch, x, algorithm, cfg, loop=True, handover=factor)
        if stops is not None:
            later.append(stops)
            assert handed == [stops]
        assert frontier_loop.loop_unavailable is None
        assert loop.converged and seq.converged
        assert loop.iterations == seq.iterations, k
        assert loop.affected == seq.affected, k  # the same frontier in every iteration
        assert loop.initially_affected == seq.initially_affected
        # the loop sums a short in-list with a warp (another rounding order than a thread)
        np.testing.assert_allclose(_host(loop.x), _host(seq.x), rtol=1e-10)
        assert abs(loop.total - seq.total) <= 1e-9 * seq.total
        x = loop.x
        ref = oracle_pagerank(gg, dangling=dangling)
        assert l1_error(_host(loop.ranks), ref) < 1e-5
    for ws in gg.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0  # every call cleared the flags it set
    if handover == "later":  # after an even and an odd iteration count
        assert {it % 2 for it in later} == {0, 1}, later


# Compile settings of the loop (frontier_loop's module constants) that the other tests leave at
# their defaults, each against the launch sequence: _LOOP_FOLD 0 (a kept small vertex appended on
# its own) and 2 (in its marking's first round in uniform mode too; the default 1 does so in
# self-loop mode only); _LOOP_HALVES 1 (half-block teams for large lists longer than the grid in
# self-loop mode too) and 0 (in neither mode); _LOOP_TRACE 1 (the per-warp trace into LOOP_TICKS,
# whose list sizes must be the loop's); _LOOP_MIN_BLOCKS (3, 4) (the other register budget and grid
# of each mode: 80 registers in self-loop mode, 64 in uniform mode); _LOOP_ARGS_SHARED 0 (the
# argument structs read from global memory) and 3 (both structs from shared memory; the default 5 is
# RankArgs and the decision's LoopLists fields)
@pytest.mark.parametrize("knob,value", [("_LOOP_FOLD", 0), ("_LOOP_FOLD", 2), ("_LOOP_HALVES", 1),
                                        ("_LOOP_HALVES", 0), ("_LOOP_TRACE", 1), ("_LOOP_MIN_BLOCKS", (3, 4)),
                                        ("_LOOP_ARGS_SHARED", 0), ("_LOOP_ARGS_SHARED", 3)])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_loop_knob_settings_match_launch_sequence(cp, monkeypatch, knob, value, dangling):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph
    from streamrank.rank.gpu import frontier_loop

    monkeypatch.setattr(frontier_loop, knob, value)
    grid = frontier_loop._loop_kernel("float64", int(dangling == "self-loop"), 2)[1]
    sizes_at = 2048 + 64 * grid * 8 * 4
    if knob == "_LOOP_TRACE":
        monkeypatch.setattr(frontier_loop, "LOOP_TICKS", cp.zeros(sizes_at + 128, dtype=cp.uint64))
    rng = np.random.default_rng(zlib.crc32(f"{knob}/{value}/{dangling}".encode()))
    s, d = _edges(rng)
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    x = pagerank_gpu.static_pagerank(gg, config=cfg).x
    for k in (3, 40, 500):
        ch = _apply_random_batch(cp, gg, rng, k)
        seq = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=False)
        loop = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=True)
        assert frontier_loop.loop_unavailable is None
        assert loop.iterations == seq.iterations and loop.affected == seq.affected, k
        np.testing.assert_allclose(_host(loop.x), _host(seq.x), rtol=1e-10)
        if knob == "_LOOP_TRACE":  # each traced iteration's small + large list sizes are its frontier's
            t = _host(frontier_loop.LOOP_TICKS).astype(np.int64)
            n = min(loop.iterations, 64)
            assert (t[sizes_at: sizes_at + 2 * n: 2] + t[sizes_at + 1: sizes_at + 2 * n: 2]).tolist() == loop.affected[:n]
        x = loop.x
        assert l1_error(_host(loop.ranks), oracle_pagerank(gg, dangling=dangling)) < 1e-5


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_frontier_stamps_across_the_epoch_limit(cp, monkeypatch, dangling):
    """The loop's frontier stamps (loop_marking.cuh) near the top of their 32-bit range and after
    the epoch starts again (stamps zeroed): the same iterations, frontiers and ranks as the launch
    sequence in every batch."""
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(zlib.crc32(f"epoch/{dangling}".encode()))
    s, d = _edges(rng, n=1500, m=9000, hubs=3)
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    x = pagerank_gpu.static_pagerank(gg, config=cfg).x
    epochs = []
    for b in range(4):
        ws = next(iter(gg.__dict__.get("_rank_workspaces", {}).values()), None)
        if b == 2:  # this batch stamps up to the limit's last values; the next one wraps
            ws.loop_epoch = frontier_loop._EPOCH_LIMIT - cfg.max_iter - 2
        es, ed = (_host(a) for a in gg.edges_external())
        pick = rng.integers(0, len(es), 30)
        ins = rng.random(30) < 0.7
        bs = np.where(ins, rng.integers(0, 1500, 30), es[pick])
        bd = np.where(ins, rng.integers(0, 1500, 30), ed[pick])
        ch = gg.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(ins), xp=cp))
        seq = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=False)
        loop = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=True)
        ws = next(iter(gg.__dict__["_rank_workspaces"].values()))
        epochs.append(ws.loop_epoch)
        assert loop.iterations == seq.iterations and loop.affected == seq.affected, b
        np.testing.assert_allclose(_host(loop.x), _host(seq.x), rtol=1e-10)
        x = loop.x
    assert epochs[2] == frontier_loop._EPOCH_LIMIT - 1  # batch 2 ran just under the limit
    assert epochs[3] == 1 + cfg.max_iter + 1  # batch 3 started again at epoch 1


def test_loop_stops_at_max_iter(cp, monkeypatch):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(7)
    s, d = _edges(rng, n=500, m=3000, hubs=2)
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(tol=1e-14, max_iter=3, frontier_tol=0.0, prune_tol=0.0)
    x = pagerank_gpu.static_pagerank(gg, config=RankConfig()).x
    ch = gg.apply(EdgeBatch.from_arrays(cp.asarray([1, 2]), cp.asarray([3, 4]), xp=cp))
    res = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=True)
    assert res.iterations == 3 and not res.converged
    assert len(res.affected) == 3
    for ws in gg.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("handover", [None, 1e-9])
def test_in_place_loop_meets_the_oracle(cp, monkeypatch, dangling, handover):
    """frontier_loop._LOOP_IN_PLACE: one contribution buffer (asynchronous relaxation), also after a
    hand-over to the launch sequence: the same fixed point as the Jacobi loop."""
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(zlib.crc32(f"in-place/{dangling}/{handover}".encode()))
    s, d = _edges(rng)
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    x = pagerank_gpu.static_pagerank(gg, config=cfg).x
    for k in (3, 40, 500):
        ch = _apply_random_batch(cp, gg, rng, k)
        jacobi = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=True, handover=handover)
        monkeypatch.setattr(frontier_loop, "_LOOP_IN_PLACE", True)
        res = _run(pagerank_gpu, monkeypatch, gg, ch, x, "dfp", cfg, loop=True, handover=handover)
        monkeypatch.setattr(frontier_loop, "_LOOP_IN_PLACE", False)
        assert res.converged and jacobi.converged
        ref = oracle_pagerank(gg, dangling=dangling)
        assert l1_error(_host(res.ranks), ref) < 1e-5
        assert l1_error(_host(res.ranks), _host(jacobi.ranks)) < 1e-6
        assert abs(float(res.x.sum()) - res.total) < 1e-9 * res.total
        x = res.x
    for ws in gg.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_auto_switches_to_warm_sweeps_when_the_frontier_floods(cp, monkeypatch, dangling):
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop
    from streamrank.store.gpu import GpuGraph

    rng = np.random.default_rng(11)
    s, d = _edges(rng)
    gg = GpuGraph.from_edges(s, d)
    cfg = RankConfig(dangling=dangling, switch_degree=8)
    x = pagerank_gpu.static_pagerank(gg, config=cfg).x
    es, ed = (_host(a) for a in gg.edges_external())
    ch = gg.apply(EdgeBatch.from_arrays(cp.asarray(es[:30]), cp.asarray(ed[:30]),
                                        cp.zeros(30, dtype=bool), xp=cp))
    ref = oracle_pagerank(gg, dangling=dangling)
    # no flood: auto is DF-P
    plain = pagerank_gpu.update_pagerank("auto", gg, ch, x, config=cfg)
    dfp = pagerank_gpu.update_pagerank("dfp", gg, ch, x, config=cfg)
    assert plain.algorithm == "dfp" and plain.iterations == dfp.iterations
    # a flood after the first iteration: warm sweeps finish the batch
    monkeypatch.setattr(frontier_loop, "_LOOP_HANDOVER", 1e-9)
    monkeypatch.setattr(pagerank_gpu, "_AUTO_FLOOD", 1e-9)
    res = pagerank_gpu.update_pagerank("auto", gg, ch, x, config=cfg)
    assert res.algorithm == "dfp>warm" and res.converged
    assert res.iterations > len(res.affected[:1])
    warm = pagerank_gpu.update_pagerank("warm", gg, ch, x, config=cfg)
    assert warm.algorithm == "warm" and warm.converged
    for r in (res, warm):
        assert l1_error(_host(r.ranks), ref) < 1e-8
        assert abs(float(r.x.sum()) - r.total) < 1e-9 * r.total
    for ws in gg.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0
