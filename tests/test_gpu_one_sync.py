"""A small batch with one host wait (streamrank/rank/gpu/step.py: the fast graph update and the
cooperative DF/DF-P loop queued back to back, the loop reading the batch's sizes from the graph
update's device counters) against the same engine in two synchronized steps
(engine.ONE_SYNC False): the same changes, iterations, frontiers and ranks, batch after batch;
also with new vertices, deletions, dropped edges, a batch that changes nothing, the reserved room
running out (the fast launch reports it, the batch goes the slow way), a loop that hands its
frontier over, ``auto`` switching to warm sweeps, and string ids. Ranks against the SciPy oracle."""

import zlib

import numpy as np
import pytest

from streamrank.backend import to_host as _host
from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

pytestmark = pytest.mark.gpu


def _base(rng, n=3000, m=20000, hubs=6):
    s = rng.integers(0, n, m)
    d = rng.integers(0, n, m)
    hs = rng.choice(n, hubs, replace=False)
    s = np.concatenate([s, np.repeat(hs, 400), rng.integers(0, n, 400 * hubs)])
    d = np.concatenate([d, rng.integers(0, n, 400 * hubs), np.repeat(hs, 400)])
    return s, d


def _batches(rng, s, d, n=3000):
    """Batches of 1..3000 edges: insertions (some of new vertices, some repeated), deletions of
    present edges, deletions of absent ones; one batch that changes nothing; one past the fast
    path's largest batch."""
    out = []
    for k in (1, 5, 50, 2, 500, 7, 2048, 3000, 40):
        ins = rng.random(k) < 0.7
        pick = rng.integers(0, len(s), k)
        bs = np.where(ins, rng.integers(0, n + 200, k), s[pick])
        bd = np.where(ins, rng.integers(0, n + 200, k), d[pick])
        if k >= 5:
            bs[-1], bd[-1], ins[-1] = bs[0], bd[0], ins[0]  # an in-batch duplicate
        out.append((bs, bd, ins))
    # a batch that changes nothing: insertions of present edges only
    out.insert(4, (s[:3].copy(), d[:3].copy(), np.ones(3, dtype=bool)))
    return out


def _engine(monkeypatch, one_sync, algorithm, cfg, s, d, graphs=True, **kw):
    from streamrank import engine as engine_mod
    from streamrank.rank.gpu import step as gpu_step

    monkeypatch.setattr(engine_mod, "ONE_SYNC", one_sync)
    monkeypatch.setattr(gpu_step, "CUDA_GRAPHS", graphs)
    eng = engine_mod.Engine("gpu", algorithm, config=cfg, **kw)
    eng.load_edges(s, d)
    assert (eng._stepper is not None) == one_sync
    return eng


def _mixed_batches(cp, rng, s, d, n_ids, k, new, fresh, device):
    """One random batch of ``k`` edges over ``s -> d`` (ids below ``n_ids``): 80% insertions, the
    rest deletions of stored edges, the first ``new`` of them insertions to ids taken from
    ``fresh`` (new vertices). Returns it twice: for the engine under test (on the device when
    ``device``) and, on the host, for the reference engine."""
    ins = rng.random(k) < 0.8
    ins[:new] = True
    pick = rng.integers(0, len(s), k)
    bs = np.where(ins, rng.integers(0, n_ids, k), s[pick])
    bd = np.where(ins, rng.integers(0, n_ids, k), d[pick])
    bd[:new] = [next(fresh) for _ in range(new)]
    host = EdgeBatch.from_arrays(bs, bd, ins)
    if device:
        return EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(ins), xp=cp), host
    return EdgeBatch.from_arrays(bs, bd, ins), host


