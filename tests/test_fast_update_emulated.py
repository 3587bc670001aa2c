"""The fused small-batch update kernel (kernels/cuda/graph_fast_update.cu), run on the host.

The real CUDA source is compiled with g++ against a host emulation of the intrinsics it uses
(tests/cuda_emu/cuda_host.h: one block of real threads, barriers for __syncthreads and the warp
intrinsics), and driven by a NumPy model of the host side of GpuGraph (room reserved ahead, ends
of idx, vertex count). After every batch the gapped CSR must hold exactly CpuGraph's edges under
the same internal ids, with the same changes and drop counts. This checks the kernel's logic and
its barriers where no GPU exists; tests/test_gpu_graph.py checks the real thing on a device.
Skipped when no C++20 compiler is available; marked slow (each launch starts 1024 threads and
synchronizes them some hundred times: about a second per launch).
"""

import numpy as np
import pytest

from fast_update_model import FAST_MAX, _I, _Model, _p, build_lib
from streamrank.batch import EdgeBatch
from streamrank.store.cpu import CpuGraph

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_lib(tmp_path_factory, "fast_update_host.cpp")


def _check(model, cg, c, changes, ch):
    n = model.n
    assert n == cg.num_vertices
    assert np.array_equal(model.ext[:n], cg.ids.external)  # the same internal ids
    cs, cd = cg.edges()
    want = set(zip(cs.tolist(), cd.tolist()))
    o, i = model.dirs
    got_out, got_in = set(), set()
    for u in range(n):
        lo = o.idx[o.off[u]: o.off[u] + o.deg[u]].tolist()
        li = i.idx[i.off[u]: i.off[u] + i.deg[u]].tolist()
        assert len(set(lo)) == len(lo) and len(set(li)) == len(li)
        got_out.update((u, t) for t in lo)
        got_in.update((t, u) for t in li)
    assert got_out == want and got_in == want
    for d in (o, i):
        assert np.all(d.deg[:n] <= d.cap[:n]) and not d.deg[n:].any() and not d.cap[n:].any()
        spans = sorted((int(d.off[u]), int(d.off[u] + d.cap[u])) for u in range(n) if d.cap[u] > 0)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # lists never overlap
        assert not spans or spans[-1][1] <= d.end
    s = ch.summary()
    assert (c[2], c[3], c[1], c[4], c[5], c[6]) == (
        s["inserted"], s["deleted"], s["new_vertices"], s["dropped_duplicate"],
        s["dropped_present_insertion"], s["dropped_absent_deletion"])
    m = changes.shape[0] // 4
    for at, k, src, dst in ((0, c[2], ch.ins_src, ch.ins_dst), (2 * m, c[3], ch.del_src, ch.del_dst)):
        keys = changes[at: at + k] * 2**32 + changes[at + m: at + m + k]
        assert np.all(np.diff(keys) > 0)  # sorted by (src, dst)
        assert np.array_equal(keys, np.sort(src * 2**32 + dst))


def _step(model, cg, s, d, ins, staged=False):
    c, changes = model.apply(s, d, ins, staged=staged)
    assert c[0] == 0, f"overflow {c[0]}"
    ch = cg.apply(EdgeBatch.from_arrays(np.asarray(s), np.asarray(d), np.asarray(ins, bool)))
    _check(model, cg, c, changes, ch)
    model.reserve()


