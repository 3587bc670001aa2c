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

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from streamrank.batch import MAX_VERTEX_ID, EdgeBatch, parse_op
from streamrank.errors import BatchFormatError, InvalidArgumentError, SourceError, StreamrankError

from .ordering import OrderStats, order_by_time

__all__ = [
    "FORMATS",
    "BadLine",
    "ReadReport",
    "EdgeFileReader",
    "detect_format",
    "open_edge_file",
    "read_edges",
    "iter_batches",
    "list_edge_files",
]

#: Formats understood by :func:`open_edge_file`.
FORMATS = ("snap", "csv", "parquet", "jsonl")

#: Default rows per chunk (also the in-memory ordering bound).
DEFAULT_CHUNK_ROWS = 1_000_000

#: Default number of bad-line records kept in a report (the counts stay exact).
DEFAULT_MAX_BAD_KEPT = 1_000

#: Characters of a bad line's text kept in its record.
TEXT_KEPT = 200

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
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_READ_BYTES = 1 << 24
_MIN_READ_BYTES = 1 << 16
_UTF8_BOM = b"\xef\xbb\xbf"
_TS_RANGE = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
_ID_RE = re.compile(rb"[0-9]+\Z")
_NEG_RE = re.compile(rb"-[0-9]+\Z")
_TS_RE = re.compile(rb"-?[0-9]+\Z")
_COMMENT_RE = re.compile(rb"^[#%][^\n]*(?:\n|\Z)", re.MULTILINE)
_LOW_LEVEL_ERRORS = (OSError, EOFError, zlib.error, pa.ArrowException, UnicodeDecodeError)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BadLine:
    """One rejected line (or Parquet row).

    Attributes
    ----------
    line : int
        1-based line number in the (decompressed) file; for Parquet the 1-based row number.
    reason : str
        Why it was rejected.
    text : str
        The original text, truncated to :data:`TEXT_KEPT` characters.
    """

    line: int
    reason: str
    text: str


@dataclass
class ReadReport:
    """Counts and bad-line records of one pass over an edge file.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    format : str
        One of :data:`FORMATS`.
    good : int
        Edges read (before any ordering).
    bad : int
        Lines (Parquet: rows) rejected; exact even when ``bad_lines`` is capped.
    skipped : int
        Comment and blank lines (text formats).
    bad_lines : list of BadLine
        The first ``max_kept`` rejected lines, in file order.
    max_kept : int
        Cap on ``bad_lines``.
    has_ts : bool or None
        Whether the file has timestamps (``None`` until known).
    sorted_input : bool or None
        Whether the timestamps were already in non-decreasing order (``None`` when not
        checked: no timestamps, ``keep_order=True``, or no rows).
    runs : int
        Sorted runs spilled to disk while ordering (0 when ordered in memory).
    """

    path: Path
    format: str
    good: int = 0
    bad: int = 0
    skipped: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    max_kept: int = DEFAULT_MAX_BAD_KEPT
    has_ts: bool | None = None
    sorted_input: bool | None = None
    runs: int = 0

    @property
    def unit(self) -> str:
        """``"row"`` for Parquet, ``"line"`` otherwise."""
        return "row" if self.format == "parquet" else "line"

    def add_bad(self, bad: BadLine) -> None:
        """Count a rejected line and keep its record while under the cap."""
        self.bad += 1
        if len(self.bad_lines) < self.max_kept:
            self.bad_lines.append(bad)

    def summary(self) -> str:
        """One line for logs: counts and the first few bad lines."""
        text = f"{self.path.name}: {self.good} edges, {self.bad} bad {self.unit}s, {self.skipped} skipped"
        if self.bad_lines:
            shown = "; ".join(f"{self.unit} {b.line}: {b.reason}" for b in self.bad_lines[:3])
            more = " ..." if self.bad > 3 else ""
            text += f" ({shown}{more})"
        return text


def _bad(line: int, reason: str, raw: bytes | str) -> BadLine:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    return BadLine(line, reason, raw.rstrip("\r\n")[:TEXT_KEPT])


class _Bad(Exception):
    """A line is rejected; internal to the line-by-line parsers."""