def _same_step(a, b, dangling, warm_config=None):
    """The same changes, iterations, frontiers and ranks in both engines; after warm sweeps
    (``warm_config``, the engines' RankConfig) the ranks within its tolerance's bound."""
    assert a.changes.num_insertions == b.changes.num_insertions
    assert a.changes.num_deletions == b.changes.num_deletions
    assert a.changes.num_vertices_after == b.changes.num_vertices_after
    assert a.changes.dropped == b.changes.dropped
    np.testing.assert_array_equal(_host(a.changes.ins_src), _host(b.changes.ins_src))
    np.testing.assert_array_equal(_host(a.changes.del_dst), _host(b.changes.del_dst))
    assert a.rank.converged and b.rank.converged
    assert a.rank.x.shape == b.rank.x.shape
    assert a.graph_ms > 0 and a.rank_ms > 0
    if warm_config is not None:
        _close_after_warm(a, b, warm_config, "")
        return
    assert a.rank.algorithm == b.rank.algorithm
    assert a.rank.iterations == b.rank.iterations
    assert a.rank.affected == b.rank.affected  # the same frontier in every iteration
    np.testing.assert_allclose(_host(a.rank.x), _host(b.rank.x), rtol=1e-12)


def _warm_bound(config):
    """How far apart two runs after warm sweeps may be in ``p`` (see :func:`_close_after_warm`)."""
    return 2.0 * config.tol * config.alpha / (1.0 - config.alpha)


def _close_after_warm(a, b, config, err_msg):
    """Two runs of the same batch whose last steps were warm sweeps agree to what their shared
    convergence test allows, not bit for bit: a sweep updates the ranks in place, so what a vertex
    reads depends on the order its blocks ran. Each run stops once the largest change of ``p`` is
    under ``tol``, which leaves it within about ``tol * alpha / (1 - alpha)`` of the fixed point;
    the two within twice that. (A relative tolerance of 1e-9 is too tight: relative differences up
    to 8.8e-10 are common.)"""
    xa, xb = _host(a.rank.x), _host(b.rank.x)
    assert xa.shape == xb.shape
    np.testing.assert_allclose(xa / xa.sum(), xb / xb.sum(), rtol=0, atol=_warm_bound(config), err_msg=err_msg)


@pytest.mark.parametrize("algorithm", ["df", "dfp", "auto"])
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("graphs", [True, False])
def test_one_wait_matches_two_steps(cp, monkeypatch, algorithm, dangling, graphs):
    """With the batch replayed from captured CUDA graphs (graphs=True) and queued call by call."""
    rng = np.random.default_rng(zlib.crc32(f"one-sync/{algorithm}/{dangling}".encode()))
    s, d = _base(rng)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    one = _engine(monkeypatch, True, algorithm, cfg, s, d, graphs=graphs)
    two = _engine(monkeypatch, False, algorithm, cfg, s, d)
    exact = True
    for bs, bd, ins in _batches(rng, s, d):
        a = one.apply(EdgeBatch.from_arrays(bs, bd, ins))
        b = two.apply(EdgeBatch.from_arrays(bs, bd, ins))
        # warm sweeps run in place: from then on the iterates agree to the tolerance, not bit for bit
        exact = exact and "warm" not in a.rank.algorithm + b.rank.algorithm
        _same_step(a, b, dangling, None if exact else cfg)
        if a.changes.num_insertions + a.changes.num_deletions == 0 and a.rank.algorithm in ("df", "dfp"):
            assert a.rank.iterations == 0 and a.rank.affected == []
    assert one._stepper.steps >= (1 if algorithm == "auto" else 8)  # auto: warm batches go the usual way
    if graphs:
        assert one._stepper.graphs.unavailable is None and one._stepper.graphs.captures >= 2
    assert one.graph.num_vertices > 3000  # new vertices arrived through it
    ref = oracle_pagerank(one.graph, dangling=dangling)
    assert l1_error(one.ranks()[1], ref) < 1e-6
    np.testing.assert_array_equal(np.sort(_host(one.graph.edges_external()[0])),
                                  np.sort(_host(two.graph.edges_external()[0])))
    for ws in one.graph.__dict__.get("_rank_workspaces", {}).values():
        assert int(ws.aff.sum()) == 0  # every batch cleared the flags it set


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("overlap,mapped", [(True, True), (False, True), (True, False)])
def test_reserved_room_running_out(cp, monkeypatch, dangling, overlap, mapped):
    """The id map left without room every few batches: a batch with new vertices overflows the
    fast launch (it writes nothing, the loop returns at once) and goes the slow way, which
    re-reserves; nothing is lost, and the ranks are those of the two-step engine. With the
    graph's bookkeeping overlapping the loop (the default) and after the one wait; with the
    staged batch read and the counters written by the kernel in mapped host memory (the default)
    and both copied."""
    from streamrank.rank.gpu import step as gpu_step
    from streamrank.store import gpu_fast as graph_gpu_fast
    from streamrank.ids.gpu import GpuIdMap

    monkeypatch.setattr(gpu_step, "OVERLAP_BOOKKEEPING", overlap)
    monkeypatch.setattr(graph_gpu_fast, "MAPPED_COUNTERS", mapped)
    monkeypatch.setattr(graph_gpu_fast, "MAPPED_STAGING", mapped)

    rng = np.random.default_rng(zlib.crc32(f"one-sync-room/{dangling}".encode()))
    s, d = _base(rng, n=400, m=2000, hubs=2)
    cfg = RankConfig(dangling=dangling, tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, s, d)
    two = _engine(monkeypatch, False, "dfp", cfg, s, d)
    nxt = 10_000
    for k in range(12):
        if k % 3 == 0:
            for eng in (one, two):
                eng.graph.ids = GpuIdMap.from_external(eng.graph.ids.external, cp, room=0)
        m = 1 + (k * 37) % 200
        bs = rng.integers(0, 400, m)
        bd = np.arange(nxt, nxt + m)  # m new vertices per batch
        nxt += m
        ins = np.ones(m, dtype=bool)
        _same_step(one.apply(EdgeBatch.from_arrays(bs, bd, ins)), two.apply(EdgeBatch.from_arrays(bs, bd, ins)),
                   dangling)
    assert one._stepper.misfits == 4 and one._stepper.steps == 8
    fast = one.graph._fast
    assert (fast.host_dev_ptr != 0) == (fast.stage_mapped_ptr != 0) == mapped  # H100/H200 map pinned memory
    # the id map rebuilt by the slow path holds new addresses: graph G was captured again
    assert one._stepper.graphs.captures >= 4
    assert one.graph.num_vertices == two.graph.num_vertices == 400 + nxt - 10_000
    ref = oracle_pagerank(one.graph, dangling=dangling)
    assert l1_error(one.ranks()[1], ref) < 1e-6


