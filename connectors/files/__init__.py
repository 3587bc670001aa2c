"""Edge files: SNAP temporal text, CSV, Parquet and JSON lines, read in chunks.

Every format is read as a stream of Arrow tables with the columns ``src: int64``,
``dst: int64``, ``op: int8`` (+1 insert, -1 delete) and, where the file has timestamps,
``ts`` (``int64``; Parquet float timestamps stay ``float64``). Memory is bounded by
``chunk_rows``: text files are read in blocks of at most that many lines and parsed with
pyarrow's CSV/JSON readers; a block that the fast reader rejects is parsed again line by line
to find exactly which lines are bad. Parquet is read with
:meth:`pyarrow.parquet.ParquetFile.iter_batches` and validated column-wise.

Formats
-------
``snap``
    ``src dst [ts]`` separated by spaces or tabs, no header; lines starting with ``#`` or ``%``
    are comments. The first data line with 2 or 3 fields fixes the field count of the file.
``csv``
    A header naming the columns ``src``, ``dst`` and optionally ``op`` and ``ts`` (any order,
    any case; other columns are ignored). Quoted fields are allowed, fields spanning lines are
    not.
``parquet``
    Columns ``src``, ``dst`` (integers), optional ``op`` (strings or integers +1/-1) and optional
    ``ts`` (integers, floats or timestamps; timestamps are read as integers in their unit).
``jsonl``
    One object per line: ``{"src": ..., "dst": ..., "op": ..., "ts": ...}``; ``op`` and ``ts``
    optional. Ids are JSON integers or strings of digits. The first good record decides whether
    the file has timestamps: when it has one, a later record without one is a bad line; when it
    has none, later ``ts`` fields are ignored.

Weighted streams (``Layout(weighted=True)``) also get a ``weight: float64`` column after ``op``:
the file's ``weight`` column (CSV header, Parquet column, JSON field; or the one ``Layout.weight``
names, by number in a headerless file), 1 on inserts and NaN on deletes that have none; a bad
weight (zero, negative, NaN, infinite, not a number, empty) is a bad line with code
``bad_weight`` (:mod:`connectors.weights`). Unweighted streams never read a weight column.

In every format an absent or empty op means insert, and op values follow
:func:`streamrank.batch.parse_op`. Text timestamps must be integers. Blank lines are skipped
(counted in :attr:`ReadReport.skipped`, as are comments). Text files may be gzip-compressed
(recognised by their content, not only the ``.gz`` suffix).

Bad lines (wrong field count, non-integer, negative or too large id, unknown op, bad JSON,
missing field, missing or non-integer timestamp) are counted, recorded with their 1-based line
number (Parquet: row number) and skipped; ``strict=True`` raises
:class:`~streamrank.errors.SourceError` on the first one instead.

Where there is a ``ts`` column the rows are yielded in timestamp order (stable) unless
``keep_order=True``; see :mod:`connectors.ordering` for how a large unsorted file is ordered
without holding it in memory.
"""

from .reader import (
    DEFAULT_CHUNK_ROWS,
    FORMATS,
    EdgeFileReader,
    detect_format,
    list_edge_files,
    open_edge_file,
)
from .batches import iter_batches, read_edges
from .layout import Layout
from .report import DEFAULT_MAX_BAD_KEPT, TEXT_KEPT, BadLine, ReadReport

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "DEFAULT_MAX_BAD_KEPT",
    "TEXT_KEPT",
    "FORMATS",
    "BadLine",
    "Layout",
    "ReadReport",
    "EdgeFileReader",
    "detect_format",
    "open_edge_file",
    "read_edges",
    "iter_batches",
    "list_edge_files",
]
