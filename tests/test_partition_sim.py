"""The multi-GPU simulation's counting (streamrank/bench/partition_sim.py) against brute force on a
tiny graph, with NumPy: ghost masks, pushes per part pair, explicit flags, DF-P's iterate."""

import numpy as np
import pytest

pytest.importorskip("scipy")

from streamrank.bench import partition_sim as ps  # noqa: E402

N = 64  # id range: parts of 8, 16 and 32 ids for K = 8, 4, 2


def tiny_graph(seed=3, edges=400):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 48, edges)
    d = (s + rng.integers(1, 40, edges)) % 56
    keys = np.unique(s * N + d)
    return keys // N, keys % N


def part(v, k):
    return v * k // N


def brute_pushes(edges, changed, k):
    """counts[q, p]: distinct (u, p) with u changed, an edge u -> v in part p != part(u)."""
    pairs = {(u, part(v, k)) for u, v in edges if changed[u] and part(v, k) != part(u, k)}
    out = np.zeros((k, k), dtype=np.int64)
    for u, p in pairs:
        out[part(u, k), p] += 1
    return out


def brute_flags(edges, expand, k):
    """counts[q, p]: distinct (q, w) with u in expand of part q, an edge u -> w, w in part p != q."""
    pairs = {(part(u, k), w) for u, w in edges if expand[u] and part(w, k) != part(u, k)}
    out = np.zeros((k, k), dtype=np.int64)
    for q, w in pairs:
        out[q, part(w, k)] += 1
    return out


def masks_of(src, dst):
    m8 = ps.ghost_masks(np, src, dst, N, 8)
    owners = {k: ps.parts_of(np, np.arange(N), N, k) for k in (2, 4, 8)}
    return {k: (ps.coarsen(np, m8, 8, k), owners[k]) for k in (2, 4, 8)}


def test_ghost_masks_and_warm_pushes_match_brute_force():
    src, dst = tiny_graph()
    edges = list(zip(src.tolist(), dst.tolist()))
    masks = masks_of(src, dst)
    everyone = np.ones(N, dtype=bool)
    for k, (mask, owner) in masks.items():
        direct = ps.ghost_masks(np, src, dst, N, k)
        assert np.array_equal(mask, direct)  # coarsened from 8 parts == computed at k
        for u in range(N):
            want = {part(v, k) for uu, v in edges if uu == u} - {part(u, k)}
            assert {p for p in range(k) if mask[u] >> p & 1} == want
        got = ps.pair_counts(np, mask, owner, k)
        assert np.array_equal(got, brute_pushes(edges, everyone, k))
        assert got.trace() == 0 and got.sum() > 0


def test_dfp_trace_counts_match_brute_force_and_its_iterate_is_pagerank():
    src, dst = tiny_graph()
    g = ps.SimGraph(np, src, dst, N)
    x0 = ps.static_ranks(g, tol=1e-14)
    ins, dels = ps.random_batch(np, src, dst, N, 12, seed=5)
    assert ins[0].shape[0] > 0 and dels[0].shape[0] > 0
    masks = masks_of(src, dst)
    trace = ps.simulate_dfp(g, x0, ins, dels, masks, tol=1e-13, frontier_tol=1e-13, prune_tol=1e-15,
                            keep_sets=True)
    assert trace.converged and trace.iterations == len(trace.frontier) == len(trace.sets)
    # the iterate is the PageRank of the graph after the batch (local form)
    gone = set(zip(dels[0].tolist(), dels[1].tolist()))
    after = [(u, v) for u, v in zip(src.tolist(), dst.tolist()) if (u, v) not in gone]
    after += list(zip(ins[0].tolist(), ins[1].tolist()))
    a = np.array(after)
    exact = ps.static_ranks(ps.SimGraph(np, a[:, 0], a[:, 1], N), tol=1e-15)
    assert np.max(np.abs(trace.x - exact)) / exact.sum() < 1e-12
    # messages: ghosts of the base graph plus the insertions (a deletion keeps its ghost)
    ghost_edges = list(zip(src.tolist(), dst.tolist())) + list(zip(ins[0].tolist(), ins[1].tolist()))
    first = np.zeros(N, dtype=bool)
    first[np.concatenate([ins[0], dels[0]])] = True
    for k in (2, 4, 8):
        assert len(trace.pushes[k]) == trace.iterations and len(trace.flags[k]) == trace.iterations - 1
        assert np.array_equal(trace.pushes[k][0], brute_pushes(ghost_edges, first, k))
        for t in range(trace.iterations - 1):
            changed, expand = trace.sets[t]
            assert np.array_equal(trace.pushes[k][t + 1], brute_pushes(ghost_edges, changed, k))
            assert np.array_equal(trace.flags[k][t], brute_flags(ghost_edges, expand, k))
        routed = trace.batch_edges[k]
        assert routed.sum() == ins[0].shape[0] + dels[0].shape[0]
        for s_, d_ in zip(np.concatenate([ins[0], dels[0]]), np.concatenate([ins[1], dels[1]])):
            routed[part(s_, k), part(d_, k)] -= 1
        assert not routed.any()
    assert sum(int(m.sum()) for m in trace.pushes[8]) > 0


def test_warm_iterations_reach_the_same_ranks_criterion():
    src, dst = tiny_graph(seed=7)
    g = ps.SimGraph(np, src, dst, N)
    x0 = ps.static_ranks(g, tol=1e-14)
    ins, dels = ps.random_batch(np, src, dst, N, 10, seed=1)
    its = ps.warm_iterations(g, x0, ins, dels, tol=1e-10)
    assert 1 <= its < 500
    assert ps.warm_iterations(g, x0, ins, dels, tol=1e-13) > its