@pytest.mark.parametrize("rehearse", [False, True])
@pytest.mark.parametrize("algorithm", ["dfp", "auto"])
def test_hand_over_after_the_wait(cp, monkeypatch, algorithm, rehearse):
    """The loop hands a grown frontier over (to the launch sequence; ``auto``: to warm sweeps):
    the continuation runs after the batch's wait, with the vertex count then known. The host's
    rehearsal after a long batch (streamrank/rank/gpu/rehearsal.py) runs after every batch
    (``rehearse``) or after none: which batches are long depends on the machine (a cold kernel
    cache makes them long). ``auto``'s warm sweeps are compared within their tolerance's bound."""
    from streamrank.rank.gpu import frontier_loop
    from streamrank.rank.gpu import rehearsal as host_rehearsal, pagerank as pagerank_gpu

    rng = np.random.default_rng(zlib.crc32(f"one-sync-handover/{algorithm}".encode()))
    s, d = _base(rng)
    cfg = RankConfig(switch_degree=8, tol=1e-12)
    monkeypatch.setattr(frontier_loop, "_LOOP_HANDOVER", 1e-9)
    monkeypatch.setattr(pagerank_gpu, "_AUTO_FLOOD", 0.01)
    monkeypatch.setattr(host_rehearsal, "AFTER_MS", 0.0 if rehearse else float("inf"))
    one = _engine(monkeypatch, True, algorithm, cfg, s, d)
    two = _engine(monkeypatch, False, algorithm, cfg, s, d)
    assert one._stepper.rehearsal is not None
    ran = set()
    for i, (bs, bd, ins) in enumerate(_batches(rng, s, d)):
        a = one.apply(EdgeBatch.from_arrays(bs, bd, ins))
        b = two.apply(EdgeBatch.from_arrays(bs, bd, ins))
        ran.add(a.rank.algorithm)
        if algorithm == "auto":  # the flood threshold is 1% of the vertices before vs after the batch
            assert a.rank.algorithm == b.rank.algorithm
            _close_after_warm(a, b, cfg, f"batch {i} of {len(bs)} edges, {a.rank.algorithm}, "
                                         f"{a.rank.iterations} / {b.rank.iterations} iterations")
        else:
            _same_step(a, b, "uniform")
    if algorithm == "auto":
        assert "dfp>warm" in ran
    assert (one._stepper.rehearsal.runs > 0) == rehearse
    assert one._stepper.steps >= (1 if algorithm == "auto" else 8)  # auto: warm batches go the usual way
    ref = oracle_pagerank(one.graph, dangling="uniform")
    assert l1_error(one.ranks()[1], ref) < 1e-6


