"""Checkpoint files that do not read are moved aside, into ``<checkpoint dir>/damaged/``, never deleted.

A full checkpoint that fails its checks (:func:`streamrank.checkpoints.full.read_checkpoint`)
is moved there by the daemon once an older one restored, so that retention neither keeps it
in place of a readable one nor tries it again at every restart; a batch log with a corrupt frame
in the middle is copied there before the daemon cuts it after its last good frame. Nothing in
``damaged/`` is read again: it is kept for the operator (and for a post-mortem).
"""

from __future__ import annotations

import logging
import os
import re
import shutil

from ..errors import CheckpointError

log = logging.getLogger(__name__)

#: Sub-directory of the checkpoint directory holding what was moved aside.
DAMAGED_DIR = "damaged"
#: Files that make up the daemon's state in a checkpoint directory.
STATE_FILE_RE = re.compile(r"^(ckpt-\d{12}\.(npz|log)|MANIFEST\.json)$")


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


def _target(path: str) -> str:
    """A free name for ``path`` in the ``damaged/`` directory beside it (``name``, ``name.1``, ...)."""
    directory, name = os.path.split(os.path.abspath(path))
    aside = os.path.join(directory, DAMAGED_DIR)
    os.makedirs(aside, exist_ok=True)
    dest, k = os.path.join(aside, name), 0
    while os.path.lexists(dest):
        k += 1
        dest = os.path.join(aside, f"{name}.{k}")
    return dest


def move_aside(path: str, *, why: str) -> str | None:
    """Move ``path`` into ``damaged/`` beside it; returns the new path, or ``None`` when it could
    not be moved (logged: the caller goes on, the file stays where it was)."""
    try:
        dest = _target(path)
        os.replace(path, dest)
    except OSError as exc:
        log.warning("cannot move %s aside (%s): %s", path, why, exc)
        return None
    fsync_dir(os.path.dirname(dest))
    fsync_dir(os.path.dirname(os.path.abspath(path)))
    log.warning("moved %s to %s: %s", path, dest, why)
    return dest


def copy_aside(path: str, *, why: str) -> str | None:
    """Copy ``path`` into ``damaged/`` beside it (before it is cut); ``None`` when that failed."""
    try:
        dest = _target(path)
        shutil.copyfile(path, dest)
    except OSError as exc:
        log.warning("cannot copy %s aside (%s): %s", path, why, exc)
        return None
    fsync_dir(os.path.dirname(dest))
    log.warning("copied %s to %s: %s", path, dest, why)
    return dest


def state_files(directory) -> list:
    """Paths of the daemon's state in ``directory``: full checkpoints, batch logs, the manifest."""
    directory = os.fspath(directory)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if STATE_FILE_RE.match(n)]


def set_aside_state(directory, *, why: str) -> list:
    """Move every state file of ``directory`` (:func:`state_files`) into ``damaged/``.

    Returns
    -------
    list of str
        The new paths.

    Raises
    ------
    CheckpointError
        When a file could not be moved (starting afresh beside it would mix two lineages).
    """
    moved = []
    for path in state_files(directory):
        dest = move_aside(path, why=why)
        if dest is None:
            raise CheckpointError(f"cannot move {path} aside; move the state files of {directory} away by hand")
        moved.append(dest)
    return moved
