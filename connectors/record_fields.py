"""Which fields of an edge message hold its src, dst and op (:class:`RecordFields`).

The daemon's ``src_column``, ``dst_column`` and ``op_column`` settings (``serve --src/--dst/--op``)
name them for Kafka records as they name the columns of edge files; the decoders
(:mod:`connectors.records`, :mod:`connectors.batch_decode`) read JSON objects and Arrow IPC
columns by these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamrank.errors import InvalidArgumentError


@dataclass(frozen=True)
class RecordFields:
    """The names of an edge's fields in JSON objects and Arrow IPC columns.

    Parameters
    ----------
    src, dst : str
        Field names of the endpoints (default ``"src"``, ``"dst"``).
    op : str or None
        Field name of the op (default ``"op"``); None: messages carry no op, every edge is an
        insertion (a field of any name is then ignored).

    Raises
    ------
    InvalidArgumentError
        For a name that is not a non-empty string, or two fields of one name.
    """

    src: str = "src"
    dst: str = "dst"
    op: str | None = "op"

    def __post_init__(self):
        for what, name in (("src", self.src), ("dst", self.dst), ("op", self.op)):
            if name is None and what == "op":
                continue
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"the {what} field name must be a non-empty string, got {name!r}")
        named = [n for n in (self.src, self.dst, self.op) if n is not None]
        if len(set(named)) != len(named):
            raise InvalidArgumentError(f"src, dst and op name the same field ({self.src!r}, {self.dst!r}, {self.op!r})")

    @property
    def is_default(self) -> bool:
        """Whether these are the usual names ``src``, ``dst``, ``op``."""
        return self == DEFAULT_FIELDS

    @classmethod
    def from_settings(cls, src=None, dst=None, op=None) -> "RecordFields":
        """From the daemon's ``src_column``, ``dst_column``, ``op_column`` (None: the usual name;
        ``op`` ``"none"``: no op field).

        Raises
        ------
        InvalidArgumentError
            For a column number (Kafka records are read by field name) or a bad name.
        """
        for flag, value in (("--src", src), ("--dst", dst), ("--op", op)):
            if value is not None and str(value).strip().isdigit():
                raise InvalidArgumentError(
                    f"{flag} {value}: Kafka records are read by field name (JSON objects, Arrow columns); "
                    "CSV messages keep the order src,dst,op")
        op_name = "op" if op is None else (None if str(op).strip().lower() == "none" else str(op))
        return cls("src" if src is None else str(src), "dst" if dst is None else str(dst), op_name)


#: The usual field names.
DEFAULT_FIELDS = RecordFields()
