"""Whole-file helpers over :class:`~connectors.files.reader.EdgeFileReader`: :func:`read_edges`
(one table) and :func:`iter_batches` (:class:`~streamrank.batch.EdgeBatch` objects)."""

from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa

from streamrank.batch import EdgeBatch

from .reader import _check_positive_int, open_edge_file
from .report import ReadReport
from .table import _schema


def read_edges(path: str | os.PathLike, **options) -> tuple[pa.Table, ReadReport]:
    """Read a whole (small) edge file into one table.

    Parameters
    ----------
    path : str or path-like
        The file.
    **options
        Keyword arguments of :func:`open_edge_file`.

    Returns
    -------
    table : pyarrow.Table
        All edges (time-ordered unless ``keep_order=True``), one chunk per column.
    layout : Layout
        The stated column layout (parts left ``None`` are detected).
    text_layout : TextLayout or None
        The resolved layout of a text file, once its first lines have been read.
    report : ReadReport
        Counts and bad lines.

    Raises
    ------
    InvalidArgumentError, SourceError
        As :func:`open_edge_file`.
    """
    with open_edge_file(path, **options) as reader:
        tables = list(reader)
        schema = reader.schema if reader.schema is not None else _schema(None)
        report = reader.report
    table = pa.concat_tables(tables).combine_chunks() if tables else schema.empty_table()
    return table, report


def iter_batches(path: str | os.PathLike, *, batch_size: int, **options) -> Iterator[EdgeBatch]:
    """Stream an edge file as :class:`~streamrank.batch.EdgeBatch` objects of ``batch_size`` edges.

    Batches are cut across file chunks: every batch holds exactly ``batch_size`` edges except
    the last, which holds the rest (an empty file gives no batch).

    Parameters
    ----------
    path : str or path-like
        The file.
    batch_size : int
        Edges per batch (positive).
    **options
        Keyword arguments of :func:`open_edge_file`.

    Yields
    ------
    EdgeBatch
        Host (NumPy) batches in time order unless ``keep_order=True``.

    Raises
    ------
    InvalidArgumentError, SourceError
        As :func:`open_edge_file`, or for a non-positive ``batch_size``.
    """
    batch_size = _check_positive_int(batch_size, "batch_size")
    reader = open_edge_file(path, **options)
    return _rechunk(reader, batch_size)


def _rechunk(reader: EdgeFileReader, batch_size: int) -> Iterator[EdgeBatch]:
    with reader:
        pending: list[pa.Table] = []
        rows = 0
        for table in reader:
            pending.append(table)
            rows += table.num_rows
            if rows < batch_size:
                continue
            whole = pa.concat_tables(pending)
            start = 0
            while rows - start >= batch_size:
                yield _to_batch(whole.slice(start, batch_size))
                start += batch_size
            rest = whole.slice(start)
            pending, rows = ([rest] if rest.num_rows else []), rest.num_rows
        if rows:
            yield _to_batch(pa.concat_tables(pending))


def _to_batch(table: pa.Table) -> EdgeBatch:
    insert = table.column("op").to_numpy() > 0
    weight = table.column("weight").to_numpy() if "weight" in table.column_names else None  # checked when read
    if pa.types.is_string(table.schema.field("src").type):  # validated string ids stay Arrow arrays
        return EdgeBatch(table.column("src").combine_chunks(), table.column("dst").combine_chunks(), insert, weight)
    src = table.column("src").to_numpy()
    dst = table.column("dst").to_numpy()
    return EdgeBatch(src, dst, insert, weight)
