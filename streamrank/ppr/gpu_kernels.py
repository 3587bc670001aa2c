"""The PPR kernels' template instantiations, compiled once per process through the loader."""

from __future__ import annotations

import numpy as np

from ..kernels.loader import get_kernel

_CTYPE = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
_PAIRS = [(a, b) for a in ("int", "long long") for b in ("int", "long long")]


def _exprs(filename: str) -> tuple:
    if filename == "ppr_push.cu":
        out = []
        for o, d in _PAIRS:
            out += [f"ppr_push_warp<{o}, {d}, 0>", f"ppr_push_warp<{o}, {d}, 1>",
                    f"ppr_pull_scatter<{o}, {d}>", f"ppr_pull_gather<{o}, {d}>"]
        out += ["ppr_micro_rand_write<0>", "ppr_micro_rand_write<1>", "ppr_micro_rand_read",
                "ppr_micro_seq_write", "ppr_pull_add_seeds", "ppr_pull_dedup"]
        return tuple(out)
    if filename == "ppr_power.cu":
        out = [f"ppr_power_contrib<{d}>" for d in ("int", "long long")]
        for o, d in _PAIRS:
            out += [f"ppr_power_thread<{o}, {d}>", f"ppr_power_warp<{o}, {d}>"]
        return tuple(out)
    if filename == "ppr_montecarlo.cu":
        return tuple(f"ppr_mc_walk<{o}, {d}>" for o, d in _PAIRS)
    raise KeyError(filename)


def ctype(array) -> str:
    """The C++ name of an index array's element type."""
    return _CTYPE[np.dtype(array.dtype)]


def kernel(filename: str, name: str):
    """One instantiation, e.g. ``kernel("ppr_push.cu", "ppr_push_warp<long long, int, 0>")``."""
    exprs = _exprs(filename)
    if name not in exprs:  # normalize spacing of template arguments
        name = name.replace(",", ", ").replace(",  ", ", ")
    return get_kernel(filename, name, exprs)