def test_string_ids_take_the_one_wait_path(cp, monkeypatch):
    rng = np.random.default_rng(5)
    s, d = _base(rng, n=300, m=2000, hubs=2)
    name = lambda a: np.array([f"v{int(v)}" for v in a], dtype=object)  # noqa: E731
    cfg = RankConfig(tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, name(s), name(d), id_type="string")
    two = _engine(monkeypatch, False, "dfp", cfg, name(s), name(d), id_type="string")
    for k in (3, 30):
        bs, bd = name(rng.integers(0, 320, k)), name(rng.integers(0, 320, k))
        _same_step(one.apply(EdgeBatch.from_arrays(bs, bd)), two.apply(EdgeBatch.from_arrays(bs, bd)), "uniform")
    assert one._stepper.steps == 2
    ea, pa = one.ranks()
    eb, pb = two.ranks()
    assert list(ea) == list(eb)
    np.testing.assert_allclose(pa, pb, rtol=1e-12)


@pytest.mark.parametrize("mapped", [True, False])
def test_device_batches_are_queued_call_by_call(cp, monkeypatch, mapped):
    """A batch already on the device takes the one-wait path without the captured graphs (the
    counters mapped or copied)."""
    from streamrank.store import gpu_fast as graph_gpu_fast

    monkeypatch.setattr(graph_gpu_fast, "MAPPED_COUNTERS", mapped)
    rng = np.random.default_rng(6)
    s, d = _base(rng, n=500, m=3000, hubs=2)
    cfg = RankConfig(tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, s, d)
    two = _engine(monkeypatch, False, "dfp", cfg, s, d)
    for k in (4, 60):
        bs, bd = rng.integers(0, 520, k), rng.integers(0, 520, k)
        a = one.apply(EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), xp=cp))
        _same_step(a, two.apply(EdgeBatch.from_arrays(bs, bd)), "uniform")
    assert one._stepper.steps == 2 and one._stepper.graphs.captures == 0


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_armed_launch_and_what_disarms_it(cp, monkeypatch, dangling):
    """Between batches the upkeep stages the next host batch's header and looks up its captured
    graph (FastUpdater.arm): a following host batch only copies its edges and replays. Whatever
    changes the store in between must send the batch the usual way: a slow-path batch (the
    version), a compaction (new arrays, other ends of idx), a rebuilt id map without room (another
    room), a batch from the device (not armed). Every step against the two-step engine and the
    oracle."""
    rng = np.random.default_rng(zlib.crc32(f"one-sync-armed/{dangling}".encode()))
    s, d = _base(rng, n=800, m=6000, hubs=3)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, s, d)
    two = _engine(monkeypatch, False, "dfp", cfg, s, d)

    fresh = iter(range(10_000, 20_000))  # ids of no vertex yet

    def step(k, new=0, device=False):
        a_batch, b_batch = _mixed_batches(cp, rng, s, d, 800, k, new, fresh, device)
        _same_step(one.apply(a_batch), two.apply(b_batch), dangling)

    from streamrank.ids.gpu import GpuIdMap

    fast = lambda: one.graph._fast  # noqa: E731
    step(20)
    assert fast().armed_launches == 0  # the first batch arms the next
    step(30)
    step(70, new=50)
    assert fast().armed_launches == 2
    step(2500)  # past the fast path's largest batch: the slow path (version + 1)
    step(40)
    assert fast().armed_launches == 2  # its header was staged before the slow batch: not taken
    step(40)
    assert fast().armed_launches == 3
    for eng in (one, two):
        eng.graph.compact()  # new idx arrays, other ends
    step(60)
    assert fast().armed_launches == 3
    step(60)
    assert fast().armed_launches == 4
    for eng in (one, two):
        eng.graph.ids = GpuIdMap.from_external(eng.graph.ids.external, cp, room=0)
    step(40, new=30)  # no room for its new vertices: the usual launch overflows, the slow path applies it
    step(25)
    step(9, device=True)  # a device batch: not armed, and it arms nothing
    step(9)
    step(9)
    assert fast().armed_launches == 5
    assert one._stepper.misfits == 1
    ref = oracle_pagerank(one.graph, dangling=dangling)
    assert l1_error(one.ranks()[1], ref) < 1e-6
    np.testing.assert_array_equal(np.sort(_host(one.graph.edges_external()[0])),
                                  np.sort(_host(two.graph.edges_external()[0])))


