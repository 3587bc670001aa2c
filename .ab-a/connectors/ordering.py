"""Timestamp ordering of a stream of edge tables, in bounded memory.

:func:`order_by_time` takes Arrow tables in file order (columns ``src``, ``dst``, ``op`` and
``ts``) and yields the same rows ordered by ``ts``, stably: rows with equal timestamps keep their
file order. It watches for monotonicity while it reads:

* A stream of at most ``chunk_rows`` rows is held and, unless it was already sorted, sorted in
  memory.
* A longer stream is cut into pieces of about ``chunk_rows`` rows. Each piece is sorted and
  appended to the current *run* (an Arrow IPC file in a temporary directory) when it starts at or
  after the run's last timestamp, else it opens a new run. An already sorted stream therefore
  becomes a single run that is streamed back as it is (no sort, no merge); an unsorted one becomes
  several runs that are k-way merged (in several passes when there are more than
  :data:`MERGE_FANIN`).

Each run covers a contiguous stretch of the input and runs are numbered in input order, so ties
are broken by run number and, inside a run, by position: the merge is stable.

A stream cannot be known to be sorted before its last row has been read, so a stream longer than
``chunk_rows`` is always spilled once (as one run when sorted); nothing is yielded before the
input has been read to its end.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from streamrank.errors import InvalidArgumentError, SourceError

#: Most runs merged in one pass; more runs are first merged in consecutive groups of this size.
MERGE_FANIN = 64

#: Most rows in one record batch of a spilled run. Runs are written in batches of about
#: ``chunk_rows / MERGE_FANIN`` rows (at least 1024, at most this) so that a merge step, which
#: holds one batch per run, holds about ``chunk_rows`` rows.
SPILL_BATCH_ROWS = 65_536

_TS = "ts"


@dataclass
class OrderStats:
    """What :func:`order_by_time` saw.

    Attributes
    ----------
    sorted_input : bool or None
        ``True`` when the input was already in non-decreasing ``ts`` order, ``False`` when it
        was not, ``None`` when there was nothing to order (no ``ts`` column or no rows).
    runs : int
        Sorted runs spilled to disk (0 when the input was ordered in memory).
    merge_passes : int
        Merge passes over spilled runs (0 or 1 unless there were more than
        :data:`MERGE_FANIN` runs).
    """

    sorted_input: bool | None = None
    runs: int = 0
    merge_passes: int = 0


def order_by_time(
    tables: Iterable[pa.Table],
    *,
    chunk_rows: int,
    stats: OrderStats | None = None,
    temp_dir: str | Path | None = None,
) -> Iterator[pa.Table]:
    """Yield the rows of ``tables`` ordered by their ``ts`` column (stable).

    Parameters
    ----------
    tables : iterable of pyarrow.Table
        Tables with one schema, in file order. Tables without a ``ts`` column are passed
        through unchanged (there is nothing to order by).
    chunk_rows : int
        Memory bound in rows: at most this many rows are ordered in memory; a longer input is
        spilled as sorted runs and merged. Output tables hold about this many rows.
    stats : OrderStats, optional
        Filled in while the input is read (sortedness, runs spilled).
    temp_dir : str or path-like, optional
        Where the temporary run directory is made (default: :func:`tempfile.gettempdir`).

    Yields
    ------
    pyarrow.Table
        The input rows in non-decreasing ``ts`` order, ties in input order.

    Raises
    ------
    InvalidArgumentError
        If ``chunk_rows`` is not a positive integer.
    SourceError
        If the runs cannot be written to or read from the temporary directory.
    """
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise InvalidArgumentError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    stats = stats if stats is not None else OrderStats()
    return _order(iter(tables), chunk_rows, stats, temp_dir)


def _order(tables: Iterator[pa.Table], chunk_rows: int, stats: OrderStats, temp_dir):
    first = _first_nonempty(tables)
    if first is None:
        return
    if _TS not in first.column_names:
        yield first
        yield from tables
        return
    pending, pending_rows = [first], first.num_rows
    last_ts, monotone = None, True
    monotone, last_ts = _extend_monotone(first, monotone, last_ts)
    spiller = None
    try:
        for table in tables:
            if table.num_rows == 0:
                continue
            monotone, last_ts = _extend_monotone(table, monotone, last_ts)
            pending.append(table)
            pending_rows += table.num_rows
            if pending_rows > chunk_rows:
                spiller = spiller or _RunSpiller(first.schema, chunk_rows=chunk_rows, temp_dir=temp_dir)
                spiller.add(_concat(pending))
                pending, pending_rows = [], 0
        stats.sorted_input = monotone
        if spiller is None:
            yield from _in_memory(_concat(pending), monotone, chunk_rows)
            return
        if pending:
            spiller.add(_concat(pending))
        spiller.finish()
        stats.runs = len(spiller.runs)
        yield from spiller.merged(stats)
    finally:
        if spiller is not None:
            spiller.cleanup()


def _first_nonempty(tables: Iterator[pa.Table]) -> pa.Table | None:
    for table in tables:
        if table.num_rows:
            return table
    return None


def _ts_of(table: pa.Table) -> np.ndarray:
    return table.column(_TS).to_numpy()


def _extend_monotone(table: pa.Table, monotone: bool, last_ts):
    """Whether the stream is still non-decreasing after ``table``, and its last timestamp."""
    ts = _ts_of(table)
    if monotone:
        monotone = bool(last_ts is None or ts[0] >= last_ts) and _is_sorted(ts)
    return monotone, ts[-1]


def _is_sorted(ts: np.ndarray) -> bool:
    return bool(np.all(ts[1:] >= ts[:-1]))


def _concat(tables: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0]


def _sorted_stable(table: pa.Table) -> pa.Table:
    ts = _ts_of(table)
    if _is_sorted(ts):
        return table
    return table.take(pa.array(np.argsort(ts, kind="stable")))


def _in_memory(table: pa.Table, monotone: bool, chunk_rows: int) -> Iterator[pa.Table]:
    if not monotone:
        table = _sorted_stable(table)
    for start in range(0, table.num_rows, chunk_rows):
        yield table.slice(start, chunk_rows)


class _RunSpiller:
    """Writes sorted runs as Arrow IPC files and merges them back."""

    def __init__(self, schema: pa.Schema, *, chunk_rows: int, temp_dir):
        try:
            self._dir = Path(tempfile.mkdtemp(prefix="streamrank-sort-", dir=temp_dir))
        except OSError as exc:
            raise SourceError(f"cannot make a temporary directory for sorted runs: {exc}") from exc
        self._schema = schema
        self._chunk_rows = chunk_rows
        self._batch_rows = min(chunk_rows, max(chunk_rows // MERGE_FANIN, 1024), SPILL_BATCH_ROWS)
        self._sink = None
        self._writer = None
        self._last_ts = None
        self.runs: list[Path] = []

    def add(self, table: pa.Table) -> None:
        """Sort ``table`` and append it to the current run, or open a new run."""
        table = _sorted_stable(table)
        ts = _ts_of(table)
        if self._writer is None or ts[0] < self._last_ts:
            self._open_run()
        try:
            self._writer.write_table(table, max_chunksize=self._batch_rows)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"cannot write a sorted run to {self._dir}: {exc}") from exc
        self._last_ts = ts[-1]

    def _open_run(self) -> None:
        self._close_run()
        path = self._dir / f"run-{len(self.runs):06d}.arrow"
        try:
            self._sink = pa.OSFile(str(path), "wb")
            self._writer = pa.ipc.new_file(self._sink, self._schema)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"cannot create sorted run {path}: {exc}") from exc
        self.runs.append(path)

    def _close_run(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
                self._sink.close()
            except (OSError, pa.ArrowException) as exc:
                raise SourceError(f"cannot finish sorted run in {self._dir}: {exc}") from exc
        self._writer = self._sink = None

    def finish(self) -> None:
        """Close the last run."""
        self._close_run()

    def merged(self, stats: OrderStats) -> Iterator[pa.Table]:
        """Yield all rows of all runs in (ts, run, position) order."""
        runs = self.runs
        while len(runs) > MERGE_FANIN:
            runs = [self._merge_to_file(runs[i : i + MERGE_FANIN], stats) for i in range(0, len(runs), MERGE_FANIN)]
        if len(runs) > 1:
            stats.merge_passes += 1
        yield from _merge(runs, self._chunk_rows, self._schema)

    def _merge_to_file(self, group: list[Path], stats: OrderStats) -> Path:
        if len(group) == 1:
            return group[0]
        stats.merge_passes += 1
        path = self._dir / f"merge-{stats.merge_passes:03d}-{group[0].stem}.arrow"
        try:
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, self._schema) as writer:
                for table in _merge(group, self._batch_rows, self._schema):
                    writer.write_table(table, max_chunksize=self._batch_rows)
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"cannot write a merged run to {self._dir}: {exc}") from exc
        for run in group:
            run.unlink(missing_ok=True)
        return path

    def cleanup(self) -> None:
        """Close any open run and remove the temporary directory."""
        try:
            self._close_run()
        except SourceError:
            pass
        shutil.rmtree(self._dir, ignore_errors=True)


class _RunCursor:
    """Reads one sorted run record batch by record batch, as NumPy columns."""

    def __init__(self, path: Path, index: int):
        self.index = index
        try:
            self._reader = pa.ipc.open_file(pa.OSFile(str(path), "rb"))
        except (OSError, pa.ArrowException) as exc:
            raise SourceError(f"cannot read sorted run {path}: {exc}") from exc
        self._next_batch = 0
        self._columns: list[np.ndarray] | None = None
        self._ts: np.ndarray | None = None
        self._pos = 0
        self._load()

    @property
    def exhausted(self) -> bool:
        return self._columns is None

    @property
    def last_ts(self):
        return self._ts[-1]

    def _load(self) -> None:
        self._columns = self._ts = None
        while self._next_batch < self._reader.num_record_batches:
            batch = self._reader.get_batch(self._next_batch)
            self._next_batch += 1
            if batch.num_rows:
                self._columns = [c.to_numpy(zero_copy_only=False) for c in batch.columns]
                self._ts = self._columns[batch.schema.get_field_index(_TS)]
                self._pos = 0
                return

    def count_upto(self, bound, *, inclusive: bool) -> int:
        """Rows from the current position with ts below ``bound`` (or equal, if inclusive)."""
        side = "right" if inclusive else "left"
        return int(np.searchsorted(self._ts[self._pos :], bound, side=side))

    def take(self, count: int) -> list[np.ndarray]:
        stop = self._pos + count
        piece = [c[self._pos : stop] for c in self._columns]
        self._pos = stop
        if stop >= len(self._ts):
            self._load()
        return piece


def _merge(runs: list[Path], out_rows: int, schema: pa.Schema) -> Iterator[pa.Table]:
    """K-way merge of sorted runs whose order (by index) is their order in the input.

    Each step takes, from every run's buffered batch, the rows that sort at or before the
    smallest buffered "last row" key ``(ts, run)``; the run holding that key empties its buffer,
    so every step makes progress. Rows taken in one step are ordered with a stable sort of
    their concatenation in run order, which breaks ties by run.
    """
    ts_index = schema.get_field_index(_TS)
    cursors = [c for c in (_RunCursor(path, i) for i, path in enumerate(runs)) if not c.exhausted]
    out: list[list[np.ndarray]] = []
    out_n = 0
    while cursors:
        bound_ts, bound_run = min((c.last_ts, c.index) for c in cursors)
        pieces = []
        for cursor in cursors:
            count = cursor.count_upto(bound_ts, inclusive=cursor.index <= bound_run)
            if count:
                pieces.append(cursor.take(count))
        step = [np.concatenate(parts) for parts in zip(*pieces)]
        if len(pieces) > 1 and not _is_sorted(step[ts_index]):
            order = np.argsort(step[ts_index], kind="stable")
            step = [column[order] for column in step]
        out.append(step)
        out_n += len(step[ts_index])
        if out_n >= out_rows:
            yield _columns_table(out, schema)
            out, out_n = [], 0
        cursors = [c for c in cursors if not c.exhausted]
    if out:
        yield _columns_table(out, schema)


def _columns_table(steps: list[list[np.ndarray]], schema: pa.Schema) -> pa.Table:
    columns = [np.concatenate(parts) for parts in zip(*steps)]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)
