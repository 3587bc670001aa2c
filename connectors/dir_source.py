"""Directory mode: edge files read in name order, and a dead-letter file.

The source reads every edge file of a directory (formats of :mod:`connectors.files`: SNAP text,
CSV, Parquet, JSON lines) in file-name order, rows in file order, and then watches the directory
for new files whose names sort after the last one read. Put a new file in place atomically
(write it under a name starting with ``.``, then rename it). A file that appears later with a name
sorting before a file already read is not read: it is logged once, as a warning naming the file it
sorts before (name new files so that they sort last, e.g. with a zero-padded sequence number or a
UTC timestamp first).

Position (checkpoint key ``"dir"``): ``{"file": name, "rows": good rows consumed, "bad": bad
lines dead-lettered, "done": whether the file was read to its end}``. On restart the file named
there is reopened, its first ``rows`` good rows and ``bad`` bad lines skipped; files sorting
before it are not read again.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time

import numpy as np

import pyarrow as pa

from streamrank.errors import SourceError
from streamrank.ids.kinds import DEFAULT_MAX_ID_BYTES, IdTypeLock

from .records import BadRecord, EdgeChunk

log = logging.getLogger(__name__)

POS_KEY = "dir"
_EMPTY = np.zeros(0, dtype=np.int64)


class FileDeadLetters:
    """Appends rejected records to a JSON-lines file.

    Each line: ``{"reason", "detail", "topic", "partition", "offset", "key", "value_b64",
    "value"}`` (``value`` is the UTF-8 text when it decodes, else ``null``; ``value_b64`` always
    holds the original bytes).
    """

    def __init__(self, path: str):
        self.path = os.fspath(path)
        d = os.path.dirname(self.path)
        try:
            if d:
                os.makedirs(d, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            raise SourceError(f"cannot open dead-letter file {self.path}: {exc}") from exc
        self._unsynced = False

    #: A checkpoint must flush this sink itself (the Kafka producer's acknowledgements do not cover it).
    acked_by_producer = False

    def send(self, bad: BadRecord) -> None:
        value = bytes(bad.value or b"")
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        rec = {"reason": bad.reason, "detail": bad.detail, "topic": bad.topic, "partition": bad.partition,
               "offset": bad.offset, "key": None if bad.key is None else base64.b64encode(bad.key).decode(),
               "value_b64": base64.b64encode(value).decode(), "value": text}
        try:
            self._fh.write(json.dumps(rec) + "\n")
            self._unsynced = True
        except OSError as exc:
            raise SourceError(f"cannot write dead-letter file {self.path}: {exc}") from exc

    def flush(self) -> None:
        """Flush and fsync (called before every checkpoint); nothing to do when nothing was written."""
        if not self._unsynced:
            return
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._unsynced = False
        except OSError as exc:
            raise SourceError(f"cannot flush dead-letter file {self.path}: {exc}") from exc

    def close(self) -> None:
        try:
            self._fh.close()
        except OSError:
            pass


class DirectorySource:
    """Reads the edge files of a directory in name order, then waits for new ones.

    Parameters
    ----------
    directory : str
    chunk_rows : int
        Rows per chunk handed to the loop (the batch size).
    format : str, optional
        Force a file format (default: from each file's extension).
    id_type : {"auto", "int", "string"}
        Vertex id kind of the files (:mod:`streamrank.ids.kinds`).
    id_lock : streamrank.ids.kinds.IdTypeLock, optional
        Keeps the directory to one id kind across files: in ``"auto"`` mode a file is read with
        the kind the stream already has, so ids of the other kind are dead-lettered lines
        (``mixed_id_types``). Default: a lock of ``id_type``.
    max_id_bytes : int
        Longest string id (UTF-8 bytes).
    layout : connectors.files.Layout, optional
        Column layout of the files (default: detected in each file); ``layout.weighted``: the
        files' weights are read (bad weights are dead-lettered lines, reason ``bad_weight``).
    """

    def __init__(self, directory: str, *, chunk_rows: int = 10000, format: str | None = None,
                 id_type: str = "auto", id_lock: IdTypeLock | None = None, max_id_bytes: int = DEFAULT_MAX_ID_BYTES,
                 layout=None):
        self.directory = os.fspath(directory)
        self.chunk_rows = int(chunk_rows)
        self.format = format
        self.id_type = id_type
        self.id_lock = id_lock if id_lock is not None else IdTypeLock(id_type)
        self.max_id_bytes = int(max_id_bytes)
        self.layout = layout
        self._known: set[str] | None = None  # names listed so far (None before the first listing)
        self.late_files: list[str] = []  # files skipped because their names sort before a file already read
        self._reader = None
        self._iter = None
        self._pending = None  # the table read ahead of the one last returned
        self._file = None
        self._rows = 0
        self._bad = 0
        self._done_files: str | None = None  # name of the last file read to its end
        self._skip_rows = 0
        self._skip_bad = 0
        self.exhausted = False

    # ------------------------------------------------------------------ lifecycle
    def open(self, positions: dict) -> None:
        if not os.path.isdir(self.directory):
            raise SourceError(f"input directory {self.directory} does not exist")
        pos = positions.get(POS_KEY)
        if pos:
            if pos.get("done"):
                self._done_files = pos["file"]
            else:
                self._file = pos["file"]
                self._skip_rows = int(pos.get("rows", 0))
                self._skip_bad = int(pos.get("bad", 0))
        log.info("directory source %s, resuming at %s", self.directory, pos or "the first file")

    def close(self) -> None:
        self._close_reader()

    def commit(self, positions: dict) -> bool:
        return True  # the checkpoint is the only record of directory positions

    def _close_reader(self):
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception as exc:  # closing must not mask the caller's path
                log.debug("closing %s: %s", self._file, exc)
        self._reader = self._iter = self._pending = None

    def _next_file(self):
        from .files import list_edge_files

        files = [p.name for p in list_edge_files(self.directory)]  # sorted, no dot names
        if self._file is not None:
            if self._file in files:
                return self._file
            raise SourceError(f"{self._file} (named in the checkpoint) is gone from {self.directory}")
        self._note_late(files)
        later = [n for n in files if self._done_files is None or n > self._done_files]
        return later[0] if later else None

    def _note_late(self, files: list) -> None:
        """Log, once each, files that appeared after a file sorting after them was read (never read)."""
        if self._known is None:
            self._known = set(files)  # those before the resume point were read by an earlier run
            return
        for name in files:
            if name in self._known:
                continue
            self._known.add(name)
            if self._done_files is not None and name <= self._done_files:
                self.late_files.append(name)
                log.warning("skipping %s in %s: it appeared after %s was read and its name sorts before it; files "
                            "are read once, in name order: give new files names that sort after the last one "
                            "(e.g. a zero-padded sequence number or a UTC timestamp first)",
                            name, self.directory, self._done_files)

    def _open_file(self, name: str) -> None:
        from .files import open_edge_file

        path = os.path.join(self.directory, name)
        try:
            self._reader = open_edge_file(path, format=self.format, chunk_rows=self.chunk_rows, keep_order=True,
                                          max_bad_kept=1 << 62, id_type=self.id_type, max_id_bytes=self.max_id_bytes,
                                          stream_kind=self.id_lock.kind if self.id_type == "auto" else None,
                                          layout=self.layout)
            self._iter = iter(self._reader)
        except SourceError:
            raise
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot open {path}: {exc}") from exc
        self._file = name
        self._rows = 0
        self._bad = 0
        log.info("reading %s", path)

    # ------------------------------------------------------------------ reading
    def _position(self, done: bool = False) -> dict:
        return {"file": self._file, "rows": self._rows, "bad": self._bad, "done": done}

    def poll(self, timeout_s: float, *, max_records: int | None = None) -> list:
        """The next chunk of the current file (with its bad lines), or ``[]`` after ``timeout_s``."""
        if self._iter is None:
            name = self._next_file()
            if name is None:
                self.exhausted = True
                time.sleep(timeout_s)
                return []
            self.exhausted = False
            self._open_file(name)
        if self._pending is not None:
            table, self._pending = self._pending, None
        else:
            table = self._read_next()
        items = self._bad_items()
        if table is None:  # a file with no rows
            items.append(self._chunk(_EMPTY, _EMPTY, _EMPTY.astype(bool), done=True))
            self._finish_file()
            return items
        if pa.types.is_string(table.schema.field("src").type):
            self.id_lock.admit("string")  # the reader kept the file to the stream's kind
            src, dst = table.column("src").combine_chunks(), table.column("dst").combine_chunks()
        else:
            self.id_lock.admit("int")
            src = table.column("src").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            dst = table.column("dst").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        ins = table.column("op").to_numpy(zero_copy_only=False) > 0
        weight = table.column("weight").to_numpy(zero_copy_only=False) if "weight" in table.column_names else None
        n = ins.shape[0]
        skip = min(self._skip_rows, n)
        self._skip_rows -= skip
        self._rows += n
        # Read one chunk ahead, so that the chunk that ends the file carries done=True: a
        # shutdown right after it then records the file as finished.
        self._pending = self._read_next()
        at_end = self._pending is None
        if at_end:
            items.extend(self._bad_items())  # bad lines after the last good row
        if skip < n or at_end:
            items.append(self._chunk(src[skip:], dst[skip:], ins[skip:], done=at_end,
                                     weight=None if weight is None else weight[skip:]))
        if at_end:
            self._finish_file()
        return items

    def _read_next(self):
        """The reader's next table, or ``None`` at the end of the file."""
        try:
            return next(self._iter)
        except StopIteration:
            return None
        except SourceError:
            raise
        except (OSError, ValueError) as exc:
            raise SourceError(f"reading {self._file}: {exc}") from exc

    def _chunk(self, src, dst, ins, *, done: bool, weight=None) -> EdgeChunk:
        return EdgeChunk(src, dst, ins, POS_KEY, self._position(done=done), weight)

    def _finish_file(self) -> None:
        self._close_reader()
        self._done_files, self._file = self._file, None
        self._skip_rows = self._skip_bad = 0

    def _bad_items(self) -> list:
        """Bad lines the reader reported since the last call, as dead letters.

        The report's list is drained as it is read, so its cap never drops a line.
        """
        lines = self._reader.report.bad_lines
        entries = lines[:]
        lines.clear()
        out = []
        for entry in entries:
            self._bad += 1
            if self._skip_bad > 0:
                self._skip_bad -= 1
                continue
            out.append(BadRecord(value=entry.text.encode("utf-8"), reason=entry.code or _reason_code(entry.reason),
                                 detail=entry.reason, topic=self._file, partition=-1, offset=entry.line, key=None,
                                 pos_key=POS_KEY, pos_value=self._position()))
        return out


def _reason_code(reason) -> str:
    """Map a reader's reason text (:mod:`connectors.files`) onto :data:`connectors.records.REASONS`."""
    text = reason.lower()
    for key, code in (("unknown op", "unknown_op"), ("missing", "missing_field"), ("non-integer", "non_integer_id"),
                      ("negative", "negative_id"), ("beyond", "id_out_of_range"), ("json", "bad_json")):
        if key in text:
            return code
    return "bad_csv"
