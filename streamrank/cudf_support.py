"""cuDF on the GPU backend, where it is installed.

When the backend is the GPU and cuDF imports, Arrow edge tables move to the device as cuDF frames
(``cudf.DataFrame.from_arrow``: the Arrow buffers are copied to the device once, no per-column
conversion on the host). ``STREAMRANK_CUDF=0`` (:data:`streamrank.settings.CUDF`) turns cuDF off;
without it NumPy arrays are copied.

The in-batch collapse (last op per pair) stays on CuPy (lexsort) even with cuDF installed:
cuDF's ``drop_duplicates(keep="last")`` + ``sort_values`` gave the same result, but the graph
update measured with it on an H200 was slower than the CuPy path measured without it (R-MAT 22,
batches of 65 edges: 7.4 ms against 2.5 ms per batch; batches of 653 k edges: 17.4 ms against
5.5 ms), so that path was removed.
"""

from __future__ import annotations

import functools

from . import settings


@functools.lru_cache(maxsize=1)
def _cudf():
    try:
        import cudf
    except Exception:  # ImportError, or a CUDA/driver mismatch raised at import
        return None
    return cudf


def cudf_enabled() -> bool:
    """Whether cuDF is importable here and not turned off by ``STREAMRANK_CUDF=0``."""
    if not settings.cudf():
        return False
    return _cudf() is not None


def arrow_to_device(table):
    """``(src, dst, op)`` CuPy arrays of an Arrow edge table, through cuDF.

    ``op`` is ``None`` when the table has no op column.
    """
    cudf = _cudf()
    df = cudf.DataFrame.from_arrow(table)
    op = df["op"].values if "op" in df.columns else None
    return df["src"].values, df["dst"].values, op
