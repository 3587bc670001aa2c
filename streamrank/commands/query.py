"""``streamrank query``: ranks from a running daemon's HTTP API (``--url``) or from the latest
checkpoint of a daemon (``--checkpoint-dir``)."""

from __future__ import annotations

import json

import numpy as np

HELP = "read ranks from a running daemon (--url) or its latest checkpoint (--top K or --vertex ID)"
#: Seconds a ``--url`` query waits for the daemon's answer.
URL_TIMEOUT_S = 30.0


def add_arguments(parser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", metavar="URL", help="a running daemon's HTTP API (serve --http-port), e.g. "
                                                    "http://127.0.0.1:8080: the ranks of its last applied batch")
    where.add_argument("--checkpoint-dir", metavar="DIR", help="the daemon's checkpoint directory")
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


def fetch_json(url: str, path: str, *, timeout: float = URL_TIMEOUT_S) -> dict:
    """The JSON answer of ``GET url + path`` from a daemon's HTTP API.

    Raises
    ------
    InvalidArgumentError
        When the daemon answers 4xx (its reason is the message).
    StreamrankError
        When the daemon cannot be reached or answers otherwise.
    """
    import urllib.error
    import urllib.request

    from ..errors import InvalidArgumentError, StreamrankError

    full = url.rstrip("/") + path
    try:
        with urllib.request.urlopen(full, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read())["error"]
        except (ValueError, KeyError, TypeError):
            reason = exc.reason
        err = InvalidArgumentError if 400 <= exc.code < 500 else StreamrankError
        raise err(f"{full}: HTTP {exc.code}: {reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise StreamrankError(f"cannot reach the daemon at {url}: {exc}") from None


def _run_url(args) -> int:
    import urllib.parse

    from ..errors import InvalidArgumentError

    if args.top is not None:
        if args.top < 1:
            raise InvalidArgumentError(f"--top {args.top}: expected at least 1")
        ans = fetch_json(args.url, f"/ranks/top?k={args.top}")
        rows = [{"rank_position": r["position"], "vertex": r["vertex"], "rank": r["rank"]} for r in ans["top"]]
        out = {"seq": ans["seq"], "url": args.url, "vertices": ans["vertices"], "top": rows}
    else:
        q = "&".join("vertex=" + urllib.parse.quote(v, safe="") for v in args.vertex)
        ans = fetch_json(args.url, f"/ranks?{q}")
        rows = ans["ranks"]
        out = {"seq": ans["seq"], "url": args.url, "vertices": ans["vertices"], "vertices_queried": rows}
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(f"# live daemon seq={out['seq']} ({out['vertices']} vertices): {args.url}")
        _print_rows(rows)
    return 0 if all(r["rank"] is not None for r in rows) else 1


def _print_rows(rows) -> None:
    for r in rows:
        rank = "unknown vertex" if r["rank"] is None else f"{r['rank']:.12g}"
        pos = f"{r['rank_position']:>6}  " if "rank_position" in r else ""
        print(f"{pos}{str(r['vertex']):>20}  {rank}")


def run(args) -> int:
    from ..errors import InvalidArgumentError

    if args.url:
        return _run_url(args)
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
        _print_rows(rows)
    return 0 if all(r["rank"] is not None for r in rows) else 1
