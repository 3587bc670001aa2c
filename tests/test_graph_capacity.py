"""A batch that does not fit the graph store fails before it changes anything (both backends).

The store's ``max_bytes`` forces the failure deterministically; on the GPU the free device
memory is also checked (forced here by a patched reading of the device).
"""

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.engine import Engine
from streamrank.errors import GraphCapacityError, StreamrankError
from streamrank.store.cpu import CpuGraph
from streamrank.oracle.static import oracle_pagerank
from streamrank.oracle.metrics import l1_error


def _host(a):
    from streamrank.backend import to_host

    return to_host(a)


def _base(seed=0, n=800, m=5000):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m)


def _store(device, s, d):
    if device == "gpu":
        from streamrank.store.gpu import GpuGraph

        return GpuGraph.from_edges(s, d)
    return CpuGraph.from_edges(s, d)


def _snapshot(g):
    s, d = g.edges()
    return (g.num_vertices, g.num_edges, g.version, _host(g.ids.external).tolist(),
            _host(s).tolist(), _host(d).tolist())


def _new_vertices_batch(k=5000):
    """``k`` edges between ``2k`` new vertices (more than the GPU's fast path takes)."""
    src = 10**6 + np.arange(k, dtype=np.int64)
    return EdgeBatch.from_arrays(src, src + k)


def _dense_batch(n=600):
    """Every edge among the first ``n`` base vertices: no new vertex, lists outgrow their room
    (and on the GPU the tail reserved for the fast path, 2**18 slots per direction)."""
    u, v = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return EdgeBatch.from_arrays(u.ravel(), v.ravel())


@pytest.mark.parametrize("batch", [_new_vertices_batch, _dense_batch], ids=["new-vertices", "lists-outgrow"])
def test_store_refuses_growth_past_its_limit_and_keeps_the_graph(device, batch):
    s, d = _base()
    g = _store(device, s, d)
    before = _snapshot(g)
    g.max_bytes = g.nbytes + 1
    with pytest.raises(GraphCapacityError) as err:
        g.apply(batch())
    assert isinstance(err.value, StreamrankError) and isinstance(err.value, MemoryError)
    assert err.value.needed > err.value.available >= 0
    assert "nothing was changed" in str(err.value) and "limit" in str(err.value)
    assert _snapshot(g) == before

    # a batch that needs no growth still applies under the limit: one new edge between two
    # vertices with room (every vertex has spare slots after the build)
    present = set(zip(_host(g.edges_external()[0]).tolist(), _host(g.edges_external()[1]).tolist()))
    known = set(s.tolist()) | set(d.tolist())
    u, v = next((a, b) for a in range(800) for b in range(800) if a in known and b in known and (a, b) not in present)
    ch = g.apply(EdgeBatch.from_arrays([u], [v]))
    assert ch.num_insertions == 1 and g.num_edges == before[1] + 1

    # without the limit the refused batch applies, and the store agrees with a fresh CPU store
    g.max_bytes = None
    g.apply(batch())
    ref = CpuGraph.from_edges(s, d)
    ref.apply(EdgeBatch.from_arrays([u], [v]))
    ref.apply(batch())
    assert g.num_vertices == ref.num_vertices and g.num_edges == ref.num_edges
    assert np.array_equal(_host(g.ids.external), ref.ids.external)
    gs, gd = g.edges()
    rs, rd = ref.edges()
    assert np.array_equal(_host(gs), rs) and np.array_equal(_host(gd), rd)


def test_max_bytes_is_validated(device):
    g = _store(device, *_base())
    for bad in (0, -5, 1.5, "1", True):
        with pytest.raises(StreamrankError):
            g.max_bytes = bad
    g.max_bytes = 10**12
    assert g.max_bytes == 10**12


