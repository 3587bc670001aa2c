"""What a weighted stream's records leave behind, built independently of the engine, and NetworkX's
weighted PageRank of it: the reference of the weighted end-to-end tests."""

from __future__ import annotations

import math

import numpy as np


def final_weighted_edges(records, mode: str) -> dict:
    """``{(src, dst): weight}`` after ``records`` (``(src, dst, insert, weight or None)`` in arrival
    order) under ``mode`` ``"set"`` or ``"sum"`` (docs/inputs.md#weighted-edges)."""
    edges: dict = {}
    for s, d, ins, w in records:
        k = (s, d)
        if w is not None and isinstance(w, float) and math.isnan(w):
            w = None
        if ins:
            w = 1.0 if w is None else float(w)
            edges[k] = edges.get(k, 0.0) + w if mode == "sum" else w
        elif k in edges:
            if mode == "set" or w is None:
                del edges[k]
            else:
                left = edges[k] - float(w)
                if left <= 1e-12 * edges[k]:
                    del edges[k]
                else:
                    edges[k] = left
    return edges


def networkx_ranks(vertices, edges: dict, *, alpha: float = 0.85) -> dict:
    """NetworkX's weighted PageRank (dangling rank spread uniformly) over ``vertices``."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(vertices)
    for (s, d), w in edges.items():
        g.add_edge(s, d, weight=w)
    return nx.pagerank(g, alpha=alpha, weight="weight", tol=1e-15, max_iter=100_000)


def l1_to_networkx(ids, ranks, records, mode: str) -> float:
    """L1 distance of the engine's ``(ids, ranks)`` to NetworkX over the engine's vertex set, which
    must hold every endpoint of the final edges and only endpoints of inserts (a delete never
    creates a vertex)."""
    ids = np.asarray(ids).tolist()
    edges = final_weighted_edges(records, mode)
    vertices = set(ids)
    assert len(vertices) == len(ids)
    assert {v for e in edges for v in e} <= vertices
    assert vertices <= {v for s, d, ins, _ in records if ins for v in (s, d)}
    ref = networkx_ranks(ids, edges)
    return float(sum(abs(ref[v] - r) for v, r in zip(ids, np.asarray(ranks).tolist())))


def make_records(seed: int, n: int, num_vertices: int):
    """``(src, dst, insert, weight or None)``: weighted inserts (a tenth without a weight), repeats of
    present edges, deletions of present edges with and without a weight, some of absent ones."""
    rng = np.random.default_rng(seed)
    present, out = [], []
    for _ in range(n):
        r = rng.random()
        if present and r < 0.2:
            s, d = present[int(rng.integers(len(present)))]
            w = None if rng.random() < 0.5 else float(rng.choice([0.5, 1.0, 2.0, 100.0]))
            out.append((s, d, False, w))
        elif present and r < 0.45:
            s, d = present[int(rng.integers(len(present)))]
            out.append((s, d, True, round(float(rng.uniform(0.1, 5.0)), 3)))
        elif r < 0.47:
            out.append((int(rng.integers(num_vertices)), int(rng.integers(num_vertices)), False, None))
        else:
            s, d = int(rng.integers(num_vertices)), int(rng.integers(num_vertices))
            if s == d:
                continue
            out.append((s, d, True, None if rng.random() < 0.1 else round(float(rng.uniform(0.1, 5.0)), 3)))
            present.append((s, d))
    return out


def text_weight(insert: bool, weight) -> str:
    """A record's weight as a CSV field: an insert without one is written 1 (an empty field is a bad
    weight on an insert), a delete without one an empty field."""
    if weight is None:
        return "1" if insert else ""
    return str(weight)
