"""The daemon's HTTP query API and live page: the Starlette application of the HTTP server's process.

Routes (docs/http.md): ``GET /`` (the live page), ``/static/*``, ``GET /status``,
``GET /history?seconds=S``, ``GET /ranks/top?k=K``, ``GET /ranks?vertex=V&vertex=W`` and
``POST /ranks`` (``{"vertices": [...]}``), ``GET /ranks/{vertex}``, ``GET /ppr?seed=V&k=K&method=M``.
Every answer names the batch it reflects (``seq``, and the ``X-Streamrank-Seq`` header); rank
answers come as JSON, or as an Arrow IPC stream with ``format=arrow`` (or
``Accept: application/vnd.apache.arrow.stream``). Bad requests get a 4xx JSON answer
``{"error": reason, "status": code}``.

The application runs in a process of its own (:mod:`.http_serve`, started and watched by
:mod:`.http_process`): rank, status and history requests are answered from the view the loop
last wrote to shared memory (:class:`~streamrank.daemon.shared_view.SnapshotReader`), without
the ingest process's GIL or lock; PPR queries are forwarded to the ingest process, which holds
the live graph (:class:`~streamrank.daemon.http_serve.PprForwarder`).
"""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np

from ..errors import InvalidArgumentError, StreamrankError
from .ppr_pool import PPR_OPTIONS, QueueFull, UnknownSeed

log = logging.getLogger("streamrank.daemon")

#: Largest ``k`` of ``/ranks/top`` and ``/ppr``, and most vertices in one batch query.
K_MAX = 100_000
#: Encoded top-k answers kept per view (distinct ``k`` and format).
TOP_CACHE = 16
ARROW_TYPE = "application/vnd.apache.arrow.stream"
STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")


class HttpError(Exception):
    """A request answered with ``status`` and ``reason``."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _json_bytes(body) -> bytes:
    """``body`` as Starlette's JSONResponse encodes it."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


def _json_id(v):
    return v if isinstance(v, str) else int(v)


