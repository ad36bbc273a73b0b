"""Helpers shared by the sub-commands: option vocabulary, validated types, JSON output.

One definition per option used by several commands (``--distances``, ``--wordlist``,
``--x/--y/--a/--b``, ``--ci-prob``, ``--bootstrap``, ``--seed``,
``--draws``/``--tune``/``--chains``, ``--workers``/``--scheduler``, the embedding options),
and argparse types that reject what makes no sense at parse time (``inf``, ``nan``,
negative counts, probabilities outside (0, 1)) with one line naming the flag. The types
call :mod:`bayesbias.validation`, so Python and the CLI accept the same values.

Vocabulary: an option name means one thing in every command. An earlier spelling stays
accepted as a deprecated alias (:func:`add_option`): hidden from ``--help``, it works as
before and prints ``warning: --OLD is deprecated; use --NEW`` on stderr. Every option's
help shows its default (:class:`HelpFormatter` adds ``(default: ...)`` where the text
does not say it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .._atomic import atomic_path
from ..config import DEFAULT_MODEL, defaults
from ..encoders.options import add_encoder_options
from ..errors import InvalidArgumentError, WordListError
from ..plain import dropped_line, to_plain
from ..validation import (
    MAX_CHAINS,
    MAX_DRAWS,
    MAX_RESAMPLES,
    MAX_SEED,
    POSTERIOR_CI_KINDS,
    validate_float,
    validate_int,
)

__all__ = ["add_parser", "add_json", "add_embedding_options", "emit", "to_jsonable",
           "int_range", "float_range", "positive_int", "nonneg_int", "probability",
           "positive_float", "finite_float", "seed", "add_seed", "add_distances",
           "add_ci_prob", "add_bootstrap", "add_sampling_options", "add_global_options",
           "add_option", "add_wordlist", "add_word_sets", "word_sets", "add_parallel_options",
           "add_output", "add_plot", "add_table_source", "add_model_options", "add_rope",
           "resolve_draws",
           "dropped_line", "printable", "MAX_DRAWS", "MAX_CHAINS", "MAX_RESAMPLES"]



class _Type:
    """An argparse type with a readable name (argparse shows ``__name__`` on failure)."""

    def __init__(self, fn, name: str):
        self.fn = fn
        self.__name__ = name

    def __call__(self, text):
        try:
            return self.fn(text)
        except InvalidArgumentError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def __repr__(self) -> str:
        return self.__name__


def int_range(low: int | None = 1, high: int | None = None, name: str = "int") -> _Type:
    """Argparse type: a whole number in ``[low, high]`` (``1000`` or ``1e3``)."""
    return _Type(lambda t: validate_int(t, "value", low=low, high=high), name)


def float_range(low: float | None = None, high: float | None = None, *,
                low_open: bool = False, high_open: bool = False,
                name: str = "float") -> _Type:
    """Argparse type: a finite number within the bounds (``inf`` and ``nan`` refused)."""
    return _Type(lambda t: validate_float(t, "value", low=low, high=high, low_open=low_open,
                                          high_open=high_open), name)


#: A whole number >= 1 (``1000`` or ``1e3``), at most 10**9.
positive_int = int_range(1, 10**9, "positive_int")
#: A whole number >= 0, at most 10**9.
nonneg_int = int_range(0, 10**9, "nonneg_int")
#: A probability strictly between 0 and 1 (e.g. ``0.89``).
probability = float_range(0.0, 1.0, low_open=True, high_open=True, name="probability")
#: A finite number > 0.
positive_float = float_range(0.0, None, low_open=True, name="positive_float")
#: Any finite number.
finite_float = float_range(name="finite_float")
#: A seed in [0, 2**32 - 1].
seed = int_range(0, MAX_SEED, "seed")


class ArgumentParser(argparse.ArgumentParser):
    """argparse parser whose errors are one line: ``bayesbias CMD: error: ...``."""

    def error(self, message):
        message = message.replace("value must", "must")
        self.exit(2, f"{self.prog}: error: {printable(message)} (see '{self.prog} --help')\n")


class VersionAction(argparse.Action):
    """``--version``: print the version (looked up only when asked) and exit."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the version and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from .. import __version__

        parser.exit(message=f"bayesbias {__version__}\n")


