"""Encoding edges as Kafka messages (Arrow IPC or JSON): what producers, examples and tests send.

:func:`encode_arrow` and :func:`encode_json` write the formats :func:`connectors.records.parse_message`
reads (also importable from :mod:`connectors.records`).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa


def encode_arrow(src, dst, insert=None, *, weight=None) -> bytes:
    """Encode edges as an Arrow IPC stream message (``src``, ``dst`` int64 or string, ``op`` int8,
    and ``weight`` float64 when weights are given, null where one is NaN).

    Parameters
    ----------
    src, dst : array_like of int, or of str
    insert : array_like of bool, optional
        Default: all insertions.
    weight : array_like of float, optional
        Per-edge weights (NaN: none).

    Returns
    -------
    bytes
    """
    src, dst = _encode_ids(src), _encode_ids(dst)
    op = np.ones(len(src), np.int8) if insert is None else np.where(np.asarray(insert), 1, -1).astype(np.int8)
    columns = {"src": src, "dst": dst, "op": op}
    if weight is not None:
        w = np.asarray(weight, dtype=np.float64).reshape(-1)
        columns["weight"] = pa.array(w, type=pa.float64(), mask=np.isnan(w))
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _encode_ids(values):
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    arr = np.asarray(values).reshape(-1)
    if arr.dtype.kind in "USO":
        return pa.array(arr.tolist(), type=pa.string())
    return arr.astype(np.int64)


def _json_ids(values) -> list:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.to_pylist()
    arr = np.asarray(values).reshape(-1)
    return arr.tolist() if arr.dtype.kind in "USO" else [int(v) for v in arr]


def encode_json(src, dst, insert=None, *, weight=None) -> bytes:
    """Encode edges as a JSON message (one object for one edge, else an array); ids integers or
    strings; ``weight``: a ``weight`` member per edge (left out where it is NaN)."""
    src, dst = _json_ids(src), _json_ids(dst)
    ins = [True] * len(src) if insert is None else [bool(v) for v in np.asarray(insert).reshape(-1)]
    objs = [{"op": "+" if i else "-", "src": s, "dst": d} for s, d, i in zip(src, dst, ins)]
    if weight is not None:
        for obj, w in zip(objs, np.asarray(weight, dtype=np.float64).reshape(-1).tolist()):
            if w == w:
                obj["weight"] = w
    return json.dumps(objs[0] if len(objs) == 1 else objs, separators=(",", ":"), ensure_ascii=False).encode()
