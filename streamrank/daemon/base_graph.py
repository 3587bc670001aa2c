"""The daemon's base graph (``--base-graph``): an edge file loaded into the engine on a fresh start."""

from __future__ import annotations

import logging

log = logging.getLogger("streamrank.daemon")


def load_base_graph(engine, path: str, cfg) -> None:
    """Load the edge file ``path`` into ``engine`` with the columns ``cfg.layout()`` names.

    An unweighted engine takes the file's insertions; a weighted one applies its rows in order,
    deletions and repeats included (:meth:`streamrank.engine.Engine.load_edges`), with their weights.

    Raises
    ------
    streamrank.errors.SourceError
        When the file cannot be read.
    """
    from connectors.files import open_edge_file

    import pyarrow as pa
    import pyarrow.compute as pc

    tables = []
    weighted = engine.weighted
    with open_edge_file(path, id_type=cfg.id_type, max_id_bytes=cfg.max_id_bytes, layout=cfg.layout()) as reader:
        for t in reader:
            if weighted:
                tables.append(t.select(["src", "dst", "op", "weight"]))
            else:
                tables.append(t.filter(pc.greater(t.column("op"), 0)).select(["src", "dst"]))
    if not tables:
        log.info("base graph %s: no edges", path)
        return
    whole = pa.concat_tables(tables).combine_chunks()
    if weighted:
        engine.load_edges(whole.column("src"), whole.column("dst"), whole.column("op").to_numpy() > 0,
                          weight=whole.column("weight").to_numpy())
    else:
        engine.load_edges(whole.column("src"), whole.column("dst"))
    log.info("base graph %s: %d edges (%s ids%s)", path, whole.num_rows, engine.id_type,
             ", weighted" if weighted else "")
