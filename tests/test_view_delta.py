"""The HTTP API's shared view written from the entries that changed equals the engine's ranks.

:class:`~streamrank.daemon.live.LiveState` writes each slot of the shared view with only the
iterate entries that changed since that slot was last written (found on the engine's backend);
the reader computes the ranks from the iterate and the batch's factors. After every batch the
reader's ranks must be the engine's (the same numbers on the CPU), and a batch that touches one
part of the graph must write fewer entries than there are vertices.
"""

from __future__ import annotations

import numpy as np
import pytest

from streamrank import EdgeBatch, Engine, RankConfig
from streamrank.daemon.live import LiveState
from streamrank.daemon.shared_view import SnapshotReader, SnapshotWriter


def _two_parts(seed: int):
    """Two disconnected random graphs, ids 0..199 and 1000..1199."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 200, size=(800, 2))
    b = rng.integers(1000, 1200, size=(800, 2))
    e = np.concatenate([a, b])
    return e[:, 0], e[:, 1]


def _run(device: str, dangling: str, *, exact: bool):
    eng = Engine(device, "dfp", config=RankConfig(dangling=dangling))
    eng.load_edges(*_two_parts(5))
    live = LiveState()
    writer = SnapshotWriter()
    live.attach_shared(writer)
    written = []
    mirror = live._mirror
    real = mirror._changes

    def counting(xp, slot, full, x, flags):
        out = real(xp, slot, full, x, flags)
        written.append((full, int(out[0].shape[0]), int(x.shape[0])))
        return out

    mirror._changes = counting
    reader = SnapshotReader(writer.name)
    try:
        rng = np.random.default_rng(9)
        for k in range(10):
            if k % 3 == 2:  # new vertices too
                s, d = np.array([5000 + k, 3]), np.array([7, 6000 + k])
            else:  # inside the first part only
                s, d = rng.integers(0, 200, size=(2, 4))
            eng.apply(EdgeBatch.from_arrays(s, d, np.array([True] * (len(s) - 1) + [k % 2 == 0])))
            with live.engine_lock:
                live.publish(eng, info={"edges": len(s)})
            view = reader.view()
            ids, p = eng.ranks()
            assert view.seq == eng.seq and view.n == p.shape[0]
            assert view.ids.tolist() == ids.tolist()
            if exact:
                np.testing.assert_array_equal(view.p, p)
            else:
                np.testing.assert_allclose(view.p, p, rtol=1e-12, atol=0)
    finally:
        live.detach_shared().close()
    assert written[0][0] and written[1][0]  # each slot is written whole once
    assert all(not full for full, _, _ in written[2:])
    assert any(k < n for _, k, n in written[2:]), written  # the untouched part was not written again


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_view_from_changes_equals_engine_ranks_cpu(dangling):
    _run("cpu", dangling, exact=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_view_from_changes_equals_engine_ranks_gpu(dangling):
    _run("gpu", dangling, exact=False)
