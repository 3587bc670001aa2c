"""Restore the latest state: the newest readable full checkpoint plus a replay of the logged batches.

Logs (:mod:`streamrank.checkpoints.log`) are chained: the log of full checkpoint ``S`` holds the
batches after ``S``, and a full checkpoint appends the batches it covers to the current log
before it is written, so a later full checkpoint that does not read can be replaced by an older
one plus the logs. Replay applies the logged batches, with their original boundaries and
sequence numbers, to an engine rebuilt from the full checkpoint; stopping at the first gap in the
sequence numbers (nothing after a gap can be applied).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from ..batch import EdgeBatch
from .full import Checkpoint, iter_readable
from .log import list_logs, read_log
from ..config import RankConfig
from ..engine import Engine
from ..errors import CheckpointError
from ..ids.kinds import DEFAULT_MAX_ID_BYTES

log = logging.getLogger(__name__)


@dataclass
class Restored:
    """The latest state found in a checkpoint directory.

    Attributes
    ----------
    engine : Engine
    seq : int
        Batches applied to the state.
    positions : dict
        Source positions just past the last record in the state.
    snapshot : Checkpoint
        The full checkpoint it started from (its engine state is dropped to save memory).
    replayed : int
        Logged batches applied on top of it.
    append_to : tuple or None
        ``(log path, valid bytes)`` of the log to continue appending to, or ``None`` when the next
        checkpoint must be a full one (no usable log ends at ``seq``).
    """

    engine: Engine
    seq: int
    positions: dict
    snapshot: Checkpoint
    replayed: int
    append_to: tuple | None


def restore_latest(directory, *, device="auto", algorithm: str | None = None,
                   config: RankConfig | None = None, id_type: str = "auto",
                   max_id_bytes: int = DEFAULT_MAX_ID_BYTES) -> Restored | None:
    """The latest state in ``directory``: newest readable full checkpoint + logged batches.

    Parameters
    ----------
    directory : str or os.PathLike
    device : {"auto", "cpu", "gpu"}
    algorithm : str, optional
        Rank update for the replay; default: the one recorded in the checkpoint (``"dfp"``).
    config : RankConfig, optional
        Default: the one recorded in the checkpoint.
    id_type : {"auto", "int", "string"}
        Vertex id kind asked for; other than ``"auto"`` it must be the checkpoint's
        (:meth:`Engine.from_state`).
    max_id_bytes : int
        Longest string id of the restored engine.

    Returns
    -------
    Restored or None
        ``None`` when there is no readable full checkpoint.

    Raises
    ------
    CheckpointError
        When a full checkpoint reads but does not rebuild an engine.
    """
    snap = next(iter_readable(directory), None)
    if snap is None:
        return None
    if algorithm is None:
        algorithm = snap.meta.get("algorithm", "dfp")
    if config is None:
        config = RankConfig(**snap.meta["rank"]) if "rank" in snap.meta else RankConfig()
    try:
        engine = Engine.from_state(snap.engine_state, device=device, algorithm=algorithm, config=config,
                                   id_type=id_type, max_id_bytes=max_id_bytes)
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {snap.path} does not rebuild an engine: {exc}") from exc
    if engine.seq != snap.seq:
        raise CheckpointError(f"checkpoint {snap.path}: engine seq {engine.seq} != {snap.seq}")
    snap.engine_state = {}
    seq, positions, replayed = snap.seq, dict(snap.positions), 0
    append_to = None
    logs = [(b, p) for b, p in list_logs(directory) if b >= snap.seq]  # older logs end where it starts
    gap = False
    for base, path in logs:
        if gap:
            _set_aside(path, f"it follows a gap at seq {seq}")
            continue
        contents = read_log(path)
        for frame in contents.frames:
            new = [b for b in frame.batches if b.seq > seq]
            if new and new[0].seq != seq + 1:
                gap = True
                break
            for b in new:
                engine.apply(EdgeBatch(b.src, b.dst, b.insert))
                if engine.seq != b.seq:
                    raise CheckpointError(f"log {path}: replayed batch {b.seq} became seq {engine.seq}")
                seq = b.seq
                replayed += 1
            if frame.batches and frame.batches[-1].seq < seq:
                continue  # entirely older than the state: its positions are older too
            positions = dict(frame.positions)
        if gap:
            log.warning("checkpoint log %s: gap after seq %d; later logged batches cannot be applied", path, seq)
            append_to = None
        elif base <= seq:
            append_to = (path, contents.valid_bytes)
    if append_to is not None and append_to[0] != logs[-1][1]:
        append_to = None  # a newer log exists (kept untouched); start a new full checkpoint
    log.info("restored seq %d from %s + %d logged batches", seq, snap.path, replayed)
    return Restored(engine, seq, positions, snap, replayed, append_to)


def _set_aside(path: str, why: str) -> None:
    dest = path + ".orphan"
    log.warning("checkpoint log %s set aside as %s: %s", path, dest, why)
    try:
        os.replace(path, dest)
    except OSError as exc:
        log.warning("cannot set aside %s: %s", path, exc)


def load_latest_state(directory, *, device="cpu") -> Checkpoint | None:
    """The latest state as a :class:`~streamrank.checkpoints.full.Checkpoint` (engine state and ranks
    after the replay), for readers such as ``streamrank query``; ``None`` when there is none."""
    r = restore_latest(directory, device=device)
    if r is None:
        return None
    return Checkpoint(path=r.snapshot.path, seq=r.seq, positions=r.positions, meta=r.snapshot.meta,
                      engine_state=r.engine.state(), ranks=r.engine.ranks(), created=r.snapshot.created)
