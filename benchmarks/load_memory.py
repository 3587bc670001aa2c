"""Peak device memory of building the GPU store from an R-MAT edge list: the general path (sorts of
all endpoints for the id plan, per-edge temporaries in the CSR build) against the bounded build
(streamrank/store/gpu_build.py), in one process, on the same edges.

    python3 benchmarks/load_memory.py --scale 25

The peak is CuPy's pool high-water mark over the build (every allocation, thrust's sort buffers
included: streamrank.store.memory.PoolPeak), minus the edge arrays live before it; both stores are
compared (ids, degrees) so the two paths are checked to agree.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from streamrank.backend import device_name, resolve_backend
from streamrank.bench.rmat import rmat_edges
from streamrank.store.memory import PoolPeak
from streamrank.table import format_table


def build(cp, src, dst, *, dense: bool):
    from streamrank.store.gpu import GpuGraph

    cp.get_default_memory_pool().free_all_blocks()
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    with PoolPeak(cp) as peak:
        g = GpuGraph()
        g._from_edges(src, dst, dense=dense)
        cp.cuda.Device().synchronize()
    secs = time.perf_counter() - t
    e = g.num_edges
    row = {"path": "bounded" if dense else "general", "vertices": g.num_vertices, "edges": e, "build_s": secs,
           "peak_bytes": peak.bytes - peak.start_bytes, "store_bytes": g.nbytes}
    row["peak_per_edge"] = row["peak_bytes"] / e
    row["store_per_edge"] = g.nbytes / e
    row["work_per_edge"] = (row["peak_bytes"] - g.nbytes) / e
    return g, row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=25)
    p.add_argument("--paths", default="general,bounded")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    backend = resolve_backend("gpu")
    cp = backend.xp
    src, dst = rmat_edges(args.scale, seed=0, xp=cp)
    rows, degrees = [], []
    for path in args.paths.split(","):
        g, row = build(cp, src, dst, dense=path.strip() == "bounded")
        rows.append(row)
        degrees.append((g.ids.external.get(), g.in_degree.get(), g.out_degree.get()))
        print(f"{row['path']}: peak {row['peak_bytes'] / 2**30:.2f} GiB over the inputs "
              f"({row['peak_per_edge']:.1f} B/edge), store {row['store_per_edge']:.1f} B/edge, "
              f"{row['build_s']:.2f} s", file=sys.stderr, flush=True)
        del g
    same = all(all((a == b).all() for a, b in zip(degrees[0], d)) for d in degrees[1:])
    print(f"device: {device_name(backend)}; rmat:{args.scale}; inputs {2 * src.nbytes / 2**30:.2f} GiB "
          f"(int64 src, dst); stores agree: {same}")
    cols = [("path", "build"), ("vertices", "vertices"), ("edges", "edges"), ("build_s", "s"),
            ("peak_bytes", "peak bytes"), ("peak_per_edge", "peak B/edge"), ("store_per_edge", "store B/edge"),
            ("work_per_edge", "working B/edge")]
    print(format_table(rows, cols))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device_name(backend), "scale": args.scale, "rows": rows, "stores_agree": same}, fh,
                      indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
