"""Decode a whole fetch of edge messages at once.

:func:`decode_values` takes the values of many messages (a Kafka poll) and returns their edges
concatenated in message order, with the edge count of each message and the reason each rejected
message was rejected. Single-edge JSON objects with integer ids in their strict form (:mod:`connectors.json_scan`)
are read by one compiled scan of the joined bytes; the other common shapes are parsed by
pyarrow's vectorized readers, all messages of a shape in one call:

- one-line JSON objects (``{"op": "+", "src": 1, "dst": 2}``): joined with newlines and read by
  ``pyarrow.json.read_json`` (src/dst typed int64, op inferred);
- one-line JSON arrays of edge objects: each wrapped as ``{"e": [...]}`` and read the same way,
  the list offsets giving each message's edge count;
- one-line CSV ``src,dst`` and ``src,dst,op`` (no quotes): read by ``pyarrow.csv.read_csv``;
- Arrow IPC streams: each message read into arrays by pyarrow (no loop over edges, except for an
  ``op`` column of strings, which :mod:`connectors.records` maps value by value).

Field names other than ``src``, ``dst`` and ``op`` (a :class:`~connectors.records.RecordFields`)
apply to JSON objects, read by pyarrow's JSON reader under those names (the compiled scan knows
the usual names only), and to Arrow IPC columns; CSV lines keep their order.

Vertex ids follow the stream's id kind (:mod:`streamrank.ids.kinds`), one kind per stream: an
:class:`~streamrank.ids.kinds.IdTypeLock` shared with the source keeps it across fetches. While
an ``"auto"`` stream has no kind yet, messages go one by one until the first accepted one fixes
it; after that the readers above take the stream's kind (int64 columns, or string columns for a
string stream, CSV then taking any unquoted one-line ``a,b[,op]``), and a message of the other
kind is dead-lettered as ``mixed_id_types`` by the per-message parser.

A message is accepted by the vectorized path only when the per-message parser
(:func:`connectors.records.parse_message`) would accept it with the same edges; everything else
(and every message of a block pyarrow refuses, found by bisecting the block) goes through the
per-message parser, which gives a rejected message its dead-letter reason. So the result is the
same as parsing each message alone, only faster (tests check this on random mixtures).

A weighted stream (``fields.weighted``) reads each edge's weight too (:mod:`connectors.weights`):
JSON objects and arrays of objects by pyarrow's JSON reader (an edge with a bad weight sends its
message to the per-message parser, which rejects it as ``bad_weight``), CSV lines of two or three
fields carry none, the rest goes message by message; the compiled scan is not used.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from streamrank.errors import InvalidArgumentError
from streamrank.ids.kinds import DEFAULT_MAX_ID_BYTES, IdError, IdTypeLock, concat_ids

from .decode_columns import Refused as _Refused
from .decode_columns import field as _field
from .decode_columns import ids as _ids
from .decode_columns import ops as _ops
from .decode_columns import string_ids as _string_ids
from .decode_columns import weights as _weights
from .json_scan import scan_edge_objects
from .record_fields import DEFAULT_FIELDS, RecordFields
from .records import DEFAULT_MAX_MESSAGE_BYTES, RecordError, parse_message

#: Blocks at or below this many messages that fail as a whole go message by message.
_BISECT_MIN = 4
#: Decoder route of a message.
_OTHER, _JSON_OBJ, _JSON_ARR, _CSV2, _CSV3, _ARROW = range(6)


@dataclass
class DecodedValues:
    """Edges of many messages, in message order.

    Attributes
    ----------
    src, dst : ndarray of int64, or (string ids) pyarrow string array or ndarray of ``str`` objects
        Edges of the accepted messages, concatenated.
    insert : ndarray of bool
    counts : ndarray of int64
        Edges per message (0 for a rejected one).
    errors : dict
        Message index -> :class:`~connectors.records.RecordError` for rejected messages.
    vectorized : int
        Messages decoded by a batch reader (the rest went one by one).
    weight : ndarray of float64 or None
        Weighted streams: each edge's weight (NaN: a delete without one); None otherwise.
    """

    src: object
    dst: object
    insert: np.ndarray
    counts: np.ndarray
    errors: dict = field(default_factory=dict)
    vectorized: int = 0
    weight: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.counts.shape[0])


def _routes(values: list, max_bytes: int, kind: str):
    """Decoder route of each message, from the joined bytes (no per-message Python work beyond
    messages starting with ``A``)."""
    n = len(values)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    data = b"\n".join(values)
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    ends = starts + lens

    def per_message(byte_value: int):
        """How often ``byte_value`` occurs in each message."""
        pos = np.flatnonzero(buf == byte_value)
        msg = np.searchsorted(starts, pos, side="right") - 1
        inside = pos < ends[msg]  # the separators lie between messages
        return np.bincount(msg[inside], minlength=n)

    nonempty = lens > 0
    heads = np.zeros(n, dtype=np.uint8)
    heads[nonempty] = buf[starts[nonempty]]
    if data.count(b"\n") == n - 1 and b"\r" not in data:
        breaks = np.zeros(n, dtype=bool)
    else:
        breaks = (per_message(10) + per_message(13)) > 0
    routes = np.full(n, _OTHER, dtype=np.int8)
    one_line = nonempty & ~breaks & (lens <= max_bytes)
    routes[one_line & (heads == ord("{"))] = _JSON_OBJ
    routes[one_line & (heads == ord("["))] = _JSON_ARR
    arrow = nonempty & (lens <= max_bytes) & (heads == 0xFF)
    for i in np.flatnonzero(heads == ord("A")).tolist():
        arrow[i] = values[i].startswith(b"ARROW1") and lens[i] <= max_bytes
    if kind == "string":  # JSON escapes (surrogates) go one by one; CSV: any unquoted a,b[,op] line
        text = one_line & ~arrow & (heads != ord("{")) & (heads != ord("[")) & (heads != ord("#"))
        slash = per_message(ord("\\")) > 0
        routes[slash & ((routes == _JSON_OBJ) | (routes == _JSON_ARR))] = _OTHER
    else:
        text = one_line & (heads >= ord("0")) & (heads <= ord("9"))
    if text.any():
        text &= per_message(ord('"')) == 0
        commas = per_message(ord(","))
        routes[text & (commas == 1)] = _CSV2
        routes[text & (commas == 2)] = _CSV3
    routes[arrow] = _ARROW
    return routes, data, lens


def decode_values(values, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, id_type: str = "int",
                  id_lock: IdTypeLock | None = None, max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
                  fields: RecordFields = DEFAULT_FIELDS) -> DecodedValues:
    """Decode the values of many messages.

    Parameters
    ----------
    values : sequence of bytes or None
        Message values in arrival order.
    max_bytes : int, optional
        Larger messages are rejected as ``"oversize"``.
    id_type : {"int", "string", "auto"}, optional
        Vertex id kind of the stream (:func:`connectors.records.parse_message`).
    id_lock : streamrank.ids.kinds.IdTypeLock, optional
        The stream's id kind across calls (admitted here in message order); default a fresh lock
        of ``id_type``.
    max_id_bytes : int, optional
        Longest string id (UTF-8 bytes).
    fields : connectors.records.RecordFields, optional
        Field names of JSON objects and Arrow columns (default ``src``, ``dst``, ``op``).

    Returns
    -------
    DecodedValues
    """
    if not isinstance(fields, RecordFields):
        raise InvalidArgumentError(f"fields must be a RecordFields, got {type(fields).__name__}")
    if set(map(type, values)) <= {bytes}:  # the usual case, checked without Python code per message
        values = values if isinstance(values, list) else list(values)
    else:
        values = [v if isinstance(v, bytes) else b"" if v is None else bytes(v) for v in values]
    n = len(values)
    lock = id_lock if id_lock is not None else IdTypeLock(id_type)
    one = _OneByOne(values, max_bytes, id_type, max_id_bytes, lock, fields)
    pieces = []     # (message index per edge, src, dst, insert, weight or None) from each decoder
    errors: dict = {}
    start = 0
    while lock.kind is None and start < n:  # "auto": the first accepted message fixes the stream's kind
        one.decode(start, pieces, errors)
        start += 1
    vectorized = 0
    if start < n:
        rules = _IdRules(lock.kind, id_type == "auto", max_id_bytes, fields)
        vectorized = _decode_fixed(values, start, max_bytes, rules, one, pieces, errors)
    counts = np.zeros(n, dtype=np.int64)
    weighted = fields.weighted
    if not pieces:
        z = np.zeros(0, dtype=np.int64)
        return DecodedValues(z, z.copy(), np.zeros(0, dtype=bool), counts, errors, 0,
                             np.zeros(0) if weighted else None)
    rec = np.concatenate([p[0] for p in pieces])
    src = _concat([p[1] for p in pieces])
    dst = _concat([p[2] for p in pieces])
    ins = np.concatenate([p[3] for p in pieces])
    w = np.concatenate([p[4] for p in pieces]) if weighted else None
    if len(pieces) > 1 and rec.size > 1 and bool(np.any(rec[1:] < rec[:-1])):
        order = np.argsort(rec, kind="stable")  # message order; edges keep their order within a message
        rec, src, dst, ins = rec[order], _select(src, order), _select(dst, order), ins[order]
        w = None if w is None else w[order]
    counts += np.bincount(rec, minlength=n)
    return DecodedValues(src, dst, ins, counts, errors, vectorized, w)


def _decode_fixed(values: list, start: int, max_bytes: int, rules: "_IdRules", one: "_OneByOne", pieces: list,
                  errors: dict) -> int:
    """Decode ``values[start:]`` of a stream whose id kind is fixed; returns the messages vectorized."""
    where = np.arange(start, len(values), dtype=np.int64)  # messages left, as indices into values
    vectorized = 0
    if rules.kind == "int" and rules.fields.is_default:  # single-edge JSON objects in their strict form: one
        # compiled scan (it knows the usual field names only; other names take pyarrow's JSON reader)
        taken, where = _scan_objects(values, where, max_bytes, pieces)
        vectorized += taken
        if where.size == 0:
            return vectorized
    sub = values if where.size == len(values) else [values[i] for i in where.tolist()]
    m = len(sub)
    routes, joined, lens = _routes(sub, max_bytes, rules.kind)
    whole = {"data": joined, "longest": int(lens.max())}  # the joined bytes, reused when one route has all
    fallback = [np.flatnonzero(routes == _OTHER)]
    for route, reader in ((_JSON_OBJ, _json_objects), (_JSON_ARR, _json_arrays), (_CSV2, _csv(2)),
                          (_CSV3, _csv(3))):
        idx = np.flatnonzero(routes == route)
        if idx.size == 0:
            continue
        ok_pieces, refused = _bisect(sub, idx, reader, rules, whole if idx.size == m else None)
        fallback.append(refused)
        pieces.extend((where[rec], s, d, i, w) for rec, s, d, i, w in ok_pieces)
        vectorized += idx.size - refused.size
    rest = np.concatenate([np.flatnonzero(routes == _ARROW)] + fallback)
    for i in where[np.sort(rest)].tolist():  # in message order: the lock sees them as the stream has them
        one.decode(i, pieces, errors)
    return vectorized


def _scan_objects(values: list, where: np.ndarray, max_bytes: int, pieces: list):
    """Take the messages ``where`` that :func:`connectors.json_scan.scan_edge_objects` accepts;
    returns ``(how many, the indices of the others)``."""
    sub = values if where.size == len(values) else [values[i] for i in where.tolist()]
    lens = np.fromiter(map(len, sub), dtype=np.int64, count=len(sub))
    starts = np.zeros(len(sub), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    buf = np.frombuffer(b"\n".join(sub), dtype=np.uint8)
    ok, src, dst, ins = scan_edge_objects(buf, starts, lens, max_bytes=max_bytes)
    if ok.all():
        pieces.append((where, src, dst, ins, None))
        return len(sub), where[:0]
    if ok.any():
        pieces.append((where[ok], src[ok], dst[ok], ins[ok], None))
    return int(np.count_nonzero(ok)), where[~ok]


class _OneByOne:
    """The per-message parser, with the stream's id lock (a message of the other kind is rejected
    as ``mixed_id_types``)."""

    def __init__(self, values, max_bytes, id_type, max_id_bytes, lock, fields):
        self.values, self.max_bytes, self.id_type, self.max_id_bytes, self.lock, self.fields = \
            values, max_bytes, id_type, max_id_bytes, lock, fields

    def decode(self, i: int, pieces: list, errors: dict) -> None:
        try:
            e = parse_message(self.values[i], max_bytes=self.max_bytes, id_type=self.id_type,
                              max_id_bytes=self.max_id_bytes, fields=self.fields)
            self.lock.admit(e.id_kind)  # one id kind per stream
        except RecordError as exc:
            errors[i] = exc
            return
        except IdError as exc:
            errors[i] = RecordError(exc.reason, exc.detail)
            return
        pieces.append((np.full(len(e), i, dtype=np.int64), e.src, e.dst, e.insert, e.weight))


@dataclass
class _IdRules:
    """What a vectorized reader accepts as ids: the stream's kind (``"int"``/``"string"``), whether
    it was detected (``auto``: integer-looking strings are then the other kind), the longest id,
    and the field names of JSON objects."""

    kind: str
    auto: bool
    max_bytes: int
    fields: RecordFields = DEFAULT_FIELDS

    def column(self, col, *, rows: int, text: bool = False):
        """``(ids, valid mask)`` of an id column; ``text``: CSV fields (surrounding blanks refused)."""
        if col is None:
            raise _Refused()
        if self.kind == "int":
            return _ids(col, rows=rows)
        return _string_ids(col, rows=rows, rules=self, text=text)

    @property
    def arrow_type(self):
        """Column type the readers are told to parse ids as."""
        return pa.int64() if self.kind == "int" else pa.string()


def _concat(parts: list):
    if all(isinstance(p, np.ndarray) and p.dtype != object for p in parts):
        return np.concatenate(parts)
    return concat_ids(parts)  # string ids: one Arrow array


def _select(ids, rows: np.ndarray):
    """``ids[rows]`` (rows: indices or a boolean mask) for NumPy and Arrow arrays."""
    if isinstance(ids, np.ndarray):
        return ids[rows]
    if rows.dtype == bool:
        return ids.filter(pa.array(rows))
    return ids.take(pa.array(rows))


def _bisect(values, idx: np.ndarray, reader, rules: _IdRules, whole):
    """Run ``reader`` over the messages ``idx``; halve blocks it refuses.

    ``whole``: the newline-joined bytes of all of ``idx`` when already at hand.
    Returns ``(pieces, refused)``: decoded pieces and the indices left to the per-message parser.
    """
    pieces, refused = [], []
    stack = [idx]
    while stack:
        block = stack.pop()
        try:
            rec, s, d, i, w, bad = reader(values, block, rules, whole if block is idx else None)
        except _Refused:
            if block.size <= _BISECT_MIN:
                refused.append(block)
            else:
                h = block.size // 2
                stack.append(block[h:])
                stack.append(block[:h])
            continue
        if rec.size:
            pieces.append((rec, s, d, i, w))
        if bad.size:
            refused.append(bad)
    return pieces, (np.concatenate(refused) if refused else np.zeros(0, dtype=np.int64))


def _result(block: np.ndarray, rec_pos: np.ndarray, src, dst, ins, w, ok):
    """Split rows into accepted edges and messages refused (any bad row refuses its message)."""
    bad_msgs = np.unique(rec_pos[~ok])
    if bad_msgs.size:
        keep = ~np.isin(rec_pos, bad_msgs)
        rec_pos, src, dst, ins = rec_pos[keep], _select(src, keep), _select(dst, keep), ins[keep]
        w = None if w is None else w[keep]
    return block[rec_pos], src, dst, ins, w, block[bad_msgs]


def _weight_of(table_or_struct, fields: RecordFields, ins: np.ndarray, ok: np.ndarray):
    """The weights of a weighted stream's rows (``ok`` narrowed to good weights), or None."""
    if not fields.weighted:
        return None, ok
    col = _field(table_or_struct, fields.weight) if fields.weight is not None else None
    w, ok_w = _weights(col, ins, rows=ins.shape[0])
    return w, ok & ok_w


