"""The weighted store's fused path (kernels/cuda/graph_weighted_fast.cu around graph_fast_update.cu
built with FU_WEIGHTED), run on the host.

The real CUDA sources are compiled with g++ against the host emulation of the intrinsics
(tests/cuda_emu/cuda_host.h) and driven by a NumPy model of WeightedGpuGraph's host side (the
unweighted model of tests/fast_update_model.py with a weight beside every slot and the
out-weights). Batch after batch under ``set`` and ``sum``, with repeats, reweights, deletions with
and without a weight, new ids and a hub whose list moves: the model must hold exactly
WeightedCpuGraph's edges and weights under the same internal ids, in both directions, its
out-weights, changes, drop counts and reweighted pairs (also listed after the insertions for the
rank loop). tests/test_gpu_weighted.py checks the real store on a device. Marked slow (each launch
starts its threads and synchronizes them many times).
"""

import ctypes

import numpy as np
import pytest

from fast_update_model import _I, _LL, _U64, FAST_MAX, _Model, _p, build_lib
from streamrank.batch import EdgeBatch
from streamrank.kernels.cpu.weighted_csr import ZERO_REL
from streamrank.store.cpu_weighted import WeightedCpuGraph

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_lib(tmp_path_factory, "weighted_fast_host.cpp")


