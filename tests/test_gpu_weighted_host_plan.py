"""The host planning of the weighted GPU store's small batches (store/gpu_weighted_small.py), run
where there is no GPU: its device side is replaced by a NumPy model of the weighted gapped CSR
(the list kernels of kernels/cuda/graph_weights.cu written out in Python, the CPU id map), and
batch after batch the model must hold exactly the CPU store's edges, weights and out-weights, with
the same changes and drop counts. tests/test_gpu_weighted.py checks the real store on a device."""

from __future__ import annotations

import types

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.ids.cpu import IdMap
from streamrank.store.cpu_weighted import WeightedCpuGraph
from streamrank.store.gpu_weighted_small import apply_small, is_small


class _Dev(np.ndarray):
    """A host array with CuPy's ``get``."""

    def get(self):
        return np.asarray(self)


def _d(a):
    return np.asarray(a).view(_Dev)


_cp = types.SimpleNamespace(
    asarray=lambda a, dtype=None: _d(np.asarray(a, dtype=dtype)),
    stack=lambda parts: _d(np.stack([np.asarray(p) for p in parts])),
    concatenate=lambda parts: _d(np.concatenate([np.asarray(p) for p in parts])),
    maximum=lambda a, b: _d(np.maximum(a, b)), zeros=lambda shape, dtype=float: _d(np.zeros(shape, dtype)),
    int64=np.int64, float64=np.float64, int32=np.int32)


class _Direction:
    """One weighted direction, its kernels as plain loops."""

    def __init__(self):
        self.off = np.zeros(0, np.int64)
        self.deg = _d(np.zeros(0, np.int32))
        self.cap = _d(np.zeros(0, np.int32))
        self.idx = np.zeros(8, np.int32)
        self.wt = np.zeros(8)
        self.end = 0

    def grow(self, vcap):
        k = vcap - self.off.shape[0]
        if k > 0:
            self.off = np.concatenate([self.off, np.zeros(k, np.int64)])
            self.deg = _d(np.concatenate([self.deg, np.zeros(k, np.int32)]))
            self.cap = _d(np.concatenate([self.cap, np.zeros(k, np.int32)]))

    def reserve_bytes(self, extra):
        return 0

    def reserve(self, extra):
        need = self.end + int(extra)
        if need > self.idx.shape[0]:
            self.idx = np.concatenate([self.idx, np.zeros(need, np.int32)])
            self.wt = np.concatenate([self.wt, np.zeros(need)])

    def _row(self, u):
        return slice(int(self.off[u]), int(self.off[u]) + int(self.deg[u]))

    def weights_of(self, own, nbr):
        out = np.full(own.shape[0], np.nan)
        for i, (u, v) in enumerate(zip(np.asarray(own).tolist(), np.asarray(nbr).tolist())):
            if u >= 0 and v >= 0:
                hit = np.flatnonzero(self.idx[self._row(u)] == v)
                if hit.size:
                    out[i] = self.wt[self.off[u] + hit[0]]
        return _d(out)

    def set_weights(self, own, nbr, w):
        for u, v, x in zip(np.asarray(own).tolist(), np.asarray(nbr).tolist(), np.asarray(w).tolist()):
            hit = np.flatnonzero(self.idx[self._row(u)] == v)
            self.wt[self.off[u] + hit[0]] = x

    def delete_weighted(self, keys, m, gend=None):
        keys = np.asarray(keys)[:m]
        if gend is not None:  # each key's group end, as the kernel reads it
            u = keys >> 32
            want = np.array([i + int(np.sum(u[i:] == u[i])) for i in range(m)])
            np.testing.assert_array_equal(np.asarray(gend)[:m], want)
        for u in np.unique(keys >> 32).tolist():
            gone = set((keys[(keys >> 32) == u] & 0xFFFFFFFF).tolist())
            row = self._row(u)
            keep = [j for j in range(row.start, row.stop) if int(self.idx[j]) not in gone]
            assert len(keep) == row.stop - row.start - len(gone)  # every deleted edge was stored
            t, x = self.idx[keep].copy(), self.wt[keep].copy()
            self.idx[row.start:row.start + len(keep)], self.wt[row.start:row.start + len(keep)] = t, x
            self.deg[u] = len(keep)

    def insert_weighted(self, keys, kw, m, plan):
        keys, kw = np.asarray(keys)[:m], np.asarray(kw)
        gend, new_off, new_cap, _ = (np.asarray(a) if a is not None else None for a in plan)
        for i in range(m):
            u = int(keys[i] >> 32)
            if i and int(keys[i - 1] >> 32) == u:
                continue
            base, d = int(self.off[u]), int(self.deg[u])
            if new_off[i] >= 0:  # the list moves to its reserved room
                self.idx[new_off[i]:new_off[i] + d] = self.idx[base:base + d]
                self.wt[new_off[i]:new_off[i] + d] = self.wt[base:base + d]
                base = int(new_off[i])
                self.off[u], self.cap[u] = base, new_cap[i]
            k = int(gend[i]) - i
            assert d + k <= int(self.cap[u])  # the planned room holds the list
            self.idx[base + d:base + d + k] = keys[i:i + k] & 0xFFFFFFFF
            self.wt[base + d:base + d + k] = kw[i:i + k]
            self.deg[u] = d + k

    def row_sums(self, verts, out):
        for v in np.asarray(verts).tolist():
            out[v] = self.wt[self._row(v)].sum()


