"""The PPR kernels' template instantiations, compiled once per process through the loader.

The weighted instantiations (template argument ``WT = 1`` of the push/pull and Monte Carlo
kernels, and the segment sums of the weighted walk) form a module of their own, compiled only
when a weighted graph is queried; the unweighted module holds the ``WT = 0`` instantiations.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cuda.loader import get_kernel

_CTYPE = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long", np.dtype(np.float32): "float",
          np.dtype(np.float64): "double"}
_PAIRS = [(a, b) for a in ("int", "long long") for b in ("int", "long long")]


def _exprs(filename: str, weighted: bool = False) -> tuple:
    if filename == "ppr_push.cu":
        wt = int(weighted)
        out = []
        for o, d in _PAIRS:
            out += [f"ppr_push_warp<{o}, {d}, 0, {wt}>", f"ppr_push_warp<{o}, {d}, 1, {wt}>",
                    f"ppr_pull_scatter<{o}, {d}, {wt}>", f"ppr_pull_gather<{o}, {d}, {wt}>"]
        if not weighted:
            out += ["ppr_micro_rand_write<0>", "ppr_micro_rand_write<1>", "ppr_micro_rand_read",
                    "ppr_micro_seq_write", "ppr_pull_add_seeds", "ppr_pull_dedup"]
        return tuple(out)
    if filename == "ppr_power.cu":
        out = [f"ppr_power_contrib<{d}, {t}>" for d in ("int", "long long") for t in ("double", "float")]
        for o, d in _PAIRS:
            out += [f"ppr_power_sweep<{o}, {d}, {t}>" for t in ("double", "float")]
            out.append(f"ppr_sparse_scatter<{o}, {d}>")
        out += [f"ppr_sparse_{k}<{d}>" for d in ("int", "long long") for k in ("finish", "prep")]
        return tuple(out + ["ppr_sparse_seed", "ppr_sparse_diff", "ppr_sparse_clear", "ppr_seed_setup"])
    if filename == "ppr_power_coop.cu":  # snapshot arrays: offsets and degrees of one type
        return tuple(f"ppr_power_coop<{o}, {o}, {t}>" for o in ("int", "long long") for t in ("double", "float"))
    if filename == "ppr_batch.cu":  # snapshot arrays: offsets and degrees of one type
        out = []
        for o in ("int", "long long"):
            out += [f"ppr_batch_sweep<{o}, {o}, {t}, {c}>" for t in ("double", "float") for c in (1, 2, 3, 4)]
        for d in ("int", "long long"):
            out += [f"ppr_batch_{k}<{d}, {t}>" for k in ("init", "seeds") for t in ("double", "float")]
        out += [f"ppr_batch_{k}<{t}>" for k in ("chunk_max", "select") for t in ("double", "float")]
        return tuple(out)
    if filename == "ppr_topk.cu":
        return ("ppr_chunk_max<double>", "ppr_chunk_max<float>", "ppr_kth_largest", "ppr_select_pack<double>",
                "ppr_select_pack<float>")
    if filename == "ppr_montecarlo.cu":
        out = tuple(f"ppr_mc_walk<{o}, {d}, {int(weighted)}>" for o, d in _PAIRS)
        return out + (tuple(f"ppr_segment_sums<{o}, {d}>" for o, d in _PAIRS) if weighted else ())
    raise KeyError(filename)


def ctype(array) -> str:
    """The C++ name of an array's element type (int32/int64 indices, float32/float64 values)."""
    return _CTYPE[np.dtype(array.dtype)]


def kernel(filename: str, name: str, *, weighted: bool = False):
    """One instantiation, e.g. ``kernel("ppr_push.cu", "ppr_push_warp<long long, int, 0, 0>")``;
    ``weighted=True`` for one of the weighted module (``WT = 1``, the segment sums)."""
    exprs = _exprs(filename, weighted)
    if name not in exprs:  # normalize spacing of template arguments
        name = name.replace(",", ", ").replace(",  ", ", ")
    return get_kernel(filename, name, exprs, cooperative=filename == "ppr_power_coop.cu")