# --------------------------------------------------------------------------------------------
# Parsed chunks and table building
# --------------------------------------------------------------------------------------------


@dataclass
class _Parsed:
    """What one chunk of a file gave: the good rows, the bad lines, the skipped count."""

    table: pa.Table
    bad: list[BadLine]
    skipped: int = 0


def _schema(ts_type: pa.DataType | None) -> pa.Schema:
    fields = [("src", pa.int64()), ("dst", pa.int64()), ("op", pa.int8())]
    if ts_type is not None:
        fields.append(("ts", ts_type))
    return pa.schema(fields)


def _edge_table(src, dst, op=None, ts=None, ts_type: pa.DataType | None = None) -> pa.Table:
    """Build an output table from arrays (NumPy or Arrow); ``op`` defaults to all inserts."""
    src = np.asarray(src, dtype=np.int64)
    if op is None:
        op = np.ones(len(src), dtype=np.int8)
    columns = [src, np.asarray(dst, dtype=np.int64), np.asarray(op, dtype=np.int8)]
    if ts_type is not None:
        columns.append(np.asarray(ts, dtype=ts_type.to_pandas_dtype()))
    return pa.Table.from_arrays([pa.array(c) for c in columns], schema=_schema(ts_type))


def _rows_table(rows: list[tuple], has_ts: bool) -> pa.Table:
    """Build an output table from line-by-line parsed ``(src, dst, op[, ts])`` tuples."""
    ts_type = pa.int64() if has_ts else None
    if not rows:
        return _schema(ts_type).empty_table()
    cols = list(zip(*rows))
    return _edge_table(cols[0], cols[1], cols[2], cols[3] if has_ts else None, ts_type)


def _op_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Map an op column to int8 codes with :func:`parse_op` semantics, vectorized.

    ``parse_op`` is applied once per distinct value. Returns the codes (+1/-1; +1 where the
    value is null or bad) and a mask of rows with an unknown op.
    """
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    deletes, unknown = [], []
    for value in pc.unique(values).to_pylist():
        if value is None:
            continue
        try:
            if not parse_op(value):
                deletes.append(value)
        except BatchFormatError:
            unknown.append(value)
    codes = np.ones(len(values), dtype=np.int8)
    if deletes:
        codes[_in_set(values, deletes)] = -1
    bad = _in_set(values, unknown) if unknown else np.zeros(len(values), dtype=bool)
    return codes, bad


def _in_set(values: pa.Array, members: list) -> np.ndarray:
    mask = pc.is_in(values, value_set=pa.array(members, type=values.type))
    return mask.fill_null(False).to_numpy(zero_copy_only=False)


def _line_count(block: bytes) -> int:
    return block.count(b"\n") + (0 if not block or block.endswith(b"\n") else 1)


def _split_lines(block: bytes) -> list[bytes]:
    lines = block.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _parse_blocks(
    blocks: Iterator[tuple[int, bytes]],
    *,
    fast: Callable[[bytes], pa.Table | None],
    parse_line: Callable[[bytes], tuple | None],
    has_ts: Callable[[], bool],
) -> Iterator[_Parsed]:
    """Parse ``(first line number, block)`` pairs of a text file.

    A block is parsed by ``fast`` (a table, or ``None`` when anything in it is off); failing
    that, line by line with ``parse_line`` (a row tuple, ``None`` for a line to skip, or
    :class:`_Bad`), recording every bad line. ``has_ts()`` is asked once the lines are parsed.
    """
    for first_line, block in blocks:
        table = fast(block)
        if table is not None:
            yield _Parsed(table, [], _line_count(block) - table.num_rows)
            continue
        rows, bad, skipped = [], [], 0
        for offset, raw in enumerate(_split_lines(block)):
            try:
                row = parse_line(raw)
            except _Bad as exc:
                bad.append(_bad(first_line + offset, str(exc), raw))
                continue
            if row is None:
                skipped += 1
            else:
                rows.append(row)
        yield _Parsed(_rows_table(rows, has_ts()), bad, skipped)


# --------------------------------------------------------------------------------------------
# Field parsing (line-by-line path)
# --------------------------------------------------------------------------------------------


def _parse_int(token: bytes | str | int | None, *, missing: str, label: str, signed: bool) -> int:
    """An integer from a text token or a JSON value (the checks ids and timestamps share).

    ``missing`` and ``label`` name the field in the reasons; a text token with a sign is
    rejected as negative unless ``signed``. Raises :class:`_Bad`.
    """
    if token is None or token == b"" or token == "":
        raise _Bad(f"missing {missing}")
    if isinstance(token, bool) or isinstance(token, float):
        raise _Bad(f"non-integer {label} {token!r}")
    if isinstance(token, int):
        return token
    raw = token.strip() if isinstance(token, bytes) else token.strip().encode("utf-8", "replace")
    if not signed and _NEG_RE.match(raw):
        raise _Bad(f"negative {label} {raw.decode()}")
    if not (_TS_RE if signed else _ID_RE).match(raw):
        raise _Bad(f"non-integer {label} {raw.decode('utf-8', 'replace')[:40]!r}")
    return int(raw)


def _parse_id(token: bytes | str | int | None, name: str) -> int:
    """A vertex id from a text token or a JSON value; raises :class:`_Bad`."""
    value = _parse_int(token, missing=name, label=f"{name} id", signed=False)
    if value < 0:
        raise _Bad(f"negative {name} id {value}")
    if value > MAX_VERTEX_ID:
        raise _Bad(f"{name} id {value} beyond int64")
    return value


def _parse_ts(token: bytes | str | int | None) -> int:
    """An integer timestamp from a text token or a JSON value; raises :class:`_Bad`."""
    value = _parse_int(token, missing="ts", label="ts", signed=True)
    if not _TS_RANGE[0] <= value <= _TS_RANGE[1]:
        raise _Bad(f"ts {value} beyond int64")
    return value


def _parse_op_field(value: Any) -> int:
    try:
        return 1 if parse_op(value) else -1
    except BatchFormatError as exc:
        raise _Bad(f"unknown op {value!r}") from exc


# --------------------------------------------------------------------------------------------
# Text input: opening and line blocks
# --------------------------------------------------------------------------------------------


def _open_binary(path: Path):
    """Open ``path`` for reading bytes, decompressing gzip (detected by magic bytes)."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb")


