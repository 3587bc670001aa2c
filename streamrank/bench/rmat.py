"""R-MAT graph generator (Chakrabarti, Zhan and Faloutsos, 2004), on the host or the device.

Each edge picks one of the four quadrants of the adjacency matrix ``scale`` times with
probabilities ``a, b, c, d = 1 - a - b - c`` (default 0.57, 0.19, 0.19, 0.05, the Graph500
setting). The generator draws ``edge_factor * 2**scale`` edges, relabels vertices with a random
permutation (so that high-degree vertices are not clustered at small ids), then removes
self-loops and duplicate edges. With ``xp=cupy`` everything runs on the device: at scale 24
(268 M drawn edges) the peak is about 10 GB of device memory (41 bytes per drawn edge); the
benchmarks use :func:`streamrank.bench.rmat_keys.rmat_keys`, the same distribution generated in
bounded memory.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError

#: Default quadrant probabilities (a, b, c); d = 1 - a - b - c.
RMAT_ABC = (0.57, 0.19, 0.19)


def rmat_edges(scale: int, edge_factor: int = 16, *, seed: int = 0, xp=np, abc=RMAT_ABC):
    """Generate an R-MAT edge list.

    Parameters
    ----------
    scale : int
        log2 of the number of vertex ids (1 to 31).
    edge_factor : int, optional
        Edges drawn per vertex id (before duplicates and self-loops are removed). Default 16.
    seed : int, optional
        Seed of the random generator (results differ between NumPy and CuPy).
    xp : module, optional
        :mod:`numpy` (default) or :mod:`cupy`; the arrays are generated and returned there.
    abc : tuple of float, optional
        Quadrant probabilities ``(a, b, c)``.

    Returns
    -------
    src, dst : arrays of int64
        Distinct edges without self-loops, sorted by ``(src, dst)``; vertex ids lie in
        ``[0, 2**scale)`` (ids that received no edge do not appear).

    Raises
    ------
    InvalidArgumentError
        For a scale outside 1..31, a non-positive edge factor or invalid probabilities.
    """
    scale = int(scale)
    edge_factor = int(edge_factor)
    if not 1 <= scale <= 31:
        raise InvalidArgumentError(f"scale must be in 1..31, got {scale}")
    if edge_factor < 1:
        raise InvalidArgumentError(f"edge_factor must be >= 1, got {edge_factor}")
    a, b, c = (float(v) for v in abc)
    if min(a, b, c) < 0 or a + b + c > 1:
        raise InvalidArgumentError(f"invalid R-MAT probabilities {abc}")
    n = 1 << scale
    m = edge_factor * n
    uniform, permutation = _random_source(xp, seed)
    src = xp.zeros(m, dtype=xp.int64)
    dst = xp.zeros(m, dtype=xp.int64)
    ab, abc_ = a + b, a + b + c
    for level in range(scale):
        r = uniform(m)
        bit = 1 << (scale - 1 - level)
        # quadrant: [0,a) -> (0,0); [a,a+b) -> (0,1); [a+b,a+b+c) -> (1,0); rest -> (1,1)
        src += (r >= ab).astype(xp.int64) * bit
        dst += (((r >= a) & (r < ab)) | (r >= abc_)).astype(xp.int64) * bit
        del r
    perm = permutation(n).astype(xp.int64)
    src = perm[src]
    dst = perm[dst]
    del perm
    keep = src != dst
    keys = (src[keep] << scale) | dst[keep]
    del src, dst, keep
    keys = xp.unique(keys)
    mask = (1 << scale) - 1
    return keys >> scale, keys & mask


def _random_source(xp, seed):
    """(uniform float32 sampler, permutation) for NumPy or CuPy."""
    if xp is np:
        rng = np.random.default_rng(seed)
        return (lambda k: rng.random(k, dtype=np.float32)), rng.permutation
    rs = xp.random.RandomState(seed)  # CuPy: cuRAND-backed, on the device
    return (lambda k: rs.random_sample(k, dtype=xp.float32)), rs.permutation
