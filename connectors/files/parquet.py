"""Parquet: columns ``src``, ``dst``, optional ``op`` and ``ts``, read in record batches and validated
column-wise.

Id columns are integers (floats holding integers are accepted) or strings (``string``,
``large_string``, UTF-8 ``binary`` or a dictionary of them), both of one kind. The column type is
the id type: in ``"auto"`` mode it fixes the type, string values are taken verbatim (a value
that looks like a number is still a string); a column of the other kind than a declared (or
already fixed) type makes every row bad with reason ``mixed_id_types``.

A weighted stream reads the ``weight`` column (or the one ``--weight`` names): numbers, null for no
weight (an insert weighs 1), or strings holding numbers; a bad weight makes its row bad
(:mod:`connectors.weights`, reason code ``bad_weight``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamrank.batch import MAX_VERTEX_ID
from streamrank.errors import SourceError

from ..weights import BAD_WEIGHT, column_weights
from .fields import _iso_seconds
from .ids import IdSpec
from .layout import Layout, resolve_fields
from .report import _Bad
from .report import _bad
from .table import _edge_table, _mark, _merge_reasons, _op_codes, _Parsed, _schema

def _parquet_columns(pfile: pq.ParquetFile, path: Path, layout: Layout, report) -> dict:
    """Role -> column name (``src``/``dst``/``op``/``ts``/``weight``, their other names, or as ``layout`` says)."""
    names = pfile.schema_arrow.names
    fields, unused = resolve_fields(names, layout, path, what="column")
    report.columns = "Parquet columns " + ", ".join(f"{r}={n}" for r, n in fields.items()) + (
        f"; not used: {', '.join(unused)}" if unused else "")
    report.unused_columns = list(unused)
    return {r: fields[r] for r in ("src", "dst", "op", "ts", "weight") if r in fields}


def _parquet_ts_type(pfile: pq.ParquetFile, path: Path, column: str | None) -> pa.DataType | None:
    if column is None:
        return None
    kind = pfile.schema_arrow.field(column).type
    if pa.types.is_integer(kind) or pa.types.is_timestamp(kind):
        return pa.int64()
    if pa.types.is_floating(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pa.float64()
    raise SourceError(f"{path}: column {column} (ts) has type {kind}; expected integers, floats, timestamps "
                      "or ISO-8601 strings")


def _column_kind(kind: pa.DataType, name: str, path: Path) -> str:
    """``"int"`` or ``"string"`` for an id column type; :class:`SourceError` for any other."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return "int"
    if any(f(kind) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                             pa.types.is_large_binary)):
        return "string"
    raise SourceError(f"{path}: column {name} has type {kind}; expected integers or strings")


def _parquet_id_kind(pfile: pq.ParquetFile, path: Path, fields: dict) -> str:
    kinds = {n: _column_kind(pfile.schema_arrow.field(fields[n]).type, fields[n], path) for n in ("src", "dst")}
    if kinds["src"] != kinds["dst"]:
        raise SourceError(f"{path}: column src holds {kinds['src']} ids but dst {kinds['dst']} ids")
    return kinds["src"]


