"""Counts and bad-line records of one pass over an edge file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: Default number of bad-line records kept in a report (the counts stay exact).
DEFAULT_MAX_BAD_KEPT = 1_000

#: Characters of a bad line's text kept in its record.
TEXT_KEPT = 200


@dataclass(frozen=True)
class BadLine:
    """One rejected line (or Parquet row).

    Attributes
    ----------
    line : int
        1-based line number in the (decompressed) file; for Parquet the 1-based row number.
    reason : str
        Why it was rejected.
    text : str
        The original text, truncated to :data:`TEXT_KEPT` characters.
    code : str or None
        The dead-letter reason code (:data:`connectors.records.REASONS`) where the parser gave
        one (string-id checks do); ``None`` otherwise.
    """

    line: int
    reason: str
    text: str
    code: str | None = None


@dataclass
class ReadReport:
    """Counts and bad-line records of one pass over an edge file.

    Attributes
    ----------
    path : pathlib.Path
        The file.
    format : str
        One of :data:`FORMATS`.
    good : int
        Edges read (before any ordering).
    bad : int
        Lines (Parquet: rows) rejected; exact even when ``bad_lines`` is capped.
    skipped : int
        Comment and blank lines (text formats).
    bad_lines : list of BadLine
        The first ``max_kept`` rejected lines, in file order.
    max_kept : int
        Cap on ``bad_lines``.
    has_ts : bool or None
        Whether the file has timestamps (``None`` until known).
    id_type : {"int", "string"} or None
        The file's vertex id type once known (declared or detected).
    sorted_input : bool or None
        Whether the timestamps were already in non-decreasing order (``None`` when not
        checked: no timestamps, ``keep_order=True``, or no rows).
    runs : int
        Sorted runs spilled to disk while ordering (0 when ordered in memory).
    columns : str or None
        One line on the layout read: delimiter, header, the column of each role, and the columns
        present but not used.
    unused_columns : list of str
        Columns (fields) present in the file and not used.
    """

    path: Path
    format: str
    good: int = 0
    bad: int = 0
    skipped: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    max_kept: int = DEFAULT_MAX_BAD_KEPT
    has_ts: bool | None = None
    id_type: str | None = None
    sorted_input: bool | None = None
    runs: int = 0
    columns: str | None = None
    unused_columns: list[str] = field(default_factory=list)

    @property
    def unit(self) -> str:
        """``"row"`` for Parquet, ``"line"`` otherwise."""
        return "row" if self.format == "parquet" else "line"

    def add_bad(self, bad: BadLine) -> None:
        """Count a rejected line and keep its record while under the cap."""
        self.bad += 1
        if len(self.bad_lines) < self.max_kept:
            self.bad_lines.append(bad)

    def describe_bad(self, bad: BadLine) -> str:
        """``file:line: reason (text)`` for a text file, ``file: row N: reason (values)`` for Parquet."""
        where = f"{self.path}: row {bad.line}" if self.format == "parquet" else f"{self.path}:{bad.line}"
        return f"{where}: {bad.reason} ({bad.text})"

    def summary(self) -> str:
        """One line for logs: counts and the first few bad lines."""
        text = f"{self.path.name}: {self.good} edges, {self.bad} bad {self.unit}s, {self.skipped} skipped"
        if self.bad_lines:
            shown = "; ".join(f"{self.unit} {b.line}: {b.reason}" for b in self.bad_lines[:3])
            more = " ..." if self.bad > 3 else ""
            text += f" ({shown}{more})"
        return text


def _bad(line: int, reason: str, raw: bytes | str, code: str | None = None) -> BadLine:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    return BadLine(line, reason, raw.rstrip("\r\n")[:TEXT_KEPT], code)


class _Bad(Exception):
    """A line is rejected; internal to the line-by-line parsers (``code``: the reason code, if known)."""

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        self.code = code
