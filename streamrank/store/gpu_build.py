"""Building the GPU graph store from a large edge list with a bounded working set.

:meth:`streamrank.store.gpu.GpuGraph.from_edges` (the benchmarks' base graph, a bulk load) and
:meth:`~streamrank.store.gpu.GpuGraph.from_state` (a checkpoint) build the store here. The edges
live in one array of packed keys ``src << 32 | dst`` (8 bytes per edge) that every step rewrites
in place, so the load's peak device memory is the final store plus a bounded working set:

- the packed keys and the buffer of the sort that orders them: **16 bytes per edge**;
- an input that is not sorted and distinct (the R-MAT generator's output and checkpoints are)
  is deduplicated through a mask and a compacted copy: **25 bytes per input edge** for that step;
- the id plan over dense integer ids (every external id below ``4 |E| + 2**20``, as R-MAT's
  ``0 .. 2**scale - 1``): a count and a first position per possible id (12 bytes per id of the
  range) and 40 bytes per vertex, instead of a sort of all ``2 |E|`` endpoints with its copies
  (about 150 bytes per edge at R-MAT 25);
- each direction is filled from the sorted keys by one kernel (degrees by atomic counts, slots
  by ``off[u] + i - start[u]``), with per-vertex temporaries only.

The numbering is the one :func:`streamrank.ids.plan.plan_new_ids` gives the same edges (descending
degree in the distinct edges, ties by first appearance in ``(src, dst)`` order of the sorted
distinct edges; first appearance for at most 4,096 vertices), and each direction is laid out as
a compaction lays it out (capacities ``deg + 2 + deg / 8``, offsets their exclusive sum, a tail
of a quarter and at least 65,536 free slots), so a graph built here equals one built by the
general path. Ids beyond the dense range (sparse
64-bit ids) take the general path, whose sorts of all endpoints are not bounded this way.
"""

from __future__ import annotations

import numpy as np

from ..ids.plan import DEGREE_ORDER_MIN, IdPlan
from .gpu_lists import Direction, _exclusive_cumsum, _slack

#: Working bytes per edge of the build: the packed keys and the sort's buffer.
WORK_BYTES_PER_EDGE = 16
#: Working bytes per input edge of deduplicating an input that is not sorted and distinct.
DEDUP_BYTES_PER_EDGE = 25
#: Working bytes per id of the dense id range (count int32, first position int64).
TABLE_BYTES_PER_ID = 12
#: Working bytes per vertex of the id plan (ids, keys, order, ranks, numbering).
PLAN_BYTES_PER_VERTEX = 40
#: Temporary bytes per vertex of building one direction (degrees, capacities, offsets, starts).
BUILD_BYTES_PER_VERTEX = 40
#: Ids below ``DENSE_FACTOR * |E| + DENSE_SLACK`` take the dense id plan.
DENSE_FACTOR = 4
DENSE_SLACK = 1 << 20

_KERNELS = {}
_M32 = np.int64(0xFFFFFFFF)


def _host_kernels() -> dict:
    """The kernels' NumPy equivalents (same arguments): the build's logic runs on the host too,
    where tests compare it with the general path."""
    def pack(s, d, k):
        k[:] = (s << 32) | d

    def count_first(k, count, first):
        i = np.arange(k.shape[0], dtype=np.int64)
        for ends, pos in ((k >> 32, 2 * i), (k & _M32, 2 * i + 1)):
            np.add.at(count, ends, 1)
            np.minimum.at(first, ends, pos)

    def remap(to_int, k):
        k[:] = (to_int[k >> 32].astype(np.int64) << 32) | to_int[k & _M32].astype(np.int64)

    def swap(k):
        k[:] = ((k & _M32) << 32) | (k >> 32)

    def degree(k, deg):
        np.add.at(deg, k >> 32, 1)

    def degree_low(k, deg):
        np.add.at(deg, k & _M32, 1)

    def fill(k, off, start, idx):
        u = k >> 32
        idx[off[u] + np.arange(k.shape[0]) - start[u]] = (k & _M32).astype(np.int32)

    return {"pack": pack, "count_first": count_first, "remap": remap, "swap": swap, "degree": degree,
            "degree_low": degree_low, "fill": fill}


