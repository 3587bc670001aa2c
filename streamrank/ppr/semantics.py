"""Personalized PageRank semantics shared by every method and backend (docs/ppr.md).

With damping ``alpha``, personalization ``v`` (one seed vertex, or a weighted seed set,
normalized to sum 1), ``X`` the column-stochastic transition of the non-dangling vertices and
``d`` the indicator of dangling vertices (no out-edges), the PPR vector ``p`` solves

* ``dangling="personalization"`` (NetworkX's and cuGraph's default): a dangling vertex's rank
  returns to the personalization, ``p = alpha X p + alpha (d . p) v + (1 - alpha) v``;
* ``dangling="uniform"``: it spreads over all vertices,
  ``p = alpha X p + alpha/|V| (d . p) 1 + (1 - alpha) v``.

``p`` sums to 1 in both modes. In uniform mode the solution splits as ``p = q + c u``, where
``q`` is the *leaky* PPR of ``v`` (dangling mass dropped), ``u`` the leaky PPR of the uniform
vector and ``c = (1 - sum q) / sum u``; the local methods (push, pull, hybrid) estimate ``q`` by
touching only the vertices the residual reaches and add ``c u`` from a cached ``u``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..backend import to_host
from ..errors import InvalidArgumentError

DANGLING_MODES = ("personalization", "uniform")
METHODS = ("power", "push", "pull", "hybrid", "montecarlo")
ATOMICS = ("native", "exchange")


@dataclass
class PprResult:
    """One personalized PageRank query's answer.

    Attributes
    ----------
    top_k : list of (int, float)
        The ``k`` best (external vertex id, score), score descending, ties by internal id.
    vector : ndarray or None
        The full score vector over internal ids (host NumPy), when asked for.
    seeds : list of int
        The external seed ids.
    method, device, dangling : str
        What computed it.
    iterations : int
        Iterations run (power, push, pull, hybrid); 0 for Monte Carlo.
    converged : bool
        Power: the L-infinity change fell below ``tol``; push/pull/hybrid: the frontier emptied;
        Monte Carlo: always True (the step budget was spent).
    error_bound : float or None
        Push/pull/hybrid: an upper bound of the L1 error (the residual mass left, doubled in
        uniform mode). Power: the last L-infinity change. Monte Carlo: None.
    stats : list of dict
        Per-iteration statistics (frontier size, and for hybrid the choice and the cost-model
        terms).
    walks, steps : int
        Monte Carlo: walks completed and visits counted.
    elapsed_ms : float
        Wall time of the query, from the seed lookup to the top-k on the host (the device
        finished; includes building per-graph caches on the first query after a change).
    """

    top_k: list
    vector: np.ndarray | None
    seeds: list
    method: str
    device: str
    dangling: str
    iterations: int = 0
    converged: bool = True
    error_bound: float | None = None
    stats: list = field(default_factory=list)
    walks: int = 0
    steps: int = 0
    elapsed_ms: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self, *, with_vector: bool = False) -> dict:
        """JSON-ready dict (the vector only on request)."""
        out = {
            "top_k": [[_json_id(v), float(s)] for v, s in self.top_k],
            "seeds": [_json_id(s) for s in self.seeds],
            "method": self.method,
            "device": self.device,
            "dangling": self.dangling,
            "iterations": int(self.iterations),
            "converged": bool(self.converged),
            "error_bound": None if self.error_bound is None else float(self.error_bound),
            "walks": int(self.walks),
            "steps": int(self.steps),
            "elapsed_ms": float(self.elapsed_ms),
            "stats": self.stats,
            **self.extra,
        }
        if with_vector and self.vector is not None:
            out["vector"] = [float(x) for x in self.vector]
        return out


@dataclass(frozen=True)
class Personalization:
    """Seeds as internal ids with weights summing to 1 (host arrays)."""

    internal: np.ndarray  # int64, unique
    weights: np.ndarray  # float64, sum 1
    external: np.ndarray  # int64
    out_degree: np.ndarray  # int64, the seeds' out-degrees


def check_choice(name: str, value, choices) -> str:
    """Validate an enumerated argument."""
    if value not in choices:
        raise InvalidArgumentError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def _json_id(v):
    """A vertex id for JSON: a string id as it is, else an int."""
    return v if isinstance(v, str) else int(v)


def check_alpha(alpha) -> float:
    alpha = float(alpha)
    if not (0.0 < alpha < 1.0):
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha}")
    return alpha


def resolve_seeds(graph, seeds, weights=None) -> Personalization:
    """Map external seed ids (an int, a sequence, or a dict id -> weight) to internal ids.

    Raises
    ------
    InvalidArgumentError
        For an empty seed set, an unknown id, or weights that are negative or sum to 0.
    """
    return resolve_seed_sets(graph, [seeds], weights=weights)[0]


def resolve_seed_sets(graph, seeds_list, weights=None) -> list:
    """:func:`resolve_seeds` for many seed sets with one id-map lookup (one device round trip
    on the GPU, which also brings the seeds' out-degrees). ``weights`` applies to a single set
    only."""
    sets = [_seed_arrays(s, weights) for s in seeds_list]
    if not sets:
        return []
    all_ext = np.concatenate([ext for ext, _ in sets])
    if graph.ids.xp is np and getattr(graph, "xp", np) is not np:  # a host id map over device arrays
        internal_all = graph.ids.lookup(all_ext)
        deg_all = np.zeros_like(internal_all)
        found = internal_all >= 0
        if found.any():
            deg_all[found] = to_host(graph.out_degree[graph.xp.asarray(internal_all[found])])
    else:
        both = to_host(graph.ids.lookup_with(all_ext, graph.out_degree))  # GPU: sync, the one round trip
        internal_all, deg_all = both[0], both[1]
    out, at = [], 0
    for ext, w in sets:
        internal = internal_all[at:at + ext.shape[0]]
        sdeg = deg_all[at:at + ext.shape[0]]
        at += ext.shape[0]
        if np.any(internal < 0):
            bad = ext[internal < 0][:5].tolist()
            raise InvalidArgumentError(f"seed vertex id(s) not in the graph: {bad}")
        uniq, first, inv = np.unique(internal, return_index=True, return_inverse=True)
        wsum = np.bincount(inv, weights=w, minlength=uniq.shape[0])
        keep = wsum > 0
        # the id map is a bijection: the external id of uniq[i] is the one that was looked up
        out.append(Personalization(uniq[keep], wsum[keep] / wsum[keep].sum(), ext[first][keep],
                                   sdeg[first][keep]))
    return out


def _seed_arrays(seeds, weights):
    """Validated host arrays (external ids, weights) of one seed set."""
    if isinstance(seeds, dict):
        if weights is not None:
            raise InvalidArgumentError("give weights either in a seed dict or as weights=, not both")
        weights = list(seeds.values())
        seeds = list(seeds.keys())
    ext = np.atleast_1d(np.asarray(seeds))
    if ext.size == 0:
        raise InvalidArgumentError("at least one seed vertex is needed")
    if ext.dtype.kind not in "iu":
        raise InvalidArgumentError(f"seed ids must be integers, got dtype {ext.dtype}")
    ext = ext.astype(np.int64).ravel()
    w = np.ones(ext.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != ext.shape:
        raise InvalidArgumentError(f"{ext.shape[0]} seeds but {w.shape[0]} weights")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InvalidArgumentError("seed weights must be finite, >= 0 and not all 0")
    return ext, w


#: Host: entries per chunk whose maximum bounds the top-k threshold from below.
_TOPK_CHUNK = 2048
#: GPU: at most this many chunks (their maxima are sorted in one block's shared memory).
_TOPK_GPU_CHUNKS = 4096


class TopK(NamedTuple):
    """The ``k`` largest entries of a vector: host arrays, value descending, ties by store id."""

    ids: np.ndarray  # int64 internal (store) ids
    values: np.ndarray  # float64
    external: np.ndarray | None  # int64 external ids (when the call was given ``external``)


def top_k(xp, p, k: int, *, ids=None, external=None) -> TopK:
    """The ``k`` largest entries of the non-negative vector ``p``.

    Parameters
    ----------
    xp : module
        NumPy or CuPy (where ``p`` lives).
    p : array
        The scores.
    k : int
    ids : array, optional
        The internal (store) id of each position of ``p`` (``p`` in another id space, e.g. the
        power iteration's snapshot); default: the position itself.
    external : array, optional
        Internal id -> external id; when given, the result carries the external ids.

    The maxima of disjoint chunks of ``p`` are distinct entries, so the k-th largest of them is
    a lower bound ``t`` of the k-th largest entry; only the entries ``>= t`` are sorted (on the
    host: there are about ``k`` of them). With fewer than ``k`` positive chunk maxima every
    positive entry is a candidate. On the GPU the maxima, ``t`` and the candidate rows (store
    id, value, external id) come from three kernels in a row (``kernels/cuda/ppr_topk.cu``) and one
    copy brings them to the host.
    """
    n = int(p.shape[0])
    k = min(int(k), n)
    if k <= 0:
        z = np.zeros(0, dtype=np.int64)
        return TopK(z, np.zeros(0), None if external is None else z)
    if xp is np or p.dtype not in (xp.float32, xp.float64):
        q = xp.asarray(p, dtype=xp.float64)
    else:  # the GPU kernels read float32 or float64, contiguous
        q = xp.ascontiguousarray(p)
    ext_on_device = external is not None and (xp is np or not isinstance(external, np.ndarray))
    if xp is np:
        full = n // _TOPK_CHUNK * _TOPK_CHUNK
        maxima = q[:full].reshape(-1, _TOPK_CHUNK).max(axis=1)
        if full < n:
            maxima = np.concatenate([maxima, q[full:].max(keepdims=True)])
        t = float(np.partition(maxima, maxima.shape[0] - k)[maxima.shape[0] - k]) if maxima.shape[0] >= k else 0.0
        cand = np.nonzero(q >= t)[0] if t > 0 else np.nonzero(q > 0)[0]
        sid = cand if ids is None else ids[cand]
        cols = [sid.astype(np.int64), q[cand].view(np.int64)]
        if ext_on_device:
            cols.append(external[sid].astype(np.int64))
        packed = np.stack(cols)
    else:
        packed = _packed_gpu(xp, q, n, k, ids, external if ext_on_device else None)
    sid, vals = packed[0], packed[1].view(np.float64)
    on_device = ext_on_device
    if sid.shape[0] < k:  # fewer than k positive entries: the zeros with the smallest store ids follow
        zero_pos = xp.nonzero(q <= 0)[0]  # ascending: positions are store ids unless ids maps them
        zero_ids = zero_pos[: k - sid.shape[0]] if ids is None else xp.sort(ids[zero_pos])[: k - sid.shape[0]]
        more = to_host(zero_ids).astype(np.int64)
        sid, vals = np.concatenate([sid, more]), np.concatenate([vals, np.zeros(more.shape[0])])
        on_device = False
    order = np.lexsort((sid, -vals))[:k]
    sid, vals = sid[order], vals[order]
    ext = None
    if on_device:
        ext = packed[2][order]
    elif external is not None:  # a host id map with a device vector, or zeros appended: look up here
        at = sid if isinstance(external, np.ndarray) else xp.asarray(sid)
        ext = to_host(external[at]).astype(np.int64)
    return TopK(sid, vals, ext)


def _threshold_gpu(cp, q, n: int, k: int):
    """Device scalar: the k-th largest chunk maximum of ``q`` (0 when fewer chunks than k)."""
    from .gpu_kernels import kernel

    chunk = max(-(-n // _TOPK_GPU_CHUNKS), 1)
    nch = -(-n // chunk)
    t = cp.zeros(1, dtype=cp.float64)  # 0: every positive entry is a candidate
    if nch >= k:
        name = "float" if q.dtype == cp.float32 else "double"
        maxima = cp.empty(nch, dtype=cp.float64)
        kernel("ppr_topk.cu", f"ppr_chunk_max<{name}>")((nch,), (256,), (q, np.int64(n), np.int64(chunk), maxima))
        size = 1 << max(nch - 1, 1).bit_length()
        kernel("ppr_topk.cu", "ppr_kth_largest")(
            (1,), (1024,), (maxima, np.int32(nch), np.int32(1), np.int32(size), np.int32(k), t), shared_mem=size * 8)
    return t


def _packed_gpu(cp, q, n: int, k: int, ids, external):
    """Host ``(3, c)`` int64 rows (store id, value bits, external id) of the candidates, in one
    copy. The buffer has room for ``max(4096, 64 k)`` rows; when more qualify (a flat vector),
    the selection runs once more with room for all of them."""
    from .gpu_kernels import kernel

    if ids is not None:
        ids = cp.ascontiguousarray(ids, dtype=cp.int64)
    if external is not None:
        external = cp.ascontiguousarray(external, dtype=cp.int64)
    name = "float" if q.dtype == cp.float32 else "double"
    t = _threshold_gpu(cp, q, n, k)
    cap = max(4096, 64 * k)
    while True:
        out = cp.zeros(1 + 3 * cap, dtype=cp.int64)
        kernel("ppr_topk.cu", f"ppr_select_pack<{name}>")(
            ((n + 255) // 256,), (256,),
            (q, np.int32(n), t, out[:1] if ids is None else ids, np.int32(ids is not None),
             out[:1] if external is None else external, np.int32(external is not None), out, np.int32(cap)))
        h = out.get()  # sync: the count and the rows, one copy
        count = int(h[0])
        if count <= cap:
            return np.ascontiguousarray(h[1:1 + 3 * count].reshape(count, 3).T)
        cap = count


def topk_precision(approx_ids, exact_vector, k: int, *, rel_tol: float = 1e-9) -> float:
    """Tie-aware top-k precision of ``approx_ids`` against the exact vector.

    An approximate top-k entry counts as correct when its exact score is at least the exact
    k-th score (minus ``rel_tol`` relative), so ties at the k-th place in the exact vector do not
    count as misses. Equals ``|top-k ∩ top-k_ref| / k`` when the exact k-th score is unique.
    """
    ex = np.asarray(exact_vector, dtype=np.float64)
    k = min(int(k), ex.shape[0])
    if k == 0:
        return 1.0
    kth = np.partition(ex, ex.shape[0] - k)[ex.shape[0] - k]
    ids = np.asarray(approx_ids, dtype=np.int64)[:k]
    hits = int(np.count_nonzero(ex[ids] >= kth * (1 - rel_tol) - 1e-300))
    return hits / k
