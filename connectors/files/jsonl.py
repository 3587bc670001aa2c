"""JSON lines: one ``{"src": ..., "dst": ..., "op": ..., "ts": ...}`` object per line.

A weighted stream's records may carry a ``weight`` (or the field ``--weight`` names): absent or
``null`` is no weight (an insert weighs 1), anything but a positive finite number (or a string
holding one) is a bad line (:mod:`connectors.weights`).

In ``"auto"`` id mode the first line that is an object with an integer or non-blank string
``src`` fixes the id type (JSON strings of digits count as integers), in both the fast and the
line-by-line path. String ids are taken verbatim.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pjson

from .fields import _parse_op_field, _parse_ts_as, _parse_weight_field
from .ids import IdSpec
from .layout import ROLES, Layout, resolve_fields, ts_kind_of
from .report import _Bad
from .table import _checked_fast_table, _Parsed, _schema
from .text import _UTF8_BOM, _line_blocks, _parse_blocks, _Prefixed, _read_head

_TS_ARROW = {"int": pa.int64(), "float": pa.float64(), "iso": pa.float64()}


@dataclass
class _JsonState:
    has_ts: bool | None = None
    fields: dict = field(default_factory=lambda: {r: r for r in ROLES if r != "weight"})  # role -> key
    ts_kind: str = "int"
    weighted: bool = False

    @property
    def ts_type(self) -> pa.DataType:
        return _TS_ARROW[self.ts_kind]


def _json_ts_kind(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return ts_kind_of(value)
    return None


def _resolve(head: bytes, layout: Layout, path, report) -> _JsonState:
    """Field names and timestamp kind from the first records of the file."""
    records = []
    for raw in head.split(b"\n")[:200]:
        if raw.strip():
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                records.append(record)
    state = _JsonState(weighted=layout.weighted)
    if layout.weighted and layout.weight != "none":
        state.fields["weight"] = layout.weight if isinstance(layout.weight, str) else "weight"
    if not records:
        return state
    keys = list(records[0])
    seen = {k for r in records for k in r}
    if layout.weighted:  # a weight may be left out of the first records (deletes, weight 1)
        keys += [k for k in dict.fromkeys(k for r in records for k in r) if k not in keys]
    if not layout.is_default or not seen & {"src", "dst"}:
        state.fields, unused = resolve_fields(keys, layout, path, what="field")
    else:
        state.fields = {r: r for r in layout.roles() if r in keys or r in ("src", "dst")}
        unused = [k for k in keys if k not in state.fields.values()]
    if layout.weighted and "weight" not in state.fields and layout.weight != "none":
        state.fields["weight"] = "weight"  # no record has one yet: every insert weighs 1 until one has
    if layout.ts == "none":
        state.fields.pop("ts", None)
        state.has_ts = False
    if layout.op == "none":
        state.fields.pop("op", None)
    kinds = [k for k in (_json_ts_kind(r.get(state.fields["ts"])) for r in records if "ts" in state.fields)
             if k is not None]
    if kinds:
        state.ts_kind = "iso" if kinds[0] == "iso" else ("float" if "float" in kinds else "int")
    used = ", ".join(f"{r}={k}" for r, k in state.fields.items() if any(k in rec for rec in records[:1]) or r in
                     ("src", "dst"))
    report.columns = f"JSON fields {used}" + (f"; not used: {', '.join(unused)}" if unused else "")
    report.unused_columns = list(unused)
    return state


def _fix_kind(block: bytes, ids: IdSpec, src_key: str) -> None:
    """In auto mode, fix the id type from the block's first non-blank line (if it qualifies)."""
    for raw in block.split(b"\n"):
        if raw.strip():
            try:
                record = json.loads(raw)
            except ValueError:
                return
            if isinstance(record, dict):
                ids.fix_from_json(record.get(src_key))
            return


