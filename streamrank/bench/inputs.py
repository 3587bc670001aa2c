"""Inputs of the benchmarks: graph specs (R-MAT or a file), base edges and random batches."""

from __future__ import annotations

import numpy as np

from ..batch import EdgeBatch
from ..errors import InvalidArgumentError


def parse_graph_spec(spec: str) -> dict:
    """``rmat:SCALE[:EDGEFACTOR]`` or a file path, as a dict."""
    if not isinstance(spec, str) or not spec:
        raise InvalidArgumentError("--graph needs rmat:SCALE[:EDGEFACTOR] or a file path")
    if spec.startswith("rmat:"):
        parts = spec.split(":")
        try:
            scale = int(parts[1])
            ef = int(parts[2]) if len(parts) > 2 else 16
        except (IndexError, ValueError) as exc:
            raise InvalidArgumentError(f"bad R-MAT spec {spec!r}: use rmat:SCALE[:EDGEFACTOR]") from exc
        if len(parts) > 3 or not 1 <= scale <= 31 or ef < 1:
            raise InvalidArgumentError(f"bad R-MAT spec {spec!r}")
        return {"kind": "rmat", "scale": scale, "edge_factor": ef, "name": spec}
    return {"kind": "file", "path": spec, "name": spec}


def load_base_edges(spec: dict, *, xp, seed: int):
    """Base edges ``(src, dst)`` (external ids, int64, on ``xp``)."""
    if spec["kind"] == "rmat":
        from .rmat import rmat_edges

        return rmat_edges(spec["scale"], spec["edge_factor"], seed=seed, xp=xp)
    from connectors.files import read_edges

    table, _ = read_edges(spec["path"])
    src = table.column("src").to_numpy(zero_copy_only=False).astype(np.int64)
    dst = table.column("dst").to_numpy(zero_copy_only=False).astype(np.int64)
    if "op" in table.column_names:
        keep = table.column("op").to_numpy(zero_copy_only=False) >= 0
        src, dst = src[keep], dst[keep]
    return xp.asarray(src), xp.asarray(dst)


def load_base_keys(spec: dict, *, xp, seed: int):
    """R-MAT base edges as sorted distinct keys ``src << 32 | dst`` (int64, on ``xp``), generated
    in bounded memory (:func:`streamrank.bench.rmat_keys.rmat_keys`)."""
    from .rmat_keys import rmat_keys

    return rmat_keys(spec["scale"], spec["edge_factor"], seed=seed, xp=xp)


class BatchMaker:
    """Random batches: 80% insertions of random edges, 20% deletions of random base edges.

    ``base_src`` is the base graph's sources and ``base_dst`` its targets, or ``base_src`` its
    packed keys ``src << 32 | dst`` and ``base_dst`` None (8 bytes per base edge instead of 16).
    """

    def __init__(self, graph, base_src, base_dst, *, xp, seed: int):
        self.xp = xp
        self.graph = graph
        self.base_src, self.base_dst = base_src, base_dst
        self.rs = xp.random.RandomState(seed)

    def make(self, size: int) -> EdgeBatch:
        xp = self.xp
        n_del = int(round(0.2 * size))
        n_ins = size - n_del
        n = self.graph.num_vertices
        ext = self.graph.ids.external
        ins_s = ext[self.rs.randint(0, n, n_ins)]
        ins_d = ext[self.rs.randint(0, n, n_ins)]
        pick = self.rs.randint(0, int(self.base_src.shape[0]), n_del)
        if self.base_dst is None:
            keys = self.base_src[pick]
            del_s, del_d = keys >> 32, keys & 0xFFFFFFFF
        else:
            del_s, del_d = self.base_src[pick], self.base_dst[pick]
        src = xp.concatenate([ins_s, del_s])
        dst = xp.concatenate([ins_d, del_d])
        op = xp.concatenate([xp.ones(n_ins, dtype=bool), xp.zeros(n_del, dtype=bool)])
        perm = self.rs.permutation(size)
        return EdgeBatch(src[perm].astype(xp.int64), dst[perm].astype(xp.int64), op[perm])
