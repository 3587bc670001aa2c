"""Filling an empty :class:`streamrank.store.gpu.GpuGraph` from a large edge list: the bounded
build (:mod:`streamrank.store.gpu_build`) for dense integer ids, from edges, from packed keys
(the R-MAT generator's) or as the engine's first load, and the general path (sorts of all
endpoints) for other ids and checkpoints.

A mixin of ``GpuGraph`` (it uses the store's ``xp``, ``ids``, ``_check``, ``_ensure_room`` and
the direction attributes); no module imports it but ``store.gpu``.
"""

from __future__ import annotations

from . import gpu_build
from .gpu_lists import MASK32 as _MASK32
from .gpu_lists import MAX_VERTICES
from .memory import is_out_of_memory, out_of_memory
from .normalize import collapse_last_op
from ..errors import InvalidArgumentError
from ..kernels.cuda.launch import _cupy
from .gpu_fast import FastUpdate


def _build_bytes(n: int, e: int) -> int:
    """Upper bound of the device bytes a build of ``n`` vertices and ``e`` distinct edges
    allocates (:mod:`streamrank.store.gpu_build`): the store's arrays and the packed keys with
    the sort's buffer."""
    return gpu_build.store_bytes(n, e) + gpu_build.WORK_BYTES_PER_EDGE * int(e)



