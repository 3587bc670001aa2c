"""Atomic checkpoints: engine state, ranks, source positions and the batch sequence number.

A checkpoint is one ``.npz`` file, ``ckpt-<seq>.npz``, written to a temporary name in the
checkpoint directory, flushed and fsynced, then renamed into place (``os.replace`` is atomic on
POSIX), after which the directory is fsynced and the manifest ``MANIFEST.json`` (itself written
by temp-file + rename) is updated to list it. The last ``keep`` checkpoints are kept; older ones
are deleted after the manifest no longer names them.

Reading (:func:`load_latest`) trusts the manifest first and falls back to scanning the
directory, newest sequence number first, skipping files that do not load, so that a crash at any
point of the write leaves the previous checkpoint usable.

Layout of the ``.npz``: every engine-state array under ``engine/<key>``, the published ranks
under ``ranks/ids`` and ``ranks/p`` (when given; string ids as UTF-8 bytes ``ranks/id_data``
with int64 offsets ``ranks/id_offsets``, see :func:`streamrank.ids.strings.pack_strings`), and
``meta.json`` (UTF-8 bytes) holding ``seq``, ``positions``, ``meta`` and the non-array engine-state values.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ..errors import CheckpointError
from ..ids.strings import pack_strings, unpack_strings

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


def fsync_dir(directory: str) -> None:
    """Make the names in ``directory`` durable (a new or renamed file); best effort."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


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
                    ranks=None, keep: int = 3) -> str:
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
        Checkpoints to keep (at least 1).

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
        arrays["meta.json"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    except TypeError as exc:
        raise CheckpointError(f"checkpoint metadata is not JSON-serialisable: {exc}") from exc
    name = f"ckpt-{seq:012d}.npz"
    path = os.path.join(directory, name)
    try:
        os.makedirs(directory, exist_ok=True)
        _write_atomic(path, lambda fh: np.savez(fh, **arrays))
        entries = [e for e in _read_manifest(directory) if e["file"] != name]
        entries.append({"file": name, "seq": seq, "positions": positions, "created": created})
        entries.sort(key=lambda e: e["seq"])
        kept, dropped = entries[-keep:], entries[:-keep]
        body = json.dumps({"version": FORMAT_VERSION, "checkpoints": kept}, indent=1).encode()
        _write_atomic(os.path.join(directory, MANIFEST), lambda fh: fh.write(body))
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {path}: {exc}") from exc
    for e in dropped:
        _unlink_quiet(os.path.join(directory, e["file"]))
    # Files no manifest names (older runs, crashes between rename and manifest) beyond `keep`.
    kept_names = {e["file"] for e in kept}
    for other in _scan(directory):
        if other[1] not in kept_names and other[0] < kept[0]["seq"]:
            _unlink_quiet(os.path.join(directory, other[1]))
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
    except (OSError, ValueError) as exc:
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
    """Read one checkpoint file.

    Raises
    ------
    CheckpointError
        When the file is missing, truncated or not a checkpoint.
    """
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(bytes(z["meta.json"]).decode())
            state = dict(header.get("engine_plain", {}))
            ranks_ids = ranks_p = None
            for key in z.files:
                if key.startswith("engine/"):
                    state[key[len("engine/"):]] = z[key]
                elif key == "ranks/ids":
                    ranks_ids = z[key]
                elif key == "ranks/id_offsets":
                    ranks_ids = unpack_strings(z[key], z["ranks/id_data"])
                elif key == "ranks/p":
                    ranks_p = z[key]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    ranks = (ranks_ids, ranks_p) if ranks_ids is not None and ranks_p is not None else None
    return Checkpoint(path=path, seq=int(header["seq"]), positions=header.get("positions", {}),
                      meta=header.get("meta", {}), engine_state=state, ranks=ranks,
                      created=float(header.get("created", 0.0)))


def iter_readable(directory):
    """Readable full checkpoints in ``directory``, newest first (a generator of :class:`Checkpoint`).

    The manifest is consulted first; files it does not list (a crash after the rename but before
    the manifest update) are considered too, since every file is complete once renamed. A file
    that does not read is skipped with a warning.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return
    candidates = {e["file"]: int(e["seq"]) for e in _read_manifest(directory)}
    for seq, name in _scan(directory):
        candidates.setdefault(name, seq)
    for name, _seq in sorted(candidates.items(), key=lambda kv: kv[1], reverse=True):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        try:
            ck = read_checkpoint(path)
        except CheckpointError as exc:
            log.warning("skipping unreadable checkpoint: %s", exc)
            continue
        yield ck


def load_latest(directory) -> Checkpoint | None:
    """The newest readable full checkpoint in ``directory``, or ``None`` when there is none.

    Only the snapshot: the batches logged after it (incremental checkpoints) are replayed by
    :func:`streamrank.checkpoints.recovery.restore_latest`, which is what a reader of the latest state wants.
    """
    return next(iter_readable(directory), None)
