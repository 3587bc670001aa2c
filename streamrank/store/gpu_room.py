"""Memory and reserved room of :class:`streamrank.store.gpu.GpuGraph`: its byte count and limit,
the room the fast path needs reserved ahead (vertex rows, id map, tails of ``idx``), growth
steps that fit or are skipped, and compaction.

A mixin of ``GpuGraph`` (it uses the store's ``xp``, ``ids``, ``_out``, ``_in``, ``_vcap``,
``fast``, ``num_vertices`` and ``_num_edges``); no module imports it but ``graph_gpu``.
"""

from __future__ import annotations

import logging

from .memory import check_fits, check_max_bytes, out_of_memory
from ..errors import GraphCapacityError

log = logging.getLogger("streamrank.store.gpu")


class RoomKeeping:
    """Byte accounting, reserved room, growth and compaction of the GPU graph store."""

    @property
    def nbytes(self) -> int:
        """Device bytes of the store's arrays: id map and both directions, spare rows and slots
        included (not the fast path's fixed scratch of about 1 MiB)."""
        return self.ids.nbytes + self._out.nbytes + self._in.nbytes

    @property
    def max_bytes(self) -> int | None:
        """Most device bytes the store may hold while it grows (its arrays plus the arrays a
        growth step allocates before it frees the old ones); None: only the free device memory
        limits it. A batch that would pass either raises
        :class:`~streamrank.errors.GraphCapacityError` and changes nothing."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value) -> None:
        self._max_bytes = check_max_bytes(value)

    def _check(self, needed: int, what: str, *, scratch: int = 0) -> None:
        """Raise GraphCapacityError unless ``needed`` more bytes for the store's arrays fit the
        free device memory and :attr:`max_bytes`, and ``scratch`` temporary bytes the memory."""
        check_fits(needed, xp=self.xp, held=self.nbytes, limit=self._max_bytes, what=what, scratch=scratch)

    def _rows_bytes(self, vcap: int) -> int:
        return self._out.rows_bytes(vcap) + self._in.rows_bytes(vcap)

    def _grow_vertices(self, vcap: int) -> None:
        if vcap <= self._vcap:
            return
        self._out.grow_vertices(vcap)
        self._in.grow_vertices(vcap)
        self._vcap = vcap  # only once both directions have the rows

    def _ensure_room(self) -> None:
        """Keep the fast path's room reserved: vertex rows and id map for ``fast.vertices`` new
        vertices, ``fast.slots`` free tail slots per direction (re-reserved when under half is
        left). Host-side decisions only (no sync); growing copies arrays asynchronously.

        Best effort: room that does not fit the free device memory or :attr:`max_bytes` is not
        reserved (the fast kernel then reports an overflow, writes nothing, and the slow path
        applies the batch or raises GraphCapacityError before changing anything)."""
        if not self.fast.enabled:
            return
        n, rv = self.num_vertices, self.fast.vertices
        half = self.fast.slots // 2 + 1
        out, inn = self._out, self._in
        if (self._vcap - n >= rv and self.ids.room >= rv and out.idx.shape[0] - out.end >= half
                and inn.idx.shape[0] - inn.end >= half):
            return  # the room is there (the steady state): no memory check, nothing to grow
        vcap = max(n + rv, 2 * self._vcap, 16) if self._vcap - n < rv else self._vcap
        steps = [(self.ids.growth_bytes(rv), lambda: self.ids.reserve(rv)),
                 (self._rows_bytes(vcap), lambda: self._grow_vertices(vcap))]
        for d in (self._out, self._in):
            if d.idx.shape[0] - d.end < half:
                steps.append((d.reserve_bytes(self.fast.slots), lambda d=d: d.reserve(self.fast.slots)))
        for nbytes, grow in steps:
            if not self._try_grow(nbytes, grow, "reserving the fast path's room"):
                self.room_skipped += 1
                return

    def _try_grow(self, nbytes: int, grow, what: str) -> bool:
        """Run ``grow`` (an allocation that changes no vertex or edge) if ``nbytes`` fit; False
        when they do not (nothing changed)."""
        try:
            self._check(nbytes, what)
            grow()
        except GraphCapacityError as exc:
            log.debug("skipped: %s", exc)
            return False
        except MemoryError as exc:  # CuPy's OutOfMemoryError, or thrust's std::bad_alloc
            log.debug("skipped %s: %s", what, exc)
            return False
        return True

    def _maybe_compact(self) -> None:
        """Compact a direction whose garbage passes its live edges, when the new array fits
        (a store that cannot compact keeps working with the garbage; see :attr:`compactions`)."""
        n = self.num_vertices
        live = self._num_edges + 2 * n
        for d in (self._out, self._in):
            if d.end > 2 * live + (1 << 20):
                if self._try_grow(d.compact_bytes(n, self._num_edges), lambda d=d: d.compact(n),
                                  "compacting the graph store"):
                    self.compactions += 1
                else:
                    self.compactions_skipped += 1

    def compact(self) -> None:
        """Compact both directions now (a pass over all edges).

        Raises
        ------
        GraphCapacityError
            When the new arrays do not fit (nothing changed; a direction compacted before the
            other ran out stays compacted, which changes no vertex or edge).
        """
        n = self.num_vertices
        for d in (self._out, self._in):
            self._check(d.compact_bytes(n, self._num_edges), "compacting the graph store")
            try:
                d.compact(n)
            except GraphCapacityError:
                raise
            except MemoryError as exc:  # CuPy's OutOfMemoryError, or thrust's std::bad_alloc
                raise out_of_memory(exc, xp=self.xp, what="compacting the graph store", held=self.nbytes,
                                    changed="no vertex or edge changed") from exc
        self.compactions += 1

