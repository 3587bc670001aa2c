"""Column checks of the vectorized decoders (:mod:`connectors.batch_decode`): ids, ops and weights
of the columns pyarrow's readers give, each as ``(values, valid mask)``; a column the readers
typed otherwise than expected raises :class:`Refused` (the block goes to the per-message parser).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamrank.ids.kinds import string_id_problems

from .weights import column_weights


class Refused(Exception):
    """A block pyarrow cannot read as a whole (bisect it)."""


def ids(col, *, rows: int):
    """``(int64 values, valid mask)`` of an id column: present, not null, >= 0."""
    if not pa.types.is_int64(col.type):
        raise Refused()
    if col.null_count == 0:
        arr = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)
        return arr, arr >= 0
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    arr = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return arr, valid & (arr >= 0)


def string_ids(col, *, rows: int, rules, text: bool):
    """``(Arrow string values, valid mask)`` of an id column of a string stream: strings, not null,
    valid ids (:func:`streamrank.ids.kinds.string_id_problems`); CSV fields without surrounding
    blanks (the per-message parser strips them)."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise Refused()
    valid = np.ones(rows, dtype=bool) if col.null_count == 0 else \
        np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    bad = string_id_problems(col, max_bytes=rules.max_bytes, auto=rules.auto)
    if bad:
        valid[np.fromiter(bad, dtype=np.int64, count=len(bad))] = False
    if text:
        valid &= np.asarray(pc.equal(pc.utf8_trim_whitespace(col), col).fill_null(False)
                            .to_numpy(zero_copy_only=False), dtype=bool)
    return col, valid


def ops(col, *, rows: int):
    """``(insert, valid mask)`` of an op column (absent or null: insert)."""
    from streamrank.batch import parse_op
    from streamrank.errors import BatchFormatError

    if col is None or pa.types.is_null(col.type):
        return np.ones(rows, dtype=bool), np.ones(rows, dtype=bool)
    if pa.types.is_integer(col.type):
        arr = np.asarray(col.fill_null(1).to_numpy(zero_copy_only=False), dtype=np.int64)
        return arr == 1, (arr == 1) | (arr == -1)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        enc = pc.dictionary_encode(col).combine_chunks() if hasattr(col, "chunks") else pc.dictionary_encode(col)
        ins_u, ok_u = [], []
        for s in enc.dictionary.to_pylist():  # a handful of distinct op strings
            try:
                ins_u.append(parse_op(s))
                ok_u.append(True)
            except BatchFormatError:
                ins_u.append(False)
                ok_u.append(False)
        codes = enc.indices
        null = np.asarray(codes.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        codes = np.asarray(codes.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        if not ins_u:
            return np.ones(rows, dtype=bool), np.ones(rows, dtype=bool)
        ins = np.asarray(ins_u, dtype=bool)[codes] | null
        ok = np.asarray(ok_u, dtype=bool)[codes] | null
        return ins, ok
    raise Refused()


def field(table_or_struct, name: str):
    names = table_or_struct.column_names if hasattr(table_or_struct, "column_names") else \
        [table_or_struct.type.field(i).name for i in range(table_or_struct.type.num_fields)]
    if name not in names:
        return None
    if hasattr(table_or_struct, "column_names"):
        return table_or_struct.column(name).combine_chunks()
    return table_or_struct.field(name)


def weights(col, insert: np.ndarray, *, rows: int):
    """``(float64 weights, valid mask)`` of a weight column (absent or null: no weight; bad
    weights invalid, their messages left to the per-message parser, which names the reason)."""
    w, bad = column_weights(col, insert)
    ok = np.ones(rows, dtype=bool)
    if bad:
        ok[np.fromiter(bad, dtype=np.int64, count=len(bad))] = False
    return w, ok
