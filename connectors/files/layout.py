"""Column layout of an edge file: which columns hold src, dst, ts, op and weight, stated or detected.

A :class:`Layout` is what the user said (``--src COL --dst COL --ts COL --op COL --weight COL``,
``--header`` / ``--no-header``, ``--delimiter``, ``--weighted``); every part left out is detected
from the file's first lines by
:func:`resolve_text_layout` (text files) or matched against the field names (Parquet, JSON lines).

Columns are given by name (matched without regard to case) or by 1-based position (``"3"`` or
``3``, as ``cut -f`` counts). ``ts="none"`` replays in file order; ``op="none"`` treats every row
as an insert. Without a stated column, a role takes the column named like it (``src``, ``dst``,
``ts``, ``op``) or one of its common other names (:data:`ALIASES`); a headerless file has src and
dst in columns 1 and 2 and its timestamp in column 3 when it has exactly three columns.

Weights are read only from a weighted stream's files (``Layout(weighted=True)``): the column named
``weight`` (or ``weights``), or the one ``--weight`` names; a headerless file has no weight column
unless ``--weight N`` names one (its third column is a timestamp, never a weight). A weighted file
without a weight column weighs every insert 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from streamrank.errors import InvalidArgumentError, SourceError

#: The roles a column can play, in output order.
ROLES = ("src", "dst", "ts", "op", "weight")

#: Column names taken for a role when the user names none (the role's own name first).
ALIASES = {
    "src": ("src", "source", "from", "sender", "u"),
    "dst": ("dst", "target", "to", "receiver", "v", "destination"),
    "ts": ("ts", "time", "timestamp", "unixtime", "datetime", "date"),
    "op": ("op", "operation", "action"),
    "weight": ("weight", "weights"),
}

#: Delimiters by the names the ``--delimiter`` flag accepts; ``"space"`` is any run of blanks.
DELIMITERS = {",": ",", "comma": ",", "\t": "\t", "tab": "\t", "\\t": "\t", ";": ";", "semicolon": ";",
              "|": "|", "pipe": "|", " ": " ", "space": " ", "whitespace": " "}

_NONE = "none"
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_NUM_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_ISO_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SNIFF_LINES = 200


def _column_spec(value, role: str):
    """A column given for ``role``: ``None`` (detect), ``"none"`` (no column), an int position or a name."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"--{role}: give a column name or a 1-based column number, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise InvalidArgumentError(f"--{role} {value}: column numbers start at 1")
        return value
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"--{role}: give a column name or a 1-based column number, got {value!r}")
    text = value.strip()
    if text.lower() == _NONE:
        if role in ("src", "dst"):
            raise InvalidArgumentError(f"--{role} none: every edge needs a {role} column")
        return _NONE
    if text.isdigit():
        return _column_spec(int(text), role)
    return text.lower()


