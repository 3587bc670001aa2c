"""The compiled CPU engine on graphs large enough for its parallel and dense paths: the same
results for one and two threads, and agreement with the SciPy oracle and NetworkX, in both
update orders (Gauss-Seidel also in small blocks, so that its multi-block and parallel paths run)."""

import networkx as nx
import numba
import numpy as np
import pytest

from streamrank.rank.cpu import pagerank as pagerank_cpu
from streamrank.batch import EdgeBatch
from streamrank.config import ALGORITHMS, UPDATE_ORDERS, RankConfig
from streamrank.rank.cpu.workspace import FrontierWorkspace
from streamrank.store.cpu import CpuGraph
from streamrank.kernels.cpu import common as kernel_common
from streamrank.kernels.cpu.common import GS_BLOCK, PARALLEL_EDGES
from streamrank.engine import Engine
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank
from streamrank.bench.rmat import rmat_edges


@pytest.fixture(scope="module")
def stream():
    """R-MAT scale 12 (about 50 k edges, hubs of a few hundred), then batches of insertions
    (some bringing new vertices) and deletions of present edges."""
    s, d = rmat_edges(12, 16, seed=3)
    # explicit self-loops (Gauss-Seidel divides them out; on every 9th vertex, the only out-edge
    # of some) and 2-cycles of out-degree-1 vertices (the slow modes of Jacobi)
    loops = np.arange(0, 4096, 9)
    pairs = np.arange(5000, 5040)
    s = np.concatenate([np.asarray(s), loops, pairs, pairs ^ 1, [7] * 20])
    d = np.concatenate([np.asarray(d), loops, pairs ^ 1, pairs, pairs[::2]])
    assert s.shape[0] >= PARALLEL_EDGES  # full sweeps and wide frontiers take the parallel path
    rng = np.random.default_rng(4)
    batches = []
    for b in range(4):
        k = 40 if b % 2 else 400
        bs, bd = rng.integers(0, 4200, k), rng.integers(0, 4200, k)  # ids >= 4096 are new
        bd[:4] = bs[:4]  # new self-loops
        pick = rng.integers(0, s.shape[0], k // 4)
        batches.append(EdgeBatch.from_arrays(np.concatenate([bs, s[pick]]), np.concatenate([bd, d[pick]]),
                                             np.concatenate([np.ones(k, bool), np.zeros(k // 4, bool)])))
    return s, d, batches


#: (update order, Gauss-Seidel block): the default block holds these graphs whole (plain
#: Gauss-Seidel, one thread); blocks of 512 make every step run many blocks, in parallel.
ORDERS = [("jacobi", GS_BLOCK), ("gauss-seidel", GS_BLOCK), ("gauss-seidel", 512)]
ORDER_IDS = ["jacobi", "gauss-seidel", "gauss-seidel-blocks"]


@pytest.fixture(params=ORDERS, ids=ORDER_IDS)
def order(request, monkeypatch):
    """The update order; the block size is set where the CPU engine reads it and where the store's
    layout cuts its sweep order (kernels.cpu.sweep_order: the last block's vertices chosen)."""
    name, block = request.param
    monkeypatch.setattr(pagerank_cpu, "GS_BLOCK", block)
    monkeypatch.setattr(kernel_common, "GS_BLOCK", block)
    return name


def _replay(stream, algorithm, dangling, threads, order):
    s, d, batches = stream
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        eng = Engine("cpu", algorithm, config=RankConfig(dangling=dangling, update_order=order))
        eng.load_edges(s, d)
        steps = [eng.apply(b) for b in batches]
    finally:
        numba.set_num_threads(before)
    return eng, steps


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_results_do_not_depend_on_the_thread_count(stream, algorithm, dangling, order, monkeypatch):
    monkeypatch.setenv("STREAMRANK_CPU_THREADS", "all")  # no per-batch choice: 2 threads throughout
    one, steps1 = _replay(stream, algorithm, dangling, 1, order)
    two, steps2 = _replay(stream, algorithm, dangling, 2, order)
    assert [s.rank.affected for s in steps1] == [s.rank.affected for s in steps2]
    np.testing.assert_array_equal(one.x, two.x)  # fixed chunks: bitwise the same
    assert all(s.rank.converged for s in steps1)


@pytest.mark.parametrize("dangling", ["uniform", "self-loop"])
def test_every_algorithm_matches_the_oracle_and_networkx(stream, dangling, order):
    engines = {a: _replay(stream, a, dangling, 2, order)[0] for a in ALGORITHMS}
    graph = engines["dfp"].graph
    ref = oracle_pagerank(graph, dangling=dangling)
    s, d = graph.edges()
    G = nx.MultiDiGraph() if dangling == "self-loop" else nx.DiGraph()
    G.add_nodes_from(range(graph.num_vertices))
    G.add_edges_from(zip(s.tolist(), d.tolist()))
    if dangling == "self-loop":
        G.add_edges_from((v, v) for v in range(graph.num_vertices))
    nxr = nx.pagerank(G, alpha=0.85, tol=1e-13, max_iter=10_000)
    nxp = np.array([nxr[v] for v in range(graph.num_vertices)])
    assert l1_error(ref, nxp) < 1e-8  # NetworkX stops at an L1 change below |V| * tol
    for a, eng in engines.items():
        _, p = eng.ranks()
        # DF-P (and auto, which runs it) prunes: its error is bounded by the prune tolerance
        bound = 1e-5 if a in ("dfp", "auto") else 1e-7  # tol 1e-10 bounds the L-inf change: L1 grows with |V|
        assert l1_error(p, ref) < bound, (a, l1_error(p, ref))
        assert l1_error(p, nxp) < bound + 1e-8, a
    # DF-P worked on a part of the graph: fewer vertex updates than a full sweep per batch
    assert engines["dfp"].last.affected_total < engines["nd"].last.affected_total


def test_gauss_seidel_needs_fewer_iterations_on_slow_closed_classes():
    """A vertex whose only out-edge is its own loop, and 2-cycles of out-degree-1 vertices: plain
    Jacobi shrinks their error by alpha per iteration; Gauss-Seidel solves the first in one update
    (its self-loop divided out) and squares the rate of the second (newly marked vertices first).
    Jacobi's DF-P in uniform mode reads an out-degree-1 in-neighbour one step ahead
    (kernels.cpu.common.lookahead): the 2-cycle closes at Gauss-Seidel's rate there too."""
    rng = np.random.default_rng(8)
    s, d = rng.integers(0, 300, 1500), rng.integers(0, 300, 1500)
    g = {o: CpuGraph.from_edges(s, d) for o in UPDATE_ORDERS}
    x = {o: pagerank_cpu.static_pagerank(g[o], config=RankConfig(update_order=o)).x for o in UPDATE_ORDERS}
    ws = {o: FrontierWorkspace() for o in UPDATE_ORDERS}
    its = {o: [] for o in UPDATE_ORDERS}
    # a new vertex whose only out-edge is a self-loop; then a new 2-cycle 1000 <-> 1001
    for bs, bd in (([5, 900], [900, 900]), ([5], [1000]), ([1000], [1001]), ([1001], [1000])):
        for o in UPDATE_ORDERS:
            ch = g[o].apply(EdgeBatch.from_arrays(bs, bd))
            r = pagerank_cpu.update_pagerank("dfp", g[o], ch, x[o], config=RankConfig(update_order=o), workspace=ws[o])
            assert r.converged
            x[o] = r.x
            its[o].append(r.iterations)
            assert l1_error(r.ranks, oracle_pagerank(g[o])) < 1e-6
    assert its["jacobi"][3] <= its["gauss-seidel"][3], its  # the 2-cycle closing (the lookahead)
    assert sum(its["gauss-seidel"]) < sum(its["jacobi"]), its
    static = {o: pagerank_cpu.static_pagerank(g[o], config=RankConfig(update_order=o)) for o in UPDATE_ORDERS}
    assert static["gauss-seidel"].iterations * 1.5 < static["jacobi"].iterations
    assert l1_error(static["gauss-seidel"].ranks, static["jacobi"].ranks) < 1e-8
