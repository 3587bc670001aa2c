"""Append-only log of applied batches between full checkpoints (incremental checkpoints).

A full checkpoint ``ckpt-<S>.npz`` (:mod:`streamrank.checkpoints.full`) is followed by the log
``ckpt-<S>.log``: each incremental checkpoint appends one *frame* holding the batches applied
since the previous checkpoint (their edges in external ids, in arrival order, with their sequence
numbers) and the source positions once they are applied. Restoring is the full checkpoint plus a
replay of the frames (:mod:`streamrank.checkpoints.recovery`), so an incremental checkpoint costs what
changed, not the size of the graph.

Frame layout: ``b"SRLG"``, payload length (uint64 LE), CRC-32 of the payload (uint32 LE), then
the payload: an Arrow IPC stream of one table ``src``, ``dst`` (the external ids: int64, or strings), ``op``
(int8 +1/-1), and for a weighted engine's batches ``weight`` (float64, null where a deletion has no
weight; an unweighted batch among them is logged as its meaning: weight 1 per insertion, no
weight per deletion), whose schema metadata ``frame`` holds JSON ``{"seqs": [...], "lengths": [...],
"positions": {...}}``. A frame is appended with one ``write`` and fsynced before the checkpoint
counts. A reader accepts frames up to the first one that is short, fails its CRC or does not
decode, reports where the valid part ends, and tells two kinds of damage apart:

- a *torn* tail: what follows the valid part is an incomplete last frame (a header cut short, a
  payload shorter than its header says, or zeros), what a crash mid-append leaves;
- *corruption*: a complete frame that fails its CRC or does not decode, or bytes that are no
  frame header followed by more data; frames after it (counted and reported when they check)
  cannot be applied without it.

Either way the state is the full checkpoint plus the frames before the damage; the daemon keeps
a copy of a corrupt log in ``damaged/`` (:mod:`.damaged`), and the writer cuts the log after its
last good frame before appending again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from .damaged import fsync_dir
from ..errors import CheckpointError
from ..ids.kinds import concat_ids, id_kind, to_string_array

log = logging.getLogger(__name__)

MAGIC = b"SRLG"
_HEADER = struct.Struct("<4sQI")
_LOG_RE = re.compile(r"^ckpt-(\d{12})\.log$")


def log_path(directory, base_seq: int) -> str:
    """Path of the log that follows the full checkpoint of ``base_seq``."""
    return os.path.join(os.fspath(directory), f"ckpt-{int(base_seq):012d}.log")


def list_logs(directory) -> list:
    """``(base seq, path)`` of the batch logs in ``directory`` (named by :func:`log_path`), oldest first."""
    directory = os.fspath(directory)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted((int(m.group(1)), os.path.join(directory, n)) for n in names if (m := _LOG_RE.match(n)))


@dataclass
class LoggedBatch:
    """One applied batch as logged: external ids (int64, or an Arrow string array) in arrival order,
    and the weights of a weighted batch (float64, NaN where a deletion has no weight; None when
    unweighted)."""

    seq: int
    src: object
    dst: object
    insert: np.ndarray
    weight: np.ndarray | None = None


@dataclass
class Frame:
    """One incremental checkpoint: the batches since the previous one, and the positions after them."""

    batches: list
    positions: dict
    nbytes: int = 0


@dataclass
class LogContents:
    """What :func:`read_log` found.

    Attributes
    ----------
    frames : list of Frame
        The complete frames before any damage, in order.
    valid_bytes : int
        Length of the file up to the end of the last of them.
    torn : bool
        Whether an incomplete last frame was dropped (a crash mid-append).
    corrupt : bool
        Whether a damaged frame was found (it and everything after it were dropped).
    frames_after : int
        With ``corrupt``: complete frames that check but follow the damaged one (lost with it).
    """

    frames: list = field(default_factory=list)
    valid_bytes: int = 0
    torn: bool = False
    corrupt: bool = False
    frames_after: int = 0

    @property
    def damage(self) -> str | None:
        """``"torn"``, ``"corrupt"`` or ``None``."""
        return "corrupt" if self.corrupt else "torn" if self.torn else None


def encode_frame(batches, positions: dict) -> bytes:
    """The bytes of one frame (header + payload)."""
    import pyarrow as pa

    if batches:
        src, dst = _log_ids([b.src for b in batches]), _log_ids([b.dst for b in batches])
        ins = np.concatenate([np.asarray(b.insert, dtype=bool) for b in batches])
    else:
        src = dst = np.zeros(0, dtype=np.int64)
        ins = np.zeros(0, dtype=bool)
    meta = {"seqs": [int(b.seq) for b in batches], "lengths": [int(len(b.insert)) for b in batches],
            "positions": positions}
    cols = {"src": src, "dst": dst, "op": np.where(ins, 1, -1).astype(np.int8)}
    if any(b.weight is not None for b in batches):
        w = np.concatenate([np.where(np.asarray(b.insert, dtype=bool), 1.0, np.nan) if b.weight is None
                            else np.asarray(b.weight, dtype=np.float64) for b in batches])
        cols["weight"] = pa.array(w, type=pa.float64(), mask=np.isnan(w))
    table = pa.table(cols)
    table = table.replace_schema_metadata({"frame": json.dumps(meta)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    payload = sink.getvalue().to_pybytes()
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def _log_ids(parts: list):
    """One id column of a frame: int64 for integer ids, an Arrow string array for string ids."""
    if id_kind(parts[0]) == "int":
        return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
    return concat_ids([to_string_array(p) for p in parts])


def _read_ids(col):
    """A frame's id column: an int64 array, or (string ids) an Arrow string array."""
    import pyarrow as pa

    col = col.combine_chunks()
    return to_string_array(col) if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) \
        else col.to_numpy()