@dataclass(frozen=True)
class Layout:
    """What the user stated about a file's columns (``None`` everywhere: detect it all).

    Parameters
    ----------
    header : bool, optional
        Whether the first (non-comment) line names the columns; ``None`` detects it.
    delimiter : str, optional
        One of :data:`DELIMITERS` (``","``, ``"tab"``, ``";"``, ``"|"``, ``"space"``); ``None``
        detects it.
    src, dst, ts, op, weight : str or int, optional
        Column name or 1-based position; ``"none"`` for ``ts`` (file order), ``op`` (all
        inserts) or ``weight`` (every insert weighs 1).
    weighted : bool, optional
        Whether weights are read (default False: no weight column is looked for or parsed, and
        ``weight`` must be left out).

    Raises
    ------
    InvalidArgumentError
        For a column given twice, a bad column or delimiter, or a weight column of an unweighted
        stream.
    """

    header: bool | None = None
    delimiter: str | None = None
    src: str | int | None = None
    dst: str | int | None = None
    ts: str | int | None = None
    op: str | int | None = None
    weight: str | int | None = None
    weighted: bool = False

    def __post_init__(self):
        if not isinstance(self.weighted, bool):
            raise InvalidArgumentError(f"weighted must be True or False, got {self.weighted!r}")
        if self.weight is not None and not self.weighted:
            raise InvalidArgumentError(f"--weight {self.weight}: the stream is unweighted; pass --weighted (or "
                                       "--multi-edges sum) to read weights")
        if self.header is not None and not isinstance(self.header, bool):
            raise InvalidArgumentError(f"header must be True, False or None, got {self.header!r}")
        if self.delimiter is not None:
            key = self.delimiter if self.delimiter in DELIMITERS else str(self.delimiter).lower()
            if key not in DELIMITERS:
                raise InvalidArgumentError(
                    f"--delimiter {self.delimiter!r}: expected one of comma, tab, semicolon, pipe, space "
                    "(or the character itself)")
            object.__setattr__(self, "delimiter", DELIMITERS[key])
        for role in ROLES:
            object.__setattr__(self, role, _column_spec(getattr(self, role), role))
        given = [(r, getattr(self, r)) for r in ROLES if getattr(self, r) not in (None, _NONE)]
        seen: dict = {}
        for role, col in given:
            if col in seen:
                raise InvalidArgumentError(f"--{seen[col]} and --{role} both name column {col!r}")
            seen[col] = role

    @property
    def is_default(self) -> bool:
        """Whether nothing was stated about the columns (``weighted`` aside)."""
        return self == Layout(weighted=self.weighted)

    def roles(self) -> tuple:
        """The roles a column is looked for: :data:`ROLES`, without ``weight`` when unweighted."""
        return ROLES if self.weighted else ROLES[:-1]

    def names(self) -> set[str]:
        """Column names the user gave (lower case)."""
        return {v for r in ROLES if isinstance(v := getattr(self, r), str) and v != _NONE}


