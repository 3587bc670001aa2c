"""Edge weights of records: one value (a JSON value, a text field) or a whole column, checked.

A weighted stream (``--weighted``) reads a weight with every record. A weight is a positive
finite number; the rules are the same in every format:

- a record without a weight (JSON: the field absent or ``null``; Arrow and Parquet: a null;
  a file without a weight column) is an insert of weight 1 (an interaction stream becomes counts)
  or a delete without a weight (``NaN`` in the batch's weight array: the edge goes whatever its
  weight, see ``docs/inputs.md``);
- zero, a negative number, NaN, an infinity, a value that is not a number (text, a boolean) and an
  empty text field are bad: the record is rejected with reason ``bad_weight`` and a detail saying
  which of these it is (``weight 0 is zero``, ``weight 'abc' is not a number``, ...).

One exception for delimited text, where a delete has no other way to leave its weight out: an
empty weight field on a *delete* line means no weight (on an insert line it is bad).

:func:`parse_weight` checks one value (the line-by-line parsers, the per-message parser);
:func:`column_weights` checks a whole column at once (the vectorized readers, Parquet, Arrow).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The reason code of a rejected weight (dead letters, bad lines).
BAD_WEIGHT = "bad_weight"

#: Field (column) names taken for the weight when none is named.
WEIGHT_NAMES = ("weight", "weights")

_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SPECIAL = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf,
            "-inf": -math.inf, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf}


class WeightError(ValueError):
    """A bad weight; ``str(exc)`` says why (the detail of the bad line or dead letter)."""

    reason = BAD_WEIGHT


def _show(value) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return repr(text[:40]) if isinstance(value, (str, bytes)) else text[:40]


def check_value(w: float, shown) -> float:
    """``w`` when it is a positive finite number; raises :class:`WeightError` naming ``shown``."""
    if math.isnan(w):
        raise WeightError(f"weight {shown} is NaN")
    if math.isinf(w):
        raise WeightError(f"weight {shown} is infinite")
    if w == 0:
        raise WeightError(f"weight {shown} is zero")
    if w < 0:
        raise WeightError(f"weight {shown} is negative")
    return w


def parse_weight(value, *, insert: bool, text: bool = False) -> float:
    """The weight of one record.

    Parameters
    ----------
    value : int, float, str, bytes or None
        A JSON value (``None``: no weight) or a text field (``text=True``, ``str`` or ``bytes``).
        Strings are read as numbers written out (``"2.5"``, ``"1e3"``); ``nan`` and ``inf`` are
        read to be rejected as such.
    insert : bool
        Whether the record inserts (no weight: 1) or deletes (no weight: NaN).
    text : bool, optional
        A field of delimited text: an empty field on a delete means no weight.

    Returns
    -------
    float
        Positive and finite, or NaN for a delete without a weight.

    Raises
    ------
    WeightError
        For zero, negative, NaN, infinite, non-numeric and empty weights.
    """
    if value is None:
        return 1.0 if insert else math.nan
    if isinstance(value, bool):
        raise WeightError(f"weight {value!r} is not a number")
    if isinstance(value, (int, float, np.integer, np.floating)):
        try:
            w = float(value)
        except OverflowError:
            raise WeightError(f"weight {str(value)[:40]} is infinite") from None
        return check_value(w, _show(value))
    if isinstance(value, (bytes, str)):
        raw = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        token = raw.strip()
        if not token:
            if text and not insert:
                return math.nan
            raise WeightError("weight is empty")
        low = token.lower()
        if low in _SPECIAL:
            return check_value(_SPECIAL[low], repr(token[:40]))
        if not _NUMBER_RE.match(token):
            raise WeightError(f"weight {token[:40]!r} is not a number")
        return check_value(float(token), token[:40])
    raise WeightError(f"weight {_show(value)} is not a number")


def column_weights(column, insert: np.ndarray) -> tuple[np.ndarray, dict]:
    """The weights of a column (Arrow or NumPy) and ``{row: detail}`` of its bad rows.

    Numbers (integers, floats, decimals) are read as they are, strings as :func:`parse_weight`
    reads text (an empty string is bad, also on a delete: typed columns have nulls for that);
    nulls are no weight. Bad rows hold NaN in the returned array (drop them with the rows).

    Parameters
    ----------
    column : pyarrow.Array, pyarrow.ChunkedArray or ndarray
    insert : ndarray of bool
        Per row, whether it inserts.

    Returns
    -------
    weights : ndarray of float64
    bad : dict
        Row index -> detail, for rows with a bad weight.
    """
    n = insert.shape[0]
    if column is None:
        return np.where(insert, 1.0, np.nan), {}
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, np.ndarray):
        column = pa.array(column)
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.dictionary_decode()
        t = column.type
    if pa.types.is_null(t):
        return np.where(insert, 1.0, np.nan), {}
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t) or pa.types.is_binary(t):
        return _values_one_by_one(column.to_pylist(), insert)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        return np.full(n, np.nan), {row: f"weight of type {t} is not a number" for row in range(n)}
    null = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool) if column.null_count else None
    w = np.asarray(pc.cast(column, pa.float64(), safe=False).fill_null(1.0).to_numpy(zero_copy_only=False),
                   dtype=np.float64)
    bad_mask = ~(np.isfinite(w) & (w > 0))
    if null is not None:
        bad_mask &= ~null
        w = np.where(null, np.where(insert, 1.0, np.nan), w)
    bad = {}
    if bad_mask.any():
        for row in np.flatnonzero(bad_mask).tolist():
            try:
                check_value(float(w[row]), _show(column[row].as_py()))
            except WeightError as exc:
                bad[row] = str(exc)
        w = w.copy()
        w[bad_mask] = np.nan
    return w, bad


def _values_one_by_one(values: list, insert: np.ndarray) -> tuple[np.ndarray, dict]:
    w = np.empty(len(values), dtype=np.float64)
    bad = {}
    for row, v in enumerate(values):
        try:
            w[row] = parse_weight(v, insert=bool(insert[row]))
        except WeightError as exc:
            bad[row] = str(exc)
            w[row] = np.nan
    return w, bad

