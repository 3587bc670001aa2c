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


def load_file_keys(spec: dict, *, xp, log=None):
    """A file's base edges (its insertions) as packed keys ``src << 32 | dst`` in file order
    (int64, on ``xp``), read chunk by chunk: the host holds one chunk of the reader, the device
    8 bytes per edge (:class:`~streamrank.store.key_buffer.KeyBuffer`), never the whole file as
    ``(src, dst)`` twice. None when an id is ``2**31 - 1`` or more (a key cannot hold it: read
    it with :func:`load_base_edges`). ``log``: progress lines every 10 s
    (:class:`~streamrank.engine_load.ProgressLog`)."""
    import time

    import pyarrow.compute as pc

    from connectors.files import open_edge_file

    from ..engine_load import LoadProgress, ProgressLog
    from ..store.key_buffer import PACK_LIMIT, KeyBuffer

    keys = KeyBuffer(xp)
    show = ProgressLog(log, f"graph {spec['name']}") if log is not None else None
    t0, chunks = time.perf_counter(), 0
    with open_edge_file(spec["path"]) as reader:
        for t in reader:
            if "op" in t.column_names:
                t = t.filter(pc.greater_equal(t.column("op"), 0))
            s = xp.asarray(t.column("src").to_numpy(zero_copy_only=False).astype(np.int64))
            d = xp.asarray(t.column("dst").to_numpy(zero_copy_only=False).astype(np.int64))
            hi = int(xp.maximum(s.max(), d.max())) if s.shape[0] else -1
            if hi >= PACK_LIMIT:
                keys.release()
                return None
            keys.append(s, d, hi)
            chunks += 1
            if show is not None:
                show(LoadProgress(keys.size, chunks, time.perf_counter() - t0, "reading"))
    return keys.take()


def file_graph(graph_cls, keys, *, xp):
    """The graph store of a file's keys (:func:`load_file_keys`, kept: the build takes a copy):
    on the GPU the bounded build of the keys when the ids are dense
    (:meth:`~streamrank.store.gpu.GpuGraph.from_keys`), else the store's ``from_edges``."""
    from ..store import gpu_build

    if getattr(xp, "__name__", "") != "numpy" and keys.shape[0]:
        hi = gpu_build.max_id(xp, keys)
        if gpu_build.dense_ids(hi, int(keys.shape[0])):
            return graph_cls.from_keys(keys.copy(), id_bound=hi + 1)
    return graph_cls.from_edges(keys >> 32, keys & 0xFFFFFFFF)


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