@pytest.mark.parametrize("algorithm,dangling", [("dfp", "uniform"), ("dfp", "self-loop"), ("df", "uniform"),
                                                ("auto", "uniform")])
def test_armed_loop_and_what_disarms_it(cp, monkeypatch, algorithm, dangling):
    """Beside each one-wait batch's loop the next batch's loop is packed ahead
    (pagerank_gpu.arm_update): the next batch writes its edge sections into the image and replays.
    Whatever the image holds must still be what the batch sees, else the loop is packed the usual
    way: another config object, a slow-path batch (version, and a loop packed in between: the stamp
    epochs), a compaction (the graph arrays), a replaced iterate, a device batch. Every step against
    the two-step engine (the same iterations, frontiers and ranks; ``auto`` may probe warm sweeps,
    which run in place and go the usual way, so there the counts are not fixed and the ranks agree
    to the tolerance after them) and the final ranks against the oracle."""
    from dataclasses import replace

    rng = np.random.default_rng(zlib.crc32(f"one-sync-armed-loop/{algorithm}/{dangling}".encode()))
    s, d = _base(rng, n=900, m=7000, hubs=3)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    one = _engine(monkeypatch, True, algorithm, cfg, s, d)
    two = _engine(monkeypatch, False, algorithm, cfg, s, d)
    fresh = iter(range(10_000, 20_000))
    exact = [True]
    fixed = algorithm != "auto"

    def step(k, new=0, device=False):
        a_batch, b_batch = _mixed_batches(cp, rng, s, d, 900, k, new, fresh, device)
        a, b = one.apply(a_batch), two.apply(b_batch)
        exact[0] = exact[0] and "warm" not in a.rank.algorithm + b.rank.algorithm
        _same_step(a, b, dangling, None if exact[0] else cfg)

    def armed(expected):
        if fixed:
            assert one._stepper.armed_ranks == expected

    step(10)
    armed(0)  # the first batch arms the next
    step(30, new=20)  # new vertices: the image's room for them
    step(200)
    step(1)
    armed(3)
    for eng in (one, two):
        eng.config = replace(cfg)  # an equal config, another object: packed as usual
    step(20)
    armed(3)
    step(20)
    armed(4)
    step(2500)  # the slow path: another version, and its loop packed on the same workspace
    step(40)
    armed(4)
    step(40)
    armed(5)
    for eng in (one, two):
        eng.graph.compact()  # new idx arrays: the image's addresses are stale
    step(60)
    armed(5)
    step(60)
    armed(6)
    for eng in (one, two):
        eng.x = eng.x.copy()  # another iterate (as a restored checkpoint would bring)
    step(25)
    armed(6)
    step(9)
    armed(7)
    step(9, device=True)  # a device batch replays nothing: not armed, and it arms nothing
    step(9)
    armed(7)
    step(9)
    armed(8)
    assert one._stepper.armed_ranks >= 1 and one._stepper.misfits == 0
    if fixed:
        assert one._stepper.steps == 15
    ref = oracle_pagerank(one.graph, dangling=dangling)
    assert l1_error(one.ranks()[1], ref) < 1e-6
    assert l1_error(two.ranks()[1], ref) < 1e-6


