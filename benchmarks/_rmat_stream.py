"""The stream for a daemon benchmark on an R-MAT base (``benchmarks/daemon.py --stream-rmat``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def rmat_stream_file(scale: int, edges: int, path: Path, *, seed: int = 12345) -> Path:
    """Write ``edges`` R-MAT edges over ``[0, 2**scale)`` (no self-loops; repeats dropped) to a
    Parquet file with columns ``src``, ``dst``: the stream for a base of that scale."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamrank.bench.rmat import RMAT_ABC

    rng = np.random.default_rng(seed)
    a, b, c = RMAT_ABC
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for level in range(scale):
        r = rng.random(edges, dtype=np.float32)
        bit = np.int64(1 << (scale - 1 - level))
        src += (r >= a + b) * bit
        dst += (((r >= a) & (r < a + b)) | (r >= a + b + c)) * bit
    perm = rng.permutation(1 << scale).astype(np.int64)
    src, dst = perm[src], perm[dst]
    keys = src << 32 | dst
    _, first = np.unique(keys, return_index=True)
    keep = np.sort(first)
    keep = keep[src[keep] != dst[keep]]
    pq.write_table(pa.table({"src": src[keep], "dst": dst[keep]}), path)
    return path