def _string_id_values(column: pa.Array, name: str, ids: IdSpec) -> tuple[pa.Array, dict, dict]:
    """String ids of a Parquet column, ``{row: reason}`` and ``{row: reason code}`` for bad rows."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    reasons: dict[int, str] = {}
    codes: dict[int, str] = {}
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        try:
            column = column.cast(pa.string())
        except pa.ArrowInvalid:  # find the rows that are not UTF-8, one by one (rare)
            values = column.to_pylist()
            for row, v in enumerate(values):
                if v is not None:
                    try:
                        v.decode("utf-8")
                    except UnicodeDecodeError:
                        reasons[row], codes[row] = f"{name} id is not valid UTF-8", "bad_utf8_id"
                        values[row] = None
            column = pa.array([None if v is None else v.decode("utf-8") for v in values], type=pa.string())
    if pa.types.is_large_string(column.type):
        column = column.cast(pa.string())
    _mark(reasons, ~column.is_valid().to_numpy(zero_copy_only=False), f"missing {name}")
    for row, (code, text) in ids.column_problems(column, name).items():
        if row not in reasons:
            reasons[row], codes[row] = text, code
    return column.fill_null(""), reasons, codes


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
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return _iso_values(column)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.fill_null(0).to_numpy(zero_copy_only=False)
    reasons: dict[int, str] = {}
    _mark(reasons, ~valid, "missing ts")
    if values.dtype.kind == "f":
        _mark(reasons, np.isnan(values), "ts is NaN")
    elif values.dtype.kind == "u":
        _mark(reasons, values > MAX_VERTEX_ID, "ts beyond int64")
    return values.astype(ts_type.to_pandas_dtype()), reasons


def _iso_values(column: pa.Array) -> tuple[np.ndarray, dict[int, str]]:
    """ISO-8601 strings as float seconds since the epoch (no zone: UTC) and ``{row: reason}``."""
    values = np.zeros(len(column), dtype=np.float64)
    reasons: dict[int, str] = {}
    for row, text in enumerate(column.to_pylist()):
        if text is None:
            reasons[row] = "missing ts"
            continue
        try:
            values[row] = float(text) if text.strip().replace(".", "", 1).isdigit() else _iso_seconds(text.strip())
        except _Bad as exc:
            reasons[row] = str(exc)
    return values, reasons


def _parquet_batch(batch: pa.RecordBatch, row0: int, ts_type, path: Path, ids: IdSpec, kind: str,
                   weighted: bool = False) -> _Parsed:
    """Validate one Parquet record batch column-wise; bad rows carry 1-based row numbers."""
    codes: dict[int, str] = {}
    if kind != ids.kind:  # the file's id columns are of the other kind than the stream's
        mixed = ("an integer" if kind == "int" else "a string") + f" id column in a {ids.kind}-id stream"
        reasons = {row: mixed for row in range(batch.num_rows)}
        codes = {row: "mixed_id_types" for row in range(batch.num_rows)}
        src = dst = pa.nulls(batch.num_rows, ids.arrow_type)
    elif kind == "string":
        src, reasons, codes = _string_id_values(batch.column("src"), "src", ids)
        dst, dst_reasons, dst_codes = _string_id_values(batch.column("dst"), "dst", ids)
        _merge_reasons(reasons, dst_reasons)
        _merge_reasons(codes, {r: c for r, c in dst_codes.items() if reasons[r] == dst_reasons[r]})
    else:
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
    weight = None
    if weighted:
        insert = np.ones(batch.num_rows, dtype=bool) if op is None else op > 0
        weight, weight_reasons = column_weights(
            batch.column("weight") if "weight" in batch.schema.names else None, insert)
        for row, reason in weight_reasons.items():
            if row not in reasons:
                reasons[row], codes[row] = reason, BAD_WEIGHT
    keep = np.ones(batch.num_rows, dtype=bool)
    bad = []
    for row in sorted(reasons):
        keep[row] = False
        text = json.dumps(batch.slice(row, 1).to_pylist()[0], default=str)
        bad.append(_bad(row0 + row + 1, reasons[row], text, codes.get(row)))

    def pick(a):
        if a is None or keep.all():
            return a
        return a.filter(pa.array(keep)) if isinstance(a, pa.Array) else a[keep]

    table = _edge_table(pick(src), pick(dst), pick(op), pick(ts), ts_type, pick(weight))
    return _Parsed(table, bad)


def _parquet_chunks(path: Path, chunk_rows: int, ids: IdSpec, layout: Layout, report) -> Iterator[_Parsed]:
    with pq.ParquetFile(path) as pfile:
        fields = _parquet_columns(pfile, path, layout, report)
        columns = list(fields.values())
        ts_type = _parquet_ts_type(pfile, path, fields.get("ts"))
        kind = _parquet_id_kind(pfile, path, fields)
        if ids.kind is None:
            ids.lock.admit(kind)
        yield _Parsed(_schema(ts_type, ids.arrow_type, layout.weighted).empty_table(), [])  # schema first, even empty
        row0 = 0
        for batch in pfile.iter_batches(batch_size=chunk_rows, columns=columns):
            batch = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=list(fields))
            yield _parquet_batch(batch, row0, ts_type, path, ids, kind, layout.weighted)
            row0 += batch.num_rows