class _Ids(IdMap):
    """The CPU id map with the device map's ``reserve`` (room ahead: nothing to do on the host)."""

    def reserve(self, extra):
        pass


class _Model:
    """The attributes of WeightedGpuGraph that the host planning uses."""

    def __init__(self, mode):
        self.xp = _cp
        self.ids = _Ids()
        self.multi_edges = mode
        self._out, self._in = _Direction(), _Direction()
        self._vcap, self._num_edges, self.version = 0, 0, 0
        self._w_out = np.zeros(0)
        self.last_changes = None

    @property
    def num_vertices(self):
        return len(self.ids)

    def _pair_info(self, pairs, npairs):
        """``pair_info`` of graph_weights.cu: ids, stored weights, row sizes (7 npairs int64)."""
        u, v = self.ids.lookup(pairs[:npairs]), self.ids.lookup(pairs[npairs:])
        w = np.asarray(self._out.weights_of(u, v))
        def rows(d, ids):
            return np.array([int(d[i]) if i >= 0 else 0 for i in ids.tolist()], dtype=np.int64)
        return np.concatenate([u, v, w.view(np.int64), rows(self._out.deg, u), rows(self._out.cap, u),
                               rows(self._in.deg, v), rows(self._in.cap, v)]).astype(np.int64)

    def _check(self, needed, what, scratch=0):
        pass

    def _rows_bytes(self, vcap):
        return 0

    def _grow_vertices(self, vcap):
        if vcap > self._vcap:
            self._out.grow(vcap)
            self._in.grow(vcap)
            self._w_out = np.concatenate([self._w_out, np.zeros(vcap - self._vcap)])
            self._vcap = vcap

    def _maybe_compact(self):
        pass

    def edges(self):
        out = {}
        ext = np.asarray(self.ids.external)
        for u in range(self.num_vertices):
            row = self._out._row(u)
            for t, x in zip(self._out.idx[row].tolist(), self._out.wt[row].tolist()):
                out[(int(ext[u]), int(ext[t]))] = x
        ins = {}
        for v in range(self.num_vertices):
            row = self._in._row(v)
            for s, x in zip(self._in.idx[row].tolist(), self._in.wt[row].tolist()):
                ins[(int(ext[s]), int(ext[v]))] = x
        assert ins == out  # both directions hold the same edges and weights
        return out


@pytest.mark.parametrize("mode", ["set", "sum"])
def test_host_planning_follows_the_cpu_store(mode):
    rng = np.random.default_rng(17)
    model, cpu = _Model(mode), WeightedCpuGraph(multi_edges=mode)
    for b in range(30):
        k = int(rng.integers(1, 120))
        s, d = rng.integers(0, 60, k), rng.integers(0, 60, k)
        s[: k // 5] = 0  # a hub
        ins = rng.random(k) < 0.7
        w = np.round(rng.uniform(0.1, 3.0, k), 2)
        w[~ins & (rng.random(k) < 0.5)] = np.nan
        batch = EdgeBatch.from_arrays(s, d, ins, weight=None if b % 7 == 3 else w)
        assert is_small(batch)
        a, c = apply_small(model, batch), cpu.apply(batch)
        assert (a.num_insertions, a.num_deletions, a.num_reweights) == \
            (c.num_insertions, c.num_deletions, c.num_reweights), b
        assert a.dropped == c.dropped and a.num_vertices_after == c.num_vertices_after
        for x, y in (("ins_src", "ins_dst"), ("del_src", "del_dst"), ("reweighted_src", "reweighted_dst")):
            got = sorted(zip(np.asarray(getattr(a, x)).tolist(), np.asarray(getattr(a, y)).tolist()))
            assert got == sorted(zip(getattr(c, x).tolist(), getattr(c, y).tolist())), (b, x)
        np.testing.assert_array_equal(np.asarray(model.ids.external), cpu.ids.external)
        s_c, d_c = cpu.edges()
        ext = cpu.ids.external
        want = dict(zip(zip(ext[s_c].tolist(), ext[d_c].tolist()), cpu.edge_weights().tolist()))
        assert model.edges() == want, b
        np.testing.assert_allclose(model._w_out[: cpu.num_vertices], cpu.out_weight, rtol=1e-12)
