"""Personalized PageRank on a live graph: exact and approximate top-k, before and after a batch.

Run: python examples/ppr_query.py
"""

import numpy as np

from streamrank.batch import EdgeBatch
from streamrank.store.cpu import CpuGraph
from streamrank.ppr import personalized_pagerank

rng = np.random.default_rng(0)
src, dst = rng.integers(0, 2000, 20000), rng.integers(0, 2000, 20000)
graph = CpuGraph.from_edges(src, dst)  # on a GPU: streamrank.store.gpu.GpuGraph.from_edges
seed = int(src[0])

for method in ("power", "push", "hybrid", "montecarlo"):
    res = personalized_pagerank(graph, seed, method=method, k=5, eps=1e-9, walks=200_000)
    print(f"{method:<11} {res.elapsed_ms:7.1f} ms  top-5 {[v for v, _ in res.top_k]}")

graph.apply(EdgeBatch.from_arrays(np.array([seed] * 3), np.array([7, 8, 9])))  # a new batch
res = personalized_pagerank(graph, seed, method="power", k=5)
print("after the batch:", res.top_k)