def _jsonl_fast(block: bytes, state: _JsonState, ids: IdSpec) -> pa.Table | None:
    """Parse an all-good block with pyarrow's JSON reader; ``None`` when anything is off."""
    if ids.kind is None:
        _fix_kind(block, ids, state.fields["src"])
        if ids.kind is None:
            return None
    for op_type in (pa.string(), pa.int64()):
        table = _read_json_block(block, op_type, ids.arrow_type, state)
        if table is not None:
            break
    else:
        return None
    if table.num_rows == 0:
        return _schema(state.ts_type if state.has_ts else None, ids.arrow_type, state.weighted).empty_table()
    if any(table.column(n).null_count for n in ("src", "dst")):
        return None
    has_ts = state.has_ts
    if has_ts is None:
        has_ts = table.column("ts")[0].is_valid
    if not has_ts:
        table = table.drop_columns(["ts"])
    elif state.ts_kind == "iso":
        table = _iso_column(table)
        if table is None:
            return None
    result = _checked_fast_table(table, has_ts, ids, ts_type=state.ts_type, weighted=state.weighted)
    if result is not None:
        state.has_ts = has_ts
    return result


def _iso_column(table: pa.Table) -> pa.Table | None:
    """ISO-8601 ``ts`` strings as float seconds (times without a zone taken as UTC); ``None`` if any is off."""
    column = table.column("ts")
    for kind in (pa.timestamp("us", tz="UTC"), pa.timestamp("us")):
        try:
            micros = pc.cast(pc.cast(column, kind), pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        seconds = pc.divide(pc.cast(micros, pa.float64()), 1e6)
        return table.set_column(table.schema.get_field_index("ts"), "ts", seconds)
    return None


def _read_json_block(block: bytes, op_type: pa.DataType, id_type: pa.DataType, state: _JsonState) -> pa.Table | None:
    ts_type = pa.string() if state.ts_kind == "iso" else state.ts_type
    types = {"src": id_type, "dst": id_type, "op": op_type, "ts": ts_type, "weight": pa.float64()}
    keys = {r: state.fields.get(r, f"\x00{r}") for r in ROLES}  # a role without a field reads as null
    roles = ("src", "dst", "op", "ts") + (("weight",) if state.weighted else ())
    schema = pa.schema([(keys[r], types[r]) for r in roles])
    block_size = min(max(len(block) + 1, 1 << 20), (1 << 31) - 1)
    try:
        table = pjson.read_json(
            io.BytesIO(block),
            read_options=pjson.ReadOptions(block_size=block_size),
            parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except pa.ArrowInvalid:
        return None
    return table.rename_columns(list(roles))


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
    keys = state.fields
    ids.fix_from_json(record.get(keys["src"]))
    for name in ("src", "dst"):
        if record.get(keys[name]) is None:
            raise _Bad(f"missing field {keys[name]}")
    src = ids.parse_json(record[keys["src"]], "src")
    dst = ids.parse_json(record[keys["dst"]], "dst")
    op = _parse_op_field(record.get(keys["op"])) if "op" in keys else 1
    if state.weighted:
        w = (_parse_weight_field(record.get(keys["weight"]), op) if "weight" in keys else (1.0 if op > 0 else
                                                                                           float("nan")),)
    else:
        w = ()
    ts_key = keys.get("ts")
    has_ts = state.has_ts if state.has_ts is not None else (ts_key is not None and record.get(ts_key) is not None)
    if not has_ts:
        state.has_ts = False
        return (src, dst, op) + w
    if record.get(ts_key) is None:
        raise _Bad(f"missing field {ts_key}")
    row = (src, dst, op) + w + (_parse_ts_as(_json_id(record[ts_key]), state.ts_kind),)
    state.has_ts = True
    return row


def _json_id(value: Any) -> Any:
    """JSON strings are parsed as text tokens, other values as they are."""
    return value.encode("utf-8", "replace") if isinstance(value, str) else value


def _jsonl_chunks(stream, chunk_rows: int, ids: IdSpec, layout: Layout, path, report) -> Iterator[_Parsed]:
    head = _read_head(stream)
    if head.startswith(_UTF8_BOM):
        head = head[len(_UTF8_BOM):]
    state = _resolve(head, layout, path, report)
    yield from _parse_blocks(
        _line_blocks(_Prefixed(head, stream), max_lines=chunk_rows),
        fast=lambda block: _jsonl_fast(block, state, ids),
        parse_line=lambda raw: _jsonl_line(raw, state, ids),
        has_ts=lambda: bool(state.has_ts),
        ts_type=state.ts_type,
        weighted=state.weighted,
    )
