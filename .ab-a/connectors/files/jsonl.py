"""JSON lines: one ``{"src": ..., "dst": ..., "op": ..., "ts": ...}`` object per line.

In ``"auto"`` id mode the first line that is an object with an integer or non-blank string
``src`` fixes the id type (JSON strings of digits count as integers), in both the fast and the
line-by-line path. String ids are taken verbatim.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.json as pjson

from .fields import _parse_op_field, _parse_ts
from .ids import IdSpec
from .report import _Bad
from .table import _checked_fast_table, _Parsed, _schema
from .text import _UTF8_BOM, _line_blocks, _parse_blocks

@dataclass
class _JsonState:
    has_ts: bool | None = None


def _fix_kind(block: bytes, ids: IdSpec) -> None:
    """In auto mode, fix the id type from the block's first non-blank line (if it qualifies)."""
    for raw in block.split(b"\n"):
        if raw.strip():
            try:
                record = json.loads(raw)
            except ValueError:
                return
            if isinstance(record, dict):
                ids.fix_from_json(record.get("src"))
            return


def _jsonl_fast(block: bytes, state: _JsonState, ids: IdSpec) -> pa.Table | None:
    """Parse an all-good block with pyarrow's JSON reader; ``None`` when anything is off."""
    if ids.kind is None:
        _fix_kind(block, ids)
        if ids.kind is None:
            return None
    for op_type in (pa.string(), pa.int64()):
        table = _read_json_block(block, op_type, ids.arrow_type)
        if table is not None:
            break
    else:
        return None
    if table.num_rows == 0:
        return _schema(pa.int64() if state.has_ts else None, ids.arrow_type).empty_table()
    if any(table.column(n).null_count for n in ("src", "dst")):
        return None
    has_ts = state.has_ts
    if has_ts is None:
        has_ts = table.column("ts")[0].is_valid
    if not has_ts:
        table = table.drop_columns(["ts"])
    result = _checked_fast_table(table, has_ts, ids)
    if result is not None:
        state.has_ts = has_ts
    return result


def _read_json_block(block: bytes, op_type: pa.DataType, id_type: pa.DataType) -> pa.Table | None:
    schema = pa.schema([("src", id_type), ("dst", id_type), ("op", op_type), ("ts", pa.int64())])
    block_size = min(max(len(block) + 1, 1 << 20), (1 << 31) - 1)
    try:
        return pjson.read_json(
            io.BytesIO(block),
            read_options=pjson.ReadOptions(block_size=block_size),
            parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except pa.ArrowInvalid:
        return None


def _jsonl_line(raw: bytes, state: _JsonState, ids: IdSpec) -> tuple | None:
    """One line's row, parsed with :mod:`json` (``None`` for a blank line); raises :class:`_Bad`."""
    if not raw.strip():
        return None
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise _Bad(f"bad JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise _Bad(f"JSON line is a {type(record).__name__}, not an object")
    ids.fix_from_json(record.get("src"))
    for name in ("src", "dst"):
        if record.get(name) is None:
            raise _Bad(f"missing field {name}")
    src = ids.parse_json(record["src"], "src")
    dst = ids.parse_json(record["dst"], "dst")
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


def _jsonl_chunks(stream, chunk_rows: int, ids: IdSpec) -> Iterator[_Parsed]:
    state = _JsonState()
    blocks = (
        (first_line, block[len(_UTF8_BOM) :] if first_line == 1 and block.startswith(_UTF8_BOM) else block)
        for first_line, block in _line_blocks(stream, max_lines=chunk_rows)
    )
    return _parse_blocks(
        blocks,
        fast=lambda block: _jsonl_fast(block, state, ids),
        parse_line=lambda raw: _jsonl_line(raw, state, ids),
        has_ts=lambda: bool(state.has_ts),
    )
