"""The ``bayesbias`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``; :data:`COMMANDS` lists them in help order.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import time

from ..errors import BayesbiasError

__all__ = ["main", "build_parser"]

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = [
    "report",
    "wordlists",
    "distances",
    "weat",
    "mac",
    "simulate",
    "fit",
    "compare",
    "debias",
    "classifier",
    "bbu",
    "contextual",
]


def build_parser() -> argparse.ArgumentParser:
    """Parser with every available sub-command registered."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="bayesbias",
        description="Bias in word embeddings and classifiers, with honest uncertainty.",
        epilog="Run 'bayesbias COMMAND --help' for the options and examples of a command.",
    )
    parser.add_argument("--version", action="version", version=f"bayesbias {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks and debug logging")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # sub-command not shipped in this build
            raise
        module.register(sub)
    return parser


class _Elapsed(logging.Formatter):
    def __init__(self):
        super().__init__()
        self.start = time.perf_counter()

    def format(self, record):
        return f"[{time.perf_counter() - self.start:6.1f}s] {record.getMessage()}"


def _show_progress(show: bool) -> None:
    """Print progress records (``bayesbias.progress``) on stderr unless quiet."""
    logger = logging.getLogger("bayesbias.progress")
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    if show:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Elapsed())
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if show else logging.WARNING)


def main(argv=None) -> int:
    """Run the command line; return the exit code (0 ok, 2 bad input, 3 failed checks)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.DEBUG if args.debug else (logging.ERROR if args.quiet else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s: %(message)s")
    _show_progress(not args.quiet)
    if not getattr(args, "run", None):
        parser.print_help()
        return 0
    if getattr(args, "encoder", None):  # --encoder: word vectors from a sentence encoder
        from ..encoders.options import use_encoder

        use_encoder(parser, args)
    if hasattr(args, "on_missing") and args.on_missing is None:
        sources = [getattr(args, "embedding", None)]
        if args.command == "compare" and getattr(args, "wordlist", None):
            sources = [args.a, args.b]  # compare's embeddings are --a and --b
        shipped = all(s == "default" for s in sources)
        args.on_missing = "drop" if shipped else "error"
    try:
        return int(args.run(args) or 0)
    except BayesbiasError as exc:
        if args.debug:
            raise
        print(f"bayesbias {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # unexpected: short message unless --debug
        if args.debug:
            raise
        print(f"bayesbias {args.command}: unexpected error: {type(exc).__name__}: {exc}\n"
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1
