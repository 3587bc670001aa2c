"""The L1 error of three forms of DF-P's ranks after every batch of the temporal protocol on
sx-mathoverflow, self-loop mode, Jacobi order (the GPU's arithmetic), on the CPU: what streamrank
publishes (``Engine.ranks``, :mod:`streamrank.rank.published`: the vertices without in-edges at
their exact rank, the others scaled to the rest of the mass), the plain normalization ``x / sum(x)``
(streamrank's earlier published form), and the reference DF-P's form ``x (1 - alpha) / n``, unnormalized.

All three are the same iterate. In self-loop mode the exact solution sums to ``n / (1 - alpha)``,
so they agree at the fixed point; before it, dividing by the running sum spreads the sum's deficit
over every vertex, the exact ones too; :mod:`streamrank.rank.published` gives the result.

    python benchmarks/l1_normalization.py sx-mathoverflow.txt.gz [--batches 20]
"""

from __future__ import annotations

import argparse

import numpy as np

from streamrank.batch import EdgeBatch
from streamrank.bench.temporal import _read_lines
from streamrank.config import RankConfig
from streamrank.engine import Engine
from streamrank.oracle.metrics import l1_error
from streamrank.oracle.static import oracle_pagerank

ALPHA = 0.85


def run(src, dst, fraction: float, padded: int | None, batches: int) -> tuple:
    keep = src != dst  # self-loop mode: a line u u adds nothing (every vertex has its loop)
    lines = src.shape[0]
    base, size = int(0.9 * lines), int(fraction * lines)
    eng = Engine("cpu", "dfp", config=RankConfig(dangling="self-loop", update_order="jacobi"))
    eng.load_edges(src[:base][keep[:base]], dst[:base][keep[:base]],
                   vertices=None if padded is None else np.arange(padded))
    published, normed, scaled = [], [], []
    for b in range(batches):
        lo, hi = base + b * size, base + (b + 1) * size
        eng.apply(EdgeBatch.from_arrays(src[lo:hi][keep[lo:hi]], dst[lo:hi][keep[lo:hi]]))
        exact = oracle_pagerank(eng.graph, alpha=ALPHA, dangling="self-loop")
        x = np.asarray(eng.x, dtype=np.float64)
        published.append(l1_error(eng.ranks()[1], exact))
        normed.append(l1_error(x / x.sum(), exact))
        scaled.append(l1_error(x * ((1 - ALPHA) / x.shape[0]), exact))
    return float(np.median(published)), float(np.median(normed)), float(np.median(scaled))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--padded", type=int, default=248180, help="ids created up front (the published protocol)")
    args = ap.parse_args()
    src, dst = _read_lines(args.path)
    print("graph | lines per batch | L1 published (exact vertices pinned) | L1 of x / sum(x) "
          "| L1 of x (1 - alpha) / n (reference's form) | medians over", args.batches, "batches")
    for padded in (args.padded, None):
        for fraction in (1e-5, 1e-4, 1e-3):
            a, b, c = run(src, dst, fraction, padded, args.batches)
            name = f"padded to {padded}" if padded else "unpadded"
            print(f"{name} | {int(fraction * src.shape[0])} | {a:.3g} | {b:.3g} | {c:.3g}", flush=True)


if __name__ == "__main__":
    main()
