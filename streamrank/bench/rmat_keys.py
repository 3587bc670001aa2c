"""R-MAT edges as sorted distinct packed keys, generated in bounded pieces (host or device).

The benchmarks' generator for graphs up to billions of edges: it draws the same distribution as
:func:`streamrank.bench.rmat.rmat_edges` (``edge_factor * 2**scale`` edges, each choosing one of
the four quadrants ``scale`` times with probabilities ``a, b, c, d``, vertices relabelled by a
random permutation, self-loops and duplicates removed), but every random number is a hash of its
position (splitmix64 of ``(edge, level)``), so that any edge can be drawn again on its own. The
edges are then produced by source range: one pass counts the edges per source, and each later
pass draws all edges again and keeps those of one range of sources (at most ``chunk`` edges,
appended by warp-aggregated atomics), which are sorted, deduplicated and appended to the output.
The output is ``src << 32 | dst`` (int64), sorted and distinct: what
:meth:`streamrank.store.gpu.GpuGraph.from_keys` builds from without a sort of its own input.

Device memory: the output (8 bytes per distinct edge), the permutation and the counts (8 bytes
per vertex id) and one range's working set (about 25 bytes per edge of ``chunk``); no sort or
scan ever sees more than ``chunk`` elements (or the edges of one source, if more), so every
count stays within int32 there. The host path (NumPy) computes the same keys, bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from .rmat import RMAT_ABC

#: Most edges of one source range (sorted and deduplicated at once). 2**29: about 13 GiB of
#: working set at the peak.
DEFAULT_CHUNK = 1 << 29
#: Edges drawn at once on the host.
HOST_STEP = 1 << 20
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PERM_STREAM = np.uint64(1 << 60)
_U64 = np.uint64

_SOURCE = r"""
__device__ __forceinline__ unsigned long long sr_mix(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// mode 0: count[src]++ for every drawn edge that is not a loop; mode 1: append the keys of the
// edges with lo <= src < hi to out (one atomic per warp on *cursor).
extern "C" __global__ void rmat_draw(unsigned long long base, long long m, int scale, unsigned int ta,
                                     unsigned int tab, unsigned int tabc, const int* __restrict__ perm, int mode,
                                     long long lo, long long hi, int* __restrict__ count,
                                     long long* __restrict__ out, unsigned long long* __restrict__ cursor) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j0 = (long long)blockIdx.x * blockDim.x; j0 < m; j0 += stride) {  // uniform per warp
    const long long j = j0 + threadIdx.x;
    long long s = 0, d = 0;
    bool keep = false;
    if (j < m) {
      for (int l = 0; l < scale; ++l) {
        const unsigned long long k = (unsigned long long)j * 32ULL + (unsigned long long)l + 1ULL;
        const unsigned int u = (unsigned int)(sr_mix(base + k * 0x9E3779B97F4A7C15ULL) >> 40);
        const long long bit = 1LL << (scale - 1 - l);
        if (u >= tab) s |= bit;
        if ((u >= ta && u < tab) || u >= tabc) d |= bit;
      }
      s = perm[s];
      d = perm[d];
      keep = s != d;
      if (mode == 0 && keep) atomicAdd(count + s, 1);
      keep = keep && s >= lo && s < hi;
    }
    if (mode == 1) {
      const unsigned mask = __ballot_sync(0xFFFFFFFFu, keep);
      const int lane = threadIdx.x & 31;
      unsigned long long at = 0;
      if (lane == 0 && mask) at = atomicAdd(cursor, (unsigned long long)__popc(mask));
      at = __shfl_sync(0xFFFFFFFFu, at, 0);
      if (keep) out[at + __popc(mask & ((1u << lane) - 1u))] = (s << 32) | d;
    }
  }
}
"""
_KERNEL = {}


def _mix(z):
    """splitmix64's output function on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


