"""Parsing of edge messages (Kafka record values, file lines) into edge arrays.

One message carries either one edge or many:

- one edge as JSON: ``{"op": "+", "src": 1, "dst": 2}`` (``op`` is ``"+"``/``"-"``,
  ``"insert"``/``"delete"`` or ``1``/``-1``; absent means insert),
- one edge (or several lines of edges) as CSV text: ``src,dst[,op]``,
- many edges as a JSON array of such objects (or of ``[src, dst(, op)]`` lists),
- many edges as an Arrow IPC stream with columns ``src``, ``dst`` (integers) and optionally
  ``op`` (int8 +1/-1, or strings).

A message is accepted or rejected as a whole: a rejected message raises
:class:`RecordError` whose :attr:`~RecordError.reason` is one of :data:`REASONS`, so that
the caller can dead-letter the original bytes with the reason and count it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from streamrank.batch import MAX_VERTEX_ID, parse_op
from streamrank.errors import BatchFormatError

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
)

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
    src, dst : ndarray of int64
    insert : ndarray of bool
    """

    src: np.ndarray
    dst: np.ndarray
    insert: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])


def parse_message(value, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> ParsedEdges:
    """Parse one message into edges.

    Parameters
    ----------
    value : bytes
        The message value as received.
    max_bytes : int, optional
        Messages longer than this are rejected with reason ``"oversize"``.

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
    value = bytes(value)
    if value.startswith(_ARROW_STREAM_MAGIC) or value.startswith(_ARROW_FILE_MAGIC):
        return _parse_arrow(value)
    head = value.lstrip()[:1]
    if head in (b"{", b"["):
        return _parse_json(value)
    return _parse_csv(value)


# ---------------------------------------------------------------------------- fields
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


def _edge_from_obj(obj):
    if isinstance(obj, dict):
        if "src" not in obj or "dst" not in obj:
            missing = [k for k in ("src", "dst") if k not in obj]
            raise RecordError("missing_field", f"edge lacks {', '.join(missing)}")
        return _check_id(obj["src"], "src"), _check_id(obj["dst"], "dst"), _check_op(obj.get("op"))
    if isinstance(obj, list):
        if len(obj) < 2:
            raise RecordError("missing_field", f"edge list {obj!r} needs [src, dst(, op)]")
        if len(obj) > 3:
            raise RecordError("bad_json", f"edge list {obj!r} has more than 3 items")
        op = obj[2] if len(obj) == 3 else None
        return _check_id(obj[0], "src"), _check_id(obj[1], "dst"), _check_op(op)
    raise RecordError("bad_json", f"an edge must be an object or a list, got {type(obj).__name__}")


def _edges(rows) -> ParsedEdges:
    n = len(rows)
    if n == 0:
        raise RecordError("empty", "message holds no edges")
    src = np.empty(n, dtype=np.int64)
    dst = np.empty(n, dtype=np.int64)
    ins = np.empty(n, dtype=bool)
    for i, (s, d, o) in enumerate(rows):
        src[i], dst[i], ins[i] = s, d, o
    return ParsedEdges(src, dst, ins)


# ---------------------------------------------------------------------------- formats
def _parse_json(value: bytes) -> ParsedEdges:
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError("bad_json", str(exc)) from None
    if isinstance(obj, dict):
        return _edges([_edge_from_obj(obj)])
    if isinstance(obj, list):
        if obj and not isinstance(obj[0], (dict, list)):
            return _edges([_edge_from_obj(obj)])  # a single [src, dst, op] edge
        return _edges([_edge_from_obj(o) for o in obj])
    raise RecordError("bad_json", f"expected an object or an array, got {type(obj).__name__}")


def _parse_csv(value: bytes) -> ParsedEdges:
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
        if len(fields) < 2:
            raise RecordError("bad_csv", f"line {line[:80]!r} needs src,dst[,op]")
        if len(fields) > 3:
            raise RecordError("bad_csv", f"line {line[:80]!r} has more than 3 fields")
        if fields[0] == "" or fields[1] == "":
            raise RecordError("missing_field", f"line {line[:80]!r} has an empty id")
        op = fields[2] if len(fields) == 3 else None
        rows.append((_check_id(fields[0], "src"), _check_id(fields[1], "dst"), _check_op(op)))
    return _edges(rows)


def _parse_arrow(value: bytes) -> ParsedEdges:
    import pyarrow as pa

    try:
        if value.startswith(_ARROW_FILE_MAGIC):
            table = pa.ipc.open_file(pa.BufferReader(value)).read_all()
        else:
            table = pa.ipc.open_stream(pa.BufferReader(value)).read_all()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise RecordError("bad_arrow", f"unreadable Arrow IPC data ({exc})") from None
    names = set(table.column_names)
    if not {"src", "dst"} <= names:
        raise RecordError("missing_field", f"Arrow table needs columns src and dst, has {sorted(names)}")
    if table.num_rows == 0:
        raise RecordError("empty", "Arrow table has no rows")
    src = _arrow_ids(table.column("src"), "src")
    dst = _arrow_ids(table.column("dst"), "dst")
    if "op" in names:
        ins = _arrow_ops(table.column("op"))
    else:
        ins = np.ones(src.shape[0], dtype=bool)
    return ParsedEdges(src, dst, ins)


def _arrow_ids(col, name: str) -> np.ndarray:
    import pyarrow as pa

    if col.null_count:
        raise RecordError("missing_field", f"{name} holds {col.null_count} nulls")
    t = col.type
    if not pa.types.is_integer(t):
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


def _arrow_ops(col) -> np.ndarray:
    import pyarrow as pa

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


def encode_arrow(src, dst, insert=None) -> bytes:
    """Encode edges as an Arrow IPC stream message (``src``, ``dst`` int64, ``op`` int8).

    Parameters
    ----------
    src, dst : array_like of int
    insert : array_like of bool, optional
        Default: all insertions.

    Returns
    -------
    bytes
    """
    import pyarrow as pa

    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    op = np.ones(src.shape[0], np.int8) if insert is None else np.where(np.asarray(insert), 1, -1).astype(np.int8)
    table = pa.table({"src": src, "dst": dst, "op": op})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def encode_json(src, dst, insert=None) -> bytes:
    """Encode edges as a JSON message (one object for one edge, else an array)."""
    src = [int(v) for v in np.asarray(src).reshape(-1)]
    dst = [int(v) for v in np.asarray(dst).reshape(-1)]
    ins = [True] * len(src) if insert is None else [bool(v) for v in np.asarray(insert).reshape(-1)]
    objs = [{"op": "+" if i else "-", "src": s, "dst": d} for s, d, i in zip(src, dst, ins)]
    return json.dumps(objs[0] if len(objs) == 1 else objs, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------- source items
@dataclass
class EdgeChunk:
    """Edges a source hands to the event loop, with the position just past them.

    Attributes
    ----------
    src, dst : ndarray of int64
    insert : ndarray of bool
    pos_key : str
        Which source position this advances (``"kafka:<topic>:<partition>"``, ``"dir"``).
    pos_value : object
        JSON value of the position once these edges are applied.
    """

    src: np.ndarray
    dst: np.ndarray
    insert: np.ndarray
    pos_key: str
    pos_value: object

    def __len__(self) -> int:
        return int(self.src.shape[0])


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