def _line_blocks(stream, *, max_lines: int, first_line: int = 1) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number of the first line, block)`` with at most ``max_lines`` lines each.

    Blocks end at a newline except possibly the last one. Reads fixed-size byte blocks and cuts
    them at newline positions found with NumPy (no per-line Python work).
    """
    read_bytes = min(max(max_lines * 48, _MIN_READ_BYTES), _MAX_READ_BYTES)
    parts, pending, line_no = [], 0, first_line
    while True:
        data = stream.read(read_bytes)
        if data:
            parts.append(data)
            pending += data.count(b"\n")
            if pending < max_lines:
                continue
        buf = b"".join(parts)
        start = 0
        if pending >= max_lines:
            newlines = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            for k in range(max_lines - 1, len(newlines), max_lines):
                end = int(newlines[k]) + 1
                yield line_no, buf[start:end]
                line_no += max_lines
                start = end
        rest = buf[start:]
        if not data:
            if rest:
                yield line_no, rest
            return
        parts, pending = [rest], rest.count(b"\n")


# --------------------------------------------------------------------------------------------
# SNAP text
# --------------------------------------------------------------------------------------------

_SNAP_NAMES = ("src", "dst", "ts")


@dataclass
class _SnapState:
    nfields: int | None = None


def _normalize_whitespace(block: bytes) -> bytes:
    """Tabs and runs of spaces to one space; no leading/trailing spaces or CRs on lines."""
    if b"\t" in block:
        block = block.replace(b"\t", b" ")
    if b"\r" in block:
        block = block.replace(b"\r", b" ")
    while b"  " in block:
        block = block.replace(b"  ", b" ")
    if b"\n " in block:
        block = block.replace(b"\n ", b"\n")
    if b" \n" in block:
        block = block.replace(b" \n", b"\n")
    return block.strip(b" ")


def _first_field_count(block: bytes) -> int | None:
    """Field count of the block's first data line when it is 2 or 3, else ``None``.

    Only the first data line counts, as in the line-by-line parser, so the field count (and the
    reasons given for bad lines) do not depend on where chunks are cut.
    """
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        fields = block[start:end].split()
        start = end + 1
        if fields and fields[0][:1] not in (b"#", b"%"):
            return len(fields) if len(fields) in (2, 3) else None
    return None


def _snap_fast(block: bytes, nfields: int) -> pa.Table | None:
    """Parse an all-good block with pyarrow's CSV reader; ``None`` when anything is off.

    The block is parsed as it is first (single spaces or single tabs); only when that fails is
    its whitespace normalized and parsed again.
    """
    normalized = b"#" in block or b"%" in block
    if normalized:
        block = _COMMENT_RE.sub(b"", _normalize_whitespace(block))
    if not block.strip():
        return _schema(pa.int64() if nfields == 3 else None).empty_table()
    names = list(_SNAP_NAMES[:nfields])
    delimiter = "\t" if b"\t" in block[: block.find(b"\n")] else " "
    table = _read_delimited(block, names, delimiter)
    if table is None and not normalized:
        table = _read_delimited(_normalize_whitespace(block), names, " ")
    return None if table is None else _checked_fast_table(table, nfields == 3)


def _read_delimited(text: bytes, names: list[str], delimiter: str) -> pa.Table | None:
    """Integer columns from delimited text with no quoting; ``None`` if any field is off."""
    try:
        return pcsv.read_csv(
            io.BytesIO(text),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={n: pa.int64() for n in names}, null_values=[], strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        return None


def _snap_line(raw: bytes, state: _SnapState) -> tuple | None:
    """One line's row (``None`` for a blank or comment line); raises :class:`_Bad`."""
    fields = raw.split()
    if not fields or fields[0][:1] in (b"#", b"%"):
        return None
    if state.nfields is None and len(fields) in (2, 3):
        state.nfields = len(fields)
    expected = state.nfields
    if len(fields) != (expected or 0):
        want = "2 or 3" if expected is None else str(expected)
        raise _Bad(f"expected {want} fields, got {len(fields)}")
    src = _parse_id(fields[0], "src")
    dst = _parse_id(fields[1], "dst")
    if expected == 3:
        return src, dst, 1, _parse_ts(fields[2])
    return src, dst, 1


