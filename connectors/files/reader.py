"""The public reader: format detection, :class:`EdgeFileReader` and the helpers built on it."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa

from streamrank.errors import BatchFormatError, InvalidArgumentError, SourceError, StreamrankError
from streamrank.ids.kinds import DEFAULT_MAX_ID_BYTES

from ..ordering import OrderStats, order_by_time
from .csv_text import _csv_chunks
from .ids import IdSpec
from .jsonl import _jsonl_chunks
from .layout import Layout, TextLayout, resolve_text_layout
from .parquet import _parquet_chunks
from .report import DEFAULT_MAX_BAD_KEPT, ReadReport
from .snap import _snap_chunks
from .table import _Parsed, with_unit_weights
from .text import _UTF8_BOM, _binary_offset, _open_binary, _Prefixed, _read_head

#: Formats understood by :func:`open_edge_file`.
FORMATS = ("snap", "csv", "parquet", "jsonl")

#: Default rows per chunk (also the in-memory ordering bound).
DEFAULT_CHUNK_ROWS = 1_000_000

_EXTENSIONS = {
    ".txt": "snap",
    ".tsv": "snap",
    ".edges": "snap",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
_HEAD_LIMIT = 1 << 26  # most bytes read looking for the first data line of a text file
_LOW_LEVEL_ERRORS = (OSError, EOFError, zlib.error, pa.ArrowException, UnicodeDecodeError)


def detect_format(path: str | os.PathLike) -> str:
    """The format of an edge file from its name.

    ``.txt``/``.tsv``/``.edges`` are ``"snap"``, ``.csv`` is ``"csv"``, ``.parquet``/``.pq``
    are ``"parquet"``, ``.jsonl``/``.ndjson`` are ``"jsonl"``; a trailing ``.gz`` is ignored.

    Parameters
    ----------
    path : str or path-like
        The file name (it need not exist).

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    InvalidArgumentError
        If the name has no recognised extension.
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    fmt = _EXTENSIONS.get(Path(name).suffix)
    if fmt is None or (fmt == "parquet" and Path(path).name.lower().endswith(".gz")):
        raise InvalidArgumentError(
            f"{path}: cannot tell the format from the file name; pass --format (one of {', '.join(FORMATS)})"
        )
    return fmt


def _check_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path must be a str or path-like, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if not path.is_file():
        raise SourceError(f"{path}: not a regular file")
    return path


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_format(path: Path, format: str | None) -> str:
    if format is None:
        return detect_format(path)
    if not isinstance(format, str) or format.lower() not in FORMATS:
        raise InvalidArgumentError(f"--format {format!r}: expected one of {', '.join(FORMATS)}")
    return format.lower()