def _parse_int(name: str, text, *, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise HttpError(400, f"{name} must be an integer, got {text!r}") from None
    if not lo <= v <= hi:
        raise HttpError(400, f"{name} must be between {lo} and {hi}, got {v}")
    return v


def parse_vertex(view, raw):
    """The vertex id a request names: an integer for an integer-id graph (a JSON number or its
    decimal text), the text itself for a string-id graph."""
    if view.ids.dtype == object:
        if not isinstance(raw, str):
            raise HttpError(400, f"this graph has string vertex ids; got {raw!r}")
        return raw
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise HttpError(400, f"this graph has integer vertex ids; got {raw!r}")
    try:
        v = int(raw)
    except ValueError:
        raise HttpError(400, f"malformed vertex id {raw!r}: this graph has integer vertex ids") from None
    if not 0 <= v < 2**63:
        raise HttpError(400, f"vertex id {raw!r} is out of range (0 .. 2**63-1)")
    return v


def make_app(live, ppr, *, describe: dict | None = None):
    """The Starlette application over ``live`` (and ``ppr`` for ``/ppr``; None: 503 there).

    ``live``: what the loop published (a :class:`~streamrank.daemon.shared_view.SnapshotReader`:
    ``view()``, ``status()``, ``history(seconds)``, ``index``, ``started``); ``ppr``: a
    :class:`~streamrank.daemon.http_serve.PprForwarder` (``await query(seeds, k=, options=)``,
    ``admitted``, ``limit``, ``workers``); ``describe``: static facts for ``/status`` (device,
    algorithm setting, id type, source).
    """
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    describe = dict(describe or {})

    def current():
        view = live.view()
        if view is None:
            raise HttpError(503, "the daemon has not loaded its graph yet")
        return view

    def answer(body: dict, view_seq: int, status: int = 200):
        return JSONResponse(body, status_code=status, headers={"X-Streamrank-Seq": str(view_seq)})

    def wants_arrow(request) -> bool:
        fmt = request.query_params.get("format", "json")
        if fmt not in ("json", "arrow"):
            raise HttpError(400, f"format must be json or arrow, got {fmt!r}")
        return fmt == "arrow" or ARROW_TYPE in request.headers.get("accept", "")

    def arrow_bytes(view, vertices, ranks, extra=None) -> bytes:
        import pyarrow as pa

        cols = {"vertex": pa.array(vertices), "rank": pa.array(ranks, type=pa.float64())}
        if extra:
            cols.update(extra)
        table = pa.table(cols).replace_schema_metadata({"seq": str(view.seq), "vertices": str(view.n)})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        return sink.getvalue().to_pybytes()

    def arrow(view, vertices, ranks, extra=None):
        return Response(arrow_bytes(view, vertices, ranks, extra), media_type=ARROW_TYPE,
                        headers={"X-Streamrank-Seq": str(view.seq)})

    async def index(request):
        return FileResponse(os.path.join(STATIC_DIR, "index.html"))

    async def status(request):
        view = current()
        st = live.status()
        ckpt = st.pop("checkpoint", None)
        if ckpt is not None:
            ckpt = dict(ckpt, age_s=round(time.time() - ckpt["at"], 3))
        body = {"seq": view.seq, "vertices": view.n, "edges": view.info.get("graph_edges"),
                "applied_at": view.applied_at, "age_s": round(time.time() - view.applied_at, 3),
                "last_batch": {k: v for k, v in view.info.items() if k not in ("vertices", "graph_edges")},
                "checkpoint": ckpt, "uptime_s": round(time.time() - live.started, 3), **describe, **st}
        if view.n:  # fixed by the first edges when the setting is auto
            body["id_type"] = "string" if view.ids.dtype == object else "int"
        if ppr is not None:
            body["ppr"] = {"admitted": ppr.admitted, "limit": ppr.limit, "workers": ppr.workers}
        return answer(body, view.seq)

    async def history(request):
        view = current()
        secs = _parse_int("seconds", request.query_params.get("seconds", "300"), lo=1, hi=86400)
        rows = live.history(secs)
        keys = ("t", "seq", "edges", "graph_ms", "rank_ms", "wait_ms", "lag")
        return answer({"seq": view.seq, "columns": list(keys), "rows": [list(r) for r in rows]}, view.seq)

    async def top(request):
        view = current()
        k = _parse_int("k", request.query_params.get("k", "100"), lo=1, hi=K_MAX)
        key = ("top", k, wants_arrow(request))
        hit = view.answers.get(key)
        if hit is None:  # encoded once per view: every client asking gets the same bytes
            idx = view.top(k)
            if key[2]:
                import pyarrow as pa

                hit = (arrow_bytes(view, view.ids[idx].tolist(), view.p[idx],
                                   {"position": pa.array(np.arange(1, idx.shape[0] + 1), type=pa.int64())}),
                       ARROW_TYPE)
            else:
                rows = [{"position": i + 1, "vertex": _json_id(v), "rank": float(r)}
                        for i, (v, r) in enumerate(zip(view.ids[idx].tolist(), view.p[idx].tolist()))]
                hit = (_json_bytes({"seq": view.seq, "vertices": view.n, "k": k, "top": rows}),
                       "application/json")
            if len(view.answers) < TOP_CACHE:
                view.answers[key] = hit
        return Response(hit[0], media_type=hit[1], headers={"X-Streamrank-Seq": str(view.seq)})

    def ranks_of(request, view, raw: list):
        if not raw:
            raise HttpError(400, "give at least one vertex (vertex=ID, repeatable, or POST {\"vertices\": [...]})")
        if len(raw) > K_MAX:
            raise HttpError(400, f"at most {K_MAX} vertices per query, got {len(raw)}")
        keys = [parse_vertex(view, r) for r in raw]
        internal = live.index.lookup(view, keys)
        found = internal >= 0
        ranks = np.full(len(keys), np.nan)
        ranks[found] = view.p[internal[found]]
        if wants_arrow(request):
            return arrow(view, keys, ranks)
        rows = [{"vertex": k, "rank": float(r) if f else None} for k, r, f in zip(keys, ranks.tolist(), found)]
        return answer({"seq": view.seq, "vertices": view.n, "ranks": rows,
                       "unknown": [k for k, f in zip(keys, found) if not f]}, view.seq)

    async def ranks_get(request):
        view = current()
        return ranks_of(request, view, request.query_params.getlist("vertex"))

    async def ranks_post(request):
        view = current()
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, f"the body must be JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("vertices"), list):
            raise HttpError(400, 'the body must be {"vertices": [id, ...]}')
        return ranks_of(request, view, body["vertices"])

    async def one_rank(request):
        view = current()
        key = parse_vertex(view, request.path_params["vertex"])
        i = int(live.index.lookup(view, [key])[0])
        if i < 0:
            raise HttpError(404, f"unknown vertex {key!r} (not in the graph at batch {view.seq})")
        return answer({"seq": view.seq, "vertex": key, "rank": float(view.p[i]), "vertices": view.n}, view.seq)

    async def ppr_query(request):
        view = current()
        if ppr is None:
            raise HttpError(503, "personalized PageRank queries are off")
        q = request.query_params
        seeds = [parse_vertex(view, s) for s in q.getlist("seed")]
        if not seeds:
            raise HttpError(400, "give at least one seed (seed=ID, repeatable: one query on the seed set)")
        k = _parse_int("k", q.get("k", "20"), lo=1, hi=K_MAX)
        unknown = set(q.keys()) - set(PPR_OPTIONS) - {"seed", "k"}
        if unknown:
            raise HttpError(400, f"unknown parameter(s): {sorted(unknown)}; PPR takes seed, k and {sorted(PPR_OPTIONS)}")
        options = {}
        for name, typ in PPR_OPTIONS.items():
            if name in q:
                try:
                    options[name] = typ(q[name])
                except ValueError:
                    raise HttpError(400, f"{name} must be a {typ.__name__}, got {q[name]!r}") from None
        try:
            body = await ppr.query(seeds, k=k, options=options)
        except QueueFull as exc:
            raise HttpError(429, str(exc)) from None
        except UnknownSeed as exc:
            raise HttpError(404, str(exc)) from None
        except InvalidArgumentError as exc:
            raise HttpError(400, str(exc)) from None
        return answer(body, body["seq"])

    async def http_error(request, exc):
        return JSONResponse({"error": exc.reason, "status": exc.status}, status_code=exc.status)

    async def starlette_error(request, exc):
        return JSONResponse({"error": exc.detail, "status": exc.status_code}, status_code=exc.status_code)

    async def internal_error(request, exc):
        log.error("HTTP %s %s failed: %r", request.method, request.url.path, exc)
        reason = str(exc) if isinstance(exc, StreamrankError) else f"internal error: {type(exc).__name__}"
        return JSONResponse({"error": reason, "status": 500}, status_code=500)

    routes = [
        Route("/", index),
        Route("/status", status),
        Route("/history", history),
        Route("/ranks/top", top),
        Route("/ranks", ranks_get, methods=["GET"]),
        Route("/ranks", ranks_post, methods=["POST"]),
        Route("/ranks/{vertex:path}", one_rank),
        Route("/ppr", ppr_query),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HttpError: http_error, HTTPException: starlette_error,
                                                       Exception: internal_error})
    return _FastReads(app, live)