class BulkLoading:
    """Bulk loads of the GPU graph store (a mixin of ``GpuGraph``)."""

    def _from_edges(self, s, d, *, dense: bool = True) -> None:
        """Fill an empty store with the edges ``s -> d`` (external ids, device); ``dense=False``
        takes the general path whatever the ids (the reference the bounded build is tested against)."""
        cp = self.xp
        e_in = int(s.shape[0])
        if e_in == 0:
            return
        hi_id = int(cp.maximum(s.max(), d.max()).get())  # sync: chooses the path
        if dense and gpu_build.dense_ids(hi_id, e_in):
            self._from_dense_edges(s, d, hi_id)
            return
        # Sorted distinct pairs, as collapse_last_op would leave them (all ops are insertions).
        # Packing into one key needs ids below 2**31; otherwise sort by (src, dst) with lexsort.
        if hi_id < 2**31:
            keys = cp.unique((s << 32) | d)
            s, d = keys >> 32, keys & _MASK32
            del keys
        else:
            s, d, _, _ = collapse_last_op(cp, s, d, cp.ones(s.shape, dtype=bool))
        both = cp.empty(2 * s.shape[0], dtype=cp.int64)
        both[0::2], both[1::2] = s, d
        plan = self.ids.plan_add(both)
        del both
        n, e = plan.count, int(s.shape[0])
        self._check(self.ids.growth_bytes(n) + _build_bytes(n, e),
                    f"building a graph of {n:,} vertices and {e:,} edges")
        self.ids.commit_add(plan)
        self._build(plan.internal[0::2], plan.internal[1::2], checked=True)

    def _from_dense_edges(self, s, d, hi_id: int, headroom=None) -> None:
        """:meth:`_from_edges` for ids in ``[0, hi_id]``, a dense range: the bounded build of
        :mod:`streamrank.store.gpu_build`."""
        e_in = int(s.shape[0])
        what = f"loading a graph of {e_in:,} edges (ids below {hi_id + 1:,})"
        # the packed keys, and the id plan's table (checked again, exactly, by _from_dense_keys)
        self._check(0, what, scratch=8 * e_in + gpu_build.plan_work_bytes(hi_id, e_in))
        self._from_dense_keys(gpu_build.packed_keys(self.xp, s, d), hi_id, what=what, headroom=headroom)

    def _from_dense_keys(self, keys, hi_id: int, *, what: str, headroom=None) -> None:
        """Fill an empty store from external keys ``src << 32 | dst`` (int64 device array, ids in
        ``[0, hi_id]``, consumed: rewritten in place). Memory is checked twice: the id plan's
        working set before it is allocated, then, once the plan has counted the vertices and the
        degrees, the store's exact bytes (id map, rows, slots) with the build's temporaries and
        ``headroom(n)`` (bytes the caller allocates after the build) before the store is allocated."""
        cp = self.xp
        e_in = int(keys.shape[0])
        self._check(0, what, scratch=gpu_build.plan_work_bytes(hi_id, e_in))
        if not gpu_build.sorted_distinct(cp, keys):
            self._check(0, what, scratch=(gpu_build.DEDUP_BYTES_PER_EDGE - 8) * e_in)
            keys = gpu_build.distinct_sorted(cp, keys)
        plan, to_internal = gpu_build.dense_plan(cp, keys, hi_id)
        n, e = plan.count, int(keys.shape[0])
        if n > MAX_VERTICES:
            raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
        gpu_build.to_internal_keys(cp, keys, to_internal)
        del to_internal
        deg = gpu_build.degrees(cp, keys, n)
        vcap = n + max(16, n // 4)
        ends = [gpu_build.direction_end(cp, d) for d in deg]  # syncs: the exact layout
        scratch = gpu_build.build_scratch_bytes(n, e)
        if headroom is not None:
            scratch = max(scratch, int(headroom(n)))
        self._check(self.ids.growth_bytes(n) + gpu_build.layout_bytes(vcap, ends),
                    f"{what}: {n:,} vertices and {e:,} distinct edges", scratch=scratch)
        self.ids.commit_add(plan)
        self._vcap = vcap
        self._out, self._in = gpu_build.build_both(cp, n, vcap, keys, deg)
        self._num_edges = e
        self._ensure_room()

    @classmethod
    def from_keys(cls, keys, *, id_bound: int | None = None, fast_update: FastUpdate | None = None,
                  max_bytes: int | None = None) -> "GpuGraph":
        """A graph holding the edges of packed keys ``src << 32 | dst`` (external ids below
        2**31), through the bounded build without packing them again.

        Parameters
        ----------
        keys : cupy.ndarray of int64
            Consumed: the build rewrites it in place (pass a copy to keep it). Sorted and
            distinct keys (what :func:`streamrank.bench.rmat_keys.rmat_keys` gives) skip the
            deduplication; others are sorted and deduplicated first.
        id_bound : int, optional
            A bound above every id (the id table's size; R-MAT: ``2**scale``); default: read from
            the keys with one reduction.
        fast_update, max_bytes
            As for the constructor.

        Raises
        ------
        GraphCapacityError
            When the build does not fit the free device memory or ``max_bytes``.
        InvalidArgumentError
            For keys that are not an int64 device array of non-negative ids below 2**31, or ids
            past ``id_bound``.
        """
        cp = _cupy()
        if not isinstance(keys, cp.ndarray) or keys.dtype != cp.int64 or keys.ndim != 1:
            raise InvalidArgumentError("keys must be a one-dimensional int64 CuPy array")
        g = cls(fast_update=fast_update, max_bytes=max_bytes)
        if keys.shape[0] == 0:
            return g
        hi = gpu_build.max_id(cp, keys)  # sync
        if hi < 0 or hi >= 2**31 - 1:
            raise InvalidArgumentError("packed keys need ids in [0, 2**31 - 1)")
        if id_bound is not None:
            if hi >= int(id_bound):
                raise InvalidArgumentError(f"the keys hold id {hi}, past id_bound={id_bound}")
            hi = int(id_bound) - 1
        try:
            g._from_dense_keys(keys, hi, what=f"loading a graph of {int(keys.shape[0]):,} edges (ids below {hi + 1:,})")
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            raise out_of_memory(exc, xp=cp, what=f"building a graph of {int(keys.shape[0]):,} edges",
                                held=g.nbytes, changed="no graph was built") from exc
        return g

    def load_into_empty(self, s, d, *, headroom=None) -> bool:
        """Fill this store, while it holds no vertex, with the edges ``s -> d`` (external integer
        ids, device int64) through the bounded build, when the ids are dense
        (:func:`~streamrank.store.gpu_build.dense_ids`); False (nothing done) otherwise, and the
        caller applies them as a batch. ``headroom(n)``: bytes the caller allocates after the
        build (the engine's rank update), checked with it.

        Raises
        ------
        GraphCapacityError
            When the build and ``headroom`` do not fit (the store stays empty).
        """
        cp = self.xp
        if len(self.ids) or self._num_edges or int(s.shape[0]) == 0:
            return False
        hi = int(cp.maximum(s.max(), d.max()).get())  # sync: chooses the path (ids are validated >= 0)
        if not gpu_build.dense_ids(hi, int(s.shape[0])):
            return False
        try:
            self._from_dense_edges(s, d, hi, headroom=headroom)
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            self.__init__(fast_update=self.fast, max_bytes=self._max_bytes)  # back to empty
            raise out_of_memory(exc, xp=cp, what=f"loading a graph of {int(s.shape[0]):,} edges", held=0,
                                changed="no graph was built") from exc
        self.version += 1
        return True

    def load_keys_into_empty(self, keys, *, hi: int, input_edges: int, headroom=None) -> bool:
        """:meth:`load_into_empty` of edges already packed into keys ``src << 32 | dst`` (int64
        device array, ids in ``[0, hi]``, consumed: rewritten in place), the streamed first load's
        (:class:`~streamrank.store.key_buffer.KeyBuffer`). ``input_edges``: the edges the keys
        came from, which decides whether the ids are dense as for :meth:`load_into_empty`; False
        (nothing done, the keys untouched) when they are not.

        Raises
        ------
        GraphCapacityError
            When the build and ``headroom`` do not fit (the store stays empty).
        """
        cp = self.xp
        if len(self.ids) or self._num_edges or int(keys.shape[0]) == 0:
            return False
        if not gpu_build.dense_ids(hi, int(input_edges)):
            return False
        what = f"loading a graph of {int(input_edges):,} edges (ids below {int(hi) + 1:,})"
        try:
            self._from_dense_keys(keys, int(hi), what=what, headroom=headroom)
        except Exception as exc:
            if not is_out_of_memory(exc, cp):
                raise
            self.__init__(fast_update=self.fast, max_bytes=self._max_bytes)  # back to empty
            raise out_of_memory(exc, xp=cp, what=what, held=0, changed="no graph was built") from exc
        self.version += 1
        return True

    def _build(self, s, d, *, checked: bool = False) -> None:
        """Rebuild both directions from distinct internal edges ``s -> d`` (int64, device);
        ``checked``: the caller has checked the memory (:func:`_build_bytes`)."""
        n = len(self.ids)
        if n > MAX_VERTICES:
            raise InvalidArgumentError(f"the GPU graph store holds at most {MAX_VERTICES} vertices")
        if not checked:
            e = int(s.shape[0])
            self._check(_build_bytes(n, e), f"building a graph of {n:,} vertices and {e:,} edges")
        self._build_keys(gpu_build.packed_keys(self.xp, s, d), n)

    def _build_keys(self, keys, n: int) -> None:
        """Both directions from the distinct internal keys ``src << 32 | dst`` (consumed: sorted
        and rewritten in place)."""
        self._vcap = n + max(16, n // 4)
        self._out, self._in = gpu_build.build_both(self.xp, n, self._vcap, keys)
        self._num_edges = int(keys.shape[0])
        self._ensure_room()
