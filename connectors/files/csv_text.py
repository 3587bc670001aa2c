"""CSV with a header naming ``src``, ``dst`` and optionally ``op`` and ``ts``."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pcsv

from streamrank.errors import SourceError

from .fields import _parse_id, _parse_op_field, _parse_ts
from .report import _Bad
from .table import _checked_fast_table, _Parsed, _schema
from .text import _UTF8_BOM, _line_blocks, _parse_blocks

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
