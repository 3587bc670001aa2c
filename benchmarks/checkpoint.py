"""Checkpoint cost on an R-MAT graph: a full checkpoint against an incremental one after a batch.

Builds an engine on an R-MAT graph (``--scale``, edge factor 16), writes a full checkpoint
through the daemon's checkpoint stage, applies ``--batches`` batches of ``--batch-edges`` edges
(R-MAT edges drawn again, 20% of them deletions of present edges), writes an incremental
checkpoint after each, then restores (full checkpoint + replay of the log) and compares the
restored ranks with those of the engine that never stopped.

    python benchmarks/checkpoint.py --scale 20 --batch-edges 10000 --json docs/results/checkpoint_rmat20.json

Prints one table row per checkpoint and the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.daemon.checkpoints import CheckpointStage  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.checkpoints.recovery import restore_latest  # noqa: E402
from streamrank.bench.rmat import rmat_edges  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--batch-edges", type=int, default=10000)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dir", help="checkpoint directory (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the report here")
    args = ap.parse_args(argv)
    work = Path(args.dir or tempfile.mkdtemp(prefix="streamrank-ckpt-bench-"))
    rows = []
    try:
        t0 = time.perf_counter()
        src, dst = rmat_edges(args.scale, 16, seed=1)
        eng = Engine(args.device, "dfp")
        eng.load_edges(src, dst)
        build_s = time.perf_counter() - t0
        print(f"R-MAT {args.scale}: {eng.graph.num_vertices} vertices, {eng.graph.num_edges} edges "
              f"(built and ranked in {build_s:.1f}s on {eng.backend.name})")
        stage = CheckpointStage(str(work), full_every=1000)
        meta = {"algorithm": "dfp", "rank": eng.config.to_dict()}
        info = stage.write(eng, positions={"kafka:t:0": 0}, ranks=eng.ranks, meta=meta)
        rows.append({"seq": eng.seq, "kind": info.kind, "bytes": info.bytes, "ms": round(info.seconds * 1e3, 1)})
        rng = np.random.default_rng(7)
        extra_s, extra_d = rmat_edges(args.scale, 16, seed=2)
        at = 0
        for k in range(args.batches):
            n_del = args.batch_edges // 5
            pick = rng.integers(0, src.shape[0], n_del)
            n_ins = args.batch_edges - n_del
            s = np.concatenate([src[pick], extra_s[at:at + n_ins]])
            d = np.concatenate([dst[pick], extra_d[at:at + n_ins]])
            ins = np.concatenate([np.zeros(n_del, bool), np.ones(n_ins, bool)])
            at += n_ins
            perm = rng.permutation(s.shape[0])
            s, d, ins = s[perm], d[perm], ins[perm]
            t1 = time.perf_counter()
            step = eng.apply(EdgeBatch.from_arrays(s, d, ins))
            apply_ms = (time.perf_counter() - t1) * 1e3
            stage.record(step.seq, s, d, ins)
            info = stage.write(eng, positions={"kafka:t:0": (k + 1) * args.batch_edges}, ranks=eng.ranks, meta=meta)
            rows.append({"seq": eng.seq, "kind": info.kind, "bytes": info.bytes, "ms": round(info.seconds * 1e3, 1),
                         "batch_apply_ms": round(apply_ms, 1)})
        stage.close()
        t2 = time.perf_counter()
        r = restore_latest(work, device=args.device)
        restore_s = time.perf_counter() - t2
        ids0, p0 = eng.ranks()
        ids1, p1 = r.engine.ranks()
        same_ids = bool(np.array_equal(ids0, ids1))
        report = {
            "scale": args.scale, "vertices": int(eng.graph.num_vertices), "edges": int(eng.graph.num_edges),
            "device": eng.backend.name, "batch_edges": args.batch_edges, "checkpoints": rows,
            "incremental_over_full": [round(x["bytes"] / rows[0]["bytes"], 6) for x in rows[1:]],
            "restore_s": round(restore_s, 2), "restored_seq": r.seq, "replayed_batches": r.replayed,
            "restored_ranks_identical": same_ids and bool(np.array_equal(p0, p1)),
            "restored_ranks_l1": float(np.abs(p0 - p1).sum()) if same_ids else None,
        }
        print(f"{'seq':>4} {'kind':>12} {'bytes':>14} {'ms':>9} {'of full':>9}")
        for x in rows:
            print(f"{x['seq']:>4} {x['kind']:>12} {x['bytes']:>14,} {x['ms']:>9} {x['bytes'] / rows[0]['bytes']:>9.4%}")
        print(f"restore (full + {r.replayed} logged batches): {restore_s:.2f}s; ranks identical to the "
              f"uninterrupted engine: {report['restored_ranks_identical']} (L1 {report['restored_ranks_l1']})")
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(report, indent=1))
        return 0 if report["restored_ranks_identical"] else 1
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
        elif os.path.isdir(work):
            pass


if __name__ == "__main__":
    sys.exit(main())
