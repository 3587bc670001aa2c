"""``streamrank ppr``: personalized PageRank of one or many seeds on a graph or checkpoint."""

from __future__ import annotations

import dataclasses
import json

from ..errors import InvalidArgumentError
from ..ids.kinds import ID_TYPES
from .layout_args import add_layout_arguments, layout_from_args

HELP = "personalized PageRank (top-k) of seed vertices on an edge file, checkpoint dir or rmat:S[:EF]"


def add_arguments(p):
    p.add_argument("graph", metavar="GRAPH_OR_CHECKPOINT", help="edge file, checkpoint directory, or rmat:SCALE[:EF]")
    p.add_argument("--seed", action="append", required=True,
                   help="seed vertex id (integer or string); repeat for several queries; 'a,b,c' is one query "
                        "on a seed set")
    p.add_argument("--id-type", default="auto", choices=ID_TYPES,
                   help="vertex ids of an edge file (default: detected)")
    add_layout_arguments(p)
    p.add_argument("--k", type=int, default=20, help="most vertices listed per query (default 20; fewer when fewer "
                                                      "vertices are reachable from the seeds)")
    p.add_argument("--method", default="power", choices=["power", "push", "pull", "hybrid", "montecarlo"],
                   help="power iteration (default), forward push, backward pull, push/pull hybrid, or Monte Carlo "
                        "random walks")
    p.add_argument("--atomics", default="native", choices=["native", "exchange"],
                   help="GPU push/pull: native float atomics (default) or compare-exchange loops")
    p.add_argument("--walks", type=int, default=1 << 20, help="montecarlo: random walks (default 1048576)")
    p.add_argument("--walkers", type=int, default=None, help="montecarlo: walks run at once (default: all)")
    p.add_argument("--eps", type=float, default=1e-7, help="push/pull/hybrid residual threshold")
    p.add_argument("--tol", type=float, default=1e-10, help="power: L-infinity tolerance")
    p.add_argument("--max-iter", type=int, default=1000,
                   help="iteration cap; power stopped by it is the truncated (approximate) power iteration")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="power: iterate type")
    p.add_argument("--alpha", type=float, default=0.85, help="damping factor (default 0.85)")
    p.add_argument("--dangling", default="personalization", choices=["personalization", "uniform"],
                   help="where the rank of vertices without out-edges goes (default personalization: to the seeds)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"],
                   help="backend (default auto: the GPU when CuPy sees one)")
    p.add_argument("--json", metavar="OUT", help="write the results as JSON")


def _parse_seed(text: str, string_ids=None):
    """One query's seeds: integer ids, or (string-id graph) the codes of the names given."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if string_ids is not None:
        codes = string_ids.lookup(names)
        if (codes < 0).any():
            unknown = [n for n, c in zip(names, codes.tolist()) if c < 0][:5]
            raise InvalidArgumentError(f"seed vertex id(s) not in the graph: {unknown}")
        ids = codes.tolist()
    else:
        try:
            ids = [int(x) for x in names]
        except ValueError as exc:
            raise InvalidArgumentError(f"--seed takes integer ids on this graph, got {text!r}") from exc
    return ids[0] if len(ids) == 1 else ids


def _with_names(result, string_ids):
    """``result`` with its seeds and top-k ids as the strings the codes stand for."""
    if string_ids is None:
        return result
    top = [(name, s) for name, (_c, s) in zip(string_ids.decode([c for c, _ in result.top_k]).tolist(),
                                               result.top_k)]
    return dataclasses.replace(result, top_k=top, seeds=string_ids.decode(result.seeds).tolist())


def _reached(result):
    """``result`` without the zero-score vertices that pad its top-k when few vertices are reachable."""
    return dataclasses.replace(result, top_k=[(v, s) for v, s in result.top_k if s > 0])


def run(args) -> int:
    from ..ppr import personalized_pagerank_batch
    from ..ppr.io import load_graph_with_ids

    if args.k < 1:
        raise InvalidArgumentError(f"--k {args.k}: expected at least 1")
    graph, desc, string_ids = load_graph_with_ids(args.graph, device=args.device, id_type=args.id_type,
                                                  layout=layout_from_args(args))
    seeds = [_parse_seed(s, string_ids) for s in args.seed]
    results = personalized_pagerank_batch(graph, seeds, method=args.method, k=args.k, alpha=args.alpha,
                                          dangling=args.dangling, atomics=args.atomics, walks=args.walks,
                                          walkers=args.walkers, eps=args.eps, tol=args.tol,
                                          max_iter=args.max_iter, dtype=args.dtype)
    results = [_reached(_with_names(r, string_ids)) for r in results]
    for r in results:
        shared = (f" (batch of {r.extra['batch_size']}: {r.extra['amortized_ms']:.2f} ms per query)"
                  if "batch_size" in r.extra else "")
        print(f"seed {r.seeds}  method {r.method} ({r.device})  {r.elapsed_ms:.2f} ms{shared}  "
              f"iterations {r.iterations}  converged {r.converged}")
        print(f"  {'#':>4}  {'vertex':>14}  score")
        for rank, (v, s) in enumerate(r.top_k, 1):
            print(f"  {rank:4d}  {str(v):>14}  {s:.6e}")
        if len(r.top_k) < args.k:
            print(f"  (only {len(r.top_k)} vertices have a non-zero score: the rest are not reachable from the seeds)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**desc, "results": [r.to_dict() for r in results]}, fh, indent=1)
    return 0
