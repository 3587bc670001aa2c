"""The ``streamrank`` command line: one subcommand per module in :mod:`streamrank.commands`.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Modules are imported only when their command runs, so ``streamrank replay``
never imports Kafka or CuPy.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from .errors import StreamrankError

#: command name -> module under streamrank.commands
COMMANDS = {
    "replay": "replay",
    "bench": "bench",
    "serve": "serve",
    "query": "query",
    "ppr": "ppr",
    "bench-ppr": "bench_ppr",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrank",
        description="Dynamic PageRank over a changing graph (DF-P on the GPU or CPU).",
    )
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            mod = importlib.import_module(f"streamrank.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name == f"streamrank.commands.{module}":
                continue  # command not part of this build
            raise
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        parser.error(f"unknown --log-level {args.log_level!r}")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except StreamrankError as exc:
        print(f"streamrank {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # an allocation no check foresaw (CuPy's OutOfMemoryError, thrust's bad_alloc)
        from .store.memory import ADVICE

        print(f"streamrank {args.command}: error: out of memory ({exc or type(exc).__name__}). {ADVICE}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"streamrank {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout left (``| head``): stop quietly
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
