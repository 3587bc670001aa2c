"""The daemon's base graph (``--base-graph``): what a fresh start (no checkpoint yet) begins with.

``--base-graph`` takes:

- an edge file (any format :mod:`connectors.files` reads), streamed chunk by chunk through
  :meth:`~streamrank.engine.Engine.load_edge_chunks` (:func:`load_edge_file`);
- a checkpoint: a full checkpoint file (``ckpt-*.npz``) or a checkpoint directory (its latest
  state: the newest full checkpoint and the batches logged after it), rebuilt by
  :meth:`~streamrank.engine.Engine.from_state` on the daemon's device (the store's bounded build
  on the GPU) with the ranks it holds, so no static computation runs;
- ``rmat:SCALE[:EDGE_FACTOR[:SEED]]``: a synthetic R-MAT graph (:func:`streamrank.bench.rmat.rmat_edges`,
  edge factor 16 and seed 0 by default) generated on the daemon's device, for benchmarks and
  capacity tests.

The batches of the stream are numbered from 1 after any of them (a checkpoint used as a base
starts at sequence 0: its positions belonged to another input and are not taken).
"""

from __future__ import annotations

import logging
import os
import time

from ..engine import Engine
from ..errors import InvalidArgumentError, SourceError

log = logging.getLogger("streamrank.daemon")


def _engine_kwargs(cfg) -> dict:
    return dict(device=cfg.device, algorithm=cfg.algorithm, config=cfg.rank, id_type=cfg.id_type,
                max_id_bytes=cfg.max_id_bytes, max_graph_bytes=cfg.max_graph_bytes)


def parse_rmat(spec: str) -> tuple:
    """``(scale, edge_factor, seed)`` of ``rmat:SCALE[:EDGE_FACTOR[:SEED]]``.

    Raises
    ------
    InvalidArgumentError
        For a malformed spec.
    """
    parts = spec.split(":")[1:]
    try:
        if not 1 <= len(parts) <= 3:
            raise ValueError("one to three fields")
        scale = int(parts[0])
        ef = int(parts[1]) if len(parts) > 1 else 16
        seed = int(parts[2]) if len(parts) > 2 else 0
    except ValueError as exc:
        raise InvalidArgumentError(f"--base-graph rmat:SCALE[:EDGE_FACTOR[:SEED]], got {spec!r} ({exc})") from None
    if not 1 <= scale <= 31 or ef < 1 or seed < 0:
        raise InvalidArgumentError(f"--base-graph {spec!r}: scale 1..31, edge factor >= 1, seed >= 0")
    return scale, ef, seed


def base_engine(cfg) -> Engine:
    """The engine of a fresh start under ``cfg`` (a :class:`~streamrank.daemon.config.DaemonConfig`):
    empty, or built from ``cfg.base_graph``.

    Raises
    ------
    streamrank.errors.SourceError
        When the file or checkpoint cannot be read.
    streamrank.errors.InvalidArgumentError
        For a malformed ``rmat:`` spec, or an R-MAT base on a weighted or string-id daemon.
    """
    spec = cfg.base_graph
    kw = _engine_kwargs(cfg)
    if not spec:
        return Engine(**kw, weighted=cfg.is_weighted, multi_edges=cfg.multi_edges)
    t0 = time.perf_counter()
    if spec.startswith("rmat:"):
        engine = _rmat_engine(spec, cfg, kw)
    elif os.path.isdir(spec) or (spec.endswith(".npz") and os.path.basename(spec).startswith("ckpt-")):
        engine = _checkpoint_engine(spec, cfg, kw)
    else:
        engine = Engine(**kw, weighted=cfg.is_weighted, multi_edges=cfg.multi_edges)
        load_edge_file(engine, spec, cfg)
    log.info("base graph %s: %d vertices, %d edges (%s ids) in %.1f s", spec, engine.graph.num_vertices,
             engine.graph.num_edges, engine.id_type, time.perf_counter() - t0)
    return engine


def _rmat_engine(spec: str, cfg, kw: dict) -> Engine:
    from ..bench.rmat import rmat_edges

    scale, ef, seed = parse_rmat(spec)
    if cfg.is_weighted or cfg.id_type == "string":
        raise InvalidArgumentError(f"--base-graph {spec}: an R-MAT base has unweighted integer ids")
    engine = Engine(**kw)
    src, dst = rmat_edges(scale, ef, seed=seed, xp=engine.backend.xp)  # generated where the store lives
    engine.load_edges(src, dst)
    return engine


def _checkpoint_engine(spec: str, cfg, kw: dict) -> Engine:
    from ..checkpoints.full import read_checkpoint
    from ..checkpoints.recovery import restore_latest
    from ..errors import CheckpointError

    weighted = True if cfg.is_weighted else None
    if os.path.isdir(spec):
        r = restore_latest(spec, device=cfg.device, algorithm=cfg.algorithm, config=cfg.rank, id_type=cfg.id_type,
                           max_id_bytes=cfg.max_id_bytes, weighted=weighted, multi_edges=cfg.multi_edges)
        if r is None:
            raise SourceError(f"--base-graph {spec}: no checkpoint in the directory")
        engine = r.engine
        engine.max_graph_bytes = cfg.max_graph_bytes
    else:
        try:
            ck = read_checkpoint(spec)
        except CheckpointError as exc:
            raise SourceError(f"--base-graph {spec}: {exc}") from exc
        engine = Engine.from_state(ck.engine_state, **kw, weighted=weighted, multi_edges=cfg.multi_edges)
    engine.seq = 0  # the stream's batches are numbered from 1 after the base
    return engine


def load_edge_file(engine, path: str, cfg) -> None:
    """Load the edge file ``path`` into ``engine`` (empty) with the columns ``cfg.layout()`` names,
    streamed chunk by chunk (:meth:`streamrank.engine.Engine.load_edge_chunks`): the host holds
    one chunk of the reader at a time, never the whole file, and progress lines go to the log
    every 10 s.

    An unweighted engine takes the file's insertions; a weighted one applies its rows in order,
    deletions and repeats included (:meth:`streamrank.engine.Engine.load_edges`), with their weights.

    Raises
    ------
    streamrank.errors.SourceError
        When the file cannot be read (the engine stays empty).
    """
    from connectors.files import open_edge_file

    from ..engine_load import ProgressLog

    with open_edge_file(path, id_type=cfg.id_type, max_id_bytes=cfg.max_id_bytes, layout=cfg.layout()) as reader:
        engine.load_edge_chunks(_file_chunks(reader, engine.weighted), expected_edges=_row_count(reader),
                                progress=ProgressLog(log.info, f"base graph {path}"))
    if engine.graph.num_edges == 0:
        log.info("base graph %s: no edges", path)


def _file_chunks(reader, weighted: bool):
    """The reader's tables as chunks of :meth:`~streamrank.engine.Engine.load_edge_chunks`: a
    weighted engine's rows with their ops and weights, an unweighted one's insertions."""
    import pyarrow.compute as pc

    for t in reader:
        if weighted:
            yield (t.column("src"), t.column("dst"), t.column("op").to_numpy() > 0, t.column("weight").to_numpy())
        else:
            t = t.filter(pc.greater(t.column("op"), 0))
            yield t.column("src"), t.column("dst")


def _row_count(reader) -> int | None:
    """The rows of a Parquet file from its footer (sizes the GPU key buffer once); None for
    text formats, whose size is known only once read."""
    if reader.format != "parquet":
        return None
    try:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(reader.path).metadata.num_rows)
    except Exception:  # the reader reports an unreadable file itself
        return None
