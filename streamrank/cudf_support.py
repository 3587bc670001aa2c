"""cuDF on the GPU backend, where it is installed.

When the backend is the GPU and cuDF imports, edge batches arrive on the device as cuDF frames
(``cudf.DataFrame.from_arrow``: the Arrow buffers are copied to the device once, no per-column
conversion on the host) and the in-batch collapse (last op per (src, dst) pair) is cuDF's
``drop_duplicates(keep="last")``. Without cuDF the same steps run with CuPy (lexsort); both give
identical results (tested on the device). ``STREAMRANK_CUDF=0`` turns cuDF off.
"""

from __future__ import annotations

import functools
import os


@functools.lru_cache(maxsize=1)
def _cudf():
    try:
        import cudf
    except Exception:  # ImportError, or a CUDA/driver mismatch raised at import
        return None
    return cudf


def cudf_enabled() -> bool:
    """Whether cuDF is importable here and not turned off by ``STREAMRANK_CUDF=0``."""
    if os.environ.get("STREAMRANK_CUDF", "1") == "0":
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


def collapse_last_op_cudf(src, dst, insert):
    """cuDF version of :func:`streamrank.normalize.collapse_last_op` (same outputs)."""
    cudf = _cudf()
    n = int(src.shape[0])
    df = cudf.DataFrame({"src": src, "dst": dst, "ins": insert})
    df = df.drop_duplicates(subset=["src", "dst"], keep="last", ignore_index=True)
    df = df.sort_values(["src", "dst"], ignore_index=True)
    return df["src"].values, df["dst"].values, df["ins"].values, n - len(df)
