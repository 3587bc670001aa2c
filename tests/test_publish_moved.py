"""The moved vertices the daemon publishes, found on the engine's backend, equal the host scan's.

:meth:`Engine.moved` compares the published ranks with the last sent ones where the ranks live
and compacts the moved vertices there; :class:`connectors.kafka_sink.MovedRanks` scans every
vertex on the host (the publishing rule). Over a stream of batches that adds vertices, moves
ranks a little and a lot, both must name the same vertices with the same ranks and ids, and the
top-k found from a device cut must equal the host's full order.
"""

from __future__ import annotations

import numpy as np
import pytest

from connectors.kafka_sink import BATCH_KEY, MovedRanks, RankPublisher, TOP_K_KEY, decode_rank_batch
from streamrank import EdgeBatch, Engine, RankConfig
from streamrank.errors import InvalidArgumentError
from streamrank.rank.moved import MovedTracker, mark_sent, top_candidates


def _stream(seed: int, n: int = 300, batches: int = 12, per_batch: int = 40):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, n, size=(4 * n, 2))
    out = []
    for b in range(batches):
        hi = n + 20 * (b + 1)  # new vertices in every batch
        e = rng.integers(0, hi, size=(per_batch, 2))
        ins = rng.random(per_batch) < 0.8
        out.append((e[:, 0], e[:, 1], ins))
    return base, out


def _check_stream(device: str, *, threshold: float, dangling: str, string_ids: bool = False):
    base, batches = _stream(7)
    cfg = RankConfig(dangling=dangling)

    def ids(a):
        return np.array([f"v{int(v)}" for v in a], dtype=object) if string_ids else a

    eng = Engine(device, "auto", config=cfg, id_type="string" if string_ids else "int")
    eng.load_edges(ids(base[:, 0]), ids(base[:, 1]))
    tracker = MovedTracker(eng.backend.xp, threshold)
    host = MovedRanks(threshold)
    tracker.prime(eng.published())
    host.prime(eng.ranks()[1])
    total = 0
    for s, d, ins in batches:
        eng.apply(EdgeBatch.from_arrays(ids(s), ids(d), ins))
        ext, p = eng.ranks()
        want = host.moved(p)
        got = eng.moved(tracker)
        assert got.idx.tolist() == want.tolist()
        assert got.num_vertices == p.shape[0]
        np.testing.assert_allclose(got.p, p[want], rtol=1e-12, atol=0)
        assert got.ids.tolist() == ext[want].tolist()
        host.mark(want, p)
        mark_sent(tracker, got)
        total += len(got)
    assert total > 0  # the stream moved ranks, so the comparison compared something


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("threshold", [0.0, 1e-4])
def test_moved_on_backend_equals_host_scan_cpu(threshold, dangling):
    _check_stream("cpu", threshold=threshold, dangling=dangling)


def test_moved_string_ids_cpu():
    _check_stream("cpu", threshold=1e-4, dangling="uniform", string_ids=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("threshold", [0.0, 1e-6, 1e-4])
def test_moved_on_gpu_equals_full_scan(threshold, dangling):
    _check_stream("gpu", threshold=threshold, dangling=dangling)


@pytest.mark.gpu
def test_moved_on_gpu_string_ids():
    _check_stream("gpu", threshold=1e-5, dangling="uniform", string_ids=True)


@pytest.mark.gpu
def test_top_candidates_on_gpu(cp):
    rng = np.random.default_rng(3)
    p = rng.random(200_000)
    p[[5, 17, 99]] = 2.0  # ties at the top
    for k, hint in ((1, None), (3, None), (20, 0.5), (20, 1.5), (200, 10.0)):
        cand, kth = top_candidates(cp, cp.asarray(p), k, hint=hint)
        want = np.sort(p)[-k]
        assert kth == want
        assert sorted(cand.tolist()) == np.flatnonzero(p >= want).tolist()


def test_top_candidates_host():
    rng = np.random.default_rng(4)
    p = rng.random(5000)
    p[10:14] = 0.999999  # a tie across the cut for some k
    for k in (1, 5, 50, 4999, 5000, 6000):
        cand, kth = top_candidates(np, p, k, hint=None)
        if k >= p.shape[0]:
            assert cand.tolist() == list(range(p.shape[0]))
            continue
        want = np.sort(p)[-k]
        assert kth == want and sorted(cand.tolist()) == np.flatnonzero(p >= want).tolist()
    with pytest.raises(InvalidArgumentError):
        top_candidates(np, p, 0)


def test_tracker_grows_and_rejects_bad_threshold():
    t = MovedTracker(np, 0.1)
    assert t.moved_idx(np.array([0.05, 0.2])).tolist() == [1]  # new vertices: sent at 0
    t.mark(np.array([1]), np.array([0.2]))
    assert t.moved_idx(np.array([0.05, 0.2, 0.0, 0.5])).tolist() == [3]
    with pytest.raises(InvalidArgumentError):
        MovedTracker(np, -1.0)
    with pytest.raises(InvalidArgumentError):
        MovedTracker(np, float("nan"))


class _Capture:
    def __init__(self):
        self.sent = []

    def send(self, topic, *, key, value, headers):
        self.sent.append((key, value))


def test_send_equals_publish_messages():
    """The daemon's path (moved set and top-k from the engine, then ``send``) writes the same
    messages as ``publish`` over the full arrays."""
    from streamrank.daemon.publishing import RankOutput

    base, batches = _stream(11)
    eng = Engine("cpu", "auto")
    eng.load_edges(base[:, 0], base[:, 1])
    a, b = _Capture(), _Capture()
    kw = dict(threshold=1e-4, top_k=5, top_k_every=2, publish_format="both")
    full, daemon_pub = RankPublisher(a, "t", **kw), RankPublisher(b, "t", **kw)
    full.prime(eng.ranks()[1])
    out = RankOutput(eng, daemon_pub, None, threshold=kw["threshold"])
    out.prime(eng)
    for seq, (s, d, ins) in enumerate(batches, start=1):
        eng.apply(EdgeBatch.from_arrays(s, d, ins))
        want = full.publish(seq, *eng.ranks())
        got, ranks = out.publish(eng, seq, retry=lambda fn, what: fn())
        assert ranks is None and got == want
    assert len(a.sent) == len(b.sent) > 0
    for (ka, va), (kb, vb) in zip(a.sent, b.sent):
        assert ka == kb
        if ka == BATCH_KEY:
            sa, ia, ra = decode_rank_batch(va)
            sb, ib, rb = decode_rank_batch(vb)
            assert sa == sb and ia.tolist() == ib.tolist()
            np.testing.assert_allclose(ra, rb, rtol=1e-12)
        elif ka != TOP_K_KEY:
            assert va.split(b'"rank":')[0] == vb.split(b'"rank":')[0]
    assert any(k == TOP_K_KEY for k, _ in b.sent)
