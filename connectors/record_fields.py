"""Which fields of an edge message hold its src, dst, op and weight (:class:`RecordFields`).

The daemon's ``src_column``, ``dst_column``, ``op_column`` and ``weight_column`` settings
(``serve --src/--dst/--op/--weight``) name them for Kafka records as they name the columns of edge
files; a weighted stream (``weighted``) reads a weight field (default ``weight``); the decoders
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
    weight : str or None
        Field name of the weight in a weighted stream (None: records carry no weight, every insert
        weighs 1); must be None in an unweighted stream, whose weights are never read.
    weighted : bool
        Whether the stream is weighted (:mod:`connectors.weights`).

    Raises
    ------
    InvalidArgumentError
        For a name that is not a non-empty string, two fields of one name, or a weight field in
        an unweighted stream.
    """

    src: str = "src"
    dst: str = "dst"
    op: str | None = "op"
    weight: str | None = None
    weighted: bool = False

    def __post_init__(self):
        if not isinstance(self.weighted, bool):
            raise InvalidArgumentError(f"weighted must be True or False, got {self.weighted!r}")
        if self.weight is not None and not self.weighted:
            raise InvalidArgumentError(f"a weight field ({self.weight!r}) in an unweighted stream: weights are read "
                                       "only with --weighted (or --multi-edges sum)")
        for what, name in (("src", self.src), ("dst", self.dst), ("op", self.op), ("weight", self.weight)):
            if name is None and what in ("op", "weight"):
                continue
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"the {what} field name must be a non-empty string, got {name!r}")
        named = [n for n in (self.src, self.dst, self.op, self.weight) if n is not None]
        if len(set(named)) != len(named):
            raise InvalidArgumentError(f"src, dst, op and weight name the same field ({self.src!r}, {self.dst!r}, "
                                       f"{self.op!r}, {self.weight!r})")

    @property
    def is_default(self) -> bool:
        """Whether these are the usual names ``src``, ``dst``, ``op``."""
        return self == DEFAULT_FIELDS

    @classmethod
    def from_settings(cls, src=None, dst=None, op=None, weight=None, *, weighted: bool = False) -> "RecordFields":
        """From the daemon's ``src_column``, ``dst_column``, ``op_column``, ``weight_column`` and
        ``weighted`` (None: the usual name; ``op`` or ``weight`` ``"none"``: no such field).

        Raises
        ------
        InvalidArgumentError
            For a column number (Kafka records are read by field name), a bad name, or a weight
            field named for an unweighted stream.
        """
        for flag, value in (("--src", src), ("--dst", dst), ("--op", op), ("--weight", weight)):
            if value is not None and str(value).strip().isdigit():
                raise InvalidArgumentError(
                    f"{flag} {value}: Kafka records are read by field name (JSON objects, Arrow columns); "
                    "CSV messages keep the order src,dst,op")
        op_name = "op" if op is None else (None if str(op).strip().lower() == "none" else str(op))
        if weight is not None and not weighted:
            raise InvalidArgumentError(f"--weight {weight}: the stream is unweighted; pass --weighted (or "
                                       "--multi-edges sum) to read weights")
        weight_name = None
        if weighted:
            weight_name = "weight" if weight is None else (None if str(weight).strip().lower() == "none" else str(weight))
        return cls("src" if src is None else str(src), "dst" if dst is None else str(dst), op_name, weight_name,
                   bool(weighted))


#: The usual field names.
DEFAULT_FIELDS = RecordFields()