class EdgeFileReader:
    """An edge file opened for streaming; iterate it for Arrow tables.

    Build it with :func:`open_edge_file` (its parameters are this constructor's). Each
    iteration reads the file from the start and resets :attr:`report`. Use it as a context
    manager (or call :meth:`close`) so that an iteration stopped early releases the file and
    any temporary sorted runs.

    Attributes
    ----------
    path : pathlib.Path
    format : str
    chunk_rows : int
    keep_order : bool
    strict : bool
    max_bad_kept : int
    id_type : {"auto", "int", "string"}
    max_id_bytes : int
    layout : Layout
        The stated column layout (parts left ``None`` are detected).
    text_layout : TextLayout or None
        The resolved layout of a text file, once its first lines have been read.
    report : ReadReport
        Counts and bad lines of the current (or last) iteration; complete once the iteration
        has finished. Bad lines of a chunk are recorded before that chunk is yielded (with
        ``keep_order=True`` the caller may drain ``report.bad_lines`` as it goes).
    schema : pyarrow.Schema or None
        Schema of the yielded tables, known once the first rows (or a CSV header / Parquet
        schema) have been read.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        format: str | None = None,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        keep_order: bool = False,
        strict: bool = False,
        max_bad_kept: int = DEFAULT_MAX_BAD_KEPT,
        id_type: str = "auto",
        max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
        stream_kind: str | None = None,
        layout: Layout | None = None,
    ):
        if layout is not None and not isinstance(layout, Layout):
            raise InvalidArgumentError(f"layout must be a connectors.files.Layout, got {type(layout).__name__}")
        self.layout = layout if layout is not None else Layout()
        self.text_layout: TextLayout | None = None
        self._ids = IdSpec(id_type, max_id_bytes, stream_kind)  # validates all three
        self.id_type = id_type
        self.stream_kind = stream_kind
        self.max_id_bytes = self._ids.max_bytes
        self.path = _check_path(path)
        self.format = _check_format(self.path, format)
        self.chunk_rows = _check_positive_int(chunk_rows, "chunk_rows")
        self.keep_order = _check_bool(keep_order, "keep_order")
        self.strict = _check_bool(strict, "strict")
        if isinstance(max_bad_kept, bool) or not isinstance(max_bad_kept, int) or max_bad_kept < 0:
            raise InvalidArgumentError(f"max_bad_kept must be a non-negative integer, got {max_bad_kept!r}")
        self.max_bad_kept = max_bad_kept
        self.report = self._new_report()
        self.schema: pa.Schema | None = None
        self._active: Iterator[pa.Table] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"EdgeFileReader({str(self.path)!r}, format={self.format!r}, chunk_rows={self.chunk_rows})"

    def _new_report(self) -> ReadReport:
        return ReadReport(self.path, self.format, max_kept=self.max_bad_kept)

    def __iter__(self) -> Iterator[pa.Table]:
        if self._closed:
            raise SourceError(f"{self.path}: the reader is closed")
        self._close_active()
        self.report = self._new_report()
        self._ids = IdSpec(self.id_type, self.max_id_bytes, self.stream_kind)  # auto: detected afresh each pass
        self.schema = None
        self._active = self._generate(self.report)
        return self._active

    def __enter__(self) -> "EdgeFileReader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stop any iteration in progress, closing the file and removing temporary runs."""
        self._close_active()
        self._closed = True

    def _close_active(self) -> None:
        if self._active is not None:
            self._active.close()
            self._active = None

    def _generate(self, report: ReadReport) -> Iterator[pa.Table]:
        tables = self._parsed_tables(report)
        try:
            if self.keep_order:
                yield from tables
                return
            stats = OrderStats()
            yield from order_by_time(tables, chunk_rows=self.chunk_rows, stats=stats)
            report.sorted_input = stats.sorted_input
            report.runs = stats.runs
        finally:
            tables.close()  # closes the file at once when iteration stops early

    def _parsed_tables(self, report: ReadReport) -> Iterator[pa.Table]:
        """The good rows in file order; bad lines go to ``report`` (or raise when strict)."""
        try:
            with self._chunk_source() as chunks:
                settled = False  # the schema is settled by the first rows
                for parsed in chunks:
                    self._account(parsed, report)
                    if self.layout.weighted and "weight" not in parsed.table.column_names:
                        parsed.table = with_unit_weights(parsed.table)  # no weight column: inserts weigh 1
                        if not settled and report.columns and "weighs 1" not in report.columns:
                            report.columns += "; no weight column: every insert weighs 1"
                    if not settled:
                        self.schema = parsed.table.schema
                        report.has_ts = "ts" in self.schema.names
                        report.id_type = self._ids.kind
                    if parsed.table.num_rows:
                        settled = True
                        yield parsed.table
        except StreamrankError:
            raise
        except _LOW_LEVEL_ERRORS as exc:
            raise SourceError(f"{self.path}: cannot read {self.format} edges: {exc}") from exc

    def _account(self, parsed: _Parsed, report: ReadReport) -> None:
        for bad in parsed.bad:
            if self.strict:
                raise SourceError(
                    f"{self.path}: {report.unit} {bad.line}: {bad.reason}: {bad.text!r}"
                ) from BatchFormatError(bad.reason)
            report.add_bad(bad)
        report.good += parsed.table.num_rows
        report.skipped += parsed.skipped

    def _chunk_source(self) -> "_ChunkSource":
        ids = self._ids
        report = self.report
        if self.format == "parquet":
            return _ChunkSource(None, lambda _: _parquet_chunks(self.path, self.chunk_rows, ids, self.layout, report))
        stream = _open_binary(self.path)
        if self.format == "jsonl":
            return _ChunkSource(stream, lambda s: _jsonl_chunks(s, self.chunk_rows, ids, self.layout, self.path,
                                                                report))
        try:
            return self._text_source(stream, ids)
        except BaseException:
            stream.close()
            raise

    def _text_source(self, stream, ids) -> "_ChunkSource":
        """Read the first lines, resolve the layout, and hand the rest to the SNAP or delimited parser."""
        head = _read_head(stream)
        if head.startswith(_UTF8_BOM):
            head = head[len(_UTF8_BOM):]
        pos = _binary_offset(head)
        if pos is not None:
            raise SourceError(
                f"{self.path}: not a text edge file (binary data at byte {pos}); for a Parquet file pass "
                "--format parquet, a compressed file must be gzip")
        text = head.decode("utf-8", errors="replace")
        layout = resolve_text_layout(text, self.layout, self.path, default_header=self.format == "csv")
        while layout is None and len(head) < _HEAD_LIMIT:  # only comments so far: read on to the first data line
            more = _read_head(stream)
            if not more:
                break
            head += more
            text = head.decode("utf-8", errors="replace")
            layout = resolve_text_layout(text, self.layout, self.path, default_header=self.format == "csv")
        self.text_layout = layout
        if layout is None:
            skipped = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
            return _ChunkSource(stream, lambda s: _csv_chunks(s, self.chunk_rows, None, ids, skipped))
        self.report.columns = layout.describe()
        self.report.unused_columns = list(layout.unused)
        if self._snap_canonical(layout):
            return _ChunkSource(_Prefixed(head, stream), lambda s: _snap_chunks(s, self.chunk_rows, ids))
        cut, skipped = 0, 0
        if layout.header:  # the stream continues after the header line
            for _ in range(layout.first_line - 1):
                cut = head.index(b"\n", cut) + 1 if b"\n" in head[cut:] else len(head)
            skipped = layout.first_line - 2
        return _ChunkSource(_Prefixed(head[cut:], stream),
                            lambda s: _csv_chunks(s, self.chunk_rows, layout, ids, skipped))

    def _snap_canonical(self, layout: TextLayout) -> bool:
        """Whether the SNAP parser reads this layout: blank/tab-separated ``src dst [ts]``, integer ts."""
        default = {"src": 0, "dst": 1, "ts": 2} if layout.ncols == 3 else {"src": 0, "dst": 1}
        return (self.format == "snap" and layout.delimiter in (" ", "\t") and not layout.header
                and layout.ncols in (2, 3) and layout.index == default and layout.ts_kind in (None, "int"))


