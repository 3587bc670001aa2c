"""Delimited text with any column layout: CSV, TSV, blank- or semicolon-separated, with or without a header.

The layout (delimiter, header, which columns hold src/dst/ts/op, how timestamps are written) is
resolved from the first lines by :func:`connectors.files.layout.resolve_text_layout`. Blocks of
lines are parsed with pyarrow's CSV reader (blank-separated blocks have their runs of blanks
folded first, and ``#``/``%`` comment lines dropped in blank- and tab-separated files); a block it
rejects is parsed again line by line.

In ``"auto"`` id mode the first data line with the layout's field count and a non-blank src fixes
the id type, in both the fast and the line-by-line path. Whitespace around an id is dropped.
"""

from __future__ import annotations

import csv
import io
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from .fields import _parse_op_field, _parse_ts_as, _parse_weight_field
from .ids import IdSpec
from .layout import TextLayout, is_comment
from .report import _Bad
from .table import _checked_fast_table, _Parsed, _schema
from .text import _line_blocks, _parse_blocks
from .snap import _COMMENT_RE, _normalize_whitespace

#: The columns an edge table can have (also the Parquet column names read by default).
_CSV_KNOWN = ("src", "dst", "op", "ts")

_TS_ARROW = {"int": pa.int64(), "float": pa.float64(), "iso": pa.float64()}


def ts_arrow_type(layout: TextLayout) -> pa.DataType | None:
    """The output type of the layout's timestamps (``None`` without a ts column)."""
    return None if layout.ts_kind is None else _TS_ARROW[layout.ts_kind]


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape").rstrip("\r")  # bad UTF-8 is found in the id check


def _fix_kind(block: bytes, layout: TextLayout, ids: IdSpec) -> None:
    """In auto mode, fix the id type from the block's first data line (if it qualifies)."""
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        line = _decode(block[start:end])
        start = end + 1
        if line.strip() and not (layout.comments and is_comment(line)):
            try:
                values = layout.split(line)
            except csv.Error:
                return
            if len(values) == layout.ncols:
                ids.fix_from_text(values[layout.index["src"]])
            return


def _read_block(block: bytes, layout: TextLayout, names: list[str], types: dict) -> pa.Table | None:
    blank = layout.delimiter == " "
    try:
        return pcsv.read_csv(
            io.BytesIO(block),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=layout.delimiter, quote_char=False if blank else '"',
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, include_columns=list(types), null_values=[],
                                                strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        return None


def _csv_fast(block: bytes, layout: TextLayout, ids: IdSpec) -> pa.Table | None:
    """Parse an all-good block with pyarrow's CSV reader; ``None`` when anything is off."""
    if ids.kind is None:
        _fix_kind(block, layout, ids)
        if ids.kind is None:
            return None
    if layout.comments and (b"#" in block or b"%" in block):
        block = _COMMENT_RE.sub(b"", block)
    if layout.delimiter == " ":
        block = _normalize_whitespace(block)
    if not block.strip():
        return _schema(ts_arrow_type(layout), ids.arrow_type, "weight" in layout.index).empty_table()
    names = [f"c{k}" for k in range(layout.ncols)]
    role_type = {"src": ids.arrow_type, "dst": ids.arrow_type, "op": pa.string(), "weight": pa.float64(),
                 "ts": pa.timestamp("us", tz="UTC") if layout.ts_kind == "iso" else ts_arrow_type(layout)}
    types = {names[k]: role_type[role] for role, k in layout.index.items()}
    table = _read_block(block, layout, names, types)
    if table is None and layout.ts_kind == "iso":  # ISO times without a zone (taken as UTC)
        types[names[layout.index["ts"]]] = pa.timestamp("us")
        table = _read_block(block, layout, names, types)
    if table is None:
        return None
    table = table.rename_columns([role for name in table.column_names
                                  for role, k in layout.index.items() if names[k] == name])
    if layout.ts_kind == "iso":
        seconds = pc.divide(pc.cast(pc.cast(table.column("ts"), pa.int64()), pa.float64()), 1e6)
        table = table.set_column(table.schema.get_field_index("ts"), "ts", seconds)
    return _checked_fast_table(table, "ts" in layout.index, ids, trim=True, ts_type=ts_arrow_type(layout),
                               weighted="weight" in layout.index)


def _csv_line(raw: bytes, layout: TextLayout, ids: IdSpec) -> tuple | None:
    """One line's row (``None`` for a blank or comment line); raises :class:`_Bad`."""
    text = _decode(raw)
    if not text.strip() or (layout.comments and is_comment(text)):
        return None
    try:
        values = layout.split(text)
    except csv.Error as exc:
        raise _Bad(f"bad CSV: {exc}") from exc
    if len(values) != layout.ncols:
        raise _Bad(f"expected {layout.ncols} fields, got {len(values)}")
    index = layout.index
    ids.fix_from_text(values[index["src"]])
    src = ids.parse_text(values[index["src"]], "src")
    dst = ids.parse_text(values[index["dst"]], "dst")
    op = _parse_op_field(values[index["op"]]) if "op" in index else 1
    row = (src, dst, op)
    if "weight" in index:
        row += (_parse_weight_field(values[index["weight"]], op, text=True),)
    if "ts" in index:
        return row + (_parse_ts_as(values[index["ts"]], layout.ts_kind),)
    return row


def _csv_chunks(stream, chunk_rows: int, layout: TextLayout | None, ids: IdSpec, skipped: int = 0) -> Iterator[_Parsed]:
    """Chunks of a delimited text file whose first lines (up to ``layout.first_line``) have been read.

    ``skipped`` counts the comment and blank lines before the header.
    """
    if layout is None:  # no data line at all
        if skipped:
            yield _Parsed(_schema(None).empty_table(), [], skipped)
        return
    has_ts = "ts" in layout.index
    weighted = "weight" in layout.index
    yield _Parsed(_schema(ts_arrow_type(layout), weighted=weighted).empty_table(), [], skipped)  # schema first
    yield from _parse_blocks(
        _line_blocks(stream, max_lines=chunk_rows, first_line=layout.first_line),
        fast=lambda block: _csv_fast(block, layout, ids),
        parse_line=lambda raw: _csv_line(raw, layout, ids),
        has_ts=lambda: has_ts,
        ts_type=ts_arrow_type(layout),
        weighted=weighted,
    )
