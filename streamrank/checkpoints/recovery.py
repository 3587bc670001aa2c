"""Restore the latest state: the newest readable full checkpoint plus a replay of the logged batches.

Logs (:mod:`streamrank.checkpoints.log`) are chained: the log of full checkpoint ``S`` holds the
batches after ``S``, and a full checkpoint appends the batches it covers to the current log
before it is written, so a later full checkpoint that does not read can be replaced by an older
one plus the logs. Replay applies the logged batches, with their original boundaries and
sequence numbers, to an engine rebuilt from the full checkpoint; stopping at the first gap in the
sequence numbers (nothing after a gap can be applied).

A full checkpoint that does not read (:func:`streamrank.checkpoints.full.read_checkpoint`) or
does not rebuild an engine is skipped for the next older one, whose logs then replay the batches
the skipped one held; the caller that owns the directory (the daemon, ``set_aside=True``) has it
moved into ``damaged/`` once an older one restored. When the directory holds state but no full
checkpoint reads, :func:`restore_latest` raises :class:`~streamrank.errors.StateUnreadableError`
rather than report "no checkpoint": starting afresh is the operator's choice, not a fallback.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from ..batch import EdgeBatch
from .damaged import copy_aside, move_aside, state_files
from .full import Checkpoint, iter_readable
from .log import list_logs, read_log
from ..backend import DEVICES
from ..config import ALGORITHMS, RankConfig
from ..engine import Engine
from ..errors import (BackendUnavailableError, CheckpointError, ConfigError, GraphCapacityError, InvalidArgumentError,
                      KernelError, StateUnreadableError, StreamrankError)
from ..ids.kinds import DEFAULT_MAX_ID_BYTES, check_id_type

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
    unreadable : list of tuple
        ``(path, reason)`` of the newer full checkpoints skipped because they did not read.
    """

    engine: Engine
    seq: int
    positions: dict
    snapshot: Checkpoint
    replayed: int
    append_to: tuple | None
    unreadable: list = field(default_factory=list)