def _base(seed: int):
    return _mix(np.asarray([(int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64], dtype=np.uint64))[0]


def _thresholds(abc) -> tuple:
    a, b, c = (float(v) for v in abc)
    if min(a, b, c) < 0 or a + b + c > 1:
        raise InvalidArgumentError(f"invalid R-MAT probabilities {abc}")
    return tuple(int(round(v * (1 << 24))) for v in (a, a + b, a + b + c))


def _permutation(xp, base, n: int):
    """A random permutation of ``0 .. n-1`` (int32): the order of the ids' hashes (distinct:
    splitmix64's output function is a bijection)."""
    with np.errstate(over="ignore"):
        v = xp.arange(n, dtype=xp.uint64) + xp.uint64(_PERM_STREAM)
        h = _mix(xp.asarray(base, dtype=xp.uint64) + v * xp.uint64(_GOLDEN))
    order = xp.argsort(h, kind="stable") if xp is np else xp.argsort(h)
    perm = xp.empty(n, dtype=xp.int32)
    perm[order] = xp.arange(n, dtype=xp.int32)
    return perm


def _host_draw(base, j0: int, j1: int, scale: int, th: tuple, perm):
    """Edges ``j0 .. j1-1`` as (src, dst) int64 host arrays, before loops are removed."""
    ta, tab, tabc = (np.uint64(t) for t in th)
    j = np.arange(j0, j1, dtype=np.uint64)
    s = np.zeros(j1 - j0, dtype=np.int64)
    d = np.zeros(j1 - j0, dtype=np.int64)
    with np.errstate(over="ignore"):
        for level in range(scale):
            k = j * _U64(32) + _U64(level + 1)
            u = _mix(base + k * _GOLDEN) >> _U64(40)
            bit = np.int64(1 << (scale - 1 - level))
            s |= np.where(u >= tab, bit, 0)
            d |= np.where(((u >= ta) & (u < tab)) | (u >= tabc), bit, 0)
    return perm[s].astype(np.int64), perm[d].astype(np.int64)


def rmat_keys(scale: int, edge_factor: int = 16, *, seed: int = 0, xp=np, abc=RMAT_ABC,
              chunk: int = DEFAULT_CHUNK):
    """R-MAT edges as sorted distinct keys ``src << 32 | dst``, in bounded memory.

    Parameters
    ----------
    scale : int
        log2 of the number of vertex ids (1 to 31).
    edge_factor : int, optional
        Edges drawn per vertex id (before duplicates and self-loops are removed). Default 16.
    seed : int, optional
        Seed; the keys are the same on the host and the device, whatever ``chunk``.
    xp : module, optional
        :mod:`numpy` (default) or :mod:`cupy`.
    abc : tuple of float, optional
        Quadrant probabilities ``(a, b, c)``.
    chunk : int, optional
        Most edges sorted at once (one source range; a source with more edges is a range of its
        own). The working set is about 25 bytes per edge of it.

    Returns
    -------
    keys : array of int64
        Distinct edges without self-loops, sorted; vertex ids lie in ``[0, 2**scale)``.

    Raises
    ------
    InvalidArgumentError
        For a scale outside 1..31, a non-positive edge factor or chunk, or invalid probabilities.
    """
    scale, edge_factor, chunk = int(scale), int(edge_factor), int(chunk)
    if not 1 <= scale <= 31:
        raise InvalidArgumentError(f"scale must be in 1..31, got {scale}")
    if edge_factor < 1:
        raise InvalidArgumentError(f"edge_factor must be >= 1, got {edge_factor}")
    if chunk < 1:
        raise InvalidArgumentError(f"chunk must be >= 1, got {chunk}")
    th = _thresholds(abc)
    n, m = 1 << scale, edge_factor << scale
    base = _base(seed)
    perm = _permutation(xp, base, n)
    draw = _HostDraw(base, m, scale, th, perm) if xp is np else _DeviceDraw(xp, base, m, scale, th, perm)
    count = draw.counts(n)
    csum = xp.zeros(n + 1, dtype=xp.int64)
    csum[1:] = xp.cumsum(count, dtype=xp.int64)  # int64: the counts sum past 2**31 from R-MAT 27
    del count
    total = int(csum[n])  # sync: the output's size (loops removed, duplicates not yet)
    out = xp.empty(total, dtype=xp.int64)
    at, lo = 0, 0
    while lo < n:
        start = int(csum[lo])
        hi = int(xp.searchsorted(csum, xp.asarray([start + chunk], dtype=xp.int64), side="right")[0]) - 1  # sync
        hi = min(max(hi, lo + 1), n)
        size = int(csum[hi]) - start
        if size:
            part = draw.range(lo, hi, size)
            part.sort()
            keep = xp.empty(size, dtype=bool)
            keep[:1] = True
            xp.not_equal(part[1:], part[:-1], out=keep[1:])
            part = part[keep]
            del keep
            out[at: at + part.shape[0]] = part
            at += int(part.shape[0])
            del part
        lo = hi
    return out[:at]


class _HostDraw:
    """The draws on the host, :data:`HOST_STEP` edges at a time."""

    def __init__(self, base, m, scale, th, perm):
        self.base, self.m, self.scale, self.th, self.perm = base, m, scale, th, perm

    def _steps(self):
        for j0 in range(0, self.m, HOST_STEP):
            s, d = _host_draw(self.base, j0, min(self.m, j0 + HOST_STEP), self.scale, self.th, self.perm)
            keep = s != d
            yield s[keep], d[keep]

    def counts(self, n: int):
        count = np.zeros(n, dtype=np.int64)
        for s, _ in self._steps():
            count += np.bincount(s, minlength=n)
        return count

    def range(self, lo: int, hi: int, size: int):
        parts = [(s[(s >= lo) & (s < hi)] << 32) | d[(s >= lo) & (s < hi)] for s, d in self._steps()]
        out = np.concatenate(parts)
        assert out.shape[0] == size
        return out


class _DeviceDraw:
    """The draws on the device: one launch of ``rmat_draw`` per pass."""

    def __init__(self, cp, base, m, scale, th, perm):
        self.cp, self.m, self.scale, self.th, self.perm = cp, m, scale, th, perm
        self.base = np.uint64(base)
        if "draw" not in _KERNEL:
            _KERNEL["draw"] = cp.RawKernel(_SOURCE, "rmat_draw")
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.grid = (min(sms * 16, max(1, (m + 255) // 256)),)

    def _launch(self, mode, lo, hi, count, out, cursor):
        ta, tab, tabc = self.th
        _KERNEL["draw"](self.grid, (256,), (self.base, np.int64(self.m), np.int32(self.scale), np.uint32(ta),
                                            np.uint32(tab), np.uint32(tabc), self.perm, np.int32(mode),
                                            np.int64(lo), np.int64(hi), count, out, cursor))

    def counts(self, n: int):
        cp = self.cp
        count = cp.zeros(n, dtype=cp.int32)
        self._launch(0, 0, 0, count, cp.empty(1, dtype=cp.int64), cp.zeros(1, dtype=cp.uint64))
        return count

    def range(self, lo: int, hi: int, size: int):
        cp = self.cp
        out = cp.empty(size, dtype=cp.int64)
        cursor = cp.zeros(1, dtype=cp.uint64)
        self._launch(1, lo, hi, cp.empty(1, dtype=cp.int32), out, cursor)
        if int(cursor.get()[0]) != size:  # sync: the pass must draw what the count pass counted
            raise RuntimeError(f"R-MAT draw: {int(cursor.get()[0])} edges in range, {size} counted")
        return out
