"""Field parsing of the line-by-line path: ids, timestamps and ops from text tokens or JSON values."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

import numpy as np

from streamrank.batch import MAX_VERTEX_ID, parse_op
from streamrank.errors import BatchFormatError

from ..weights import BAD_WEIGHT, WeightError, parse_weight
from .report import _Bad

_TS_RANGE = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
_ID_RE = re.compile(rb"[0-9]+\Z")
_NEG_RE = re.compile(rb"-[0-9]+\Z")
_TS_RE = re.compile(rb"-?[0-9]+\Z")
_FLOAT_RE = re.compile(rb"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?:\.[0-9]*)?[eE][+-]?[0-9]+)\Z")


def _parse_int(token: bytes | str | int | None, *, missing: str, label: str, signed: bool) -> int:
    """An integer from a text token or a JSON value (the checks ids and timestamps share).

    ``missing`` and ``label`` name the field in the reasons; a text token with a sign is
    rejected as negative unless ``signed``. Raises :class:`_Bad`.
    """
    if token is None or token == b"" or token == "":
        raise _Bad(f"missing {missing}")
    if isinstance(token, bool) or isinstance(token, float):
        raise _Bad(f"non-integer {label} {token!r}")
    if isinstance(token, int):
        return token
    raw = token.strip() if isinstance(token, bytes) else token.strip().encode("utf-8", "replace")
    if not signed and _NEG_RE.match(raw):
        raise _Bad(f"negative {label} {raw.decode()}")
    if not (_TS_RE if signed else _ID_RE).match(raw):
        raise _Bad(f"non-integer {label} {raw.decode('utf-8', 'replace')[:40]!r}")
    return int(raw)


def _parse_id(token: bytes | str | int | None, name: str) -> int:
    """A vertex id from a text token or a JSON value; raises :class:`_Bad`."""
    value = _parse_int(token, missing=name, label=f"{name} id", signed=False)
    if value < 0:
        raise _Bad(f"negative {name} id {value}")
    if value > MAX_VERTEX_ID:
        raise _Bad(f"{name} id {value} beyond int64")
    return value


def _parse_ts(token: bytes | str | int | None) -> int:
    """An integer timestamp from a text token or a JSON value; raises :class:`_Bad`."""
    value = _parse_int(token, missing="ts", label="ts", signed=True)
    if not _TS_RANGE[0] <= value <= _TS_RANGE[1]:
        raise _Bad(f"ts {value} beyond int64")
    return value


def _parse_ts_as(token: bytes | str | int | float | None, kind: str | None) -> int | float:
    """A timestamp written as ``kind`` (``"int"``, ``"float"`` seconds or ``"iso"`` 8601); raises
    :class:`_Bad`. Fractional and ISO timestamps come back as float seconds since the Unix epoch
    (ISO times without a zone are taken as UTC)."""
    if kind in (None, "int"):
        if isinstance(token, float) or (isinstance(token, (bytes, str)) and _FLOAT_RE.match(_as_bytes(token).strip())):
            raise _Bad(f"fractional ts {_show(token)} in a file of integer timestamps "
                       "(the first lines have integer ts)")
        return _parse_ts(token)
    if token is None or token == b"" or token == "":
        raise _Bad("missing ts")
    if isinstance(token, bool):
        raise _Bad(f"bad ts {token!r}")
    if isinstance(token, (int, float)):
        value = float(token)
    else:
        text = _as_bytes(token).strip().decode("utf-8", "replace")
        if _FLOAT_RE.match(text.encode()) or _TS_RE.match(text.encode()):
            value = float(text)
        elif kind == "iso":
            value = _iso_seconds(text)
        else:
            raise _Bad(f"non-numeric ts {text[:40]!r}")
    if not math.isfinite(value):
        raise _Bad(f"ts {_show(token)} is not finite")
    return value


def _iso_seconds(text: str) -> float:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise _Bad(f"bad ISO-8601 ts {text[:40]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def _as_bytes(token) -> bytes:
    return token if isinstance(token, bytes) else token.encode("utf-8", "replace")


def _show(token) -> str:
    if isinstance(token, bytes):
        return token.strip().decode("utf-8", "replace")[:40]
    return str(token).strip()[:40]


def _parse_op_field(value: Any) -> int:
    try:
        return 1 if parse_op(value) else -1
    except BatchFormatError as exc:
        raise _Bad(f"unknown op {value!r}") from exc


def _parse_weight_field(value: Any, op: int, *, text: bool = False) -> float:
    """A weight from a text field (``text``) or a JSON value, for a row of op ``op`` (+1/-1);
    raises :class:`_Bad` with code ``bad_weight``."""
    try:
        return parse_weight(value, insert=op > 0, text=text)
    except WeightError as exc:
        raise _Bad(str(exc), code=BAD_WEIGHT) from None