@pytest.mark.parametrize("why", ["out of memory", "over the size cap"])
def test_a_failed_arming_leaves_the_batch_applied(cp, monkeypatch, why):
    """Packing the next loop ahead runs after the batch's graph update was applied: a CUDA error
    there (out of device memory) arms nothing and fails nothing, and an iterate over
    pagerank_gpu._ARM_MAX_BYTES is not armed; the next batch packs its loop the usual way, with the
    same ranks as the two-step engine."""
    from streamrank.rank.gpu import pagerank as pagerank_gpu
    from streamrank.rank.gpu import frontier_loop

    def no_memory(*a, **kw):
        raise cp.cuda.memory.OutOfMemoryError(1 << 40, 0)

    if why == "out of memory":
        monkeypatch.setattr(frontier_loop, "arm_loop", no_memory)
    else:
        monkeypatch.setattr(pagerank_gpu, "_ARM_MAX_BYTES", 8 * 4000)  # under 500 vertices + the room
    rng = np.random.default_rng(zlib.crc32(b"one-sync-arm-fails"))
    s, d = _base(rng, n=500, m=3000, hubs=2)
    cfg = RankConfig(switch_degree=8, tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, s, d)
    two = _engine(monkeypatch, False, "dfp", cfg, s, d)
    for k in (5, 40, 300, 7):
        bs, bd = rng.integers(0, 520, k), rng.integers(0, 520, k)
        _same_step(one.apply(EdgeBatch.from_arrays(bs, bd)), two.apply(EdgeBatch.from_arrays(bs, bd)), "uniform")
    assert one._stepper.steps == 4 and one._stepper.armed_ranks == 0
    assert one.graph._fast.armed_launches == 3  # the graph update's arming is separate


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_rehearsal_after_every_batch_changes_nothing(cp, monkeypatch, dangling):
    """The host's rehearsal of the next batch's first steps (streamrank/rank/gpu/rehearsal.py), forced
    after every one-wait batch: its staging copies land where the next armed launch writes its own
    edges, its checks and driver calls change nothing. Every step against the two-step engine, new
    vertices, deletions, a slow-path batch and a device batch in between, the end against the
    oracle."""
    from streamrank.rank.gpu import rehearsal as host_rehearsal

    monkeypatch.setattr(host_rehearsal, "AFTER_MS", 0.0)
    rng = np.random.default_rng(zlib.crc32(f"one-sync-rehearsal/{dangling}".encode()))
    s, d = _base(rng, n=800, m=6000, hubs=3)
    cfg = RankConfig(dangling=dangling, switch_degree=8, tol=1e-12)
    one = _engine(monkeypatch, True, "dfp", cfg, s, d)
    two = _engine(monkeypatch, False, "dfp", cfg, s, d)
    assert one._stepper.rehearsal is not None
    fresh = iter(range(10_000, 20_000))
    host_batches = 0
    for k, new, device in [(20, 0, False), (30, 0, False), (70, 50, False), (2500, 0, False), (40, 0, False),
                           (9, 0, True), (40, 5, False), (1, 0, False), (2048, 0, False), (60, 0, False)]:
        a_batch, b_batch = _mixed_batches(cp, rng, s, d, 800, k, new, fresh, device)
        _same_step(one.apply(a_batch), two.apply(b_batch), dangling)
        host_batches += not device and k <= 2048
    # every host one-wait batch that fitted the reserved room, none of the others
    assert one._stepper.rehearsal.runs == host_batches - one._stepper.misfits
    assert one.graph._fast.armed_launches >= 5  # the rehearsed staging did not stop the armed launches
    monkeypatch.setattr(host_rehearsal, "ENABLED", False)
    a_batch, b_batch = _mixed_batches(cp, rng, s, d, 800, 30, 0, fresh, False)
    _same_step(one.apply(a_batch), two.apply(b_batch), dangling)
    assert one._stepper.rehearsal.runs == host_batches - one._stepper.misfits
    ref = oracle_pagerank(one.graph, dangling=dangling)
    assert l1_error(one.ranks()[1], ref) < 1e-6
    np.testing.assert_array_equal(np.sort(_host(one.graph.edges_external()[0])),
                                  np.sort(_host(two.graph.edges_external()[0])))