def _kernels(cp):
    """The build's elementwise kernels (CuPy compiles and caches them on first use)."""
    if getattr(cp, "__name__", "") == "numpy":
        return _host_kernels()
    if "pack" not in _KERNELS:  # (max_id adds its own entry)
        ek = cp.ElementwiseKernel
        _KERNELS["pack"] = ek("int64 s, int64 d", "int64 k", "k = (s << 32) | d", "streamrank_pack")
        _KERNELS["count_first"] = ek(
            "int64 k", "raw int32 count, raw int64 first",
            """long long u = k >> 32, v = k & 0xFFFFFFFFLL;
               atomicAdd(&count[u], 1); atomicAdd(&count[v], 1);
               const long long p = 2 * (long long)i;  // past 2**30 edges 2 * i leaves int32
               atomicMin((unsigned long long*)&first[u], (unsigned long long)p);
               atomicMin((unsigned long long*)&first[v], (unsigned long long)(p + 1));""",
            "streamrank_count_first")
        _KERNELS["remap"] = ek(
            "raw int32 to_int", "int64 k",
            "k = ((long long)to_int[k >> 32] << 32) | (long long)to_int[k & 0xFFFFFFFFLL]", "streamrank_remap")
        _KERNELS["swap"] = ek("", "int64 k", "k = ((k & 0xFFFFFFFFLL) << 32) | (k >> 32)", "streamrank_swap")
        _KERNELS["degree"] = ek("int64 k", "raw int32 deg", "atomicAdd(&deg[k >> 32], 1)", "streamrank_degree")
        _KERNELS["degree_low"] = ek("int64 k", "raw int32 deg", "atomicAdd(&deg[k & 0xFFFFFFFFLL], 1)",
                                    "streamrank_degree_low")
        _KERNELS["fill"] = ek(
            "int64 k, raw int64 off, raw int64 start", "raw int32 idx",
            "long long u = k >> 32; idx[off[u] + (long long)i - start[u]] = (int)(k & 0xFFFFFFFFLL)", "streamrank_fill")
    return _KERNELS