@pytest.mark.parametrize("staged", [False, True])
def test_mixed_batches_match_cpu(lib, staged):
    """Duplicates, insert/delete pairs, present insertions, absent deletions, new ids (also
    first as dst, both endpoints of an edge, ids far above 2**32), up to the 2048-edge cap; the
    batch passed as arguments, or staged with its header (fast_update_hdr, the host batch's
    form)."""
    rng = np.random.default_rng(0)
    model, cg = _Model(lib), CpuGraph()
    _step(model, cg, np.array([50, 7, 2**62]), np.array([7, 50, 2**62]), np.array([1, 1, 1]), staged)
    for k in (1700, 300):
        s, d = rng.integers(0, 400, k), rng.integers(0, 400, k)
        ins = rng.random(k) < 0.6
        es, ed = cg.edges_external()
        pick, use = rng.integers(0, len(es), k), rng.random(k) < 0.4
        s, d = np.where(use, es[pick], s), np.where(use, ed[pick], d)
        s = np.where(rng.random(k) < 0.05, 2**40 + rng.integers(0, 50, k), s)
        j = rng.integers(0, k, max(1, k // 5))
        s, d, ins = np.concatenate([s, s[j]]), np.concatenate([d, d[j]]), np.concatenate([ins, ~ins[j]])
        _step(model, cg, s[:FAST_MAX], d[:FAST_MAX], ins[:FAST_MAX], staged)


def test_hub_lists(lib):
    """Lists past the block threshold: block-wide compaction and relocation, warp membership
    between two long lists, insert-only appends by one thread."""
    rng = np.random.default_rng(9)
    model, cg = _Model(lib, slot_room=1 << 18), CpuGraph()
    _step(model, cg, np.zeros(2000, np.int64), np.arange(10, 2010), np.ones(2000))
    _step(model, cg, np.concatenate([np.zeros(100, np.int64), np.arange(3000, 3200)]),
          np.concatenate([np.arange(2010, 2110), np.ones(200, np.int64)]), np.ones(300))
    es, ed = cg.edges_external()
    pick = rng.choice(np.flatnonzero(es == 0), 50, replace=False)
    # hub 0: 50 deletions and 1990 insertions, more than its room: compacted and moved by the block
    _step(model, cg, np.concatenate([es[pick], np.zeros(1990, np.int64), [0, 0]]),
          np.concatenate([ed[pick], np.arange(5000, 6990), [1, 3000]]),
          np.concatenate([np.zeros(50), np.ones(1990), [1, 0]]))
    assert model.dirs[0].deg[0] > 4000
    _step(model, cg, np.array([0, 0, 0]), np.array([1, 1, 5000]), np.array([1, 0, 0]))


def test_membership_between_long_lists_in_parts(lib):
    """Edges whose shorter list is long (3,000+ entries) are looked up in several parts, a warp
    each: an edge found in the first part, one appended last (found by the last part), absent
    ones (every part misses), and present insertions / absent deletions dropped as on the CPU."""
    model, cg = _Model(lib, slot_room=1 << 18), CpuGraph()
    _step(model, cg, np.array([3]), np.array([2]), np.array([1]))  # first in out(3) and in(2)
    t = np.arange(10, 3010)
    for a, b in ((0, None), (None, 1), (3, None), (None, 2)):  # 0 -> T, T -> 1, 3 -> T, T -> 2
        for lo in (0, 2000):
            part = t[lo: lo + 2000]
            hub = np.full(len(part), a if a is not None else b, np.int64)
            s, d = (hub, part) if a is not None else (part, hub)
            _step(model, cg, s, d, np.ones(len(part)))
    # (0, 1) absent: inserted; (3, 2) at the front of out(3): deleted; (3, 1) absent: inserted;
    # (0, 2) absent: dropped; each query's shorter list has 3,000 or 3,001 entries
    _step(model, cg, np.array([0, 3, 3, 0]), np.array([1, 2, 1, 2]), np.array([1, 0, 1, 0]))
    # (0, 1) is now the last entry of out(0): present insertion dropped; (3, 1) present: deleted;
    # (3, 2) absent now: dropped
    _step(model, cg, np.array([0, 3, 3]), np.array([1, 1, 2]), np.array([1, 0, 0]))
    es, ed = cg.edges_external()
    assert np.count_nonzero(es == 0) == 3001 and np.count_nonzero(ed == 1) == 3001  # (0, 1) stayed
    assert not np.any((es == 3) & (ed <= 2))  # (3, 1) and (3, 2) gone


@pytest.mark.parametrize("grid", [1, 4])
def test_long_lists_lose_entries_in_chunks(lib, grid):
    """Deletions from lists of several FU_CHUNK (2048) entries: the grid's deletion scan splits
    each list into chunks (blocks striding over them when the grid is smaller), the commit moves
    the survivors into the holes, by a warp when the list stays, by a block when it also moves."""
    rng = np.random.default_rng(grid)
    model, cg = _Model(lib, slot_room=1 << 18, grid=grid), CpuGraph()
    for lo in (10, 2010, 4010):  # hub 0: 6,000 out-edges; hub 1: 6,000 in-edges
        _step(model, cg, np.zeros(2000, np.int64), np.arange(lo, lo + 2000), np.ones(2000))
        _step(model, cg, np.arange(lo, lo + 2000), np.ones(2000, np.int64), np.ones(2000))
    # deletions spread over both hubs' lists, nothing inserted on them: the lists stay
    gone = rng.choice(np.arange(10, 6010), 700, replace=False)
    _step(model, cg, np.concatenate([np.zeros(400, np.int64), gone[400:]]),
          np.concatenate([gone[:400], np.ones(300, np.int64)]), np.zeros(700))
    assert model.dirs[0].deg[0] == 5600
    # hub 0 filled to 150 under its capacity, then it loses 100 entries and gains 300: compacted,
    # then moved by a block
    left = np.setdiff1d(np.arange(10, 6010), gone[:400])
    nxt = 10_000
    while int(model.dirs[0].cap[0]) - int(model.dirs[0].deg[0]) > 150:
        k = min(2000, int(model.dirs[0].cap[0]) - int(model.dirs[0].deg[0]) - 150)
        _step(model, cg, np.zeros(k, np.int64), np.arange(nxt, nxt + k), np.ones(k))
        nxt += k
    deg, off = int(model.dirs[0].deg[0]), int(model.dirs[0].off[0])
    _step(model, cg, np.zeros(400, np.int64),
          np.concatenate([rng.choice(left, 100, replace=False), np.arange(nxt, nxt + 300)]),
          np.concatenate([np.zeros(100), np.ones(300)]))
    assert int(model.dirs[0].deg[0]) == deg + 200 and int(model.dirs[0].off[0]) != off


def test_block_sort_network(lib):
    """Step 4's sort (warps sort runs of 64 in registers, then merge-path rounds): every size
    from 1 to 2,048 positions, one sorted array or two halves sorted independently (both
    directions' keys side by side), keys with duplicates and the padding key."""
    rng = np.random.default_rng(4)
    pad = np.iinfo(np.int64).max
    for p in (1 << e for e in range(12)):
        for top in {p, max(1, p // 2)}:
            keys = rng.integers(0, 1 << 40, p)
            keys[rng.random(p) < 0.1] = pad
            keys[rng.random(p) < 0.1] = keys[0]
            a = np.ascontiguousarray(keys, dtype=np.int64)
            lib.emu_block_sort_keys(_p(a), _I(p), _I(top))
            want = np.concatenate([np.sort(keys[i: i + top]) for i in range(0, p, top)])
            np.testing.assert_array_equal(a, want, err_msg=f"P={p} top={top}")


def test_overflow_writes_nothing(lib):
    model, cg = _Model(lib, vertex_room=50), CpuGraph()
    _step(model, cg, np.arange(10), np.arange(1, 11), np.ones(10))
    before = model.state()
    c, _ = model.apply(np.arange(100, 200), np.arange(200, 300), np.ones(100))  # 200 new > room
    assert c[0] == 1 and all(np.array_equal(a, b) for a, b in zip(before, model.state()))
    for d in model.dirs:  # no tail left
        d.idx = np.ascontiguousarray(d.idx[: d.end + 2])
    before = model.state()
    c, _ = model.apply(np.zeros(30, np.int64), np.arange(1, 31), np.ones(30))
    assert c[0] & 6 and all(np.array_equal(a, b) for a, b in zip(before, model.state()))
    # a batch planned by two blocks (more than FU_SPLIT = 256 changes) whose out-direction, planned
    # by the block that finishes first, has no tail left: its bit must reach the counters
    model, cg = _Model(lib), CpuGraph()
    _step(model, cg, np.arange(400), np.arange(1, 401), np.ones(400))
    model.dirs[0].idx = np.ascontiguousarray(model.dirs[0].idx[: model.dirs[0].end + 2])
    before = model.state()
    c, _ = model.apply(np.zeros(300, np.int64), np.arange(2, 302), np.ones(300))
    assert c[0] == 2 and all(np.array_equal(a, b) for a, b in zip(before, model.state()))
    c, _ = model.apply(np.zeros(FAST_MAX + 1, np.int64), np.ones(FAST_MAX + 1, np.int64), np.ones(FAST_MAX + 1))
    assert c[0] == 8
    for claim in (FAST_MAX + 1, 2**32 + 5, 0):  # a staged header past the cap (or one that wraps an int)
        c, _ = model.apply(np.zeros(5, np.int64), np.ones(5, np.int64), np.ones(5), staged=True, claim_m=claim)
        assert c[0] == 8 and all(np.array_equal(a, b) for a, b in zip(before, model.state()))
