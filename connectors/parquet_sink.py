"""Parquet snapshots of all ranks, written atomically every N batches."""

from __future__ import annotations

import logging
import os

import numpy as np

from streamrank.errors import StreamrankError
from streamrank.ids.kinds import vertex_column

log = logging.getLogger(__name__)


class ParquetSnapshots:
    """Writes ``ranks-<seq>.parquet`` (columns ``vertex`` int64, or string for string ids, and ``rank``
    float64) to a directory.

    Parameters
    ----------
    directory : str
    every : int
        Write after every ``every``-th batch (by sequence number).
    keep : int, optional
        Snapshots to keep (0: all).
    """

    def __init__(self, directory: str, *, every: int, keep: int = 0):
        self.directory = os.fspath(directory)
        self.every = int(every)
        self.keep = int(keep)

    def due(self, seq: int) -> bool:
        return self.every > 0 and seq > 0 and seq % self.every == 0

    def write(self, seq: int, ids, p) -> str:
        """Write the snapshot of batch ``seq``; returns its path.

        Raises
        ------
        StreamrankError
            When the file cannot be written.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = os.path.join(self.directory, f"ranks-{int(seq):012d}.parquet")
        tmp = os.path.join(self.directory, f".tmp-{os.getpid()}-ranks-{int(seq):012d}.parquet")
        table = pa.table({"vertex": vertex_column(ids), "rank": np.asarray(p, dtype=np.float64)})
        table = table.replace_schema_metadata({"seq": str(int(seq))})
        try:
            os.makedirs(self.directory, exist_ok=True)
            pq.write_table(table, tmp)
            os.replace(tmp, path)
        except (OSError, pa.ArrowException) as exc:
            raise StreamrankError(f"cannot write rank snapshot {path}: {exc}") from exc
        if self.keep > 0:
            snaps = sorted(n for n in os.listdir(self.directory) if n.startswith("ranks-") and n.endswith(".parquet"))
            for n in snaps[:-self.keep]:
                try:
                    os.unlink(os.path.join(self.directory, n))
                except OSError:
                    pass
        log.info("rank snapshot seq=%d (%d vertices) -> %s", seq, table.num_rows, path)
        return path