def store_bytes(n: int, e: int) -> int:
    """Upper bound of the store's bytes after a build of ``n`` vertices and ``e`` distinct edges:
    per direction its rows (``n + n/4`` of 16 bytes) and ``idx`` (at most ``e + e/8 + 2n`` slots
    plus a quarter), and the id map (``external`` and a table of at most ``4n`` slots)."""
    n, e = int(n), int(e)
    vcap = n + max(16, n // 4)
    end = e + e // 8 + 2 * n
    per_direction = 16 * vcap + 4 * (end + max(1 << 16, end // 4))
    return 2 * per_direction + 8 * vcap + 12 * max(1024, 4 * n)


def dense_ids(hi: int, e: int) -> bool:
    """Whether external ids up to ``hi`` over ``e`` edges take the dense id plan."""
    return 0 <= int(hi) < min(2**31 - 1, DENSE_FACTOR * int(e) + DENSE_SLACK)


def load_work_bytes(hi: int, e: int, *, dedup: bool) -> int:
    """The bounded load's working set beyond the final store (:func:`store_bytes`) for ``e``
    input edges with ids up to ``hi``; ``dedup``: the input is not known to be sorted and distinct."""
    e, ids = int(e), int(hi) + 1
    work = WORK_BYTES_PER_EDGE * e + TABLE_BYTES_PER_ID * ids + PLAN_BYTES_PER_VERTEX * min(ids, 2 * e)
    return work + (DEDUP_BYTES_PER_EDGE - WORK_BYTES_PER_EDGE) * e * bool(dedup)


def plan_work_bytes(hi: int, e: int) -> int:
    """Temporary bytes of the id plan (:func:`dense_plan`) of ``e`` keys with ids up to ``hi``:
    the count and first-position table and the plan's per-vertex arrays (at most ``2 e`` vertices)."""
    ids = int(hi) + 1
    return TABLE_BYTES_PER_ID * ids + PLAN_BYTES_PER_VERTEX * min(ids, 2 * int(e))


def max_id(cp, keys) -> int:
    """The largest id (source or target) of packed keys ``src << 32 | dst``, by one reduction
    without temporaries (one sync); -1 for no keys, and a negative key makes it negative."""
    if keys.shape[0] == 0:
        return -1
    if getattr(cp, "__name__", "") == "numpy":
        lo = int((keys & _M32).max())
        return -1 if int(keys.min()) < 0 else max(int(keys.max() >> 32), lo)
    if "max_id" not in _KERNELS:
        _KERNELS["max_id"] = cp.ReductionKernel(
            "int64 k", "int64 m", "k < 0 ? -(1LL << 62) : max(k >> 32, k & 0xFFFFFFFFLL)",
            "(a < 0 || b < 0) ? min(a, b) : max(a, b)", "m = a", "0", "streamrank_max_id")
    return int(_KERNELS["max_id"](keys))


def packed_keys(cp, s, d):
    """``s << 32 | d`` (ids below 2**31) as a new int64 array."""
    keys = cp.empty(s.shape[0], dtype=cp.int64)
    _kernels(cp)["pack"](s, d, keys)
    return keys


def sorted_distinct(cp, keys) -> bool:
    """Whether ``keys`` is strictly increasing (one sync)."""
    return keys.shape[0] < 2 or bool((keys[1:] > keys[:-1]).all())


def distinct_sorted(cp, keys):
    """``keys`` sorted and deduplicated (sorts in place; returns the compacted keys)."""
    keys.sort()
    keep = cp.empty(keys.shape[0], dtype=bool)
    keep[:1] = True
    cp.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def dense_plan(cp, keys, hi: int):
    """The id plan of the sorted distinct external edge keys ``keys`` (ids in ``[0, hi]``), and
    ``to_internal`` (int32 per external id; meaningful for the ids present).

    Numbers as :func:`streamrank.ids.plan.plan_new_ids` numbers the interleaved endpoints
    ``s0, d0, s1, d1, ...`` added to an empty map: descending count, ties by first position (for
    more than :data:`~streamrank.ids.plan.DEGREE_ORDER_MIN` ids), else first position.
    """
    e = int(keys.shape[0])
    count = cp.zeros(int(hi) + 1, dtype=cp.int32)
    first = cp.full(int(hi) + 1, np.iinfo(np.int64).max, dtype=cp.int64)
    _kernels(cp)["count_first"](keys, count, first)
    uniq = cp.flatnonzero(count)
    k = int(uniq.shape[0])
    fst = first[uniq]
    del first
    if k > DEGREE_ORDER_MIN:
        order = cp.argsort(-count[uniq].astype(cp.int64) * (2 * e) + fst)
    else:
        order = cp.argsort(fst)
    del fst
    fresh = cp.ascontiguousarray(uniq[order])
    rank = cp.empty(k, dtype=cp.int64)
    rank[order] = cp.arange(k, dtype=cp.int64)
    del order
    to_internal = count  # reused: the table's entries of absent ids are never read
    to_internal[fresh] = cp.arange(k, dtype=cp.int32)
    return IdPlan(cp.zeros(0, dtype=cp.int64), fresh, uniq, rank, 0), to_internal


def to_internal_keys(cp, keys, to_internal) -> None:
    """Rewrite external edge keys as internal ones, in place."""
    if keys.shape[0]:
        _kernels(cp)["remap"](to_internal, keys)


def degrees(cp, keys, n: int) -> tuple:
    """Out- and in-degrees (int32, ``n`` each) of the distinct internal keys ``u << 32 | t``
    (any order): one atomic count per edge and direction, no per-edge temporaries."""
    out = cp.zeros(max(n, 1), dtype=cp.int32)
    inn = cp.zeros(max(n, 1), dtype=cp.int32)
    if keys.shape[0]:
        _kernels(cp)["degree"](keys, out)
        _kernels(cp)["degree_low"](keys, inn)
    return out[:n], inn[:n]


def direction_end(cp, deg32) -> int:
    """Slots a direction of degrees ``deg32`` lays out (``deg + 2 + deg / 8`` per vertex; one sync)."""
    if deg32.shape[0] == 0:
        return 0
    deg = deg32.astype(cp.int64)
    return int((deg + _slack(cp, deg)).sum())


def idx_length(end: int) -> int:
    """Length of a built direction's ``idx``: ``end`` slots and a tail of a quarter, at least 65,536."""
    return int(end) + max(1 << 16, int(end) // 4)


def layout_bytes(vcap: int, ends) -> int:
    """Bytes of the directions a build lays out: per direction ``vcap`` rows of 16 bytes and
    :func:`idx_length` slots of 4 bytes (exact, where :func:`store_bytes` bounds them)."""
    return sum(16 * int(vcap) + 4 * idx_length(end) for end in ends)


def build_scratch_bytes(n: int, e: int) -> int:
    """Temporary bytes of :func:`build_both` beyond the keys: the sort's buffer and the
    per-vertex temporaries of :func:`build_direction`."""
    return WORK_BYTES_PER_EDGE // 2 * int(e) + BUILD_BYTES_PER_VERTEX * (int(n) + 1)


def build_direction(cp, n: int, vcap: int, keys, deg32=None) -> Direction:
    """A :class:`Direction` of ``n`` vertices (rows for ``vcap``) from the sorted distinct
    internal keys ``u << 32 | t``, filled by two kernels over the keys (no per-edge temporaries);
    ``deg32``: the degrees by ``u`` when counted already (:func:`degrees`)."""
    d = Direction(cp, vcap)
    e = int(keys.shape[0])
    if deg32 is None:
        deg32 = cp.zeros(max(n, 1), dtype=cp.int32)
        if e:
            _kernels(cp)["degree"](keys, deg32)
    deg = deg32[:n].astype(cp.int64)
    del deg32
    cap = deg + _slack(cp, deg)
    off = _exclusive_cumsum(cp, cap)
    start = _exclusive_cumsum(cp, deg)
    end = int(off[n]) if n else 0  # sync: the host sizes idx
    d.idx = cp.zeros(idx_length(end), dtype=cp.int32)
    if e:
        _kernels(cp)["fill"](keys, off, start, d.idx)
    d.off[:n] = off[:n]
    d.deg[:n] = deg.astype(cp.int32)
    d.cap[:n] = cap.astype(cp.int32)
    d.end = end
    return d


def build_both(cp, n: int, vcap: int, keys, deg=None) -> tuple:
    """``(out, in)`` directions from the distinct internal keys ``src << 32 | dst`` (any order),
    which are sorted in place and then turned into ``dst << 32 | src`` in place; ``deg``: their
    ``(out, in)`` degrees when counted already (:func:`degrees`)."""
    deg_out, deg_in = (None, None) if deg is None else deg
    keys.sort()
    out = build_direction(cp, n, vcap, keys, deg_out)
    del deg_out
    if keys.shape[0]:
        _kernels(cp)["swap"](keys)
    keys.sort()
    return out, build_direction(cp, n, vcap, keys, deg_in)
