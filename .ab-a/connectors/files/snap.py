"""SNAP temporal text: ``src dst [ts]`` separated by spaces or tabs, ``#``/``%`` comments.

The first data line with 2 or 3 fields fixes the field count of the file and, in ``"auto"`` id
mode, the id type (by its first field), in both the fast and the line-by-line path.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pcsv

from .fields import _parse_ts
from .ids import IdSpec
from .report import _Bad
from .table import _checked_fast_table, _Parsed, _schema
from .text import _line_blocks, _parse_blocks

_COMMENT_RE = re.compile(rb"^[#%][^\n]*(?:\n|\Z)", re.MULTILINE)

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


def _first_data_fields(block: bytes) -> list[bytes] | None:
    """Fields of the block's first data line when it has 2 or 3 of them, else ``None``.

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
            return fields if len(fields) in (2, 3) else None
    return None


def _snap_fast(block: bytes, nfields: int, ids: IdSpec) -> pa.Table | None:
    """Parse an all-good block with pyarrow's CSV reader; ``None`` when anything is off.

    The block is parsed as it is first (single spaces or single tabs); only when that fails is
    its whitespace normalized and parsed again.
    """
    normalized = b"#" in block or b"%" in block
    if normalized:
        block = _COMMENT_RE.sub(b"", _normalize_whitespace(block))
    if not block.strip():
        return _schema(pa.int64() if nfields == 3 else None, ids.arrow_type).empty_table()
    names = list(_SNAP_NAMES[:nfields])
    delimiter = "\t" if b"\t" in block[: block.find(b"\n")] else " "
    table = _read_delimited(block, names, delimiter, ids.arrow_type)
    if table is None and not normalized:
        table = _read_delimited(_normalize_whitespace(block), names, " ", ids.arrow_type)
    return None if table is None else _checked_fast_table(table, nfields == 3, ids)


def _read_delimited(text: bytes, names: list[str], delimiter: str, id_type: pa.DataType) -> pa.Table | None:
    """Id columns of ``id_type`` (and integer ts) from delimited text with no quoting; ``None`` if
    any field is off."""
    try:
        return pcsv.read_csv(
            io.BytesIO(text),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={n: (pa.int64() if n == "ts" else id_type) for n in names}, null_values=[],
                strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        return None


def _snap_line(raw: bytes, state: _SnapState, ids: IdSpec) -> tuple | None:
    """One line's row (``None`` for a blank or comment line); raises :class:`_Bad`."""
    fields = raw.split()
    if not fields or fields[0][:1] in (b"#", b"%"):
        return None
    if state.nfields is None and len(fields) in (2, 3):
        state.nfields = len(fields)
        ids.fix_from_text(fields[0])
    expected = state.nfields
    if len(fields) != (expected or 0):
        want = "2 or 3" if expected is None else str(expected)
        raise _Bad(f"expected {want} fields, got {len(fields)}")
    src = ids.parse_text(fields[0], "src")
    dst = ids.parse_text(fields[1], "dst")
    if expected == 3:
        return src, dst, 1, _parse_ts(fields[2])
    return src, dst, 1


def _snap_chunks(stream, chunk_rows: int, ids: IdSpec) -> Iterator[_Parsed]:
    state = _SnapState()

    def fast(block: bytes) -> pa.Table | None:
        if state.nfields is None:
            fields = _first_data_fields(block)
            if fields is not None:
                state.nfields = len(fields)
                ids.fix_from_text(fields[0])
        return _snap_fast(block, state.nfields, ids) if state.nfields else None

    return _parse_blocks(
        _line_blocks(stream, max_lines=chunk_rows),
        fast=fast,
        parse_line=lambda raw: _snap_line(raw, state, ids),
        has_ts=lambda: state.nfields == 3,
    )
