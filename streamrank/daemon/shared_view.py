"""The ranks of the last applied batch in shared memory, for the HTTP server's process.

The daemon's loop writes each applied batch's view (its ranks, the external ids, what
``/status`` shows) with :class:`SnapshotWriter`; the HTTP server, a process of its own, reads
it with :class:`SnapshotReader` without ever taking the ingest process's GIL or lock.

Layout: a small *header* segment (named by the writer) and a *data* segment per generation
(``<header>-<gen>``), replaced by a larger one when the graph outgrows it.

- header: ``gen`` (the data segment in use, 0 before the first view), the status (JSON, two
  buffers each behind a sequence counter) and the history ring (one row per applied batch, the
  live page's charts);
- data: two rank slots, each behind a sequence counter (odd while the writer fills it) with the
  view's ``seq``, vertex count, publish time, batch info (JSON) and ranks, and the external ids
  (append-only: internal ids are never reused, so an id once written never changes). ``cur``
  names the slot of the last complete view. A slot holds the ranks in the engine's form
  (:func:`streamrank.rank.published.published_form`): the iterate ``x``, a flag per vertex (no
  in-edges, self-loop mode) and two factors, ``p = x / f0`` or ``x * f0`` (``x * f1`` where
  flagged); the reader computes ``p``, the same numbers as the engine's.

The writer fills the slot that is not ``cur`` and then flips ``cur``: it never waits for a
reader. A slot is written with the entries that changed since it was last written (two batches
ago; :meth:`SnapshotWriter.publish_changes`: the engine's side finds them where the iterate
lives), and the batch's new ids: a publish costs O(changed entries), not O(vertices), since the
normalization lives in the factors. A reader notes the
slot's counter, copies what it needs, and keeps the copy only when the counter is unchanged
and even (otherwise it reads again): an answer never mixes two batches nor shows a half-written
one. The protocol relies on stores becoming visible in program order, as on x86-64.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import secrets
import threading
import time

import numpy as np

from ..errors import StreamrankError
from .live import RankView, VertexIndex

log = logging.getLogger("streamrank.daemon")

#: Batches kept in the history ring (the live page's charts).
HISTORY_BATCHES = 4096
#: Columns of a history row.
HISTORY_COLUMNS = ("t", "seq", "edges", "graph_ms", "rank_ms", "wait_ms", "lag")
#: Bytes of one status buffer (JSON of the loop's status fields).
STATUS_CAP = 1 << 18
_MAGIC = 0x5354524D52414E4B  # "STRMRANK"
_LAYOUT = 2
_ALIGN = 64

# header int64 fields
_H_MAGIC, _H_LAYOUT, _H_GEN, _H_STATUS_CUR, _H_HIST_COUNT = 0, 1, 2, 3, 4
_H_STATUS_VER, _H_STATUS_LEN = 8, 10  # two of each
_HEADER_INTS = 16
# data meta int64 fields
_D_NCAP, _D_BYTESCAP, _D_INFOCAP, _D_CUR, _D_STRING = 0, 1, 2, 3, 4
# slot int64 fields (then float64: applied_at at 7, the factors f0, f1 at 8, 9)
_S_VER, _S_SEQ, _S_N, _S_INFOLEN, _S_DIVIDE = 0, 1, 2, 3, 4
_SLOT_BYTES = 16 * 8


def _up(x: int) -> int:
    return (x + _ALIGN - 1) // _ALIGN * _ALIGN


def _header_layout() -> dict:
    status = _up(_HEADER_INTS * 8)
    hist = _up(status + 2 * STATUS_CAP)
    return {"status": status, "hist": hist, "size": _up(hist + HISTORY_BATCHES * len(HISTORY_COLUMNS) * 8)}


def _data_layout(n_cap: int, bytes_cap: int, info_cap: int, string: bool) -> dict:
    off, out = 0, {}

    def take(name, nbytes):
        nonlocal off
        out[name] = off
        off = _up(off + nbytes)

    take("meta", 8 * 8)
    for s in (0, 1):
        take(f"slot{s}", _SLOT_BYTES)
        take(f"ranks{s}", 8 * n_cap)
        take(f"flags{s}", n_cap)
        take(f"info{s}", info_cap)
    if string:
        take("offsets", 8 * (n_cap + 1))
        take("names", bytes_cap)
    else:
        take("ids", 8 * n_cap)
    out["size"] = max(off, _ALIGN)
    return out


class _Data:
    """Numpy views of one data segment's parts over ``buf``."""

    def __init__(self, buf, *, n_cap: int, bytes_cap: int, info_cap: int, string: bool):
        lay = _data_layout(n_cap, bytes_cap, info_cap, string)
        self.n_cap, self.bytes_cap, self.info_cap, self.string = n_cap, bytes_cap, info_cap, string
        self.meta = np.ndarray((8,), np.int64, buf, lay["meta"])
        self.slot = [np.ndarray((7,), np.int64, buf, lay[f"slot{s}"]) for s in (0, 1)]  # ints 0..6
        self.stamp = [np.ndarray((1,), np.float64, buf, lay[f"slot{s}"] + 56) for s in (0, 1)]
        self.factors = [np.ndarray((2,), np.float64, buf, lay[f"slot{s}"] + 64) for s in (0, 1)]
        self.ranks = [np.ndarray((n_cap,), np.float64, buf, lay[f"ranks{s}"]) for s in (0, 1)]
        self.flags = [np.ndarray((n_cap,), np.uint8, buf, lay[f"flags{s}"]) for s in (0, 1)]
        self.info = [np.ndarray((info_cap,), np.uint8, buf, lay[f"info{s}"]) for s in (0, 1)]
        if string:
            self.offsets = np.ndarray((n_cap + 1,), np.int64, buf, lay["offsets"])
            self.names = np.ndarray((bytes_cap,), np.uint8, buf, lay["names"])
        else:
            self.ids = np.ndarray((n_cap,), np.int64, buf, lay["ids"])

    @classmethod
    def attach(cls, buf) -> "_Data":
        meta = np.ndarray((8,), np.int64, buf, 0)
        return cls(buf, n_cap=int(meta[_D_NCAP]), bytes_cap=int(meta[_D_BYTESCAP]), info_cap=int(meta[_D_INFOCAP]),
                   string=bool(meta[_D_STRING]))