class _ChunkSource:
    """Context manager pairing an open stream with the parser generator reading it."""

    def __init__(self, stream, make: Callable[[Any], Iterator[_Parsed]]):
        self._stream = stream
        self._chunks = make(stream)

    def __enter__(self) -> Iterator[_Parsed]:
        return self._chunks

    def __exit__(self, *exc_info) -> None:
        self._chunks.close()
        if self._stream is not None:
            self._stream.close()


def open_edge_file(
    path: str | os.PathLike,
    *,
    format: str | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    keep_order: bool = False,
    strict: bool = False,
    max_bad_kept: int = DEFAULT_MAX_BAD_KEPT,
    id_type: str = "auto",
    max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
    stream_kind: str | None = None,
    layout: Layout | None = None,
) -> EdgeFileReader:
    """Open an edge file for streaming.

    Parameters
    ----------
    path : str or path-like
        A SNAP text, CSV, Parquet or JSON-lines file (text formats optionally gzipped).
    format : {"snap", "csv", "parquet", "jsonl"}, optional
        Overrides the format detected from the extension (see :func:`detect_format`).
    chunk_rows : int, default 1_000_000
        Lines (Parquet: rows) per chunk read; also the most rows ordered in memory.
    keep_order : bool, default False
        Yield edges in file order even where the file has timestamps.
    strict : bool, default False
        Raise on the first bad line instead of counting and skipping it.
    max_bad_kept : int, default 1000
        Most bad-line records kept in the report (the counts stay exact).
    id_type : {"auto", "int", "string"}, default "auto"
        Vertex id type (:mod:`streamrank.ids.kinds`); ``"auto"`` detects it from the first data
        line (Parquet: the column type). Ids of the other kind are bad lines (``mixed_id_types``).
    max_id_bytes : int, default 1024
        Longest string id in UTF-8 bytes; longer ones are bad lines (``id_too_long``).
    stream_kind : {"int", "string"}, optional
        With ``id_type="auto"``: the kind already fixed for the stream this file belongs to (a
        directory's earlier files); ids of the other kind are bad lines.
    layout : Layout, optional
        Which columns (text) or fields (Parquet, JSON lines) hold src, dst, ts and op, whether a
        text file has a header and its delimiter; whatever it leaves out is detected
        (:mod:`connectors.files.layout`).

    Returns
    -------
    EdgeFileReader
        Iterable of :class:`pyarrow.Table` with columns ``src``, ``dst`` (``int64``, or
        ``string`` for string ids), ``op: int8`` and, where the file has them, ``ts``; a
        context manager.

    Raises
    ------
    InvalidArgumentError
        For an argument outside its domain or an unrecognised extension without ``format``.
    SourceError
        If the path is missing or not a file. While iterating: if the file cannot be read or
        decompressed, its header/schema lacks ``src``/``dst``, or (``strict=True``) a line is
        bad; the message names the line (Parquet: row) number.

    Examples
    --------
    >>> with open_edge_file("CollegeMsg.txt.gz") as reader:   # doctest: +SKIP
    ...     for table in reader:
    ...         consume(table)
    ...     print(reader.report.summary())
    """
    return EdgeFileReader(
        path, format=format, chunk_rows=chunk_rows, keep_order=keep_order, strict=strict, max_bad_kept=max_bad_kept,
        id_type=id_type, max_id_bytes=max_id_bytes, stream_kind=stream_kind, layout=layout,
    )


def list_edge_files(directory: str | os.PathLike) -> list[Path]:
    """Edge files in a directory (not recursive), sorted by name.

    Only names with a recognised extension (see :func:`detect_format`) are listed; hidden files
    (names starting with ``.``) are left out so that files still being written under a dot name
    and renamed when complete are not picked up early.

    Parameters
    ----------
    directory : str or path-like
        The directory.

    Returns
    -------
    list of pathlib.Path
        Regular files, sorted by file name.

    Raises
    ------
    InvalidArgumentError
        If ``directory`` is not a str or path-like.
    SourceError
        If it does not exist, is not a directory or cannot be listed.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise InvalidArgumentError(f"directory must be a str or path-like, got {type(directory).__name__}")
    directory = Path(directory)
    if not directory.is_dir():
        raise SourceError(f"{directory}: not a directory")
    try:
        entries = list(directory.iterdir())
    except OSError as exc:
        raise SourceError(f"{directory}: cannot list: {exc}") from exc
    return sorted((p for p in entries if _is_edge_file(p)), key=lambda p: p.name)


def _is_edge_file(path: Path) -> bool:
    if path.name.startswith(".") or not path.is_file():
        return False
    try:
        detect_format(path)
    except InvalidArgumentError:
        return False
    return True
