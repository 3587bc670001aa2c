"""The string id dictionary: external string ids <-> dense integer codes, on the host.

An engine over a string-id stream keeps one :class:`StringIdMap`. Each batch's string ids are
encoded to int64 codes here and the graph store (CPU or GPU) sees only the codes: its own
:class:`~streamrank.ids.cpu.IdMap` maps codes to internal vertex ids as it maps integer ids, so
no graph or kernel code knows about strings. Outputs map back with one NumPy gather
(``strings[codes]``).

Encoding a batch is vectorized: Arrow's ``dictionary_encode`` hashes the batch's ids in C++
and leaves the distinct values; only those are looked up in the persistent hash table (a Python
``dict``), and only the new ones are appended. The cost per batch is in the batch's size and
its distinct ids, never in the size of the dictionary; appends are amortized (the code ->
string array doubles its capacity). A small batch (up to :data:`SMALL_BATCH_IDS` ids) skips the
Arrow kernel, whose fixed cost per call outweighs a few dozen dictionary lookups: its ids are
looked up one by one, with the same codes as a result.

Codes are given in order of first appearance. An id seen only in deletions (of edges whose
endpoint the graph does not hold) gets a *transient* code past the end of the dictionary that
is not stored: the graph store finds no such vertex and counts an absent deletion, exactly as
for an unknown integer id. An id that appears in an insertion is stored even when the same
batch deletes that edge again (the graph then holds no such vertex; the dictionary entry is
harmless and keeps codes stable).

cuDF is not used: the codes are what the device needs, the dictionary is small next to the
graph, and cuDF is usually not installed (docs/architecture.md).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CheckpointError, InvalidArgumentError

_MIN_CAPACITY = 1024

#: Up to this many ids (both endpoints of a batch's edges) are encoded with Python dictionary
#: lookups; above it with Arrow's ``dictionary_encode``, whose fixed cost per call is then paid
#: back. Both give the same codes.
SMALL_BATCH_IDS = 512


class StringIdMap:
    """String ids <-> codes ``0..n-1`` (first-appearance order); host only."""

    def __init__(self):
        self._index: dict[str, int] = {}
        self._strings = np.empty(_MIN_CAPACITY, dtype=object)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"StringIdMap({self._n} ids)"

    @property
    def strings(self) -> np.ndarray:
        """Code -> string, as a NumPy object array (a view: do not modify)."""
        return self._strings[: self._n]

    # ------------------------------------------------------------------ encoding
    def encode(self, ids: pa.Array, *, add=None) -> np.ndarray:
        """Codes of ``ids`` (an Arrow string array without nulls), as int64.

        Parameters
        ----------
        ids : pyarrow.Array
            String ids, already validated.
        add : ndarray of bool, optional
            Per element: whether an unknown id is added to the dictionary (default: all). An
            unknown id not added gets a transient code ``>= len(self)`` (distinct ids get
            distinct codes) that is not stored.

        Returns
        -------
        ndarray of int64
        """
        n = len(ids)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if n <= SMALL_BATCH_IDS:
            return self._encode_list(ids.to_pylist(), None if add is None else np.asarray(add, dtype=bool).tolist)
        enc = pc.dictionary_encode(ids)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        indices = enc.indices.to_numpy(zero_copy_only=False)
        uniq = enc.dictionary.to_pylist()  # the batch's distinct ids, in first-appearance order
        get = self._index.get
        codes_u = np.fromiter((get(u, -1) for u in uniq), dtype=np.int64, count=len(uniq))
        unknown = codes_u < 0
        if unknown.any():
            if add is None:
                addable = unknown
            else:
                addable = np.zeros(len(uniq), dtype=bool)
                addable[indices[np.asarray(add, dtype=bool)]] = True
                addable &= unknown
            new_pos = np.flatnonzero(addable)
            if new_pos.shape[0]:
                codes_u[new_pos] = self._append([uniq[i] for i in new_pos.tolist()]) + np.arange(new_pos.shape[0])
            transient = np.flatnonzero(unknown & ~addable)
            codes_u[transient] = self._n + np.arange(transient.shape[0], dtype=np.int64)
        return codes_u[indices]

    def encode_edges(self, src: pa.Array, dst: pa.Array, insert) -> tuple[np.ndarray, np.ndarray]:
        """Codes ``(src, dst)`` of the endpoints of edges ``src[i] -> dst[i]`` (Arrow string
        arrays) with per-edge ops ``insert``: an unknown id is added where an insertion names it
        (:meth:`encode` of both endpoint arrays at once)."""
        n = len(src)
        insert = np.asarray(insert, dtype=bool)
        if 2 * n <= SMALL_BATCH_IDS:
            codes = self._encode_list(src.to_pylist() + dst.to_pylist(), lambda: insert.tolist() * 2)
            return codes[:n], codes[n:]
        codes = self.encode(pa.concat_arrays([src, dst.cast(src.type)]), add=np.concatenate([insert, insert]))
        return codes[:n], codes[n:]

    def _encode_list(self, values: list, adds) -> np.ndarray:
        """:meth:`encode` of a short list of ``str`` in Python: a few dictionary lookups cost less
        than the fixed overhead of Arrow's hashing kernel on a small batch. Same codes as the
        Arrow path: new ids in order of first appearance, transient codes after them. ``adds``:
        None (add every unknown id) or a function giving the list of per-value ``add`` flags,
        called only when an id is unknown."""
        get = self._index.get
        codes = [get(v, -1) for v in values]
        if -1 in codes:
            add = None if adds is None else adds()
            addable: dict = {}  # unknown id -> whether an insertion names it, in first-appearance order
            for i, c in enumerate(codes):
                if c < 0:
                    v = values[i]
                    if add is None or add[i]:
                        addable[v] = True
                    else:
                        addable.setdefault(v, False)
            fresh = [v for v, a in addable.items() if a]
            start = self._append(fresh) if fresh else self._n
            new = dict(zip(fresh, range(start, start + len(fresh))))
            t = self._n
            for v, a in addable.items():
                if not a:
                    new[v] = t
                    t += 1
            codes = [c if c >= 0 else new[v] for v, c in zip(values, codes)]
        return np.array(codes, dtype=np.int64)

    def _append(self, fresh: list) -> int:
        """Give the new ids ``fresh`` (distinct, unknown) the next codes; returns the first one."""
        start, count = self._n, len(fresh)
        if start + count > self._strings.shape[0]:
            grown = np.empty(max(2 * self._strings.shape[0], start + count), dtype=object)
            grown[:start] = self._strings[:start]
            self._strings = grown
        self._strings[start:start + count] = fresh
        self._index.update(zip(fresh, range(start, start + count)))
        self._n = start + count
        return start

    def truncate(self, n: int) -> None:
        """Forget the ids of codes ``n`` and up (those added by a batch the graph refused), so the
        codes stay those of the applied batches alone."""
        n = int(n)
        if not 0 <= n <= self._n:
            raise InvalidArgumentError(f"truncate to {n} ids: the map holds {self._n}")
        for s in self._strings[n: self._n].tolist():
            del self._index[s]
        self._strings[n: self._n] = None
        self._n = n

    def lookup(self, ids) -> np.ndarray:
        """Codes of ``ids`` (a sequence of ``str``); -1 where unknown. Adds nothing."""
        get = self._index.get
        return np.fromiter((get(v, -1) for v in ids), dtype=np.int64)

    def decode(self, codes) -> np.ndarray:
        """The string of each code (host int array), as a NumPy object array."""
        return self._strings[np.asarray(codes, dtype=np.int64)]

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays for a checkpoint: UTF-8 bytes and int64 offsets (Arrow layout, no pickle)."""
        offsets, data = pack_strings(self.strings)
        return {"id_offsets": offsets, "id_data": data}

    @classmethod
    def from_state(cls, state: dict) -> "StringIdMap":
        """Rebuild a map saved by :meth:`state` (codes preserved).

        Raises
        ------
        CheckpointError
            When the arrays are missing or do not form valid, distinct UTF-8 strings.
        """
        try:
            strings = unpack_strings(state["id_offsets"], state["id_data"])
        except KeyError as exc:
            raise CheckpointError(f"string id state lacks {exc}") from exc
        m = cls()
        m._append(strings.tolist())
        if len(m._index) != m._n:
            raise CheckpointError("string id state holds duplicate ids")
        return m


def pack_strings(strings) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets int64[n+1], data uint8)`` of a sequence of ``str`` (Arrow large_string layout)."""
    arr = pa.array(strings, type=pa.large_string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=n + 1, offset=8 * arr.offset).copy()
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8).copy() if data_buf is not None else np.zeros(0, np.uint8)
    start = int(offsets[0]) if n else 0
    return offsets - start, data[start:int(offsets[-1]) if n else 0]


def unpack_strings(offsets, data) -> np.ndarray:
    """The NumPy object array of strings packed by :func:`pack_strings`.

    Raises
    ------
    CheckpointError
        When the arrays do not form valid UTF-8 strings.
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    data = np.ascontiguousarray(data, dtype=np.uint8)
    n = max(int(offsets.shape[0]) - 1, 0)
    try:
        arr = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
        arr.validate(full=True)
    except (pa.ArrowException, ValueError) as exc:
        raise CheckpointError(f"string ids in the state do not read: {exc}") from exc
    return arr.to_numpy(zero_copy_only=False)