class _Header:
    def __init__(self, buf):
        lay = _header_layout()
        self.ints = np.ndarray((_HEADER_INTS,), np.int64, buf, 0)
        self.status = [np.ndarray((STATUS_CAP,), np.uint8, buf, lay["status"] + s * STATUS_CAP) for s in (0, 1)]
        self.hist = np.ndarray((HISTORY_BATCHES, len(HISTORY_COLUMNS)), np.float64, buf, lay["hist"])


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode()


class SnapshotWriter:
    """The daemon's side: publishes views, status and history into shared memory.

    Creates the header segment (name: :attr:`name`); :meth:`close` unlinks every segment. The
    segments are registered with :mod:`multiprocessing`'s resource tracker, which unlinks them
    should the daemon die without closing.
    """

    def __init__(self):
        from multiprocessing import shared_memory

        self._shm = shared_memory
        self.name = f"streamrank-{os.getpid()}-{secrets.token_hex(4)}"
        self._header_shm = self._create(self.name, _header_layout()["size"])
        self._h = _Header(self._header_shm.buf)
        self._h.ints[:] = 0
        self._h.ints[_H_MAGIC], self._h.ints[_H_LAYOUT] = _MAGIC, _LAYOUT
        self._data_shm = None
        self._d: _Data | None = None
        self._ids_written = 0
        self._bytes_written = 0
        self._fresh = [True, True]  # a slot that holds nothing yet (a new data segment) is written whole
        self._status: dict = {}
        self._lock = threading.Lock()  # the loop publishes, the checkpoint worker sets status
        #: why the view stopped following the batches (a segment that did not fit), or None
        self.failed: str | None = None

    def _create(self, name: str, size: int):
        """A new segment of ``size`` bytes, its memory reserved now: a tmpfs too small for it (a
        container's 64 MiB ``/dev/shm``) is an error here rather than a SIGBUS when written."""
        try:
            shm = self._shm.SharedMemory(name, create=True, size=size)
        except OSError as exc:
            raise StreamrankError(f"cannot create the shared-memory view {name!r} ({size} bytes): {exc}") from exc
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(shm._fd, 0, size)
        except OSError as exc:
            self._release(shm)
            raise StreamrankError(f"no room for the HTTP API's shared-memory view ({size} bytes) in /dev/shm: "
                                  f"{exc} (in a container, raise --shm-size)") from exc
        return shm

    # ------------------------------------------------------------------ data segment
    def _grow(self, n: int, name_bytes: int, info: int, string: bool) -> tuple:
        """A new data segment, large enough, with the ids written so far; returns ``(gen, old
        segment)``. Readers see it once the header names its generation."""
        d = self._d
        n_cap = max(1024, n * 2 if d is None or n > d.n_cap else d.n_cap)
        bytes_cap = max(1 << 16, name_bytes * 2 if d is None or name_bytes > d.bytes_cap else d.bytes_cap)
        info_cap = max(1 << 14, info * 2 if d is None or info > d.info_cap else d.info_cap)
        gen = int(self._h.ints[_H_GEN]) + 1
        size = _data_layout(n_cap, bytes_cap if string else 0, info_cap, string)["size"]
        shm = self._create(f"{self.name}-{gen}", size)
        new = _Data(shm.buf, n_cap=n_cap, bytes_cap=bytes_cap if string else 0, info_cap=info_cap, string=string)
        new.meta[:] = 0
        new.meta[_D_NCAP], new.meta[_D_BYTESCAP], new.meta[_D_INFOCAP] = n_cap, new.bytes_cap, info_cap
        new.meta[_D_STRING] = int(string)
        for s in (0, 1):
            new.slot[s][:] = 0
        self._fresh = [True, True]
        if d is not None:  # the ids written so far (the new segment is not yet visible to readers)
            k = self._ids_written
            if string:
                new.offsets[:k + 1] = d.offsets[:k + 1]
                new.names[:self._bytes_written] = d.names[:self._bytes_written]
            else:
                new.ids[:k] = d.ids[:k]
        else:
            if string:
                new.offsets[0] = 0
        old = self._data_shm
        self._data_shm, self._d = shm, new
        return gen, old

    def _append_ids(self, ids: np.ndarray, n: int, encoded: list | None) -> None:
        d, k = self._d, self._ids_written
        if n <= k:
            return
        if d.string:
            at = self._bytes_written
            for i, b in enumerate(encoded):
                d.names[at:at + len(b)] = np.frombuffer(b, np.uint8)
                at += len(b)
                d.offsets[k + i + 1] = at
            self._bytes_written = at
        else:
            d.ids[k:n] = ids[k:n]
        self._ids_written = n

    def publish(self, *, seq: int, ids: np.ndarray, p: np.ndarray, info: dict, applied_at: float) -> None:
        """Write one view: the ranks ``p`` and external ``ids`` (a prefix at least ``len(p)``
        long: int64, or an object array of ``str``) of batch ``seq``, with its ``info``. Writes
        every rank; :meth:`publish_changes` writes what changed."""
        n = int(p.shape[0])
        p = np.asarray(p, dtype=np.float64)

        def whole(_slot, _full):
            return slice(0, n), p, np.zeros(n, dtype=np.uint8)

        self.publish_changes(seq=seq, ids=ids, n=n, form=(True, 1.0, 0.0), changes=whole, info=info,
                             applied_at=applied_at)

    def publish_changes(self, *, seq: int, ids: np.ndarray, n: int, form: tuple, changes, info: dict,
                        applied_at: float) -> None:
        """Write one view of ``n`` vertices (external ``ids``: a prefix at least ``n`` long, int64
        or an object array of ``str``) of batch ``seq`` from the entries that changed.

        ``form`` is ``(divide, f0, f1)`` of :func:`~streamrank.rank.published.published_form`;
        ``changes(slot, full) -> (index, x, flags)`` gives the host entries to write into slot
        ``slot`` (``index`` an int array or a slice): those that differ from what the slot got
        at its last write, or all ``n`` when ``full``; called under the writer's lock, once per
        written slot, and the slot is written right after."""
        n = int(n)
        string = ids.dtype == object
        blob = _dumps(info)
        with self._lock:
            if self._h is None:
                return  # closed
            d = self._d
            if d is not None and string != d.string:  # the id kind was fixed by the first edges
                self._ids_written = self._bytes_written = 0
            encoded = None
            if string:
                encoded = [s.encode("utf-8", "surrogatepass") for s in ids[self._ids_written:n].tolist()]
            need = self._bytes_written + (sum(map(len, encoded)) if encoded else 0)
            grown = None
            if d is None or n > d.n_cap or len(blob) > d.info_cap or (string and need > d.bytes_cap) \
                    or string != d.string:
                if d is not None and string != d.string:
                    self._d = None
                try:
                    grown = self._grow(n, need, len(blob), string)
                except StreamrankError as exc:  # ingest goes on; answers stay at the last view written
                    if self.failed is None:
                        log.error("the HTTP API's view stops at the batch before seq=%d: %s", seq, exc)
                        self.failed = str(exc)
                        self._status["view_error"] = self.failed
                        self._write_status()
                    return
                d = self._d
            self._append_ids(ids, n, encoded)
            s = 0 if grown is not None else 1 - int(d.meta[_D_CUR])
            slot = d.slot[s]
            slot[_S_VER] += 1  # odd: being written
            at, xs, flags = changes(s, self._fresh[s])
            d.ranks[s][at] = xs
            d.flags[s][at] = flags
            self._fresh[s] = False
            d.info[s][:len(blob)] = np.frombuffer(blob, np.uint8)
            slot[_S_SEQ], slot[_S_N], slot[_S_INFOLEN] = int(seq), n, len(blob)
            slot[_S_DIVIDE] = int(bool(form[0]))
            d.factors[s][:] = (float(form[1]), float(form[2]))
            d.stamp[s][0] = float(applied_at)
            slot[_S_VER] += 1  # even: complete
            d.meta[_D_CUR] = s
            if grown is not None:
                self._h.ints[_H_GEN] = grown[0]
                if grown[1] is not None:
                    self._release(grown[1])
                if self.failed is not None:  # room again: the view follows the batches again
                    log.warning("the HTTP API's view follows the batches again from seq=%d", seq)
                    self.failed = None
                    self._status.pop("view_error", None)
                    self._write_status()
            if info.get("edges") is not None:
                row = self._h.hist[int(self._h.ints[_H_HIST_COUNT]) % HISTORY_BATCHES]
                row[:] = (applied_at, seq, info["edges"], info.get("graph_ms", 0.0), info.get("rank_ms", 0.0),
                          info.get("wait_ms", 0.0), np.nan if info.get("lag") is None else info["lag"])
                self._h.ints[_H_HIST_COUNT] += 1

    def set_status(self, **fields) -> None:
        """Merge ``fields`` into the status the loop reports (positions, lag, checkpoint)."""
        with self._lock:
            self._status.update(fields)
            if self._h is not None:  # else closed
                self._write_status()

    def _write_status(self) -> None:
        """Write the status fields into the buffer readers are not reading; call with the lock held."""
        blob = _dumps(self._status)
        if len(blob) > STATUS_CAP:  # /status keeps the last that fitted
            log.error("the daemon's status (%d bytes) does not fit the HTTP API's %d bytes", len(blob), STATUS_CAP)
            return
        h = self._h.ints
        s = 1 - int(h[_H_STATUS_CUR])
        h[_H_STATUS_VER + s] += 1
        self._h.status[s][:len(blob)] = np.frombuffer(blob, np.uint8)
        h[_H_STATUS_LEN + s] = len(blob)
        h[_H_STATUS_VER + s] += 1
        h[_H_STATUS_CUR] = s

    @staticmethod
    def _release(shm) -> None:
        try:
            shm.close()
        except BufferError:  # a numpy view still points into it; the mapping goes with the process
            pass
        try:
            shm.unlink()
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Unlink the segments (a reader that has them mapped keeps its mapping)."""
        with self._lock:
            self._d = None
            self._h = None
            for shm in (self._data_shm, self._header_shm):
                if shm is not None:
                    self._release(shm)
            self._data_shm = self._header_shm = None


class _Tries:
    """Retries of a read that met the writer: at once at first, then yielding the CPU; a read
    that keeps meeting a half-written part for a second (a writer that died writing) fails."""

    def __init__(self):
        self.n = 0
        self.deadline = None

    def again(self) -> None:
        self.n += 1
        if self.n < 100:
            return
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + 1.0
        elif now > self.deadline:
            raise StreamrankError("the daemon's shared view stayed half-written for a second")
        time.sleep(0.0005)


def _map(name: str):
    """A read-only mapping of the shared-memory segment ``name`` (not registered with the
    resource tracker: the writer owns the segments)."""
    import _posixshmem

    fd = _posixshmem.shm_open("/" + name, os.O_RDONLY, mode=0o600)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)


class SnapshotReader:
    """The HTTP server's side: the last complete view, status and history (see the module docstring).

    Parameters
    ----------
    name : str
        The writer's :attr:`SnapshotWriter.name`.
    started : float
        The daemon's start time (``time.time()``), for ``uptime_s``.
    """

    def __init__(self, name: str, *, started: float | None = None):
        self.name = name
        try:
            self._h = _Header(_map(name))
        except OSError as exc:
            raise StreamrankError(f"cannot open the daemon's shared-memory view {name!r}: {exc}") from exc
        if int(self._h.ints[_H_MAGIC]) != _MAGIC or int(self._h.ints[_H_LAYOUT]) != _LAYOUT:
            raise StreamrankError(f"{name!r} is not a streamrank view of this version")
        self.started = time.time() if started is None else float(started)
        self.index = VertexIndex()
        self._gen = 0
        self._d: _Data | None = None
        self._key = None
        self._view = None
        self._names = np.empty(0, dtype=object)  # string ids decoded so far

    def _attach(self, gen: int) -> bool:
        try:
            self._d = _Data.attach(_map(f"{self.name}-{gen}"))
        except FileNotFoundError:  # replaced again meanwhile: read the header anew
            return False
        self._gen = gen
        return True

    def _ids(self, n: int) -> np.ndarray:
        d = self._d
        if not d.string:
            return d.ids[:n]
        have = self._names.shape[0]
        if n > have:
            off = d.offsets[have:n + 1].copy()
            raw = d.names[off[0]:off[-1]].tobytes()
            fresh = [raw[a - off[0]:b - off[0]].decode("utf-8", "surrogatepass") for a, b in zip(off[:-1], off[1:])]
            grown = np.empty(n, dtype=object)
            grown[:have] = self._names
            grown[have:] = fresh
            self._names = grown
        return self._names[:n]

    def view(self):
        """The last complete view, a :class:`~streamrank.daemon.live.RankView` (None before the
        daemon published one)."""
        tries = _Tries()
        while True:
            gen = int(self._h.ints[_H_GEN])
            if gen == 0:
                return None
            if gen != self._gen and not self._attach(gen):
                tries.again()
                continue
            d = self._d
            s = int(d.meta[_D_CUR])
            ver = int(d.slot[s][_S_VER])
            key = (gen, s, ver)
            if key == self._key:
                return self._view
            if ver % 2:
                tries.again()
                continue
            seq, n, ilen, divide = (int(x) for x in d.slot[s][[_S_SEQ, _S_N, _S_INFOLEN, _S_DIVIDE]])
            applied_at = float(d.stamp[s][0])
            f0, f1 = (float(f) for f in d.factors[s])
            x = d.ranks[s][:n].copy()
            flags = d.flags[s][:n].copy() if not divide else None
            blob = d.info[s][:ilen].tobytes()
            if int(d.slot[s][_S_VER]) != ver:  # the writer reused the slot meanwhile
                tries.again()
                continue
            # the same operations as the engine's (apply_form): the same numbers
            p = x / f0 if divide else np.where(flags.view(bool), x * f1, x * f0)
            # the ids below n were written before the slot, and never change
            view = RankView(seq, self._ids(n), p, json.loads(blob), applied_at)
            self._key, self._view = key, view
            return view

    def status(self) -> dict:
        """The loop's status fields (checkpoint, lag), as last set."""
        h = self._h.ints
        tries = _Tries()
        while True:
            s = int(h[_H_STATUS_CUR])
            ver = int(h[_H_STATUS_VER + s])
            if ver == 0:
                return {}
            blob = self._h.status[s][:int(h[_H_STATUS_LEN + s])].tobytes()
            if ver % 2 == 0 and int(h[_H_STATUS_VER + s]) == ver:
                return json.loads(blob)
            tries.again()

    def history(self, seconds: float) -> list:
        """``(time, seq, edges, graph_ms, rank_ms, wait_ms, lag)`` of the batches of the last
        ``seconds``, oldest first (lag None where the source has none)."""
        h = self._h.ints
        before = int(h[_H_HIST_COUNT])
        ring = self._h.hist.copy()
        after = int(h[_H_HIST_COUNT])
        # rows numbered [after + 1 - HISTORY_BATCHES, before) were complete before the copy and
        # not overwritten during it
        first = max(0, after + 1 - HISTORY_BATCHES)
        since = time.time() - float(seconds)
        out = []
        for i in range(first, before):
            t, seq, edges, g, r, w, lag = ring[i % HISTORY_BATCHES].tolist()
            if t >= since:
                out.append((t, int(seq), int(edges), g, r, w, None if lag != lag else int(lag)))
        return out