class _DeprecatedAlias(argparse.Action):
    """An earlier spelling of an option: stores like the option and warns on stderr."""

    def __init__(self, option_strings, dest, use: str = "", inner=None, **kwargs):
        self.use = use
        self.inner = inner or argparse._StoreAction
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: warning: {option_string} is deprecated; use {self.use}",
              file=sys.stderr)
        self.inner(self.option_strings, self.dest)(parser, namespace, values, option_string)


_INNER = {None: argparse._StoreAction, "store": argparse._StoreAction,
          "append": argparse._AppendAction, "store_true": argparse._StoreTrueAction,
          "store_false": argparse._StoreFalseAction}


def add_option(parser, *flags: str, deprecated: tuple[str, ...] = (), **kwargs):
    """Add an option; each of `deprecated` is an earlier spelling kept as a hidden alias.

    The alias takes the same values, stores into the same ``dest`` and prints
    ``PROG: warning: --OLD is deprecated; use --NEW`` when used.
    """
    action = parser.add_argument(*flags, **kwargs)
    if deprecated:
        kind = kwargs.get("action")
        inner = _INNER[kind]
        extra = {k: v for k, v in kwargs.items() if k in ("type", "choices", "nargs", "metavar")}
        if kind in ("store_true", "store_false"):
            extra = {"nargs": 0}
        parser.add_argument(*deprecated, dest=action.dest, action=_DeprecatedAlias,
                            use=flags[0], inner=inner, default=argparse.SUPPRESS,
                            help=argparse.SUPPRESS, **extra)
    return action


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with the description as written and every option's default shown.

    An option whose help does not mention its default gets ``(default: VALUE)``; options
    whose default is ``None`` must say in words what happens without them.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text or "%(default)" in text or default in (None, False)
                or default is argparse.SUPPRESS or isinstance(action, argparse._HelpAction)
                or not action.option_strings):
            return text
        shown = (" ".join(map(str, default)) if isinstance(default, (list, tuple))
                 else "%(default)s")
        return f"{text} (default: {shown})" if text else f"(default: {shown})"


def add_global_options(parser, suppress: bool = False) -> None:
    """Add ``--debug`` and ``--quiet`` (also accepted after the command name)."""
    default = argparse.SUPPRESS if suppress else False
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show tracebacks and debug logging")
    parser.add_argument("--quiet", action="store_true", default=default,
                        help="no progress output")


def add_seed(parser, default=None, help: str | None = None) -> None:
    """Add ``--seed`` (0 to 2**32 - 1)."""
    parser.add_argument("--seed", type=seed, default=default,
                        help=help or f"random seed, 0 to {MAX_SEED} (default {default})")


def add_distances(parser, help: str | None = None, **kwargs) -> None:
    """Add ``--distances TABLE``: a file or ``published:TOPIC:EMBEDDING``.

    The one spelling of the distance-table option (``--table`` is a deprecated alias).
    """
    kwargs.setdefault("default", None)
    add_option(
        parser, "--distances", deprecated=("--table",), dest="distances", metavar="TABLE",
        help=help or "distance table: a CSV/Parquet file (ours or the published format) "
                     "or published:TOPIC:EMBEDDING (e.g. published:religion:reddit) "
                     "(default: none)",
        **kwargs)


def add_wordlist(parser, default: str | None = "religion", help: str | None = None,
                 deprecated: tuple[str, ...] = ()) -> None:
    """Add ``--wordlist NAME``: a shipped list name or a TOML file."""
    shown = "none" if default is None else default
    add_option(parser, "--wordlist", deprecated=deprecated, dest="wordlist", default=default,
               metavar="NAME",
               help=help or f"word list: a shipped name or a TOML file (default {shown})")