def _snap_chunks(stream, chunk_rows: int) -> Iterator[_Parsed]:
    state = _SnapState()

    def fast(block: bytes) -> pa.Table | None:
        if state.nfields is None:
            state.nfields = _first_field_count(block)
        return _snap_fast(block, state.nfields) if state.nfields else None

    return _parse_blocks(
        _line_blocks(stream, max_lines=chunk_rows),
        fast=fast,
        parse_line=lambda raw: _snap_line(raw, state),
        has_ts=lambda: state.nfields == 3,
    )


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------

_CSV_KNOWN = ("src", "dst", "op", "ts")


def _csv_header(stream, path: Path) -> list[str] | None:
    """Column names from the first line (lower-cased, stripped); ``None`` for an empty file."""
    raw = stream.readline()
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    if not raw.strip():
        if raw:
            raise SourceError(f"{path}: line 1: the CSV header is empty")
        return None
    names = [n.strip().lower() for n in next(csv.reader([raw.decode("utf-8", "replace").rstrip("\r\n")]))]
    missing = [n for n in ("src", "dst") if n not in names]
    if missing:
        raise SourceError(f"{path}: line 1: the CSV header {names} lacks column(s) {missing}")
    dupes = sorted({n for n in names if n in _CSV_KNOWN and names.count(n) > 1})
    if dupes:
        raise SourceError(f"{path}: line 1: the CSV header repeats column(s) {dupes}")
    return names


