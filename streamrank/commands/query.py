"""``streamrank query``: ranks from the latest checkpoint of a daemon."""

from __future__ import annotations

import json

import numpy as np

HELP = "read ranks from the latest checkpoint (--top K or --vertex ID)"


def add_arguments(parser) -> None:
    parser.add_argument("--checkpoint-dir", required=True, metavar="DIR", help="the daemon's checkpoint directory")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--top", type=int, metavar="K", help="the K best vertices")
    what.add_argument("--vertex", action="append", metavar="ID",
                      help="rank of vertex ID, an integer or a string id (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def load_ranks(checkpoint_dir: str):
    """``(ids, p, restored)`` of the latest state: full checkpoint + logged batches replayed on the CPU
    (:func:`streamrank.checkpoints.recovery.restore_latest`).

    Raises
    ------
    CheckpointError
        When there is no readable checkpoint.
    """
    from ..errors import CheckpointError
    from ..checkpoints.recovery import restore_latest

    import os

    if not os.path.isdir(checkpoint_dir):
        raise CheckpointError(f"--checkpoint-dir {checkpoint_dir}: no such directory")
    r = restore_latest(checkpoint_dir, device="cpu")
    if r is None:
        raise CheckpointError(
            f"no checkpoint in {checkpoint_dir} yet: the daemon writes its first one as soon as it has applied "
            "its first batch (then every --checkpoint-every batches or --checkpoint-interval seconds); "
            "is 'streamrank serve' running with this directory, and has it received edges?")
    ids, p = r.engine.ranks()
    return ids, p, r


def _vertex_key(text: str, string_ids: bool):
    """The id to look up: the text itself for string ids, else the integer it spells."""
    from ..errors import InvalidArgumentError

    if string_ids:
        return text
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError(f"--vertex {text!r}: this checkpoint has integer vertex ids") from None


def _json_id(v):
    return v if isinstance(v, str) else int(v)


def run(args) -> int:
    from ..errors import InvalidArgumentError

    ids, p, restored = load_ranks(args.checkpoint_dir)
    out = {"seq": restored.seq, "checkpoint": restored.snapshot.path, "vertices": int(ids.shape[0])}
    if args.top is not None:
        if args.top < 1:
            raise InvalidArgumentError(f"--top {args.top}: expected at least 1")
        k = min(args.top, p.shape[0])
        order = np.lexsort((ids, -p))[:k]
        out["top"] = [{"rank_position": i + 1, "vertex": _json_id(ids[j]), "rank": float(p[j])}
                      for i, j in enumerate(order)]
        rows = out["top"]
    else:
        string_ids = ids.dtype == object
        index = {v: i for i, v in enumerate(ids.tolist())}
        rows = []
        for text in args.vertex:
            v = _vertex_key(text, string_ids)
            j = index.get(v)
            rows.append({"vertex": v, "rank": None if j is None else float(p[j])})
        out["vertices_queried"] = rows
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"# checkpoint seq={restored.seq} ({out['vertices']} vertices): {out['checkpoint']}")
        for r in rows:
            rank = "unknown vertex" if r["rank"] is None else f"{r['rank']:.12g}"
            pos = f"{r['rank_position']:>6}  " if "rank_position" in r else ""
            print(f"{pos}{str(r['vertex']):>20}  {rank}")
    return 0 if all(r["rank"] is not None for r in rows) else 1