def restore_latest(directory, *, device="auto", algorithm: str | None = None,
                   config: RankConfig | None = None, id_type: str = "auto",
                   max_id_bytes: int = DEFAULT_MAX_ID_BYTES, set_aside: bool = False,
                   weighted: bool | None = None, multi_edges: str | None = None) -> Restored | None:
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
    set_aside : bool
        Move full checkpoints that did not read into ``damaged/`` once an older one restored,
        copy a log with a corrupt frame there, and move there the logs after a gap in the
        sequence numbers, which nothing can apply (for the owner of the directory; readers
        such as ``streamrank query`` leave it as it is).
    weighted, multi_edges : optional
        As for :meth:`Engine.from_state`: default the checkpoint's; ``weighted=True`` restores an
        unweighted checkpoint with weight 1 on every edge.

    Returns
    -------
    Restored or None
        ``None`` when the directory holds no state at all.

    Raises
    ------
    StateUnreadableError
        When the directory holds state (full checkpoints, logs, a manifest) but no full
        checkpoint reads and rebuilds an engine.
    StreamrankError
        When the checkpoint's vertex id kind is not ``id_type``; GraphCapacityError when the
        graph does not fit the device.
    """
    directory = os.fspath(directory)
    check_id_type(id_type)
    if device not in DEVICES:
        raise InvalidArgumentError(f"device must be one of {DEVICES}, got {device!r}")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise InvalidArgumentError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if config is not None and not isinstance(config, RankConfig):
        raise InvalidArgumentError("config must be a RankConfig")
    skipped: list = []
    for snap in iter_readable(directory, skipped=skipped):
        try:
            engine = _rebuild(snap, device=device, algorithm=algorithm, config=config, id_type=id_type,
                              max_id_bytes=max_id_bytes, weighted=weighted, multi_edges=multi_edges)
        except CheckpointError as exc:
            log.warning("skipping checkpoint: %s", exc)
            skipped.append((snap.path, str(exc)))
            continue
        break
    else:
        files = state_files(directory)
        if not files:
            return None
        listing = "; ".join(f"{p}: {why}" for p, why in skipped) or "none (only batch logs or a manifest)"
        raise StateUnreadableError(f"checkpoint directory {directory} holds state ({len(files)} files) but no full "
                                   f"checkpoint in it reads. Unreadable checkpoints: {listing}",
                                   directory=directory, unreadable=skipped, files=files)
    if set_aside:
        for path, why in skipped:
            move_aside(path, why=f"it does not read ({why}); restored from the older {snap.path}")
    seq, positions, replayed = snap.seq, dict(snap.positions), 0
    append_to = None
    logs = [(b, p) for b, p in list_logs(directory) if b >= snap.seq]  # older logs end where it starts
    gap = False
    for base, path in logs:
        if gap:
            if set_aside:
                move_aside(path, why=f"it follows a gap at seq {seq}")
            continue
        contents = read_log(path)
        if contents.corrupt and set_aside:
            copy_aside(path, why=f"a corrupt frame at byte {contents.valid_bytes}; the log goes on from there")
        for frame in contents.frames:
            new = [b for b in frame.batches if b.seq > seq]
            if new and new[0].seq != seq + 1:
                gap = True
                break
            for b in new:
                engine.apply(EdgeBatch(b.src, b.dst, b.insert, b.weight))
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
    return Restored(engine, seq, positions, snap, replayed, append_to, skipped)


def _rebuild(snap: Checkpoint, *, device, algorithm, config, id_type, max_id_bytes, weighted=None,
             multi_edges=None) -> Engine:
    """The engine of a full checkpoint; its state is dropped from ``snap`` to save memory.

    Raises
    ------
    CheckpointError
        When the state does not rebuild an engine (the caller tries an older checkpoint).
    StreamrankError
        When the vertex id kind is not ``id_type`` (asking for another kind is no damage), or the
        device is unavailable, too small or its kernels fail (GraphCapacityError,
        BackendUnavailableError, KernelError): an older checkpoint would fail the same way.
    """
    saved = snap.engine_state.get("id_type", "int" if len(snap.engine_state.get("external", ())) else "auto")
    if id_type != "auto" and saved in ("int", "string") and saved != id_type:
        raise StreamrankError(f"the saved engine has {saved} vertex ids but id_type={id_type!r} was asked")
    try:
        if algorithm is None:
            algorithm = snap.meta.get("algorithm", "dfp")
        if config is None:
            config = RankConfig(**snap.meta["rank"]) if "rank" in snap.meta else RankConfig()
        engine = Engine.from_state(snap.engine_state, device=device, algorithm=algorithm, config=config,
                                   id_type=id_type, max_id_bytes=max_id_bytes, weighted=weighted,
                                   multi_edges=multi_edges)
    except (GraphCapacityError, BackendUnavailableError, KernelError, ConfigError):
        raise  # the device or the settings, not the checkpoint: an older one would fail the same way
    except (StreamrankError, KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint {snap.path} does not rebuild an engine: {type(exc).__name__}: {exc}") \
            from exc
    if engine.seq != snap.seq:
        raise CheckpointError(f"checkpoint {snap.path}: engine seq {engine.seq} != {snap.seq}")
    snap.engine_state = {}
    return engine


def load_latest_state(directory, *, device="cpu") -> Checkpoint | None:
    """The latest state as a :class:`~streamrank.checkpoints.full.Checkpoint` (engine state and ranks
    after the replay), for readers such as ``streamrank query``; ``None`` when the directory holds
    no state (:class:`~streamrank.errors.StateUnreadableError` when it holds state that does not read)."""
    r = restore_latest(directory, device=device)
    if r is None:
        return None
    return Checkpoint(path=r.snapshot.path, seq=r.seq, positions=r.positions, meta=r.snapshot.meta,
                      engine_state=r.engine.state(), ranks=r.engine.ranks(), created=r.snapshot.created)