def _csv_fast(block: bytes, names: list[str]) -> pa.Table | None:
    """Parse an all-good block with pyarrow's CSV reader; ``None`` when anything is off."""
    used = [n for n in _CSV_KNOWN if n in names]
    has_ts = "ts" in used
    types = {n: (pa.string() if n == "op" else pa.int64()) for n in used}
    try:
        table = pcsv.read_csv(
            io.BytesIO(block),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types=types, include_columns=used, null_values=[], strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        return None
    return _checked_fast_table(table, has_ts)


def _checked_fast_table(table: pa.Table, has_ts: bool) -> pa.Table | None:
    """Turn a fast-parsed table into an output table, or ``None`` if any row is bad."""
    ts_type = pa.int64() if has_ts else None
    if table.num_rows == 0:
        return _schema(ts_type).empty_table()
    id_names = ["src", "dst"] + (["ts"] if has_ts else [])
    if any(table.column(n).null_count for n in id_names):
        return None
    if pc.min(table.column("src")).as_py() < 0 or pc.min(table.column("dst")).as_py() < 0:
        return None
    if "op" in table.column_names:
        codes, unknown = _op_codes(table.column("op"))
        if unknown.any():
            return None
        op = pa.array(codes)
    else:
        op = pa.array(np.ones(table.num_rows, dtype=np.int8))
    columns = [table.column("src"), table.column("dst"), op] + ([table.column("ts")] if has_ts else [])
    return pa.Table.from_arrays(columns, schema=_schema(ts_type))


def _csv_line(raw: bytes, names: list[str], has_ts: bool) -> tuple | None:
    """One line's row, parsed with :mod:`csv` (``None`` for a blank line); raises :class:`_Bad`."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r")
    if not text.strip():
        return None
    try:
        values = next(csv.reader([text]))
    except csv.Error as exc:
        raise _Bad(f"bad CSV: {exc}") from exc
    if len(values) != len(names):
        raise _Bad(f"expected {len(names)} fields, got {len(values)}")
    record = dict(zip(names, values))
    src = _parse_id(record["src"], "src")
    dst = _parse_id(record["dst"], "dst")
    op = _parse_op_field(record.get("op"))
    if has_ts:
        return src, dst, op, _parse_ts(record["ts"])
    return src, dst, op


def _csv_chunks(stream, chunk_rows: int, path: Path) -> Iterator[_Parsed]:
    names = _csv_header(stream, path)
    if names is None:
        return
    has_ts = "ts" in names
    yield _Parsed(_schema(pa.int64() if has_ts else None).empty_table(), [])  # schema first
    yield from _parse_blocks(
        _line_blocks(stream, max_lines=chunk_rows, first_line=2),
        fast=lambda block: _csv_fast(block, names),
        parse_line=lambda raw: _csv_line(raw, names, has_ts),
        has_ts=lambda: has_ts,
    )


# --------------------------------------------------------------------------------------------
# JSON lines
# --------------------------------------------------------------------------------------------


@dataclass
class _JsonState:
    has_ts: bool | None = None


def _jsonl_fast(block: bytes, state: _JsonState) -> pa.Table | None:
    """Parse an all-good block with pyarrow's JSON reader; ``None`` when anything is off."""
    for op_type in (pa.string(), pa.int64()):
        table = _read_json_block(block, op_type)
        if table is not None:
            break
    else:
        return None
    if table.num_rows == 0:
        return _schema(pa.int64() if state.has_ts else None).empty_table()
    if any(table.column(n).null_count for n in ("src", "dst")):
        return None
    has_ts = state.has_ts
    if has_ts is None:
        has_ts = table.column("ts")[0].is_valid
    if not has_ts:
        table = table.drop_columns(["ts"])
    result = _checked_fast_table(table, has_ts)
    if result is not None:
        state.has_ts = has_ts
    return result


def _read_json_block(block: bytes, op_type: pa.DataType) -> pa.Table | None:
    schema = pa.schema([("src", pa.int64()), ("dst", pa.int64()), ("op", op_type), ("ts", pa.int64())])
    block_size = min(max(len(block) + 1, 1 << 20), (1 << 31) - 1)
    try:
        return pjson.read_json(
            io.BytesIO(block),
            read_options=pjson.ReadOptions(block_size=block_size),
            parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except pa.ArrowInvalid:
        return None


def _jsonl_line(raw: bytes, state: _JsonState) -> tuple | None:
    """One line's row, parsed with :mod:`json` (``None`` for a blank line); raises :class:`_Bad`."""
    if not raw.strip():
        return None
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise _Bad(f"bad JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise _Bad(f"JSON line is a {type(record).__name__}, not an object")
    for name in ("src", "dst"):
        if record.get(name) is None:
            raise _Bad(f"missing field {name}")
    src = _parse_id(_json_id(record["src"]), "src")
    dst = _parse_id(_json_id(record["dst"]), "dst")
    op = _parse_op_field(record.get("op"))
    has_ts = state.has_ts if state.has_ts is not None else record.get("ts") is not None
    if not has_ts:
        state.has_ts = False
        return src, dst, op
    if record.get("ts") is None:
        raise _Bad("missing field ts")
    row = (src, dst, op, _parse_ts(_json_id(record["ts"])))
    state.has_ts = True
    return row


def _json_id(value: Any) -> Any:
    """JSON strings are parsed as text tokens, other values as they are."""
    return value.encode("utf-8", "replace") if isinstance(value, str) else value


def _jsonl_chunks(stream, chunk_rows: int) -> Iterator[_Parsed]:
    state = _JsonState()
    blocks = (
        (first_line, block[len(_UTF8_BOM) :] if first_line == 1 and block.startswith(_UTF8_BOM) else block)
        for first_line, block in _line_blocks(stream, max_lines=chunk_rows)
    )
    return _parse_blocks(
        blocks,
        fast=lambda block: _jsonl_fast(block, state),
        parse_line=lambda raw: _jsonl_line(raw, state),
        has_ts=lambda: bool(state.has_ts),
    )


# --------------------------------------------------------------------------------------------
# Parquet
# --------------------------------------------------------------------------------------------


def _parquet_columns(pfile: pq.ParquetFile, path: Path) -> list[str]:
    names = pfile.schema_arrow.names
    missing = [n for n in ("src", "dst") if n not in names]
    if missing:
        raise SourceError(f"{path}: the Parquet file lacks column(s) {missing} (has {names})")
    return [n for n in _CSV_KNOWN if n in names]


def _parquet_ts_type(pfile: pq.ParquetFile, path: Path) -> pa.DataType | None:
    if "ts" not in pfile.schema_arrow.names:
        return None
    kind = pfile.schema_arrow.field("ts").type
    if pa.types.is_integer(kind) or pa.types.is_timestamp(kind):
        return pa.int64()
    if pa.types.is_floating(kind):
        return pa.float64()
    raise SourceError(f"{path}: column ts has type {kind}; expected integers, floats or timestamps")


def _id_values(column: pa.Array, name: str, path: Path) -> tuple[np.ndarray, dict[int, str]]:
    """Vertex ids of a Parquet column as int64 and ``{row index: reason}`` for bad rows."""
    kind = column.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise SourceError(f"{path}: column {name} has type {kind}; expected integers")
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.fill_null(0).to_numpy(zero_copy_only=False)
    reasons: dict[int, str] = {}
    _mark(reasons, ~valid, f"missing {name}")
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        _mark(reasons, ~finite | (values != np.floor(np.where(finite, values, 0))), f"non-integer {name} id")
        _mark(reasons, finite & (values < 0), f"negative {name} id")
        _mark(reasons, finite & (values >= 2.0**63), f"{name} id beyond int64")
        values = np.where(finite & (np.abs(values) < 2.0**63), values, 0)
    elif values.dtype.kind == "u":
        _mark(reasons, values > MAX_VERTEX_ID, f"{name} id beyond int64")
    else:
        _mark(reasons, values < 0, f"negative {name} id")
    return values.astype(np.int64), reasons


def _ts_values(column: pa.Array, ts_type: pa.DataType) -> tuple[np.ndarray, dict[int, str]]:
    """Timestamps of a Parquet column and ``{row index: reason}`` for bad rows."""
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.fill_null(0).to_numpy(zero_copy_only=False)
    reasons: dict[int, str] = {}
    _mark(reasons, ~valid, "missing ts")
    if values.dtype.kind == "f":
        _mark(reasons, np.isnan(values), "ts is NaN")
    elif values.dtype.kind == "u":
        _mark(reasons, values > MAX_VERTEX_ID, "ts beyond int64")
    return values.astype(ts_type.to_pandas_dtype()), reasons


def _mark(reasons: dict[int, str], mask: np.ndarray, reason: str) -> None:
    """Record ``reason`` for the rows in ``mask`` that have no reason yet."""
    for row in np.flatnonzero(mask).tolist():
        reasons.setdefault(row, reason)


def _parquet_batch(batch: pa.RecordBatch, row0: int, ts_type, path: Path) -> _Parsed:
    """Validate one Parquet record batch column-wise; bad rows carry 1-based row numbers."""
    src, reasons = _id_values(batch.column("src"), "src", path)
    dst, dst_reasons = _id_values(batch.column("dst"), "dst", path)
    _merge_reasons(reasons, dst_reasons)
    op = None
    if "op" in batch.schema.names:
        op, unknown = _op_codes(batch.column("op"))
        for row in np.flatnonzero(unknown).tolist():
            reasons.setdefault(row, f"unknown op {batch.column('op')[row].as_py()!r}")
    ts = None
    if ts_type is not None:
        ts, ts_reasons = _ts_values(batch.column("ts"), ts_type)
        _merge_reasons(reasons, ts_reasons)
    keep = np.ones(batch.num_rows, dtype=bool)
    bad = []
    for row in sorted(reasons):
        keep[row] = False
        text = json.dumps(batch.slice(row, 1).to_pylist()[0], default=str)
        bad.append(_bad(row0 + row + 1, reasons[row], text))
    pick = (lambda a: a if a is None or keep.all() else a[keep])  # noqa: E731
    table = _edge_table(pick(src), pick(dst), pick(op), pick(ts), ts_type)
    return _Parsed(table, bad)


def _merge_reasons(into: dict[int, str], more: dict[int, str]) -> None:
    for row, reason in more.items():
        into.setdefault(row, reason)


def _parquet_chunks(path: Path, chunk_rows: int) -> Iterator[_Parsed]:
    with pq.ParquetFile(path) as pfile:
        columns = _parquet_columns(pfile, path)
        ts_type = _parquet_ts_type(pfile, path)
        yield _Parsed(_schema(ts_type).empty_table(), [])  # schema first, even for an empty file
        row0 = 0
        for batch in pfile.iter_batches(batch_size=chunk_rows, columns=columns):
            yield _parquet_batch(batch, row0, ts_type, path)
            row0 += batch.num_rows


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


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
            f"cannot tell the format of {Path(path).name!r} from its extension; pass format= one of {FORMATS}"
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
        raise InvalidArgumentError(f"format must be one of {FORMATS} or None, got {format!r}")
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
    ):
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
                    if not settled:
                        self.schema = parsed.table.schema
                        report.has_ts = "ts" in self.schema.names
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
        if self.format == "parquet":
            return _ChunkSource(None, lambda _: _parquet_chunks(self.path, self.chunk_rows))
        stream = _open_binary(self.path)
        if self.format == "snap":
            return _ChunkSource(stream, lambda s: _snap_chunks(s, self.chunk_rows))
        if self.format == "csv":
            return _ChunkSource(stream, lambda s: _csv_chunks(s, self.chunk_rows, self.path))
        return _ChunkSource(stream, lambda s: _jsonl_chunks(s, self.chunk_rows))


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

    Returns
    -------
    EdgeFileReader
        Iterable of :class:`pyarrow.Table` with columns ``src: int64``, ``dst: int64``,
        ``op: int8`` and, where the file has them, ``ts``; a context manager.

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
        path, format=format, chunk_rows=chunk_rows, keep_order=keep_order, strict=strict, max_bad_kept=max_bad_kept
    )


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
    src = table.column("src").to_numpy()
    dst = table.column("dst").to_numpy()
    insert = table.column("op").to_numpy() > 0
    return EdgeBatch(src, dst, insert)


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
