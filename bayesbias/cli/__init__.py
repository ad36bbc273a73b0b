"""The ``bayesbias`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``; :data:`COMMANDS` lists them in help order.

Start-up is kept short: only the module of the command being run is imported (``--help``
alone imports none of them, using :data:`SUMMARIES`), and command modules import their
heavy dependencies (PyMC, ArviZ, matplotlib) where they use them.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import time

from .._atomic import check_output
from ..encoders.options import use_encoder
from ..errors import BayesbiasError, InvalidArgumentError
from ..validation import (
    MAX_CHAINS,
    MAX_DRAWS,
    MAX_RESAMPLES,
    MAX_SEED,
    validate_int,
    validate_probability,
)
from ._common import ArgumentParser, VersionAction, add_global_options, printable

__all__ = ["main", "build_parser", "COMMANDS", "SUMMARIES"]

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = [
    "report",
    "wordlists",
    "distances",
    "weat",
    "mac",
    "metric",
    "simulate",
    "fit",
    "compare",
    "debias",
    "classifier",
    "groups",
    "bbu",
    "design",
    "calibrate",
    "contextual",
    "train",
]

#: One-line help of each command, shown by ``bayesbias --help`` without importing the
#: command's module (a test checks they equal the modules' own). A command missing here
#: is imported to get its help.
SUMMARIES = {
    "report": "run everything (distances, WEAT, MAC, null distributions, Bayesian fit) "
              "into a report",
    "wordlists": "list shipped word lists with counts, or show one",
    "distances": "build the table of cosine distances for a word list",
    "weat": "Word Embedding Association Test (exact/Monte Carlo permutation p)",
    "mac": "Mean Average Cosine distance (Manzini et al.), paired t-test",
    "metric": "RND, RNSB, ECT, RIPA, direct/indirect bias, WEAT-ES with intervals",
    "simulate": "null-simulation study: WEAT and MAC with no bias",
    "fit": "fit a Bayesian model of cosine distances (HDIs, contrasts, PPC)",
    "compare": "posterior differences between two embeddings (b - a)",
    "debias": "hard-debias an embedding for a word list (Bolukbasi/Manzini)",
    "classifier": "bias metrics of a classifier's scores across groups, with intervals",
    "groups": "Bayesian rates of a classifier per intersectional group, with intervals for "
              "every gap",
    "bbu": "sample size and interval width for Bernstein-bounded unfairness",
    "design": "plan a study: assurance of the verdicts and WEAT/MAC power per design",
    "calibrate": "simulation-based calibration of a model (rank histograms)",
}

_FLAGS = {"--debug", "--quiet", "--version", "-h", "--help"}


def _chosen(argv) -> str | None:
    """Return the command named in `argv` (the first word that is not a global flag)."""
    for token in argv:
        if token == "--":
            return None
        if not token.startswith("-"):
            return token
        if token not in _FLAGS:
            return None  # an unknown option: let argparse report it
    return None


def _register(sub, name: str) -> bool:
    try:
        module = importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return False  # sub-command not shipped in this build
        raise
    module.register(sub)
    return True


def build_parser(argv=None):
    """Parser with the sub-commands registered.

    With `argv`, only the command it names is imported and fully registered; the others
    appear in ``--help`` with their one-line summary. Without `argv`, every command is
    registered (slower: imports every command module).
    """
    parser = ArgumentParser(
        prog="bayesbias",
        description="Bias in word embeddings and classifiers, with honest uncertainty.",
        epilog="Run 'bayesbias COMMAND --help' for the options and examples of a command. "
               "--debug and --quiet also work after COMMAND.",
    )
    parser.add_argument("--version", action=VersionAction)
    add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen(argv) if argv is not None else None
    for name in COMMANDS:
        if argv is None or name == chosen or name not in SUMMARIES:
            _register(sub, name)
        else:
            sub.add_parser(name, help=SUMMARIES[name], add_help=False)
    return parser


class _Printable(logging.Formatter):
    """Log lines with terminal control characters from words or file names escaped."""

    def format(self, record):
        return printable(super().format(record))


class _Elapsed(logging.Formatter):
    def __init__(self):
        super().__init__()
        self.start = time.perf_counter()

    def format(self, record):
        return f"[{time.perf_counter() - self.start:6.1f}s] {printable(record.getMessage())}"


def _show_progress(show: bool) -> None:
    """Print progress records (``bayesbias.progress``) on stderr unless quiet (or JSON)."""
    logger = logging.getLogger("bayesbias.progress")
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    if show:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Elapsed())
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if show else logging.WARNING)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every clean-up (temporary files) runs."""


