"""Vertex id types: integers or strings, set or detected per stream, and their validation.

A stream's vertex ids are all integers or all strings; ``id_type`` says which:

``"int"``
    Non-negative 64-bit integers (text tokens and JSON strings of digits are read as integers).
``"string"``
    Every id is a string, taken as it is: text tokens (``"42"`` is the string ``"42"``), JSON
    strings, Arrow/Parquet string columns. A typed integer (a JSON number, an Arrow integer
    column) in a string stream is a mixed-type error, not coerced.
``"auto"``
    Fixed by the first accepted id: a typed integer or a text that looks like an integer
    (``[+-]?[0-9]+``) makes an integer stream, anything else a string stream. From then on an id
    of the other kind is a mixed-type error (reason ``mixed_id_types``), in both directions, so
    that the outcome never depends on which record came first. A string stream whose names may
    look like numbers must say ``id_type="string"``.

A string id must be non-empty, valid UTF-8 and at most ``max_id_bytes`` bytes long in UTF-8
(default :data:`DEFAULT_MAX_ID_BYTES`); otherwise it is rejected with reason ``empty_id``,
``bad_utf8_id`` or ``id_too_long``. Text formats (SNAP, CSV) drop the whitespace around a field;
JSON strings and Arrow values are taken verbatim.

Connectors (file readers, Kafka records) and :class:`streamrank.batch.EdgeBatch` all validate
through the functions here, so every path gives the same reasons.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import BatchFormatError, InvalidArgumentError

#: Accepted values of ``id_type``.
ID_TYPES = ("auto", "int", "string")

#: Default longest string id, in UTF-8 bytes.
DEFAULT_MAX_ID_BYTES = 1024

#: Dead-letter reasons of string ids (besides the integer ones of :mod:`connectors.records`).
ID_REASONS = ("empty_id", "id_too_long", "bad_utf8_id", "mixed_id_types")

_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*\Z")
_INT_TEXT_B = re.compile(rb"\s*[+-]?[0-9]+\s*\Z")
_INT_PATTERN = r"^\s*[+-]?[0-9]+\s*$"

#: Arrow string array classes and the NumPy type of their offsets.
_OFFSET_TYPES = {pa.StringArray: np.int32, pa.LargeStringArray: np.int64}


class IdError(BatchFormatError):
    """A vertex id that cannot be accepted.

    Parameters
    ----------
    reason : str
        One of :data:`ID_REASONS`.
    detail : str
        A human-readable explanation (it names the field).
    """

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def check_id_type(value, name: str = "id_type") -> str:
    """``value`` if it is one of :data:`ID_TYPES`; raises :class:`InvalidArgumentError`."""
    if not isinstance(value, str) or value not in ID_TYPES:
        raise InvalidArgumentError(f"{name} must be one of {ID_TYPES}, got {value!r}")
    return value


def check_max_id_bytes(value, name: str = "max_id_bytes") -> int:
    """``value`` as an int if it is a positive integer; raises :class:`InvalidArgumentError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def text_kind(token) -> str:
    """``"int"`` when the text (str or bytes) looks like an integer, else ``"string"``."""
    pattern = _INT_TEXT_B if isinstance(token, (bytes, bytearray)) else _INT_TEXT
    return "int" if pattern.match(token) else "string"


def mixed_error(found: str, stream: str, name: str = "id", value=None) -> IdError:
    """The error (reason ``mixed_id_types``) for an id of kind ``found`` in a stream of kind ``stream``."""
    if found == "string":
        shown = "" if value is None else f" {_shown(value)}"
        return IdError("mixed_id_types", f"non-integer {name} id{shown} (a string id in an integer-id stream)")
    shown = "" if value is None else f" {_shown(value)}"
    what = "integer" if isinstance(value, (int, np.integer)) else "integer-looking"
    return IdError("mixed_id_types", f"{what} {name} id{shown} in a string-id stream (a stream's ids "
                                     "are all integers or all strings; id type 'string' takes every id as a string)")


def _shown(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    return repr(value[:40] if isinstance(value, str) else value)


def check_string_id(value, *, max_bytes: int = DEFAULT_MAX_ID_BYTES, name: str = "id") -> str:
    """One string id (``str`` or UTF-8 ``bytes``) validated; raises :class:`IdError`."""
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise IdError("bad_utf8_id", f"{name} id is not valid UTF-8") from None
    if value == "":
        raise IdError("empty_id", f"{name} id is empty")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates (e.g. from JSON "\ud800")
        raise IdError("bad_utf8_id", f"{name} id is not valid UTF-8 (lone surrogate)") from None
    if size > max_bytes:
        raise IdError("id_too_long", f"{name} id of {size} bytes exceeds the limit of {max_bytes}")
    return value


def to_string_array(values, *, name: str = "id") -> pa.Array:
    """Ids as one Arrow ``string`` (or ``large_string``) array, nulls kept.

    Accepts an Arrow string/binary (or dictionary-of-string) array or chunked array, a NumPy
    ``str``/``bytes``/``object`` array, or a sequence of ``str``. Binary data must be UTF-8.

    Raises
    ------
    IdError
        ``mixed_id_types`` when an element is not a string, ``bad_utf8_id`` for invalid UTF-8.
    """
    if type(values) in _OFFSET_TYPES:  # already what is asked: the usual case, in one test
        return values
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        if isinstance(values, np.ndarray) and values.dtype.kind not in "USO":
            raise mixed_error("int", "string", name)
        try:
            values = pa.array(values.ravel() if isinstance(values, np.ndarray) else list(values))
        except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
            raise IdError("mixed_id_types", f"{name} ids mix strings with other values ({exc})") from None
        except UnicodeEncodeError:  # lone surrogates
            raise IdError("bad_utf8_id", f"{name} holds ids that are not valid UTF-8 (lone surrogate)") from None
    t = values.type
    if pa.types.is_dictionary(t):
        values, t = values.dictionary_decode(), values.type.value_type
    if pa.types.is_null(t):
        return values.cast(pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        try:
            return values.cast(pa.large_string() if pa.types.is_large_binary(t) else pa.string())
        except pa.ArrowInvalid:
            raise IdError("bad_utf8_id", f"{name} holds ids that are not valid UTF-8") from None
    if pa.types.is_integer(t):
        raise mixed_error("int", "string", name)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise IdError("mixed_id_types", f"{name} ids have type {t}, neither strings nor integers")
    return values


def string_id_problems(values: pa.Array, *, max_bytes: int = DEFAULT_MAX_ID_BYTES, name: str = "id",
                       auto: bool = False) -> dict:
    """``{row: IdError}`` for the bad ids of an Arrow string array, found column-wise.

    Nulls are not reported here (callers call them a missing field). With ``auto=True`` a value
    that looks like an integer is a mixed-type error (see the module docs).
    """
    if len(values) == 0:
        return {}
    if not auto and _all_lengths_fine(values, max_bytes):
        return {}
    lengths = pc.binary_length(values).fill_null(1).to_numpy(zero_copy_only=False)
    out: dict = {}
    for row in np.flatnonzero(lengths == 0).tolist():
        out[row] = IdError("empty_id", f"{name} id is empty")
    for row in np.flatnonzero(lengths > max_bytes).tolist():
        out[row] = IdError("id_too_long", f"{name} id of {int(lengths[row])} bytes exceeds the limit of {max_bytes}")
    if auto:
        looks = pc.match_substring_regex(values, _INT_PATTERN).fill_null(False).to_numpy(zero_copy_only=False)
        for row in np.flatnonzero(looks).tolist():
            out.setdefault(row, mixed_error("int", "string", name))
    return out


def _all_lengths_fine(values, max_bytes: int) -> bool:
    """True when every id of a null-free Arrow string array is 1 to ``max_bytes`` bytes long, read
    off the offsets buffer with NumPy (a few microseconds whatever the size, where the compute
    kernels cost tens of microseconds per call on a small batch). False means: look closer."""
    dtype = _OFFSET_TYPES.get(type(values))
    if dtype is None or values.null_count:
        return False
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=dtype, count=n + 1, offset=values.offset * dtype().itemsize)
    lengths = offsets[1:] - offsets[:-1]
    return bool(lengths.min() > 0) and bool(lengths.max() <= max_bytes)


def id_kind(ids) -> str:
    """``"string"`` for Arrow arrays and NumPy ``object``/``str`` arrays (string ids), ``"int"`` for
    NumPy/CuPy integer arrays."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        return "string"
    return "string" if isinstance(ids, np.ndarray) and ids.dtype.kind in "OUS" else "int"


def vertex_column(ids):
    """Ranked vertex ids as an output column (Parquet snapshots, Arrow rank messages): an int64
    array, or for string ids an Arrow string array."""
    if id_kind(ids) == "string":
        return to_string_array(ids)
    return np.asarray(ids).astype(np.int64, copy=False)


def concat_ids(parts: list):
    """Concatenate id arrays of one kind: NumPy arrays (int64, or ``object`` arrays of ``str``) with
    NumPy, Arrow string arrays (or a mix of Arrow and NumPy string arrays) into one Arrow array."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts)
    parts = [to_string_array(p) for p in parts]
    if any(p.type != parts[0].type for p in parts):
        parts = [p.cast(pa.large_string()) for p in parts]
    return pa.concat_arrays(parts)


class IdTypeLock:
    """The id type of one stream: declared, or fixed by the first id admitted.

    Parameters
    ----------
    id_type : {"auto", "int", "string"}
    """

    def __init__(self, id_type: str = "auto"):
        check_id_type(id_type)
        self.kind = None if id_type == "auto" else id_type

    @property
    def current(self) -> str:
        """``"int"``, ``"string"``, or ``"auto"`` while nothing fixed it."""
        return self.kind or "auto"

    def admit(self, kind: str, name: str = "id") -> None:
        """Accept ids of ``kind`` (fixing the type when it is not yet fixed).

        Raises
        ------
        IdError
            ``mixed_id_types`` when ``kind`` differs from the stream's type.
        """
        if self.kind is None:
            self.kind = kind
        elif kind != self.kind:
            raise mixed_error(kind, self.kind, name)