@dataclass
class TextLayout:
    """The resolved layout of a text file.

    Attributes
    ----------
    delimiter : str
        ``","``, ``"\\t"``, ``";"``, ``"|"`` or ``" "`` (runs of blanks).
    header : bool
    columns : list of str
        Column names (header names, or ``"column N"`` without a header).
    index : dict
        Role -> 0-based column index for the roles present.
    ts_kind : {"int", "float", "iso"} or None
        How the timestamps are written (``None``: no ts column).
    first_line : int
        1-based number of the first line after the header (1 without a header).
    comments : bool
        Whether lines starting with ``#`` or ``%`` are comments (blank-separated and tab files).
    """

    delimiter: str
    header: bool
    columns: list[str]
    index: dict
    ts_kind: str | None
    first_line: int = 1
    comments: bool = True
    unused: list[str] = field(default_factory=list)

    @property
    def ncols(self) -> int:
        return len(self.columns)

    def split(self, text: str) -> list[str]:
        """Fields of one line (no quoting in blank-separated files)."""
        if self.delimiter == " ":
            return text.split()
        import csv

        return next(csv.reader([text], delimiter=self.delimiter))

    def describe(self) -> str:
        """One line: the columns used and those left unused."""
        delim = {" ": "blank", "\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}[self.delimiter]
        used = ", ".join(f"{r}={self.columns[i]}" for r, i in self.index.items())
        text = f"{delim}-separated, {'header' if self.header else 'no header'}, {used}"
        if self.ts_kind is not None:
            text += f" ({_TS_WORDS[self.ts_kind]})"
        if self.unused:
            text += "; not used: " + ", ".join(self.unused)
            if "ts" not in self.index:
                text += " (no ts column: edges replay in file order; pass --ts COL to order them by time)"
        elif "ts" not in self.index:
            text += "; no ts column: edges replay in file order"
        return text


_TS_WORDS = {"int": "integer timestamps", "float": "fractional timestamps", "iso": "ISO-8601 timestamps"}


def is_comment(text: str) -> bool:
    return text[:1] in ("#", "%")


def _is_number(text: str) -> bool:
    return bool(_NUM_RE.match(text.strip()))


def ts_kind_of(text: str) -> str | None:
    """``"int"``, ``"float"`` or ``"iso"`` for one timestamp token, ``None`` when it is none of these."""
    text = text.strip()
    if _INT_RE.match(text):
        return "int"
    if _NUM_RE.match(text):
        return "float"
    if _ISO_RE.match(text):
        return "iso"
    return None


def _detect_delimiter(lines: list[str]) -> str:
    """The first of comma, tab, semicolon and pipe found in the first line the same number of times on the
    next lines; blanks when none is. Tabs next to blanks are taken as blanks (the file aligns columns)."""
    first = lines[0]
    candidates = [d for d in (",", "\t", ";", "|") if d in first]
    if "\t" in candidates and any(f != f.strip(" ") for line in lines[:20] for f in line.split("\t")):
        candidates.remove("\t")
    for delim in candidates:
        if all(line.count(delim) == first.count(delim) for line in lines[1:5]):
            return delim
    return candidates[0] if candidates else " "


def resolve_text_layout(head: str, layout: Layout, path, *, default_header: bool | None = None) -> TextLayout | None:
    """Resolve ``layout`` against the first lines of a text file.

    Parameters
    ----------
    head : str
        The file's first lines (decoded).
    layout : Layout
    path : path-like
        For messages.
    default_header : bool, optional
        The header rule of the format when nothing tells (used only for an all-text first line).

    Returns
    -------
    TextLayout or None
        ``None`` when the file has no data line (empty, or only comments/blank lines).

    Raises
    ------
    SourceError
        If the columns cannot be told or a stated column is not in the file; the message names the
        flag and the file.
    """
    raw_lines = head.split("\n")
    numbered = [(k + 1, line.rstrip("\r")) for k, line in enumerate(raw_lines[:-1] if len(raw_lines) > 1 else raw_lines)]
    delimiter = layout.delimiter
    if delimiter is None:
        probe = [t for _, t in numbered if t.strip() and not is_comment(t)][:_SNIFF_LINES]
        if not probe:
            return None
        delimiter = _detect_delimiter(probe)
    comments = delimiter in (" ", "\t")
    data = [(n, t) for n, t in numbered if t.strip() and not (comments and is_comment(t))][:_SNIFF_LINES]
    if not data:
        return None
    probe_layout = TextLayout(delimiter, False, [], {}, None, comments=comments)
    try:
        rows = [(n, probe_layout.split(t)) for n, t in data]
    except Exception as exc:  # csv.Error on text that is not delimited
        raise SourceError(f"{path}: line {data[0][0]}: cannot split the line into columns: {exc}") from exc
    first_no, first = rows[0]
    header = layout.header
    if header is None:
        header = _looks_like_header(first, rows[1:2], layout, default_header)
    if header:
        columns = [c.strip().lower() for c in first]
        body = rows[1:]
        if not any(columns):
            raise SourceError(f"{path}: line {first_no}: the header is empty")
    else:
        columns = [f"column {k + 1}" for k in range(_usual_count(rows))]
        body = rows
    index = _role_index(columns, header, layout, path, first_no)
    unused = [columns[k] for k in range(len(columns)) if k not in index.values()]
    ts_kind = None
    if "ts" in index:
        ts_kind = _ts_kind(body, index["ts"], path)
    first_line = first_no + 1 if header else 1
    return TextLayout(delimiter, header, columns, index, ts_kind, first_line, comments, unused)


def _usual_count(rows: list) -> int:
    """The most common field count of the sampled lines (the earliest on a tie)."""
    counts: dict = {}
    for _, fields in rows:
        counts[len(fields)] = counts.get(len(fields), 0) + 1
    return max(counts, key=lambda n: (counts[n], -[len(f) for _, f in rows].index(n)))


def _looks_like_header(first: list[str], nxt: list, layout: Layout, default: bool | None) -> bool:
    names = {c.strip().lower() for c in first}
    if names & layout.names() or any(names & set(a) for a in ALIASES.values()):
        return True
    if not default or all(_is_number(c) or not c.strip() for c in first):
        return False
    if nxt:
        second = nxt[0][1]
        if len(second) == len(first) and any(not _is_number(a) and _is_number(b) for a, b in zip(first, second)):
            return True
        return False
    return bool(default)


def _role_index(columns: list[str], header: bool, layout: Layout, path, line: int) -> dict:
    index: dict = {}
    for role in layout.roles():
        spec = getattr(layout, role)
        if spec == _NONE:
            continue
        if isinstance(spec, int):
            if spec > len(columns):
                raise SourceError(f"--{role} {spec}: {path} has {len(columns)} column(s) (line {line})")
            index[role] = spec - 1
        elif isinstance(spec, str):
            if not header:
                raise SourceError(
                    f"--{role} {spec!r} names a column, but {path} has no header (line {line} is data); "
                    f"give a column number (1 to {len(columns)}) or pass --header")
            if spec not in columns:
                raise SourceError(f"--{role} {spec!r}: no such column in the header of {path} "
                                  f"(line {line}: {', '.join(columns)})")
            index[role] = columns.index(spec)
        elif header:
            for alias in ALIASES[role]:
                if alias in columns and columns.index(alias) not in index.values():
                    index[role] = columns.index(alias)
                    break
        else:
            default = {"src": 0, "dst": 1, "ts": 2 if len(columns) == 3 else None}.get(role)
            if default is not None and default < len(columns) and default not in index.values():
                index[role] = default
    missing = [r for r in ("src", "dst") if r not in index]
    if missing:
        raise SourceError(
            f"{path}: line {line}: the header {columns} lacks column(s) {missing}; name them with "
            + " ".join(f"--{r} COL" for r in missing) + " (a header name or a 1-based column number)"
            + (f", or pass --no-header if line {line} is data" if header else ""))
    if header:
        dupes = sorted({c for c in columns if c and columns.count(c) > 1 and columns.index(c) in index.values()})
        if dupes:
            raise SourceError(f"{path}: line {line}: the header repeats column(s) {dupes}")
    return dict(sorted(index.items(), key=lambda kv: ROLES.index(kv[0])))


def _ts_kind(body: list, k: int, path) -> str | None:
    kinds = []
    for _, fields in body:
        if k < len(fields) and fields[k].strip():
            kind = ts_kind_of(fields[k])
            if kind is not None:
                kinds.append(kind)
    if not kinds:
        return "int"
    if "iso" in kinds and kinds[0] == "iso":
        return "iso"
    return "float" if "float" in kinds else "int"


def resolve_fields(names: list[str], layout: Layout, path, *, what: str = "field") -> tuple[dict, list[str]]:
    """Role -> field name for a file with named fields (Parquet columns, JSON keys).

    Returns the mapping and the names not used. Positions count the fields in order.
    """
    lower = [n.lower() for n in names]
    index: dict = {}
    for role in layout.roles():
        spec = getattr(layout, role)
        if spec == _NONE:
            continue
        if isinstance(spec, int):
            if spec > len(names):
                raise SourceError(f"--{role} {spec}: {path} has {len(names)} {what}(s): {', '.join(names)}")
            index[role] = names[spec - 1]
        elif isinstance(spec, str):
            if spec not in lower:
                raise SourceError(f"--{role} {spec!r}: {path} has no {what} of that name "
                                  f"(it has: {', '.join(names)})")
            index[role] = names[lower.index(spec)]
        else:
            for alias in ALIASES[role]:
                if alias in lower and names[lower.index(alias)] not in index.values():
                    index[role] = names[lower.index(alias)]
                    break
    missing = [r for r in ("src", "dst") if r not in index]
    if missing:
        raise SourceError(
            f"{path}: lacks {what}(s) {missing} (has {names}); name them with "
            + " ".join(f"--{r} NAME" for r in missing))
    unused = [n for n in names if n not in index.values()]
    return dict(sorted(index.items(), key=lambda kv: ROLES.index(kv[0]))), unused