#: Signals received while a command runs. A signal can land inside a C extension's import
#: (e.g. numpy's), which turns the KeyboardInterrupt into an ImportError: the record keeps
#: such an error reading as the interruption it is.
_RECEIVED: list[int] = []


def _on_sigint(signum, frame):
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def _on_sigterm(signum, frame):
    _RECEIVED.append(signum)
    raise Terminated()


def _redeliver(unraisable) -> None:
    """Deliver again a signal that landed where Python cannot raise (a weakref callback).

    Python prints such a KeyboardInterrupt as "Exception ignored" and runs on, so Ctrl-C or
    SIGTERM would be lost; the signal is raised again in the main thread instead.
    """
    import _thread
    import threading
    import time

    exc = unraisable.exc_value
    if not isinstance(exc, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
        return
    signum = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT

    def again():  # from another thread, once the callback has returned
        time.sleep(0.001)
        _thread.interrupt_main(signum)

    threading.Thread(target=again, daemon=True).start()


def _install_signals() -> dict | None:
    """Ctrl-C -> KeyboardInterrupt, SIGTERM -> Terminated; return the previous handlers."""
    _RECEIVED.clear()
    try:
        previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _on_sigterm),
                    signal.SIGINT: signal.signal(signal.SIGINT, _on_sigint)}
    except ValueError:  # not the main thread (e.g. main() called from a worker thread)
        return None
    previous["unraisablehook"] = sys.unraisablehook
    sys.unraisablehook = _redeliver
    return previous


def _interrupted(command: str, terminated: bool) -> int:
    # no import here: the signal may have broken a half-done import (a stdlib package left
    # half-initialised), and temporary files exist only if the writer module was loaded
    atomic = sys.modules.get("bayesbias._atomic")
    if atomic is not None:
        atomic.remove_temporary_files()
    print(f"{command}: {'terminated' if terminated else 'interrupted'}; no output written",
          file=sys.stderr)
    return 143 if terminated else 130


def main(argv=None) -> int:
    """Run the command line; return the exit code.

    0 ok, 2 bad input (one line naming the file, word, column or flag), 3 failed checks,
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
    """
    previous = _install_signals()
    command = "bayesbias"
    debug = False
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        from ..provenance import set_command

        set_command(argv)  # the exact command line, for provenance
        debug = "--debug" in argv
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        debug = args.debug
        command = f"bayesbias {args.command}" if args.command else command
        return _run(parser, args)
    except KeyboardInterrupt as exc:
        if debug:
            raise
        return _interrupted(command, isinstance(exc, Terminated))
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        if debug:
            raise
        if _RECEIVED:  # the error is the signal's, seen through a library (see _RECEIVED)
            return _interrupted(command, _RECEIVED[-1] == signal.SIGTERM)
        return _report_exception(command, exc)
    finally:
        for signum, handler in (previous or {}).items():
            if signum == "unraisablehook":
                sys.unraisablehook = handler
            elif handler is not None:
                signal.signal(signum, handler)


