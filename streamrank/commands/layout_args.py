"""The column-layout flags shared by ``replay`` and ``ppr``: ``--src/--dst/--ts/--op``, ``--header``,
``--delimiter`` (see :mod:`connectors.files.layout`), and ``replay``'s weight flags ``--weighted``,
``--multi-edges``, ``--weight``."""

from __future__ import annotations

import argparse

COLUMN_HELP = ("{role} column: a header name or a 1-based column number (Parquet and JSON lines: a field name); "
               "default: {default}")
DEFAULTS = {
    "src": "the column named src (or source, from, sender, u); column 1 without a header",
    "dst": "the column named dst (or target, to, receiver, v, destination); column 2 without a header",
    "ts": "the column named ts (or time, timestamp, unixtime, datetime, date); column 3 of a headerless "
          "3-column file; 'none': replay in file order. Integers, fractional seconds or ISO-8601",
    "op": "the column named op (or operation, action); 'none': every row inserts. Values +/-, insert/delete, 1/-1",
}


def add_layout_arguments(p: argparse.ArgumentParser) -> None:
    """Add the layout flags to a command's parser."""
    g = p.add_argument_group("columns of the edge file (detected when not given)")
    for role in ("src", "dst", "ts", "op"):
        g.add_argument(f"--{role}", default=None, metavar="COL",
                       help=COLUMN_HELP.format(role=role, default=DEFAULTS[role]))
    header = g.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True, default=None,
                        help="the first line names the columns (default: detected: a header when the first line "
                             "holds a known column name, or text above numbers)")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="the first line is data")
    g.add_argument("--delimiter", default=None, metavar="SEP",
                   help="field separator: comma, tab, semicolon, pipe or space (runs of blanks); "
                        "default: detected from the first lines")


def add_weight_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--weighted``, ``--multi-edges set|sum`` and ``--weight COL`` to a command's parser."""
    g = p.add_argument_group("weighted edges")
    g.add_argument("--weighted", action="store_true",
                   help="read a weight with every edge (the column named weight, or --weight COL; an insert "
                        "without one weighs 1): a vertex's rank flows along its out-edges in proportion to their "
                        "weights (default: unweighted)")
    g.add_argument("--multi-edges", default="set", choices=("set", "sum"),
                   help="repeats of an edge: set (a new weight replaces the old, a delete removes the edge; "
                        "default) or sum (weights add up, a delete subtracts its weight or, without one, removes "
                        "the edge; turns --weighted on)")
    g.add_argument("--weight", default=None, metavar="COL",
                   help="weight column: a header name or a 1-based column number (Parquet and JSON lines: a field "
                        "name); default: the column named weight (or weights); a headerless file has none unless "
                        "named (its third column is a timestamp); 'none': every insert weighs 1")


def is_weighted(args) -> bool:
    """Whether the flags ask for weights (``--weighted``, or ``--multi-edges sum``)."""
    return bool(getattr(args, "weighted", False)) or getattr(args, "multi_edges", "set") == "sum"


def layout_from_args(args):
    """The :class:`connectors.files.layout.Layout` the flags state (raises InvalidArgumentError)."""
    from connectors.files.layout import Layout

    return Layout(header=args.header, delimiter=args.delimiter, src=args.src, dst=args.dst, ts=args.ts, op=args.op,
                  weight=getattr(args, "weight", None), weighted=is_weighted(args))
