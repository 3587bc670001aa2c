"""Text input: opening (gzip detected by content), blocks of lines, and the block parser."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from .report import _Bad, _bad
from .table import _Parsed, _rows_table

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_READ_BYTES = 1 << 24
_MIN_READ_BYTES = 1 << 16
_UTF8_BOM = b"\xef\xbb\xbf"


def _line_count(block: bytes) -> int:
    return block.count(b"\n") + (0 if not block or block.endswith(b"\n") else 1)


def _split_lines(block: bytes) -> list[bytes]:
    lines = block.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _parse_blocks(
    blocks: Iterator[tuple[int, bytes]],
    *,
    fast: Callable[[bytes], pa.Table | None],
    parse_line: Callable[[bytes], tuple | None],
    has_ts: Callable[[], bool],
    ts_type: pa.DataType | None = None,
    weighted: bool = False,
) -> Iterator[_Parsed]:
    """Parse ``(first line number, block)`` pairs of a text file.

    A block is parsed by ``fast`` (a table, or ``None`` when anything in it is off); failing
    that, line by line with ``parse_line`` (a row tuple, ``None`` for a line to skip, or
    :class:`_Bad`), recording every bad line. ``has_ts()`` is asked once the lines are parsed;
    ``weighted``: rows carry a weight after the op.
    """
    for first_line, block in blocks:
        table = fast(block)
        if table is not None:
            yield _Parsed(table, [], _line_count(block) - table.num_rows)
            continue
        rows, bad, skipped = [], [], 0
        for offset, raw in enumerate(_split_lines(block)):
            try:
                row = parse_line(raw)
            except _Bad as exc:
                bad.append(_bad(first_line + offset, str(exc), raw, exc.code))
                continue
            if row is None:
                skipped += 1
            else:
                rows.append(row)
        yield _Parsed(_rows_table(rows, has_ts(), ts_type, weighted), bad, skipped)


def _open_binary(path: Path):
    """Open ``path`` for reading bytes, decompressing gzip (detected by magic bytes)."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb")


def _line_blocks(stream, *, max_lines: int, first_line: int = 1) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number of the first line, block)`` with at most ``max_lines`` lines each.

    Blocks end at a newline except possibly the last one. Reads fixed-size byte blocks and cuts
    them at newline positions found with NumPy (no per-line Python work).
    """
    read_bytes = min(max(max_lines * 48, _MIN_READ_BYTES), _MAX_READ_BYTES)
    parts, pending, line_no = [], 0, first_line
    while True:
        data = stream.read(read_bytes)
        if data:
            parts.append(data)
            pending += data.count(b"\n")
            if pending < max_lines:
                continue
        buf = b"".join(parts)
        start = 0
        if pending >= max_lines:
            newlines = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            for k in range(max_lines - 1, len(newlines), max_lines):
                end = int(newlines[k]) + 1
                yield line_no, buf[start:end]
                line_no += max_lines
                start = end
        rest = buf[start:]
        if not data:
            if rest:
                yield line_no, rest
            return
        parts, pending = [rest], rest.count(b"\n")


_HEAD_BYTES = 1 << 16
_HEAD_MAX_BYTES = 1 << 22


class _Prefixed:
    """A binary stream whose first bytes were already read (``head``): reads give them back first."""

    def __init__(self, head: bytes, stream):
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0:
                data, self._head = self._head + self._stream.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._stream.read(size)

    def close(self) -> None:
        self._stream.close()


def _read_head(stream) -> bytes:
    """The first lines of a text stream: at least 64 KiB (or all of it), ending at a newline when the
    file has one within 4 MiB."""
    head = stream.read(_HEAD_BYTES)
    while head and not head.endswith(b"\n") and len(head) < _HEAD_MAX_BYTES:
        more = stream.read(_HEAD_BYTES)
        if not more:
            break
        head += more
    return head


def _binary_offset(head: bytes) -> int | None:
    """Byte offset of the first sign that ``head`` is not text (a NUL byte), or ``None``."""
    pos = head.find(b"\x00")
    return None if pos < 0 else pos