def _report_exception(command: str, exc: BaseException) -> int:
    if isinstance(exc, BayesbiasError):
        print(f"{command}: error: {printable(exc)}", file=sys.stderr)
        return exc.exit_code
    if isinstance(exc, OSError) and exc.filename:  # an input or output path of the user
        print(f"{command}: error: {printable(exc.filename)}: "
              f"{exc.strerror or type(exc).__name__}", file=sys.stderr)
        return 2
    if isinstance(exc, RecursionError):
        print(f"{command}: error: input nested too deeply to read", file=sys.stderr)
        return 2
    if isinstance(exc, MemoryError):
        print(f"{command}: error: out of memory", file=sys.stderr)
        return 2
    print(f"{command}: unexpected error: {type(exc).__name__}: {printable(exc)}\n"
          "(run with --debug for the traceback)", file=sys.stderr)
    return 1


def _int_limits() -> dict[str, tuple[int, int]]:
    """Return the limits every command's options of these names obey.

    Checked after parsing, so a command whose option has a plain ``type=int`` is covered.
    """
    return {"seed": (0, MAX_SEED), "draws": (1, MAX_DRAWS), "tune": (1, MAX_DRAWS),
            "chains": (1, MAX_CHAINS), "permutations": (0, 10**9),
            "null_reps": (0, MAX_RESAMPLES), "reps": (1, MAX_RESAMPLES),
            "bootstrap": (0, MAX_RESAMPLES), "workers": (1, 1024), "jobs": (1, 1024),
            "k": (1, 10_000)}
_PROBABILITIES = ("ci_prob", "confidence", "alpha", "target_accept")


def _flag(dest: str) -> str:
    return ("-" if len(dest) == 1 else "--") + dest.replace("_", "-")


def _check_common(args) -> None:
    """Refuse non-finite numbers and out-of-range counts in any command's options."""
    import math
    import numbers

    limits = _int_limits()
    for dest, value in vars(args).items():
        if value is None or isinstance(value, bool) or dest in ("run", "command"):
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                raise InvalidArgumentError(f"{_flag(dest)} must be a finite number, got {v!r}")
        if dest in limits and all(isinstance(v, numbers.Real) for v in values):
            low, high = limits[dest]
            for v in values:
                validate_int(v, _flag(dest), low=low, high=high)
        if dest in _PROBABILITIES and all(isinstance(v, numbers.Real) for v in values):
            for v in values:
                validate_probability(v, _flag(dest))


def _check_outputs(args) -> None:
    """Refuse a bad ``-o`` / ``--plot`` target before any computation (every command)."""
    output = getattr(args, "output", None)
    if isinstance(output, str):
        folder = args.command in ("report", "train") or (args.command == "compare"
                                                         and not output.endswith(".nc"))
        check_output(output, what="-o", folder=folder)
    plot = getattr(args, "plot", None)
    if isinstance(plot, str):
        from ..models.plots import figure_format

        check_output(plot, what="--plot")
        figure_format(plot)


def _run(parser, args) -> int:
    level = logging.DEBUG if args.debug else (logging.ERROR if args.quiet else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Printable("%(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # progress goes to stderr, and not at all with --quiet or --json (machine-read output)
    _show_progress(not args.quiet and not getattr(args, "json", False))
    if not getattr(args, "run", None):
        parser.print_help()
        return 0
    _check_common(args)
    _check_outputs(args)
    if getattr(args, "validate", False) is True:  # --validate: for this run only
        from ..inputs.embeddings import validating

        with validating():
            return _run_command(parser, args)
    return _run_command(parser, args)


def _run_command(parser, args) -> int:
    if hasattr(args, "word_vectors"):  # --encoder: word vectors from a sentence encoder

        use_encoder(parser, args)
    if hasattr(args, "on_missing") and args.on_missing is None:
        sources = [getattr(args, "embedding", None)]
        if args.command == "compare" and getattr(args, "wordlist", None):
            sources = [args.a, args.b]  # compare's embeddings are --a and --b
        shipped = all(s == "default" for s in sources)
        args.on_missing = "drop" if shipped else "error"
    return int(args.run(args) or 0)
