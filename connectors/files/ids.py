"""Vertex ids of one file: integers or strings (:mod:`streamrank.ids.kinds`), per line and per column.

:class:`IdSpec` holds the file's id type (declared, or fixed in ``"auto"`` mode by the first data
line, see each format's module) and the length limit, and parses ids for the line-by-line path
and checks whole columns for the fast path, with the same reasons.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from streamrank.ids.kinds import (DEFAULT_MAX_ID_BYTES, IdError, IdTypeLock, check_id_type, check_max_id_bytes,
                                   check_string_id, mixed_error, string_id_problems, text_kind)

from .fields import _parse_id
from .report import _Bad


class IdSpec:
    """The id type and limits of one pass over a file.

    Parameters
    ----------
    id_type : {"auto", "int", "string"}
    max_id_bytes : int
    stream_kind : {"int", "string"}, optional
        In ``"auto"`` mode, the kind the stream (e.g. earlier files of a directory) already has.
    """

    def __init__(self, id_type: str = "auto", max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
                 stream_kind: str | None = None):
        self.declared = check_id_type(id_type)
        self.max_bytes = check_max_id_bytes(max_id_bytes)
        self.lock = IdTypeLock(id_type)
        if stream_kind is not None:
            self.lock.admit(check_id_type(stream_kind, "stream_kind"))

    @property
    def kind(self) -> str | None:
        """``"int"``, ``"string"``, or ``None`` while not fixed."""
        return self.lock.kind

    @property
    def auto(self) -> bool:
        """Whether the type was detected (then text that looks like the other kind is rejected)."""
        return self.declared == "auto"

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.string() if self.kind == "string" else pa.int64()

    def fix_from_text(self, token) -> None:
        """Fix the type from a text id (``str`` or ``bytes``) when it is not fixed yet (a blank one,
        a missing field, fixes nothing)."""
        if self.kind is None and token is not None and token.strip():
            self.lock.admit(text_kind(token))

    def fix_from_json(self, value) -> None:
        """Fix the type from a JSON id (an integer or a string) when it is not fixed yet."""
        if self.kind is None:
            if isinstance(value, int) and not isinstance(value, bool):
                self.lock.admit("int")
            elif isinstance(value, str) and value.strip():
                self.lock.admit(text_kind(value))

    # ------------------------------------------------------------------ line-by-line path
    def parse_text(self, token, name: str):
        """An id from a text token (``bytes`` or ``str``, surrounding whitespace dropped); raises
        :class:`_Bad`."""
        if self.kind == "int":
            if self.auto and token is not None and token.strip() and text_kind(token) == "string":
                raise _bad_of(mixed_error("string", "int", name, token.strip()))
            return _parse_id(token, name)
        if token is None:
            raise _Bad(f"missing {name}", code="missing_field")
        return self._string(token.strip(), name)

    def parse_json(self, value, name: str):
        """An id from a JSON value (strings verbatim in string mode); raises :class:`_Bad`."""
        if self.kind == "int":
            if self.auto and isinstance(value, str) and value.strip() and text_kind(value) == "string":
                raise _bad_of(mixed_error("string", "int", name, value))
            return _parse_id(value.encode("utf-8", "replace") if isinstance(value, str) else value, name)
        if isinstance(value, int) and not isinstance(value, bool):
            raise _bad_of(mixed_error("int", "string", name, value))
        if not isinstance(value, str):
            raise _Bad(f"{name} id {value!r} is not a string", code="mixed_id_types")
        return self._string(value, name)

    def _string(self, token, name: str) -> str:
        try:
            value = check_string_id(token, max_bytes=self.max_bytes, name=name)
        except IdError as exc:
            raise _bad_of(exc) from None
        if self.auto and text_kind(value) == "int":
            raise _bad_of(mixed_error("int", "string", name, value))
        return value

    # ------------------------------------------------------------------ column-wise
    def string_column(self, column, name: str, *, trim: bool) -> pa.Array | None:
        """A string id column with every value good (trimmed when ``trim``), or ``None``."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.null_count:
            return None
        if trim:
            column = pc.utf8_trim_whitespace(column)
        if string_id_problems(column, max_bytes=self.max_bytes, name=name, auto=self.auto):
            return None
        return column

    def column_problems(self, column: pa.Array, name: str) -> dict:
        """``{row: (reason code, text)}`` of a typed (Arrow/Parquet) string column: taken verbatim."""
        return {row: (e.reason, e.detail)
                for row, e in string_id_problems(column, max_bytes=self.max_bytes, name=name).items()}


def _bad_of(exc: IdError) -> _Bad:
    return _Bad(exc.detail, code=exc.reason)