def add_word_sets(parser) -> None:
    """Add ``--x``, ``--y``, ``--a`` and ``--b``: explicit word sets (see :func:`word_sets`)."""
    for name in ("x", "y", "a", "b"):
        parser.add_argument(f"--{name}", default=None, metavar="WORDS",
                            help=f"set {name.upper()}: comma-separated words or a file with "
                                 "one word per line (default: from the word list)")


def _words(text: str, flag: str) -> tuple[str, ...]:
    path = Path(text)
    raw = path.read_text(encoding="utf-8").splitlines() if path.is_file() else [text]
    words = [w.strip() for line in raw for w in line.split(",")]
    words = [w for w in words if w and not w.startswith("#")]
    if not words:
        raise WordListError(f"--{flag}: no words in {text!r}")
    return tuple(words)


def word_sets(args) -> dict[str, tuple[str, ...]] | None:
    """Return the sets of ``--x/--y/--a/--b`` as ``{"X": words, ...}`` (None if not given).

    Refuses a partial set of the four and their use together with ``--wordlist``.
    """
    given = {k: getattr(args, k) for k in "xyab"}
    if not any(given.values()):
        return None
    if getattr(args, "wordlist", None):
        raise WordListError("give either --wordlist or --x/--y/--a/--b, not both")
    absent = [f"--{k}" for k, v in given.items() if not v]
    if absent:
        raise WordListError(f"explicit sets need all of --x --y --a --b; missing "
                            f"{' '.join(absent)}")
    return {k.upper(): _words(v, k) for k, v in given.items()}


def add_ci_prob(parser, default: float | None = 0.89, help: str | None = None,
                deprecated: tuple[str, ...] = (), dest: str = "ci_prob") -> None:
    """Add ``--ci-prob``: interval probability in (0, 1)."""
    shown = f"{defaults.ci_prob}" if default is None else default
    add_option(parser, "--ci-prob", deprecated=deprecated, dest=dest, type=probability,
               default=default, metavar="P",
               help=help or f"interval probability in (0, 1) (default {shown})")


def add_bootstrap(parser, default: int = 0, help: str | None = None) -> None:
    """Add ``--bootstrap N`` (resamples; 0 = none); ``--n-boot`` is a deprecated alias."""
    add_option(parser, "--bootstrap", deprecated=("--n-boot",), dest="bootstrap", metavar="N",
               type=int_range(0, MAX_RESAMPLES, "resamples"), default=default,
               help=help or f"bootstrap resamples, 0 for none (default {default})")


def add_parallel_options(parser) -> None:
    """Add ``--workers`` and ``--scheduler`` (Dask; results do not depend on them)."""
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="run on a local Dask cluster of N worker processes (default: "
                             "in this process); results do not depend on N")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler, e.g. tcp://host:8786 "
                             "(default: none)")


def add_output(parser, help: str, required: bool = False) -> None:
    """Add ``-o/--output``."""
    parser.add_argument("-o", "--output", default=None, required=required, metavar="PATH",
                        help=help if (required or "default" in help)
                        else f"{help} (default: none)")


def add_plot(parser, help: str = "save the figure (.png, .svg or .pdf)") -> None:
    """Add ``--plot``."""
    parser.add_argument("--plot", default=None, metavar="FILE",
                        help=help if "default" in help else f"{help} (default: none)")