def _decode_payload(payload: bytes) -> Frame:
    import pyarrow as pa

    table = pa.ipc.open_stream(pa.BufferReader(payload)).read_all()
    meta = json.loads(table.schema.metadata[b"frame"])
    src = _read_ids(table.column("src"))
    dst = _read_ids(table.column("dst"))
    ins = table.column("op").to_numpy() > 0
    weight = None
    if "weight" in table.column_names:  # nulls (deletions without a weight) read as NaN
        weight = np.asarray(table.column("weight").combine_chunks().to_numpy(zero_copy_only=False), dtype=np.float64)
    batches, at = [], 0
    for seq, n in zip(meta["seqs"], meta["lengths"]):
        batches.append(LoggedBatch(int(seq), src[at:at + n], dst[at:at + n], ins[at:at + n],
                                   None if weight is None else weight[at:at + n]))
        at += n
    if at != ins.shape[0]:
        raise ValueError("frame lengths do not add up to its rows")
    return Frame(batches, dict(meta["positions"]), _HEADER.size + len(payload))


def read_log(path) -> LogContents:
    """Read the complete frames of a log up to any damage, which is reported (torn or corrupt).

    Raises
    ------
    CheckpointError
        When the file exists but cannot be read.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return LogContents()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint log {path}: {exc}") from exc
    out = LogContents()
    at, why = 0, None
    while at < len(data):
        why = _frame_fault(data, at)
        if why is None:
            end = at + _HEADER.size + _HEADER.unpack_from(data, at)[1]
            try:
                out.frames.append(_decode_payload(data[at + _HEADER.size:end]))
            except Exception as exc:  # noqa: BLE001 - pyarrow, JSON or a bad field: the frame is damaged
                why = f"undecodable frame ({type(exc).__name__}: {exc})"
        if why is not None:
            break
        at = end
    out.valid_bytes = at
    if at < len(data):
        nxt = _next_good_frame(data, at + 1)
        out.frames_after = _count_frames(data, nxt) if nxt is not None else 0
        out.torn = nxt is None and _incomplete(data, at)
        out.corrupt = not out.torn
    if out.torn:
        log.warning("checkpoint log %s: dropping %d bytes of an incomplete last frame at byte %d (torn append)",
                    path, len(data) - at, at)
    elif out.corrupt:
        log.warning("checkpoint log %s: corrupt frame at byte %d (%s): dropping it and the %d bytes after it, "
                    "%d complete later frames included (they cannot be applied without it)",
                    path, at, why, len(data) - at, out.frames_after)
    return out


def _frame_fault(data: bytes, at: int) -> str | None:
    """Why the bytes at ``at`` are not a complete frame with a good CRC (``None`` when they are)."""
    if len(data) - at < _HEADER.size:
        return "a header cut short"
    magic, n, crc = _HEADER.unpack_from(data, at)
    if magic != MAGIC:
        return "no frame header"
    if at + _HEADER.size + n > len(data):
        return "a payload cut short"
    if zlib.crc32(data[at + _HEADER.size:at + _HEADER.size + n]) != crc:
        return "CRC mismatch"
    return None


def _incomplete(data: bytes, at: int) -> bool:
    """Whether the damaged tail from ``at`` looks like an append cut short: a header or payload
    shorter than declared, or zeros (what some file systems leave after a crash)."""
    if len(data) - at < _HEADER.size or not any(data[at:]):
        return True
    magic, n, _crc = _HEADER.unpack_from(data, at)
    return magic == MAGIC and at + _HEADER.size + n > len(data)


def _next_good_frame(data: bytes, start: int) -> int | None:
    """Offset of the first complete frame with a good CRC at or after ``start``, if any."""
    at = data.find(MAGIC, start)
    while at >= 0:
        if _frame_fault(data, at) is None:
            return at
        at = data.find(MAGIC, at + 1)
    return None


def _count_frames(data: bytes, at: int) -> int:
    """Complete, CRC-checked frames one after the other from ``at``."""
    k = 0
    while at < len(data) and _frame_fault(data, at) is None:
        at += _HEADER.size + _HEADER.unpack_from(data, at)[1]
        k += 1
    return k


class BatchLog:
    """Appends frames to the log of one full checkpoint.

    Parameters
    ----------
    path : str
    valid_bytes : int, optional
        Length of the valid part (from :func:`read_log`); anything after it is truncated first.
    """

    def __init__(self, path: str, *, valid_bytes: int = 0):
        self.path = os.fspath(path)
        try:
            self._fh = open(self.path, "ab")
            if self._fh.tell() != valid_bytes:
                self._fh.truncate(valid_bytes)
                self._fh.seek(valid_bytes)
                os.fsync(self._fh.fileno())
        except OSError as exc:
            raise CheckpointError(f"cannot open checkpoint log {self.path}: {exc}") from exc
        self.nbytes = valid_bytes
        if valid_bytes == 0:
            fsync_dir(os.path.dirname(self.path) or ".")  # the new file's name is durable

    def append(self, batches, positions: dict) -> int:
        """Append one frame and fsync it; returns the bytes written.

        Raises
        ------
        CheckpointError
        """
        frame = encode_frame(batches, positions)
        try:
            self._fh.write(frame)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            try:  # cut a partial frame off, so that a retried append follows the last good one
                self._fh.truncate(self.nbytes)
                self._fh.seek(self.nbytes)
            except OSError:
                pass
            raise CheckpointError(f"cannot append to checkpoint log {self.path}: {exc}") from exc
        self.nbytes += len(frame)
        return len(frame)

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError:
            pass

