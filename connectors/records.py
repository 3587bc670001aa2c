"""Parsing of edge messages (Kafka record values, file lines) into edge arrays.

One message carries either one edge or many:

- one edge as JSON: ``{"op": "+", "src": 1, "dst": 2}`` (``op`` is ``"+"``/``"-"``,
  ``"insert"``/``"delete"`` or ``1``/``-1``; absent means insert),
- one edge (or several lines of edges) as CSV text: ``src,dst[,op]``,
- many edges as a JSON array of such objects (or of ``[src, dst(, op)]`` lists),
- many edges as an Arrow IPC stream with columns ``src``, ``dst`` (integers or strings) and
  optionally ``op`` (int8 +1/-1, or strings).

A weighted stream (``RecordFields(weighted=True)``) also reads each edge's weight: the ``weight``
field of JSON objects and Arrow IPC columns (or the field :class:`RecordFields` names), the fourth
item of a ``[src, dst, op, weight]`` list and the fourth field of a CSV line ``src,dst,op,weight``;
a message with a bad weight is rejected as ``bad_weight`` (:mod:`connectors.weights`). An
unweighted stream never reads weights.

Vertex ids are integers or strings (:mod:`streamrank.ids.kinds`): ``id_type="int"`` (the
default of :func:`parse_message`) takes integers and strings of digits; ``"string"`` takes JSON
strings verbatim, CSV fields stripped and Arrow string columns, and refuses JSON numbers and
integer columns; ``"auto"`` takes the kind of the message's first id, and an id of the other kind
in the same message rejects it (``mixed_id_types``). Keeping one kind across messages is the
source's job (:class:`streamrank.ids.kinds.IdTypeLock`).

The fields of an edge are named ``src``, ``dst`` and ``op`` unless a :class:`RecordFields` names
others (``streamrank serve --src from --dst to``): then JSON objects and Arrow IPC columns are
read by those names; CSV lines and ``[src, dst, op]`` lists, which carry no names, keep their
order.

A message is accepted or rejected as a whole: a rejected message raises
:class:`RecordError` whose :attr:`~RecordError.reason` is one of :data:`REASONS`, so that
the caller can dead-letter the original bytes with the reason and count it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from streamrank.batch import MAX_VERTEX_ID, parse_op
from streamrank.errors import BatchFormatError, InvalidArgumentError
from streamrank.ids.kinds import (DEFAULT_MAX_ID_BYTES, ID_REASONS, IdError, IdTypeLock, check_string_id,
                                   id_kind, mixed_error, string_id_problems, text_kind, to_string_array)

from .record_fields import DEFAULT_FIELDS, RecordFields
from .encode import encode_arrow, encode_json  # noqa: F401  (part of this module's interface)
from .weights import BAD_WEIGHT, WeightError, column_weights, parse_weight

#: Why a message was rejected (the ``reason`` header of a dead letter).
REASONS = (
    "oversize",         # larger than the configured message limit
    "empty",            # no bytes, or no edges in it
    "bad_json",         # not valid JSON (or not UTF-8)
    "bad_csv",          # CSV line without two fields
    "bad_arrow",        # an Arrow IPC stream that does not read, or lacks src/dst columns
    "missing_field",    # an edge without src or dst (or a null)
    "non_integer_id",   # an id that is not an integer (float, text, bool)
    "negative_id",      # an id below zero
    "id_out_of_range",  # an id beyond 64 bits (above 2**63 - 1)
    "unknown_op",       # an op other than insert/delete
    BAD_WEIGHT,         # weighted streams: a weight that is zero, negative, NaN, infinite, empty or not a number
) + ID_REASONS          # string ids: empty_id, id_too_long, bad_utf8_id, mixed_id_types

#: Default largest accepted message (bytes).
DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024

_ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"
_ARROW_FILE_MAGIC = b"ARROW1"


class RecordError(BatchFormatError):
    """A message that cannot be turned into edges.

    Parameters
    ----------
    reason : str
        One of :data:`REASONS`.
    detail : str
        A human-readable explanation.
    """

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ParsedEdges:
    """Edges of one message in arrival order.

    Attributes
    ----------
    src, dst : ndarray of int64, or of ``str`` objects (JSON/CSV), or pyarrow.Array of strings (Arrow)
    insert : ndarray of bool
    weight : ndarray of float64 or None
        Weighted streams: each edge's weight (NaN for a delete without one); None otherwise.
    """

    src: object
    dst: object
    insert: np.ndarray
    weight: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.insert.shape[0])

    @property
    def id_kind(self) -> str:
        """``"int"`` or ``"string"``."""
        return id_kind(self.src)


def parse_message(value, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, id_type: str = "int",
                  max_id_bytes: int = DEFAULT_MAX_ID_BYTES, fields: RecordFields = DEFAULT_FIELDS) -> ParsedEdges:
    """Parse one message into edges.

    Parameters
    ----------
    value : bytes
        The message value as received.
    max_bytes : int, optional
        Messages longer than this are rejected with reason ``"oversize"``.
    id_type : {"int", "string", "auto"}, optional
        Vertex id kind (see the module docs); default ``"int"``.
    max_id_bytes : int, optional
        Longest string id in UTF-8 bytes (``id_too_long`` beyond it).
    fields : RecordFields, optional
        Field names of JSON objects and Arrow columns (default ``src``, ``dst``, ``op``).

    Returns
    -------
    ParsedEdges

    Raises
    ------
    RecordError
        With a reason from :data:`REASONS`.
    """
    if value is None or len(value) == 0:
        raise RecordError("empty", "message has no value")
    if len(value) > max_bytes:
        raise RecordError("oversize", f"message of {len(value)} bytes exceeds the limit of {max_bytes}")
    if not isinstance(fields, RecordFields):
        raise InvalidArgumentError(f"fields must be a RecordFields, got {type(fields).__name__}")
    value = bytes(value)
    ids = _MessageIds(id_type, max_id_bytes)
    if value.startswith(_ARROW_STREAM_MAGIC) or value.startswith(_ARROW_FILE_MAGIC):
        return _parse_arrow(value, ids, fields)
    head = value.lstrip()[:1]
    if head in (b"{", b"["):
        return _parse_json(value, ids, fields)
    return _parse_csv(value, ids, fields)


# ---------------------------------------------------------------------------- fields
class _MessageIds:
    """The id kind of one message: declared, or fixed by its first id (``"auto"``)."""

    def __init__(self, id_type: str, max_id_bytes: int):
        self.lock = IdTypeLock(id_type)
        self.auto = id_type == "auto"
        self.max_bytes = int(max_id_bytes)

    def check(self, v, name: str, *, text: bool = False):
        """An id from a JSON value, or from a CSV field (``text``: stripped); raises :class:`RecordError`."""
        if v is None:
            raise RecordError("missing_field", f"{name} is null")
        if isinstance(v, str) and text:
            v = v.strip()
        if self.lock.kind is None:
            if isinstance(v, int) and not isinstance(v, bool):
                self.lock.admit("int")
            elif isinstance(v, str) and (v or not text):  # a JSON "" is a (bad) string id
                self.lock.admit(text_kind(v))
        if self.lock.kind == "string":
            return self._string(v, name)
        if isinstance(v, str) and self.auto and v.strip() and text_kind(v) == "string":
            err = mixed_error("string", "int", name, v)
            raise RecordError(err.reason, err.detail)
        return _check_id(v, name)

    def _string(self, v, name: str) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            err = mixed_error("int", "string", name, v)
            raise RecordError(err.reason, err.detail)
        if not isinstance(v, str):
            raise RecordError("mixed_id_types", f"{name}={v!r} is not a string")
        try:
            v = check_string_id(v, max_bytes=self.max_bytes, name=name)
        except IdError as exc:
            raise RecordError(exc.reason, exc.detail) from None
        if self.auto and text_kind(v) == "int":
            err = mixed_error("int", "string", name, v)
            raise RecordError(err.reason, err.detail)
        return v


def _check_id(v, name: str) -> int:
    if v is None:
        raise RecordError("missing_field", f"{name} is null")
    if isinstance(v, bool):
        raise RecordError("non_integer_id", f"{name} is a boolean")
    if isinstance(v, int):
        n = v
    elif isinstance(v, str):
        s = v.strip()
        body = s[1:] if s[:1] in "+-" else s
        if not body.isdigit() or not body.isascii():
            raise RecordError("non_integer_id", f"{name}={v!r} is not an integer")
        n = int(s)
    else:
        raise RecordError("non_integer_id", f"{name}={v!r} is not an integer")
    if n < 0:
        raise RecordError("negative_id", f"{name}={n} is negative")
    if n > MAX_VERTEX_ID:
        raise RecordError("id_out_of_range", f"{name}={n} is beyond 64 bits (max {MAX_VERTEX_ID})")
    return n


def _check_op(v) -> bool:
    try:
        return parse_op(v)
    except BatchFormatError as exc:
        raise RecordError("unknown_op", str(exc)) from None


def _edge_from_obj(obj, ids: _MessageIds, fields: RecordFields = DEFAULT_FIELDS):
    if isinstance(obj, dict):
        s, d = fields.src, fields.dst
        if s not in obj or d not in obj:
            missing = [k for k in (s, d) if k not in obj]
            has = ", ".join(map(str, list(obj)[:8])) or "no fields"
            raise RecordError("missing_field", f"edge lacks {', '.join(missing)} (it has {has})")
        op = obj.get(fields.op) if fields.op is not None else None
        edge = ids.check(obj[s], s), ids.check(obj[d], d), _check_op(op)
        if not fields.weighted:
            return edge
        return edge + (_check_weight(obj.get(fields.weight) if fields.weight is not None else None, edge[2]),)
    if isinstance(obj, list):
        most = 4 if fields.weighted else 3
        if len(obj) < 2:
            raise RecordError("missing_field", f"edge list {obj!r} needs [src, dst(, op)]")
        if len(obj) > most:
            raise RecordError("bad_json", f"edge list {str(obj)[:80]} has more than {most} items")
        op = obj[2] if len(obj) >= 3 else None
        edge = ids.check(obj[0], "src"), ids.check(obj[1], "dst"), _check_op(op)
        if not fields.weighted:
            return edge
        return edge + (_check_weight(obj[3] if len(obj) == 4 else None, edge[2]),)
    raise RecordError("bad_json", f"an edge must be an object or a list, got {type(obj).__name__}")


def _check_weight(value, insert: bool, *, text: bool = False) -> float:
    try:
        return parse_weight(value, insert=insert, text=text)
    except WeightError as exc:
        raise RecordError(BAD_WEIGHT, str(exc)) from None


def _edges(rows, ids: _MessageIds) -> ParsedEdges:
    """Edges from ``(src, dst, insert[, weight])`` rows (a weight in every row of a weighted stream)."""
    n = len(rows)
    if n == 0:
        raise RecordError("empty", "message holds no edges")
    cols = list(zip(*rows))
    weight = np.array(cols[3], dtype=np.float64) if len(cols) == 4 else None
    if ids.lock.kind == "string":  # NumPy object arrays: cheap per message; the engine makes Arrow of a batch
        src = np.empty(n, dtype=object)
        dst = np.empty(n, dtype=object)
        src[:], dst[:] = cols[0], cols[1]
    else:
        src = np.array(cols[0], dtype=np.int64)
        dst = np.array(cols[1], dtype=np.int64)
    return ParsedEdges(src, dst, np.array(cols[2], dtype=bool), weight)


# ---------------------------------------------------------------------------- formats
def _parse_json(value: bytes, ids: _MessageIds, fields: RecordFields) -> ParsedEdges:
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError("bad_json", str(exc)) from None
    if isinstance(obj, dict):
        return _edges([_edge_from_obj(obj, ids, fields)], ids)
    if isinstance(obj, list):
        if obj and not isinstance(obj[0], (dict, list)):
            return _edges([_edge_from_obj(obj, ids, fields)], ids)  # a single [src, dst, op] edge
        return _edges([_edge_from_obj(o, ids, fields) for o in obj], ids)
    raise RecordError("bad_json", f"expected an object or an array, got {type(obj).__name__}")


def _parse_csv(value: bytes, ids: _MessageIds, names: RecordFields) -> ParsedEdges:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError("bad_csv", f"not UTF-8 text ({exc})") from None
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in (line.split(",") if "," in line else line.split())]
        most = 4 if names.weighted else 3
        if len(fields) < 2:
            raise RecordError("bad_csv", f"line {line[:80]!r} needs src,dst[,op{',weight' if names.weighted else ''}]")
        if len(fields) > most:
            raise RecordError("bad_csv", f"line {line[:80]!r} has more than {most} fields")
        if fields[0] == "" or fields[1] == "":
            raise RecordError("missing_field", f"line {line[:80]!r} has an empty id")
        op = fields[2] if len(fields) >= 3 and names.op is not None else None
        edge = (ids.check(fields[0], "src", text=True), ids.check(fields[1], "dst", text=True), _check_op(op))
        if names.weighted:
            edge += (_check_weight(fields[3] if len(fields) == 4 else None, edge[2], text=True),)
        rows.append(edge)
    return _edges(rows, ids)


def _parse_arrow(value: bytes, ids: _MessageIds, fields: RecordFields) -> ParsedEdges:
    try:
        if value.startswith(_ARROW_FILE_MAGIC):
            table = pa.ipc.open_file(pa.BufferReader(value)).read_all()
        else:
            table = pa.ipc.open_stream(pa.BufferReader(value)).read_all()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise RecordError("bad_arrow", f"unreadable Arrow IPC data ({exc})") from None
    names = set(table.column_names)
    if not {fields.src, fields.dst} <= names:
        raise RecordError("missing_field", f"Arrow table needs columns {fields.src} and {fields.dst}, "
                                           f"has {sorted(names)}")
    if table.num_rows == 0:
        raise RecordError("empty", "Arrow table has no rows")
    src = _arrow_ids(table.column(fields.src), fields.src, ids)
    dst = _arrow_ids(table.column(fields.dst), fields.dst, ids)
    if fields.op is not None and fields.op in names:
        ins = _arrow_ops(table.column(fields.op))
    else:
        ins = np.ones(table.num_rows, dtype=bool)
    weight = None
    if fields.weighted:
        col = table.column(fields.weight) if fields.weight is not None and fields.weight in names else None
        weight, bad = column_weights(col, ins)
        if bad:
            row = min(bad)
            raise RecordError(BAD_WEIGHT, f"{bad[row]} (row {row})")
    return ParsedEdges(src, dst, ins, weight)


def _arrow_ids(col, name: str, ids: _MessageIds):
    if col.null_count:
        raise RecordError("missing_field", f"{name} holds {col.null_count} nulls")
    t = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    kind = "int" if pa.types.is_integer(t) or pa.types.is_floating(t) else "string"
    if ids.lock.kind is None and not pa.types.is_floating(t):
        ids.lock.admit(kind)
    if ids.lock.kind == "string":
        return _arrow_string_ids(col, name, ids, kind)
    if not pa.types.is_integer(t):
        if ids.auto and kind == "string":
            raise RecordError("mixed_id_types", f"{name} is a {t} column in a message of integer ids")
        raise RecordError("non_integer_id", f"{name} has type {t}, not an integer type")
    arr = col.to_numpy()
    if pa.types.is_unsigned_integer(t):
        if arr.size and int(arr.max()) > MAX_VERTEX_ID:
            raise RecordError("id_out_of_range", f"{name} holds ids beyond 64 bits")
        return arr.astype(np.int64)
    arr = arr.astype(np.int64, copy=False)
    if arr.size and int(arr.min()) < 0:
        raise RecordError("negative_id", f"{name} holds negative ids")
    return arr


def _arrow_string_ids(col, name: str, ids: _MessageIds, kind: str) -> pa.Array:
    """A string id column taken verbatim (typed: digits are names too), validated."""
    if kind != "string":
        raise RecordError("mixed_id_types", f"{name} is a {col.type} column in a string-id stream")
    try:
        arr = to_string_array(col, name=name)
    except IdError as exc:
        raise RecordError(exc.reason, exc.detail) from None
    bad = string_id_problems(arr, max_bytes=ids.max_bytes, name=name)
    if bad:
        row = min(bad)
        raise RecordError(bad[row].reason, f"{bad[row].detail} (row {row})")
    return arr


def _arrow_ops(col) -> np.ndarray:
    if col.null_count:
        raise RecordError("unknown_op", f"op holds {col.null_count} nulls")
    if pa.types.is_integer(col.type):
        arr = col.to_numpy().astype(np.int64)
        if arr.size and bool(np.any((arr != 1) & (arr != -1))):
            raise RecordError("unknown_op", "integer ops must be +1 or -1")
        return arr > 0
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return np.array([_check_op(v) for v in col.to_pylist()], dtype=bool)
    raise RecordError("unknown_op", f"op has type {col.type}")


# ---------------------------------------------------------------------------- source items
@dataclass
class EdgeChunk:
    """Edges a source hands to the event loop, with the position just past them.

    Attributes
    ----------
    src, dst : ndarray of int64, or pyarrow.Array of strings
    insert : ndarray of bool
    pos_key : str
        Which source position this advances (``"kafka:<topic>:<partition>"``, ``"dir"``).
    pos_value : object
        JSON value of the position once these edges are applied.
    weight : ndarray of float64 or None
        Weighted streams: per-edge weights (NaN: a delete without one); None otherwise.
    """

    src: object
    dst: object
    insert: np.ndarray
    pos_key: str
    pos_value: object
    weight: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.insert.shape[0])


@dataclass
class BadRecord:
    """A rejected record, for the dead letters.

    Attributes
    ----------
    value : bytes
        The original bytes.
    reason : str
        One of :data:`REASONS`.
    detail : str
    topic : str
        Kafka topic, or the file name in directory mode.
    partition : int
        Kafka partition (``-1`` for files).
    offset : int
        Kafka offset, or the line number (1-based) in a file.
    key : bytes or None
    pos_key, pos_value
        As for :class:`EdgeChunk`: the position once this record is dealt with.
    """

    value: bytes
    reason: str
    detail: str
    topic: str
    partition: int
    offset: int
    key: bytes | None
    pos_key: str
    pos_value: object