def add_sampling_options(parser, draws: int | None = None, tune: int | None = None,
                         chains: int | None = None, family_draws: bool = False) -> None:
    """Add ``--draws``, ``--tune`` and ``--chains`` with their limits (defaults: config).

    `family_draws`: ``--draws`` and ``--tune`` default to None, the model family's own
    defaults (:func:`resolve_draws` after parsing; the fit resolves ``--tune``, whose default
    depends on the sampler the model takes).
    """
    draws = defaults.draws if draws is None else draws
    tune = defaults.tune if tune is None else tune
    chains = defaults.chains if chains is None else chains
    shown = f"{draws}, or the model family's own" if family_draws else f"{draws}"
    parser.add_argument("--draws", type=int_range(1, MAX_DRAWS, "draws"),
                        default=None if family_draws else draws,
                        help=f"posterior draws per chain, 1 to {MAX_DRAWS:,} (default {shown})")
    tuned = (f"{tune}, or the model family's own: 500 for crossed's compiled sampler"
             if family_draws else f"{tune}")
    parser.add_argument("--tune", type=int_range(1, MAX_DRAWS, "tune"),
                        default=None if family_draws else tune,
                        help=f"tuning steps per chain, 1 to {MAX_DRAWS:,} (default {tuned})")
    parser.add_argument("--chains", type=int_range(1, MAX_CHAINS, "chains"), default=chains,
                        help=f"chains, 1 to {MAX_CHAINS} (default {chains})")


def printable(text) -> str:
    """`text` with control characters (terminal escape codes) shown escaped."""
    text = str(text)
    if text.isprintable() or all(ch.isprintable() or ch in "\n\t" for ch in text):
        return text
    return "".join(ch if ch.isprintable() or ch in "\n\t"
                   else ch.encode("unicode_escape").decode("ascii") for ch in text)


def add_table_source(p, manifest: bool = False) -> None:
    """Options that select a distance table or an embedding + word list.

    With `manifest`, ``--embedding`` also takes a training manifest (``bayesbias train``).
    """
    add_embedding_options(p, manifest=manifest)
    add_wordlist(p, None, "word list: a shipped name or a TOML file, with --embedding "
                          "(default: none)")


#: A ROPE half-width: a finite number >= 0.
rope_value = float_range(0.0, None, name="rope")


def add_rope(p) -> None:
    """Add ``--rope``."""
    p.add_argument("--rope", type=rope_value, default=None, metavar="HALF_WIDTH",
                   help="region of practical equivalence around 0 for the verdict contrasts, "
                        "e.g. 0.02 (default: none); the share of the posterior inside it is "
                        "shown")


def resolve_draws(args) -> None:
    """Set ``args.draws`` to the model family's default when ``--draws`` was not given."""
    if getattr(args, "draws", 0) is None:
        from ..models.sampling import default_draws

        args.draws = default_draws(args.model)


def add_model_options(p, command: str = "fit") -> None:
    """Model and sampler options shared by ``fit``, ``compare`` and ``report``."""
    from ..models import available_models

    p.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"shipped spec ({', '.join(available_models())}) or a .toml file "
                        "(default %(default)s: the paper's hierarchical model plus an effect "
                        "per attribute word; --model hierarchical is the paper's own)")
    if command != "report":
        p.add_argument("--level", choices=["word", "class"], default=None,
                       help="override the spec: means per protected word or per protected "
                            "class (default: the spec's)")
        p.add_argument("--residual-sd", choices=["per_connection", "single"], default=None,
                       help="override the spec: residual sd per connection or a single one "
                            "(default: the spec's)")
    add_ci_prob(p, defaults.ci_prob, "credible interval probability in (0, 1) "
                                     f"(default {defaults.ci_prob})")
    p.add_argument("--ci-kind", choices=list(POSTERIOR_CI_KINDS), default=defaults.ci_kind,
                   help="highest-density (hdi) or equal-tailed (eti) intervals "
                        "(default %(default)s)")
    add_sampling_options(p, family_draws=True)
    add_seed(p, defaults.seed)
    p.add_argument("--sampler", choices=["auto", "nutpie", "pymc"], default="auto",
                   help="NUTS implementation; auto: nutpie if installed (default %(default)s)")
    p.add_argument("--target-accept", type=probability, default=None,
                   help="NUTS target acceptance rate (default 0.8); the crossed and context "
                        "models use their own 0.9 and embedding_level 0.95 unless this is "
                        "given; raise to 0.95-0.99 if there are divergences")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 3 if r-hat, ESS or divergences fail "
                        "(default: warn only)")
    p.add_argument("--keep-word-draws", action="store_true",
                   help="keep every per-word mean's draws (default: above 256 MB of them, "
                        "about 2,000 protected words; embedding_level: 2,000 words x "
                        "embeddings at its 1,000 draws, a fit keeps per-word summaries from "
                        "its parameters' draws instead); needed to compare "
                        "fits word by word and for --loo")


