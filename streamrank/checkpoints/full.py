"""Atomic checkpoints: engine state, ranks, source positions and the batch sequence number.

A checkpoint is one ``.npz`` file, ``ckpt-<seq>.npz``, written to a temporary name in the
checkpoint directory, flushed and fsynced, then renamed into place (``os.replace`` is atomic on
POSIX), after which the directory is fsynced and the manifest ``MANIFEST.json`` (itself written
by temp-file + rename) is updated to list it.

Reading (:func:`read_checkpoint`) checks the file whole before anything uses it: every member
read to its end against the ZIP's CRC-32s and against the member table the writer recorded in
``meta.json`` (:mod:`.container`, which says where the checksums live and why), then the
structure of the engine state (:mod:`.validate`). Any failure, whatever raised it, is one
:class:`~streamrank.errors.CheckpointError`. :func:`iter_readable` goes through the checkpoints
newest first (the file names' sequence numbers, from the manifest and a scan of the directory,
so that a crash between the rename and the manifest update loses nothing) and skips, and
reports, those that fail.

Retention (:func:`save_checkpoint`'s ``keep``) counts the checkpoints of the lineage being
written: the new one and the older ones, less those known not to read (``unreadable``). A file
with a *higher* sequence number than the one written cannot belong to it (a restore would have
started from it), so it is moved into ``damaged/`` (:mod:`.damaged`) with the known unreadable
ones, never deleted and never kept in place of a readable checkpoint.

Layout of the ``.npz``: every engine-state array under ``engine/<key>`` (a weighted engine's edge
weights as ``engine/weight``, beside ``engine/src`` and ``engine/dst``), the published ranks
under ``ranks/ids`` and ``ranks/p`` (when given; string ids as UTF-8 bytes ``ranks/id_data``
with int64 offsets ``ranks/id_offsets``, see :func:`streamrank.ids.strings.pack_strings`), and
``meta.json`` (UTF-8 bytes) holding ``seq``, ``positions``, ``meta``, the non-array engine-state
values and (since the member table) ``members``. ``numpy.load`` reads it, as before.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import CheckpointError
from ..ids.strings import pack_strings, unpack_strings
from .container import read_npz, write_npz
from .damaged import fsync_dir, move_aside
from .validate import check_structure

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.json"
FORMAT_VERSION = 1
_NAME_RE = re.compile(r"^ckpt-(\d{12})\.npz$")


@dataclass
class Checkpoint:
    """A checkpoint read back from disk.

    Attributes
    ----------
    path : str
    seq : int
        Batches applied to the state it holds.
    positions : dict
        Source positions (JSON values) just past the last record the state includes.
    meta : dict
        Free-form metadata given at save time.
    engine_state : dict
        What ``Engine.state()`` returned (arrays and plain values).
    ranks : tuple of ndarray or None
        ``(external_ids, p)`` saved with it, if any.
    created : float
        UNIX time of the write.
    """

    path: str
    seq: int
    positions: dict
    meta: dict = field(default_factory=dict)
    engine_state: dict = field(default_factory=dict)
    ranks: tuple | None = None
    created: float = 0.0


def _write_atomic(path: str, write) -> None:
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".tmp-{os.getpid()}-{os.path.basename(path)}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quiet(tmp)
        raise
    fsync_dir(directory)


def _split_state(engine_state: dict):
    arrays, plain = {}, {}
    for key, value in engine_state.items():
        if isinstance(value, np.ndarray):
            arrays[f"engine/{key}"] = value
        elif hasattr(value, "get") and type(value).__module__.startswith("cupy"):
            arrays[f"engine/{key}"] = value.get()
        elif isinstance(value, (str, int, float, bool, type(None), list, dict)):
            plain[key] = value
        elif isinstance(value, np.generic):
            plain[key] = value.item()
        else:
            arrays[f"engine/{key}"] = np.asarray(value)
    return arrays, plain


def save_checkpoint(directory, engine_state: dict, *, seq: int, positions: dict, meta: dict | None = None,
                    ranks=None, keep: int = 3, unreadable=()) -> str:
    """Write a checkpoint atomically and record it in the manifest.

    Parameters
    ----------
    directory : str or os.PathLike
        Created if missing.
    engine_state : dict
        ``Engine.state()``: NumPy arrays and plain JSON values.
    seq : int
        Batch sequence number of the state.
    positions : dict
        Source positions (JSON-serialisable) of the first record *not* in the state.
    meta : dict, optional
        JSON-serialisable extras (algorithm, device, config).
    ranks : tuple of ndarray, optional
        ``(external_ids, p)`` so that readers need not rebuild an engine.
    keep : int, optional
        Checkpoints to keep (at least 1): the newest ones up to ``seq``, this one included.
    unreadable : iterable of str, optional
        Checkpoint files known not to read (a restore skipped them): never counted among the
        kept ones, moved into ``damaged/`` (as are files with a sequence number above ``seq``).

    Returns
    -------
    str
        Path of the checkpoint file.

    Raises
    ------
    CheckpointError
        When the directory or the file cannot be written.
    """
    directory = os.fspath(directory)
    keep = max(1, int(keep))
    seq = int(seq)
    arrays, plain = _split_state(engine_state)
    if ranks is not None:
        ids = np.asarray(ranks[0])
        if ids.dtype == object:  # string vertex ids
            arrays["ranks/id_offsets"], arrays["ranks/id_data"] = pack_strings(ids)
        else:
            arrays["ranks/ids"] = ids.astype(np.int64)
        arrays["ranks/p"] = np.asarray(ranks[1], dtype=np.float64)
    created = time.time()
    header = {"version": FORMAT_VERSION, "seq": seq, "positions": positions, "meta": meta or {},
              "engine_plain": plain, "created": created}
    try:
        json.dumps(header)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint metadata is not JSON-serialisable: {exc}") from exc
    name = f"ckpt-{seq:012d}.npz"
    path = os.path.join(directory, name)
    skip = {os.path.basename(os.fspath(p)) for p in unreadable}
    try:
        os.makedirs(directory, exist_ok=True)
        _write_atomic(path, lambda fh: write_npz(fh, arrays, header))
        listed = {e.get("file"): e for e in _read_manifest(directory) if isinstance(e, dict)}
        on_disk = _scan(directory)
        lineage = [(s, n) for s, n in on_disk if s <= seq and n not in skip and n != name] + [(seq, name)]
        lineage.sort()
        kept, dropped = lineage[-keep:], lineage[:-keep]
        entries = [{"file": name, "seq": seq, "positions": positions, "created": created} if n == name
                   else listed[n] for s, n in kept if n == name or n in listed]
        body = json.dumps({"version": FORMAT_VERSION, "checkpoints": entries}, indent=1).encode()
        _write_atomic(os.path.join(directory, MANIFEST), lambda fh: fh.write(body))
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {path}: {exc}") from exc
    for s, n in on_disk:
        if n == name:
            continue
        if n in skip:
            move_aside(os.path.join(directory, n), why="it does not read")
        elif s > seq:
            move_aside(os.path.join(directory, n), why=f"a checkpoint after seq {seq} that the restore did not use")
    for _s, n in dropped:
        _unlink_quiet(os.path.join(directory, n))
    log.debug("checkpoint seq=%d written to %s", seq, path)
    return path


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _read_manifest(directory: str) -> list:
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as fh:
            body = json.loads(fh.read())
        return list(body.get("checkpoints", []))
    except FileNotFoundError:
        return []
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        log.warning("checkpoint manifest in %s unreadable (%s); scanning the directory", directory, exc)
        return []


def _scan(directory: str) -> list:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = []
    for n in names:
        m = _NAME_RE.match(n)
        if m:
            found.append((int(m.group(1)), n))
    return sorted(found)


def list_checkpoints(directory) -> list:
    """Checkpoint files in ``directory`` as ``(seq, path)``, oldest first."""
    directory = os.fspath(directory)
    return [(s, os.path.join(directory, n)) for s, n in _scan(directory)]


def read_checkpoint(path) -> Checkpoint:
    """Read one checkpoint file, checked whole (the module docstring).

    Raises
    ------
    CheckpointError
        When the file is missing, truncated, damaged anywhere, or not a checkpoint; never
        another exception.
    """
    path = os.fspath(path)
    m = _NAME_RE.match(os.path.basename(path))
    arrays, header = read_npz(path)
    try:
        check_structure(arrays, header, path=path, name_seq=int(m.group(1)) if m else None)
        state = dict(header.get("engine_plain", {}))
        ranks_ids = ranks_p = None
        for key, arr in arrays.items():
            if key.startswith("engine/"):
                state[key[len("engine/"):]] = arr
        if "ranks/p" in arrays:
            ranks_p = arrays["ranks/p"]
            ranks_ids = arrays["ranks/ids"] if "ranks/ids" in arrays else \
                unpack_strings(arrays["ranks/id_offsets"], arrays["ranks/id_data"])
        ranks = (ranks_ids, ranks_p)
        return Checkpoint(path=path, seq=int(header["seq"]), positions=header.get("positions", {}),
                          meta=header.get("meta", {}), engine_state=state,
                          ranks=ranks if ranks_p is not None else None, created=float(header.get("created", 0.0)))
    except (CheckpointError, MemoryError):
        raise  # MemoryError: the machine, not the file (sizes are checked before anything is allocated)
    except Exception as exc:  # noqa: BLE001 - one error for any damage
        raise CheckpointError(f"cannot read checkpoint {path}: {type(exc).__name__}: {exc}") from exc


def iter_readable(directory, *, skipped: list | None = None):
    """Readable full checkpoints in ``directory``, newest first (a generator of :class:`Checkpoint`).

    Candidates are the files the manifest lists and those a scan finds (a crash after the
    rename but before the manifest update leaves a complete file), ordered by the sequence
    number in their names. A file that does not read is skipped with a warning and, when
    ``skipped`` is given, appended to it as ``(path, reason)``.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return
    names = {n for _s, n in _scan(directory)}
    names.update(e.get("file") for e in _read_manifest(directory)
                 if isinstance(e, dict) and isinstance(e.get("file"), str) and _NAME_RE.match(e["file"]))
    for name in sorted(names, key=lambda n: int(_NAME_RE.match(n).group(1)), reverse=True):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        try:
            ck = read_checkpoint(path)
        except CheckpointError as exc:
            log.warning("skipping unreadable checkpoint: %s", exc)
            if skipped is not None:
                skipped.append((path, str(exc)))
            continue
        yield ck


def load_latest(directory) -> Checkpoint | None:
    """The newest readable full checkpoint in ``directory``, or ``None`` when there is none.

    Only the snapshot: the batches logged after it (incremental checkpoints) are replayed by
    :func:`streamrank.checkpoints.recovery.restore_latest`, which is what a reader of the latest state wants.
    """
    return next(iter_readable(directory), None)
