"""The daemon's checkpoint stage: full checkpoints now and then, logged batches in between.

Every checkpoint makes the state up to the current batch durable together with the source
positions. Most are *incremental*: one frame appended to the batch log of the last full
checkpoint (:mod:`streamrank.checkpoints.log`), holding the batches applied since the previous
checkpoint, so their cost follows what changed. A *full* checkpoint (the whole engine state,
:func:`streamrank.checkpoints.full.save_checkpoint`) is written

- at the first checkpoint of a lineage without a usable log (fresh start, base graph),
- after the ranks were replaced outside a batch (a drift correction),
- every ``full_every`` checkpoints (bounds the replay at restart), and
- when the log has grown past half the size of the last full checkpoint.

Before a full checkpoint the pending batches are appended to the current log as well, so logs
chain: an unreadable newest full checkpoint is replaced by an older one plus the logs
(:func:`streamrank.checkpoints.recovery.restore_latest`), and moved into ``damaged/``.

When the directory holds state but no full checkpoint reads, :meth:`CheckpointStage.restore`
does not start afresh on its own: it raises :class:`~streamrank.errors.StateUnreadableError`
naming the files and the operator's choices, unless ``reset_unreadable`` (``serve
--reset-unreadable-state``) asks it to move the state files into ``damaged/`` and start afresh.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..checkpoints.damaged import DAMAGED_DIR, set_aside_state
from ..checkpoints.full import list_checkpoints, save_checkpoint
from ..checkpoints.log import BatchLog, LoggedBatch, list_logs, log_path
from ..checkpoints.recovery import Restored, restore_latest
from ..errors import ConfigError, StateUnreadableError
from ..ids.kinds import DEFAULT_MAX_ID_BYTES, to_string_array

log = logging.getLogger("streamrank.daemon")

#: A full checkpoint is due when the log exceeds this fraction of the last full checkpoint's bytes.
LOG_TO_FULL_RATIO = 0.5


@dataclass
class CheckpointInfo:
    """One written checkpoint: ``kind`` ("full" or "incremental"), ``path``, ``bytes``, ``seconds``."""

    kind: str
    path: str
    bytes: int
    seconds: float


class CheckpointStage:
    """Decides between full and incremental checkpoints and writes them.

    Parameters
    ----------
    directory : str
    full_every : int
        A full checkpoint at least every this many checkpoints (1: every checkpoint is full).
    keep : int
        Full checkpoints kept (with their logs).
    """

    def __init__(self, directory: str, *, full_every: int = 10, keep: int = 3):
        self.directory = directory
        self.full_every = max(1, int(full_every))
        self.keep = keep
        self._log: BatchLog | None = None
        self._pending: list = []
        self._since_full = 0
        self._full_bytes = 0
        self._force_full = True
        self._unreadable: list = []  # full checkpoints that did not read and could not be moved aside

    def restore(self, *, device, algorithm, config, id_type: str = "auto",
                max_id_bytes: int = DEFAULT_MAX_ID_BYTES, reset_unreadable: bool = False,
                weighted: bool = False, multi_edges: str = "set") -> Restored | None:
        """Restore the latest state (full checkpoint + logged batches) and continue its log.

        Full checkpoints that do not read are moved into ``damaged/`` once an older one restored.

        Parameters
        ----------
        reset_unreadable : bool
            When the directory holds state but no full checkpoint reads: move the state files
            into ``damaged/`` and return ``None`` (start afresh) instead of raising.
        weighted, multi_edges
            The daemon's weighting (:class:`~streamrank.engine.Engine`). The state must have been
            built under the same rules: an unweighted state restores into a weighted ``"set"``
            daemon (weight 1 on every edge); any other difference is refused.

        Returns
        -------
        Restored or None
            ``None``: nothing to restore, start afresh.

        Raises
        ------
        StateUnreadableError
            State but no readable full checkpoint, without ``reset_unreadable``; the message
            names the files and the operator's choices.
        ConfigError
            When the state's weighting differs from ``weighted``/``multi_edges`` (applying the
            stream under other rules than the state was built with would give wrong ranks).
        """
        try:
            # weighted=None: the state's own weighting, compared below (True: an unweighted state gets weight 1)
            r = restore_latest(self.directory, device=device, algorithm=algorithm, config=config, id_type=id_type,
                               max_id_bytes=max_id_bytes, set_aside=True, weighted=True if weighted else None)
        except StateUnreadableError as exc:
            if not reset_unreadable:
                raise StateUnreadableError(f"{exc}. {unreadable_choices(self.directory)}", directory=exc.directory,
                                           unreadable=exc.unreadable, files=exc.files) from exc
            moved = set_aside_state(self.directory, why="no full checkpoint reads (--reset-unreadable-state)")
            log.warning("no full checkpoint in %s reads; --reset-unreadable-state: moved %d state files into %s/ "
                        "and starting afresh", self.directory, len(moved), DAMAGED_DIR)
            return None
        if r is None:
            return None
        _check_weighting(r.engine, weighted, multi_edges, self.directory)
        self._unreadable = [p for p, _why in r.unreadable if os.path.exists(p)]
        self._full_bytes = os.path.getsize(r.snapshot.path)
        if r.append_to is not None:
            path, valid = r.append_to
            self._log = BatchLog(path, valid_bytes=valid)
            self._force_full = False
        return r

    def record(self, seq: int, src, dst, insert, weight=None) -> None:
        """Remember an applied batch (external ids; ``weight``: a weighted batch's weights, NaN
        where a deletion has none) for the next checkpoint."""
        self._pending.append(LoggedBatch(int(seq), _ids(src), _ids(dst), np.asarray(insert, dtype=bool),
                                         None if weight is None else np.asarray(weight, dtype=np.float64)))

    def force_full(self) -> None:
        """The next checkpoint is full (the state changed outside a batch)."""
        self._force_full = True

    def _full_due(self) -> bool:
        if self._force_full or self._log is None or self._since_full + 1 >= self.full_every:
            return True
        pending = sum(_logged_bytes(b) for b in self._pending)
        return self._full_bytes > 0 and self._log.nbytes + pending > LOG_TO_FULL_RATIO * self._full_bytes

    def prepare(self, engine, *, positions: dict, ranks, meta: dict) -> "CheckpointPlan":
        """Take what the next checkpoint of ``engine`` at ``positions`` writes, on the caller's thread.

        The batches recorded since the last checkpoint are taken from the stage; for a full
        checkpoint the engine's state and ``ranks()`` (a callable returning ``(external ids, p)``)
        are copied to the host now, so :meth:`write_plan` may run on another thread while the
        engine moves on. Plans must be written in the order they were prepared, one at a time.
        """
        full = self._full_due()
        plan = CheckpointPlan(full=full, seq=int(engine.seq), positions=dict(positions), meta=dict(meta),
                              batches=self._pending)
        self._pending = []
        if full:
            plan.state = engine.state()
            plan.ranks = ranks()
            self._since_full = 0
            self._force_full = False
        else:
            self._since_full += 1
        return plan

    def write_plan(self, plan: "CheckpointPlan") -> CheckpointInfo:
        """Write a prepared checkpoint (an incremental frame, or a full checkpoint).

        Raises
        ------
        CheckpointError
            The previous checkpoint stands; calling again with the same plan retries.
        """
        t0 = time.perf_counter()
        if not plan.full:
            n = self._log.append(plan.batches, plan.positions) if not plan.appended else 0
            plan.appended = True
            return CheckpointInfo("incremental", self._log.path, n, time.perf_counter() - t0)
        if self._log is not None and plan.batches and not plan.appended:
            self._log.append(plan.batches, plan.positions)  # logs chain across full checkpoints
        plan.appended = True
        path = save_checkpoint(self.directory, plan.state, seq=plan.seq, positions=plan.positions, meta=plan.meta,
                               ranks=plan.ranks, keep=self.keep, unreadable=self._unreadable)
        self._unreadable = [p for p in self._unreadable if os.path.exists(p)]
        size = os.path.getsize(path)
        if self._log is not None:
            self._log.close()
        self._log = BatchLog(log_path(self.directory, plan.seq))
        self._full_bytes = size
        self._drop_old_logs()
        return CheckpointInfo("full", path, size, time.perf_counter() - t0)

    def write(self, engine, *, positions: dict, ranks, meta: dict) -> CheckpointInfo:
        """:meth:`prepare` and :meth:`write_plan` in one call.

        Raises
        ------
        CheckpointError
            The previous checkpoint stands; the batches stay recorded for the next call.
        """
        plan = self.prepare(engine, positions=positions, ranks=ranks, meta=meta)
        try:
            return self.write_plan(plan)
        except Exception:
            self._undo(plan)
            raise

    def _undo(self, plan: "CheckpointPlan") -> None:
        """Put a plan that was not written back, so that the next checkpoint holds its batches."""
        if not plan.appended:
            self._pending[0:0] = plan.batches
        if plan.full:
            self._force_full = True
        else:
            self._since_full -= 1

    def _drop_old_logs(self) -> None:
        kept = list_checkpoints(self.directory)
        if not kept:
            return
        oldest = kept[0][0]
        for base, path in list_logs(self.directory):
            if base < oldest:
                try:
                    os.unlink(path)
                except OSError as exc:
                    log.debug("cannot remove old log %s: %s", path, exc)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def unreadable_choices(directory: str) -> str:
    """What the operator can do when no full checkpoint in ``directory`` reads."""
    return (f"The daemon stops without touching them. Choices: put readable checkpoints back (from a backup) "
            f"and restart; or restart with --reset-unreadable-state, which moves the state files into "
            f"{os.path.join(directory, DAMAGED_DIR)}/ and starts from an empty graph (or --base-graph), reading "
            f"the input again from its start (Kafka: --start-from; records the topics no longer hold are lost); "
            f"or move the files away by hand")


@dataclass
class CheckpointPlan:
    """What one checkpoint writes, taken on the loop's thread (:meth:`CheckpointStage.prepare`)."""

    full: bool
    seq: int
    positions: dict
    meta: dict
    batches: list
    state: dict | None = None
    ranks: tuple | None = None
    appended: bool = False       # the batches are in the log (a retry must not append them again)