def add_parser(subparsers, name: str, help: str, examples: str, description: str = ""):
    """Add a sub-command parser whose ``--help`` ends with examples."""
    p = subparsers.add_parser(
        name, help=help, description=description or help,
        epilog="examples:\n" + examples,
        formatter_class=HelpFormatter,
    )
    add_global_options(p, suppress=True)
    return p


def add_json(parser) -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true",
                        help="print machine-readable JSON (schema: docs/json.md)")


def add_embedding_options(parser, required: bool = False, manifest: bool = False) -> None:
    """Add the embedding options: file, format, pickle trust, missing words, encoders.

    ``--embedding``, ``--format``, ``--trust-pickle``, ``--validate``, ``--on-missing`` and
    the encoder options (``--encoder``, ``--word-vectors``, ``--corpus``, ``--contexts``).
    With `manifest`, ``--embedding`` also takes the manifest of ``bayesbias train``.
    """
    parser.add_argument("--embedding", default=None if required else "default",
                        required=required,
                        help="embedding file, or 'default' for the shipped GloVe subset"
                             + ("; or a training manifest (manifest.json of 'bayesbias "
                                "train', or its folder): all its embeddings, for --model "
                                "embedding_level" if manifest else ""))
    parser.add_argument("--format", default="auto",
                        choices=["auto", "word2vec", "word2vec-binary", "glove", "fasttext",
                                 "gensim"],
                        help="embedding file format (default auto: guess from the file)")
    parser.add_argument("--trust-pickle", action="store_true",
                        help="allow loading gensim KeyedVectors files (pickles): only for "
                             "files you trust")
    parser.add_argument("--validate", action="store_true",
                        help="check every line of the embedding file, not only the lines "
                             "of the words used (slower; see the docs, guide/embeddings.md)")
    parser.add_argument("--on-missing", default=None, choices=["error", "drop"],
                        help="protected words and stereotypes not in the embedding: fail, or "
                             "drop them and list them in the output (default: fail for your "
                             "own files; drop for the shipped 'default' embedding, which "
                             "lacks WEAT 1's 'blue-bell', 'gladiola'). Control-group words "
                             "(human, none) missing from the embedding are always dropped "
                             "and listed")

    add_encoder_options(parser)
    for action in parser._actions:  # the encoder options without a default say so
        if action.dest in ("encoder", "corpus") and "default" not in (action.help or ""):
            action.help = f"{action.help} (default: none)"


#: Plain JSON values of any result (see :func:`bayesbias.plain.to_plain`).
to_jsonable = to_plain



def write_study_outputs(args, result, payload: dict, lines: list[str], indent=None) -> None:
    """Write ``--plot`` (the figure) and ``-o`` (`payload` as JSON); note each in `lines`."""
    if args.plot:
        result.plot(args.plot)
        lines.append(f"wrote {args.plot}")
    if args.output:
        with atomic_path(args.output, suffix=".json") as tmp:
            tmp.write_text(json.dumps(to_jsonable(payload), indent=indent))
        lines.append(f"wrote {args.output}")


def emit(args, payload: dict, text: str) -> None:
    """Print `payload` as JSON if ``--json`` was given, else `text`."""
    if getattr(args, "json", False):
        # one string, one write: json.dump's writes chunk by chunk (seconds on a large table)
        sys.stdout.write(json.dumps(to_jsonable(payload), indent=2) + "\n")
    else:
        print(printable(text))