# ---------------------------------------------------------------------------- readers
def _read_json(data: bytes, longest: int, schema):
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        return pj.read_json(io.BytesIO(data),
                            read_options=pj.ReadOptions(block_size=max(1 << 20, longest + 16)),
                            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"))
    except (pa.ArrowException, ValueError, OSError):
        raise _Refused() from None


def _joined(values, block: np.ndarray, whole):
    if whole is not None:
        return whole["data"], whole["longest"]
    lines = [values[i] for i in block.tolist()]
    return b"\n".join(lines), max(map(len, lines))


def _json_objects(values, block: np.ndarray, rules: _IdRules, whole=None):
    import pyarrow as pa

    f = rules.fields
    typed = [(f.src, rules.arrow_type), (f.dst, rules.arrow_type)]
    if f.weighted and f.weight is not None:
        typed.append((f.weight, pa.float64()))
    t = _read_json(*_joined(values, block, whole), pa.schema(typed))
    n = block.size
    if t.num_rows != n:  # e.g. two objects on one line: not one edge per message
        raise _Refused()
    src, ok_s = rules.column(_field(t, f.src), rows=n)
    dst, ok_d = rules.column(_field(t, f.dst), rows=n)
    ins, ok_o = _ops(_field(t, f.op) if f.op is not None else None, rows=n)
    w, ok = _weight_of(t, f, ins, ok_s & ok_d & ok_o)
    return _result(block, np.arange(n), src, dst, ins, w, ok)


def _json_arrays(values, block: np.ndarray, rules: _IdRules, whole=None):
    import pyarrow as pa

    lines = [b'{"e":' + values[i] + b"}" for i in block.tolist()]
    t = _read_json(b"\n".join(lines), max(map(len, lines)), None)
    n = len(lines)
    if t.num_rows != n or t.column_names != ["e"]:
        raise _Refused()
    col = t.column("e").combine_chunks()
    if not pa.types.is_list(col.type) or not pa.types.is_struct(col.type.value_type):
        raise _Refused()  # arrays of [src, dst, op] lists, or only empty arrays
    if col.null_count:
        raise _Refused()
    offsets = np.asarray(col.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    per_msg = np.diff(offsets)
    items = col.flatten()  # the edge structs of all messages, in order (offsets start at 0 here)
    rows = len(items)
    rec_pos = np.repeat(np.arange(n), per_msg)
    f = rules.fields
    src, ok_s = rules.column(_field(items, f.src), rows=rows)
    dst, ok_d = rules.column(_field(items, f.dst), rows=rows)
    ins, ok_o = _ops(_field(items, f.op) if f.op is not None else None, rows=rows)
    ok = ok_s & ok_d & ok_o
    if items.null_count:
        ok &= np.asarray(items.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    w, ok = _weight_of(items, f, ins, ok)
    rec, s, d, i, w, bad = _result(block, rec_pos, src, dst, ins, w, ok)
    empty = block[per_msg == 0]  # "[]": the per-message parser names it "empty"
    return rec, s, d, i, w, np.concatenate([bad, empty]) if empty.size else bad


def _csv(fields: int):
    def read(values, block: np.ndarray, rules: _IdRules, whole=None):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        data, longest = _joined(values, block, whole)
        names = ["src", "dst", "op"][:fields]
        types = {"src": rules.arrow_type, "dst": rules.arrow_type, "op": pa.string()}
        try:
            t = pcsv.read_csv(
                io.BytesIO(data + b"\n"),
                read_options=pcsv.ReadOptions(column_names=names, block_size=max(1 << 20, 2 * longest)),
                parse_options=pcsv.ParseOptions(quote_char=False, escape_char=False, ignore_empty_lines=False),
                convert_options=pcsv.ConvertOptions(column_types={k: types[k] for k in names},
                                                    strings_can_be_null=False))
        except (pa.ArrowException, ValueError, OSError):
            raise _Refused() from None
        n = block.size
        if t.num_rows != n:
            raise _Refused()
        src, ok_s = rules.column(_field(t, "src"), rows=n, text=True)
        dst, ok_d = rules.column(_field(t, "dst"), rows=n, text=True)
        ins, ok_o = _ops(_field(t, "op") if fields == 3 and rules.fields.op is not None else None, rows=n)
        w = np.where(ins, 1.0, np.nan) if rules.fields.weighted else None  # two or three fields: no weight
        return _result(block, np.arange(n), src, dst, ins, w, ok_s & ok_d & ok_o)

    return read