class _FastReads:
    """ASGI: the two most frequent reads answered without Starlette's routing and request and
    response objects (about a third of a request's CPU time in the server), every other request
    passed to ``app``.

    Taken here: ``GET /ranks/top`` and ``GET /ranks/top?k=K`` whose JSON answer about the current
    view is already encoded (``view.answers``, filled by the route the first time), and
    ``GET /ranks/V`` of a known vertex ``V`` (decimal digits) of an integer-id graph, without a
    query string. The answers are byte for byte the routes' own; anything else (an Arrow
    ``Accept``, another parameter, an unknown vertex, an error) goes to the routes.
    """

    _ARROW = ARROW_TYPE.encode()

    def __init__(self, app, live):
        self.app, self.live = app, live

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].startswith("/ranks/"):
            try:
                hit = self._answer(scope)
            except Exception:  # noqa: BLE001 -- the routes answer it, with their error handling
                hit = None
            if hit is not None:
                seq, body = hit
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-length", str(len(body)).encode()),
                                        (b"content-type", b"application/json"),
                                        (b"x-streamrank-seq", str(seq).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    def _answer(self, scope):
        if any(name == b"accept" and self._ARROW in value for name, value in scope["headers"]):
            return None
        view = self.live.view()
        if view is None:
            return None
        path, qs = scope["path"], scope["query_string"]
        if path == "/ranks/top":
            if qs and not (qs.startswith(b"k=") and 2 < len(qs) <= 8 and qs[2:].isdigit()):
                return None
            hit = view.answers.get(("top", int(qs[2:]) if qs else 100, False))
            return None if hit is None else (view.seq, hit[0])
        raw = path[len("/ranks/"):]
        if qs or view.ids.dtype == object or not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
            return None
        v = int(raw)
        i = int(self.live.index.lookup(view, [v])[0])
        if i < 0:
            return None
        return view.seq, _json_bytes({"seq": view.seq, "vertex": v, "rank": float(view.p[i]), "vertices": view.n})