@pytest.mark.parametrize("id_type", ["int", "string"])
def test_engine_keeps_graph_and_ranks_after_a_refused_batch(device, id_type):
    s, d = _base(1)
    conv = (lambda a: np.array([f"v{x}" for x in a], dtype=object)) if id_type == "string" else (lambda a: a)
    eng = Engine(device, "dfp")
    eng.load_edges(conv(s), conv(d))
    eng.apply(EdgeBatch.from_arrays(conv(np.array([1, 2])), conv(np.array([2, 3]))))
    ids0, p0 = eng.ranks()
    es0, ed0 = eng.edges_external()
    seq0 = eng.seq
    strings0 = len(eng.string_ids) if eng.string_ids is not None else None

    eng.max_graph_bytes = eng.graph.nbytes + 1
    big = _new_vertices_batch()
    with pytest.raises(GraphCapacityError):
        eng.apply(EdgeBatch.from_arrays(conv(big.src), conv(big.dst)))
    ids1, p1 = eng.ranks()
    es1, ed1 = eng.edges_external()
    assert eng.seq == seq0
    assert np.array_equal(ids0, ids1) and np.array_equal(p0, p1)
    assert np.array_equal(es0, es1) and np.array_equal(ed0, ed1)
    if strings0 is not None:
        assert len(eng.string_ids) == strings0  # the refused batch's ids got no codes

    # the engine keeps working for a batch that fits, and its ranks stay right
    step = eng.apply(EdgeBatch.from_arrays(conv(np.array([5, 7])), conv(np.array([9, 5]))))
    assert step.seq == seq0 + 1 and step.rank.converged
    ref = oracle_pagerank(eng.graph)
    assert l1_error(eng.ranks()[1], ref) < 1e-5
    eng.max_graph_bytes = None
    eng.apply(EdgeBatch.from_arrays(conv(big.src), conv(big.dst)))
    assert eng.graph.num_vertices == len(ids0) + 2 * len(big)


@pytest.mark.gpu
def test_gpu_store_refuses_growth_past_free_device_memory(cp, monkeypatch):
    """With no limit set, the free device memory (as read) decides; nothing changes."""
    from streamrank.store import memory as device_memory
    from streamrank.store.gpu import GpuGraph

    g = GpuGraph.from_edges(*_base())
    before = _snapshot(g)
    real = device_memory.read_device_memory(cp)
    tight = device_memory.DeviceMemory(real.device_total, 1 << 10, 0, 0)  # 1 KiB free, no pool
    monkeypatch.setattr(device_memory, "read_device_memory", lambda xp: tight)
    with pytest.raises(GraphCapacityError) as err:
        g.apply(_new_vertices_batch())
    assert "device memory" in str(err.value) and "--device cpu" in str(err.value)
    assert _snapshot(g) == before
    monkeypatch.undo()
    g.apply(_new_vertices_batch())
    assert g.num_vertices == before[0] + 10_000


@pytest.mark.gpu
def test_gpu_small_batches_apply_at_the_limit(cp):
    """At a limit with no room to grow, batches that fit the room reserved ahead (the fast path)
    still apply, the store agrees with the CPU store, and it does not pass the limit."""
    from streamrank.store.gpu import GpuGraph

    s, d = _base(2)
    g = GpuGraph.from_edges(s, d)
    g.max_bytes = g.nbytes + 1
    ref = CpuGraph.from_edges(s, d)
    rng = np.random.default_rng(3)
    for _ in range(30):  # small batches among existing vertices: no growth beyond the room
        bs, bd = rng.integers(0, 800, 20), rng.integers(0, 800, 20)
        b = EdgeBatch.from_arrays(bs, bd)
        assert g.apply(b).summary() == ref.apply(b).summary()
    gs, gd = g.edges()
    rs, rd = ref.edges()
    assert np.array_equal(_host(gs), rs) and np.array_equal(_host(gd), rd)
    assert g.nbytes <= g.max_bytes


def test_cpu_side_plans_predict_the_growth_the_update_does(monkeypatch):
    """The CPU store checks the bytes of a batch from its plan: the plan must predict exactly how
    long each neighbour array becomes (compactions included), on random batches with hubs."""
    from streamrank.store.cpu import _Side

    seen = {"updates": 0, "compactions": 0, "grown": 0}
    apply_update = _Side.update

    def checked(self, n, plan, *pairs):
        before = self.idx.shape[0]
        apply_update(self, n, plan, *pairs)
        seen["updates"] += 1
        seen["compactions"] += plan.compact
        if plan.grow_to is not None:
            seen["grown"] += 1
            assert self.idx.shape[0] == plan.grow_to
        elif not plan.compact:
            assert self.idx.shape[0] == before
        assert self.end <= self.idx.shape[0]  # the update stayed inside the array it was planned for

    monkeypatch.setattr(_Side, "update", checked)
    rng = np.random.default_rng(5)
    for _ in range(8):
        g = CpuGraph.from_edges(rng.integers(0, 300, 2000), rng.integers(0, 300, 2000))
        for _ in range(60):
            k = int(rng.integers(1, 200))
            s, d, ins = rng.integers(0, 340, k), rng.integers(0, 340, k), rng.random(k) < 0.6
            if rng.random() < 0.3:
                s[:] = s[0]  # a hub gains or loses many edges at once
            g.apply(EdgeBatch.from_arrays(s, d, ins))
    assert seen["updates"] > 500 and seen["compactions"] > 0 and seen["grown"] > 0
