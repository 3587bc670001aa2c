"""Error metrics against an oracle (DESIGN.md, "Error")."""

from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..errors import InvalidArgumentError


def _pair(p, ref):
    p = np.asarray(to_host(p), dtype=np.float64)
    ref = np.asarray(to_host(ref), dtype=np.float64)
    if p.shape != ref.shape:
        raise InvalidArgumentError(f"rank vectors differ in shape: {p.shape} vs {ref.shape}")
    return p, ref


def l1_error(p, ref) -> float:
    """``sum |p - ref|``."""
    p, ref = _pair(p, ref)
    return float(np.abs(p - ref).sum())


def linf_error(p, ref) -> float:
    """``max |p - ref|``."""
    p, ref = _pair(p, ref)
    return float(np.abs(p - ref).max()) if p.size else 0.0


def top_k(p, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries, best first (ties broken by lower index)."""
    p = to_host(p)
    k = min(int(k), p.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-p, k - 1)[:k] if k < p.shape[0] else np.arange(p.shape[0])
    # exact tie-breaking: sort the candidates by (-value, index)
    cut = p[part].min()
    cand = np.nonzero(p >= cut)[0]
    order = np.lexsort((cand, -p[cand]))
    return cand[order][:k]


def topk_precision(p, ref, k: int) -> float:
    """``|top-k(p) ∩ top-k(ref)| / k`` (k capped at the vector length)."""
    p, ref = _pair(p, ref)
    if int(k) < 1:
        raise InvalidArgumentError(f"k must be >= 1, got {k}")
    k = min(int(k), p.shape[0])
    if k == 0:
        return 1.0
    return len(set(top_k(p, k).tolist()) & set(top_k(ref, k).tolist())) / k


def error_report(p, ref, *, ks=(20, 100)) -> dict:
    """All metrics in one dict: ``l1_error``, ``linf_error``, ``top{k}_precision``."""
    out = {"l1_error": l1_error(p, ref), "linf_error": linf_error(p, ref)}
    for k in ks:
        out[f"top{k}_precision"] = topk_precision(p, ref, k)
    return out