class _WModel(_Model):
    """The model with ``wt`` beside each direction's ``idx`` and the out-weights ``W``."""

    def __init__(self, lib, **kw):
        super().__init__(lib, **kw)
        for d in self.dirs:
            d.wt = np.zeros(d.idx.shape[0], np.float64)
        self.W = np.zeros(self.vcap, np.float64)
        self.hdr = np.zeros((64 + 17 * FAST_MAX) // 8 + 1, np.int64)
        self.wwork = np.zeros(1 << 18, np.uint8)

    def reserve(self):
        super().reserve()
        for d in self.dirs:  # a longer idx: the weights beside it
            if d.wt.shape[0] != d.idx.shape[0]:
                w = np.zeros(d.idx.shape[0], np.float64)
                w[: d.end] = d.wt[: d.end]
                d.wt = w
        if self.W.shape[0] < self.vcap:
            W = np.zeros(self.vcap, np.float64)
            W[: self.n] = self.W[: self.n]
            self.W = W

    def apply_weighted(self, s, d, ins, w, summing: bool):
        s, d = np.ascontiguousarray(s, np.int64), np.ascontiguousarray(d, np.int64)
        ins, w = np.ascontiguousarray(ins, np.uint8), np.ascontiguousarray(w, np.float64)
        m = s.shape[0]
        changes = np.zeros(4 * m, np.int64)
        room = min(self.vcap - self.n, self.keys.shape[0] // 2 - self.n, self.ext.shape[0] - self.n)
        o, i = self.dirs
        # the staged batch (WeightedFastUpdater's layout: a header, then src, dst, weights, flags)
        stage = np.zeros(8 + 3 * FAST_MAX + FAST_MAX // 8, np.int64)
        stage[:7] = m, self.n, room, o.end, i.end, changes.ctypes.data, int(summing)
        stage[8: 8 + m] = s
        stage[8 + FAST_MAX: 8 + FAST_MAX + m] = d
        stage[8 + 2 * FAST_MAX: 8 + 3 * FAST_MAX].view(np.float64)[:m] = w
        stage[8 + 3 * FAST_MAX:].view(np.uint8)[:m] = ins
        self.lib.emu_weighted_fast_update(
            _p(stage), ctypes.c_double(ZERO_REL), _p(self.keys), _p(self.vals), _U64(self.keys.shape[0] - 1),
            _p(self.ext), _p(o.off), _p(o.deg), _p(o.cap), _p(o.idx), _p(o.wt), _LL(o.idx.shape[0]),
            _p(i.off), _p(i.deg), _p(i.cap), _p(i.idx), _p(i.wt), _LL(i.idx.shape[0]),
            _p(self.W), _p(self.hdr), _p(self.work), _LL(self.work.nbytes), _p(self.wwork),
            _p(self.counters), _p(self.hcounters), _I(self.grid))
        assert np.array_equal(self.hcounters[:13], self.counters[:13])  # the host's copy too
        self.hcounters[:] = -7
        c = [int(v) for v in self.counters[:13]]
        if c[0] == 0:
            self.n += c[1]
            o.end, i.end = c[7], c[8]
        return c, changes


def _lists(model, direction: int) -> dict:
    """``{(src, dst): weight}`` in external ids from one direction of the model."""
    d, ext, out = model.dirs[direction], model.ext, {}
    for v in range(model.n):
        lo = int(d.off[v])
        for t, x in zip(d.idx[lo: lo + d.deg[v]].tolist(), d.wt[lo: lo + d.deg[v]].tolist()):
            key = (int(ext[v]), int(ext[t])) if direction == 0 else (int(ext[t]), int(ext[v]))
            assert key not in out
            out[key] = x
    return out


def _step(model, cpu, s, d, ins, w, mode):
    c, changes = model.apply_weighted(s, d, ins, w, mode == "sum")
    assert c[0] == 0, f"overflow {c[0]}"
    ch = cpu.apply(EdgeBatch.from_arrays(np.asarray(s), np.asarray(d), np.asarray(ins, bool), weight=w))
    assert (c[2], c[3], c[1], c[12]) == (ch.num_insertions, ch.num_deletions, ch.num_new_vertices, ch.num_reweights)
    assert {"duplicate": c[9], "present_insertion": c[10], "absent_deletion": c[11]} == ch.dropped
    n = model.n
    assert np.array_equal(model.ext[:n], cpu.ids.external)  # the same internal ids
    cs, cd = cpu.edges()
    ext = cpu.ids.external
    want = dict(zip(zip(ext[cs].tolist(), ext[cd].tolist()), cpu.edge_weights().tolist()))
    assert _lists(model, 0) == want and _lists(model, 1) == want  # the same weights, bit for bit
    np.testing.assert_allclose(model.W[:n], cpu.out_weight, rtol=1e-12)
    m = s.shape[0]
    rews = set(zip(ch.reweighted_src.tolist(), ch.reweighted_dst.tolist()))
    k = c[12]
    listed = changes[c[2]: c[2] + k], changes[m + c[2]: m + c[2] + k]  # after the insertions
    assert set(zip(listed[0].tolist(), listed[1].tolist())) == rews
    model.reserve()


@pytest.mark.parametrize("mode", ["set", "sum"])
def test_weighted_batches_match_the_cpu_store(lib, mode):
    rng = np.random.default_rng(3)
    model, cpu = _WModel(lib, slot_room=1 << 17, grid=2), WeightedCpuGraph(multi_edges=mode)
    prev = None
    for b in range(6):
        k = 300
        s, d = rng.integers(0, 300, k), rng.integers(0, 300, k)
        s[: k // 6] = 0  # a hub: its list grows, moves and loses entries
        ins = rng.random(k) < 0.65
        w = np.round(rng.uniform(0.1, 4.0, k), 2)
        w[~ins] = np.where(rng.random(int((~ins).sum())) < 0.5, np.nan, w[~ins])
        if prev is not None:  # repeats of the last batch's pairs: reweights, deletions of present edges
            s[-k // 3:], d[-k // 3:] = prev[0][: k // 3], prev[1][: k // 3]
        if b == 1:
            s[:5], d[:5] = 2**40 + np.arange(5), 2**41 + np.arange(5)  # new ids far above 2**32
        _step(model, cpu, s, d, ins, w, mode)
        prev = (s, d)
    # a batch of nothing but reweights of present edges: every record of the structural batch is padding
    es, ed = cpu.edges_external()
    pick = rng.choice(len(es), 40, replace=False)
    _step(model, cpu, es[pick], ed[pick], np.ones(40, bool), np.full(40, 7.5), mode)
