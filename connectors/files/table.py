"""Output tables of the readers: schema, building from arrays or rows, op codes, fast-path checks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamrank.batch import parse_op
from streamrank.errors import BatchFormatError

from ..weights import column_weights
from .report import BadLine

@dataclass
class _Parsed:
    """What one chunk of a file gave: the good rows, the bad lines, the skipped count."""

    table: pa.Table
    bad: list[BadLine]
    skipped: int = 0


def _schema(ts_type: pa.DataType | None, id_type: pa.DataType = pa.int64(), weighted: bool = False) -> pa.Schema:
    """``src``, ``dst``, ``op``, then ``weight: float64`` (weighted streams) and ``ts`` (files with timestamps)."""
    fields = [("src", id_type), ("dst", id_type), ("op", pa.int8())]
    if weighted:
        fields.append(("weight", pa.float64()))
    if ts_type is not None:
        fields.append(("ts", ts_type))
    return pa.schema(fields)


def _id_column(values) -> pa.Array:
    """Ids as an Arrow column: string arrays (or sequences of ``str``) as ``string``, else ``int64``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if pa.types.is_string(values.type) else pa.array(values.to_numpy(zero_copy_only=False),
                                                                        type=pa.int64())
    if len(values) and isinstance(values[0], str):
        return pa.array(list(values), type=pa.string())
    return pa.array(np.asarray(values, dtype=np.int64))


def _edge_table(src, dst, op=None, ts=None, ts_type: pa.DataType | None = None, weight=None) -> pa.Table:
    """Build an output table from arrays (NumPy or Arrow; ids integers or strings); ``op`` defaults
    to all inserts; ``weight`` (float64 values) makes a weighted table."""
    src, dst = _id_column(src), _id_column(dst)
    if op is None:
        op = np.ones(len(src), dtype=np.int8)
    columns = [src, dst, pa.array(np.asarray(op, dtype=np.int8))]
    if weight is not None:
        columns.append(pa.array(np.asarray(weight, dtype=np.float64)))
    if ts_type is not None:
        columns.append(pa.array(np.asarray(ts, dtype=ts_type.to_pandas_dtype())))
    return pa.Table.from_arrays(columns, schema=_schema(ts_type, src.type, weight is not None))


def _rows_table(rows: list[tuple], has_ts: bool, ts_type: pa.DataType | None = None,
                weighted: bool = False) -> pa.Table:
    """Build an output table from line-by-line parsed ``(src, dst, op[, weight][, ts])`` tuples
    (``ts_type`` defaults to ``int64``)."""
    ts_type = (ts_type or pa.int64()) if has_ts else None
    if not rows:
        return _schema(ts_type, weighted=weighted).empty_table()
    cols = list(zip(*rows))
    weight = cols[3] if weighted else None
    return _edge_table(cols[0], cols[1], cols[2], cols[3 + weighted] if has_ts else None, ts_type, weight)


def with_unit_weights(table: pa.Table) -> pa.Table:
    """A weighted stream's table from a file without weights: ``weight`` 1 on inserts, NaN
    (no weight) on deletes, placed after ``op``."""
    w = np.where(table.column("op").to_numpy() > 0, 1.0, np.nan)
    return table.add_column(table.schema.get_field_index("op") + 1, pa.field("weight", pa.float64()), pa.array(w))


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


def _checked_fast_table(table: pa.Table, has_ts: bool, ids=None, *, trim: bool = False,
                        ts_type: pa.DataType | None = None, weighted: bool = False) -> pa.Table | None:
    """Turn a fast-parsed table into an output table, or ``None`` if any row is bad.

    String id columns are checked (and trimmed when ``trim``) by ``ids`` (an
    :class:`~connectors.files.ids.IdSpec`). ``ts_type`` defaults to ``int64``; float timestamps
    must be finite. ``weighted``: the ``weight`` column (numbers, nulls for no weight) must hold
    good weights (:mod:`connectors.weights`).
    """
    ts_type = (ts_type or pa.int64()) if has_ts else None
    string_ids = pa.types.is_string(table.schema.field("src").type)
    if table.num_rows == 0:
        return _schema(ts_type, pa.string() if string_ids else pa.int64(), weighted).empty_table()
    id_names = ["src", "dst"] + (["ts"] if has_ts else [])
    if any(table.column(n).null_count for n in id_names):
        return None
    if has_ts and pa.types.is_floating(ts_type):
        if not pc.all(pc.is_finite(table.column("ts"))).as_py():
            return None
    if string_ids:
        src = ids.string_column(table.column("src"), "src", trim=trim)
        dst = None if src is None else ids.string_column(table.column("dst"), "dst", trim=trim)
        if dst is None:
            return None
        table = table.set_column(table.schema.get_field_index("src"), "src", src)
        table = table.set_column(table.schema.get_field_index("dst"), "dst", dst)
    elif pc.min(table.column("src")).as_py() < 0 or pc.min(table.column("dst")).as_py() < 0:
        return None
    if "op" in table.column_names:
        codes, unknown = _op_codes(table.column("op"))
        if unknown.any():
            return None
        op = pa.array(codes)
    else:
        op = pa.array(np.ones(table.num_rows, dtype=np.int8))
    weight = []
    if weighted:
        w, bad = column_weights(table.column("weight") if "weight" in table.column_names else None,
                                codes > 0 if "op" in table.column_names else np.ones(table.num_rows, dtype=bool))
        if bad:
            return None
        weight = [pa.array(w)]
    ts = [table.column("ts").cast(ts_type)] if has_ts else []
    columns = [table.column("src"), table.column("dst"), op] + weight + ts
    return pa.Table.from_arrays(columns, schema=_schema(ts_type, table.schema.field("src").type, weighted))


def _mark(reasons: dict[int, str], mask: np.ndarray, reason: str) -> None:
    """Record ``reason`` for the rows in ``mask`` that have no reason yet."""
    for row in np.flatnonzero(mask).tolist():
        reasons.setdefault(row, reason)


def _merge_reasons(into: dict[int, str], more: dict[int, str]) -> None:
    for row, reason in more.items():
        into.setdefault(row, reason)