def _ids(values):
    """Logged ids: NumPy int64 / ``object`` arrays as NumPy, Arrow string arrays as they are."""
    return values if isinstance(values, (pa.Array, pa.ChunkedArray)) else np.asarray(values)


def _logged_bytes(b: LoggedBatch) -> int:
    """About the bytes a batch takes in the log (17 per integer edge; string ids by their size)."""
    n = int(len(b.insert))
    extra = 0 if b.weight is None else n * 8
    if isinstance(b.src, np.ndarray) and b.src.dtype != object:
        return n * 17 + extra
    return to_string_array(b.src).nbytes + to_string_array(b.dst).nbytes + n * 9 + extra


def _weighting(weighted: bool, multi_edges: str) -> str:
    return f"weighted (multi_edges={multi_edges})" if weighted else "unweighted"


def _check_weighting(engine, weighted: bool, multi_edges: str, directory) -> None:
    """Refuse a restored engine built under other weighting rules than the daemon's."""
    if engine.weighted == bool(weighted) and (not weighted or engine.multi_edges == multi_edges):
        return
    if engine.multi_edges == "sum":
        flags = "--multi-edges sum"
    else:
        flags = "--weighted (--multi-edges set)" if engine.weighted else "neither --weighted nor --multi-edges"
    raise ConfigError(
        f"the checkpoint in {directory} holds a {_weighting(engine.weighted, engine.multi_edges)} graph, but this "
        f"daemon is {_weighting(weighted, multi_edges)}: applying the stream under other rules than the graph "
        f"was built with would give wrong ranks. Restart with {flags} (settings weighted, multi_edges), or "
        "start a new graph in another --checkpoint-dir")
