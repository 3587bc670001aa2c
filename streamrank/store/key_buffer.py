"""A growing array of packed edge keys ``src << 32 | dst``: where a streamed first load
(:meth:`streamrank.engine.Engine.load_edge_chunks`) gathers an edge file's insertions, one chunk
at a time, for the bounded build (:mod:`streamrank.store.gpu_build`).

The keys take **8 bytes per edge**. The buffer grows by half when a chunk does not fit (or is
sized once from a known total), so a growth step holds the old and the new buffer together: at
most **20 bytes per edge read** for that copy, below the 25 bytes per input edge of the build's
deduplication that follows. :meth:`KeyBuffer.take` trims the unused tail (the same 20-byte
bound) before it hands the keys to the build.

Works on :mod:`numpy` and :mod:`cupy` alike (the build's kernels have NumPy equivalents), so
tests run its logic on the host.
"""

from __future__ import annotations

from . import gpu_build
from .memory import check_fits, is_out_of_memory, mib, out_of_memory

#: Ids a packed key holds: ``[0, PACK_LIMIT)`` (the bounded build's id range, below ``2**31 - 1``).
PACK_LIMIT = 2**31 - 1
#: Smallest capacity allocated (keys).
MIN_CAPACITY = 1 << 16
#: Growth factor of the capacity when a chunk does not fit.
GROWTH = 1.5


class KeyBuffer:
    """Packed keys appended chunk by chunk on ``xp``.

    Parameters
    ----------
    xp : module
        :mod:`numpy` or :mod:`cupy`: where the keys live.
    capacity : int, optional
        Keys to allocate for at the first chunk (a known total); default: the first chunk's
        size, then growth by :data:`GROWTH`.

    Attributes
    ----------
    size : int
        Keys appended.
    hi : int
        The largest id appended (-1 while empty).
    """

    def __init__(self, xp, *, capacity: int = 0):
        self.xp = xp
        self._want = max(0, int(capacity))
        self._buf = None
        self.size = 0
        self.hi = -1

    @property
    def capacity(self) -> int:
        """Keys the allocated buffer holds."""
        return 0 if self._buf is None else int(self._buf.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the allocated buffer."""
        return 8 * self.capacity

    def append(self, s, d, hi: int) -> None:
        """Append the keys of edges ``s -> d`` (int64 arrays on :attr:`xp`, ids in
        ``[0, PACK_LIMIT)``, ``hi`` their largest).

        Raises
        ------
        GraphCapacityError
            When a growth step does not fit the free device memory (the keys held stay).
        """
        m = int(s.shape[0])
        if m == 0:
            return
        need = self.size + m
        if need > self.capacity:
            self._grow(need)
        gpu_build._kernels(self.xp)["pack"](s, d, self._buf[self.size:need])
        self.size = need
        self.hi = max(self.hi, int(hi))

    def _grow(self, need: int) -> None:
        xp = self.xp
        if self._buf is None:
            cap = max(need, self._want, MIN_CAPACITY)
        else:
            cap = max(need, int(self.capacity * GROWTH))
        what = f"gathering the keys of {need:,} edges ({mib(8 * cap)})"
        check_fits(0, xp=xp, held=0, limit=None, what=what, scratch=8 * cap)
        try:
            buf = xp.empty(cap, dtype=xp.int64)
            if self.size:
                buf[:self.size] = self._buf[:self.size]
        except Exception as exc:
            if not is_out_of_memory(exc, xp):
                raise
            raise out_of_memory(exc, xp=xp, what=what, held=self.nbytes, changed="no graph was built") from exc
        self._buf = buf

    def take(self):
        """The keys appended (an int64 array of :attr:`size`, trimmed to it); the buffer is
        emptied. The caller owns the array (the build consumes it in place)."""
        buf, n = self._buf, self.size
        self._buf, self.size = None, 0
        if buf is None:
            return self.xp.zeros(0, dtype=self.xp.int64)
        if buf.shape[0] == n:
            return buf
        try:
            return buf[:n].copy()  # frees the unused tail once ``buf`` goes
        except Exception as exc:
            if not is_out_of_memory(exc, self.xp):
                raise
            return buf[:n]  # the tail stays allocated: the build runs all the same

    def release(self) -> None:
        """Drop the keys (after a failed load)."""
        self._buf, self.size, self.hi = None, 0, -1
