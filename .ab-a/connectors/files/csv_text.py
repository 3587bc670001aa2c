"""CSV with a header naming ``src``, ``dst`` and optionally ``op`` and ``ts``.

In ``"auto"`` id mode the first data line with the header's field count and a non-blank ``src``
fixes the id type, in both the fast and the line-by-line path. Whitespace around an id is dropped.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pcsv

from streamrank.errors import SourceError

from .fields import _parse_op_field, _parse_ts
from .ids import IdSpec
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


def _fix_kind(block: bytes, names: list[str], ids: IdSpec) -> None:
    """In auto mode, fix the id type from the block's first data line (if it qualifies)."""
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        line = block[start:end].decode("utf-8", "surrogateescape").rstrip("\r")
        start = end + 1
        if line.strip():
            try:
                values = next(csv.reader([line]))
            except csv.Error:
                return
            if len(values) == len(names):
                ids.fix_from_text(values[names.index("src")])
            return


def _csv_fast(block: bytes, names: list[str], ids: IdSpec) -> pa.Table | None:
    """Parse an all-good block with pyarrow's CSV reader; ``None`` when anything is off."""
    if ids.kind is None:
        _fix_kind(block, names, ids)
        if ids.kind is None:
            return None
    used = [n for n in _CSV_KNOWN if n in names]
    has_ts = "ts" in used
    types = {n: (pa.string() if n == "op" else ids.arrow_type if n in ("src", "dst") else pa.int64()) for n in used}
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
    return _checked_fast_table(table, has_ts, ids, trim=True)


def _csv_line(raw: bytes, names: list[str], has_ts: bool, ids: IdSpec) -> tuple | None:
    """One line's row, parsed with :mod:`csv` (``None`` for a blank line); raises :class:`_Bad`."""
    text = raw.decode("utf-8", errors="surrogateescape").rstrip("\r")  # bad UTF-8 is found in the id check
    if not text.strip():
        return None
    try:
        values = next(csv.reader([text]))
    except csv.Error as exc:
        raise _Bad(f"bad CSV: {exc}") from exc
    if len(values) != len(names):
        raise _Bad(f"expected {len(names)} fields, got {len(values)}")
    record = dict(zip(names, values))
    ids.fix_from_text(record["src"])
    src = ids.parse_text(record["src"], "src")
    dst = ids.parse_text(record["dst"], "dst")
    op = _parse_op_field(record.get("op"))
    if has_ts:
        return src, dst, op, _parse_ts(record["ts"])
    return src, dst, op


def _csv_chunks(stream, chunk_rows: int, path: Path, ids: IdSpec) -> Iterator[_Parsed]:
    names = _csv_header(stream, path)
    if names is None:
        return
    has_ts = "ts" in names
    yield _Parsed(_schema(pa.int64() if has_ts else None).empty_table(), [])  # schema first
    yield from _parse_blocks(
        _line_blocks(stream, max_lines=chunk_rows, first_line=2),
        fast=lambda block: _csv_fast(block, names, ids),
        parse_line=lambda raw: _csv_line(raw, names, has_ts, ids),
        has_ts=lambda: has_ts,
    )
