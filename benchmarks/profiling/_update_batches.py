"""The graphs and random batches the graph-update scripts share (graph_update_scale.py,
update_host_ab.py, replay_cost.py).

:func:`graphs` yields ``(name, src, dst)``: sx-mathoverflow's base (the temporal protocol's first 90%
of the file's lines, self-loop lines left out; ``SXMO`` names the file) and an R-MAT graph of
``SCALE`` (20) and ``EDGE_FACTOR`` (11: about 11 M distinct edges); ``GRAPHS`` sxmo|rmat|both
(default both). :func:`random_batch` makes one batch of ``size`` edges: 80% insertions of random
pairs of existing ids, 20% deletions of stored edges.
"""
import os

import numpy as np

from streamrank.bench.temporal import _read_lines
from streamrank.bench.rmat import rmat_edges


def sxmo_base():
    """``(src, dst)`` of sx-mathoverflow's base graph."""
    s, d = _read_lines(os.environ.get("SXMO", ".device-data/sx-mathoverflow.txt.gz"))
    k = int(0.9 * s.shape[0])
    keep = s[:k] != d[:k]
    return s[:k][keep], d[:k][keep]


def graphs():
    """The graphs ``GRAPHS`` names, as ``(name, src, dst)``."""
    which = os.environ.get("GRAPHS", "both")
    if which != "rmat":
        yield ("sx-mathoverflow base", *sxmo_base())
    if which != "sxmo":
        scale, ef = int(os.environ.get("SCALE", "20")), int(os.environ.get("EDGE_FACTOR", "11"))
        s, d = rmat_edges(scale, ef, seed=1)
        yield f"R-MAT scale {scale}, edge factor {ef}", s, d


def random_batch(rng, ids, src, dst, size: int):
    """``(bs, bd, ins)`` of a batch of ``size`` edges over the graph ``src -> dst`` whose vertex ids
    are ``ids``: 80% insertions of random pairs of ids, then 20% deletions of stored edges."""
    n_del = size // 5
    n_ins = size - n_del
    pick = rng.integers(0, src.shape[0], n_del)
    bs = np.concatenate([rng.choice(ids, n_ins), src[pick]])
    bd = np.concatenate([rng.choice(ids, n_ins), dst[pick]])
    ins = np.concatenate([np.ones(n_ins, bool), np.zeros(n_del, bool)])
    return bs, bd, ins
