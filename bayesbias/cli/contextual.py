"""``bayesbias seat``, ``bayesbias ceat`` and ``bayesbias contexts``: bias in sentence encoders."""

from __future__ import annotations

from .._atomic import atomic_path
from ..config import defaults
from ..encoders.options import add_backend_option
from ..errors import BayesbiasError
from ..inputs.wordlists import load_wordlist
from ._common import (
    MAX_CHAINS,
    MAX_DRAWS,
    add_bootstrap,
    add_ci_prob,
    add_json,
    add_option,
    add_output,
    add_parser,
    add_seed,
    add_wordlist,
    dropped_line,
    emit,
    int_range,
    positive_int,
)

ALTERNATIVES = ("greater", "less", "two-sided")  # as comparators.weat (not imported: --help)
SD_CONVENTIONS = ("sample", "population")

SEAT_DESCRIPTION = """\
SEAT (May et al. 2019): WEAT whose members are sentence embeddings. Each word of X, Y, A,
B is put into semantically bleached templates ("This is a nurse.", "The nurse is here.")
and every sentence counts as one member of its set. --wordlist seat6 / seat7 are the
authors' sentences for WEAT 6 and 7; any two-class word list (weat7, gender, my.toml) is turned into
sentences with the same templates (a [templates] table in the word list overrides them).
The sentences of one word share the word, so the units that were sampled are the words: the
p-value re-partitions the words of X and Y (all sentences of a word move together) and
--bootstrap resamples the words of X, Y, A and B with all their sentences. May et al.'s
sentence-level p and interval (every sentence on its own, as if independent; too narrow)
are printed as a labelled secondary line. Two-sided by default, as `weat` and the report."""

CEAT_DESCRIPTION = """\
CEAT (Guo & Caliskan 2021): each word gets up to --contexts sentences of --corpus that
contain it (drawn with --seed); a draw picks one of them per word, takes the word's
contextual token vector (mean over its sub-word tokens) and computes the WEAT effect size.
--context-draws such draws give a distribution of effect sizes; a random-effects
meta-analysis (DerSimonian-Laird) combines them into one effect size (the paper's method).
Its normal interval counts only the spread between draws and narrows as --context-draws
grows, so it is shown as secondary; the primary interval is a two-stage bootstrap over the
words and then each word's contexts (--bootstrap resamples), which does not shrink with
--context-draws."""

CONTEXTS_DESCRIPTION = """\
The distance table of a word list with a context column: for each of --context-draws draws,
protected word and every attribute gets one of its corpus contexts (at random, seeded) and
the table has one row per protected word, attribute and draw. Fit it with
`bayesbias fit --distances TABLE --model context` to see how much of the spread is the
contexts and how much the words."""


def _encoder_args(p, corpus_required: bool) -> None:
    p.add_argument("--encoder", required=True, metavar="NAME_OR_PATH",
                   help="'all-MiniLM-L6-v2' (packaged) or a local model folder")
    p.add_argument("--corpus", required=corpus_required, default=None, metavar="FILE",
                   help="sentences, one per line (plain or .gz)"
                        + ("" if corpus_required else " (default: none)"))
    p.add_argument("--contexts", type=positive_int, default=20, metavar="N",
                   help="corpus sentences drawn per word (default %(default)s)")
    p.add_argument("--no-cache", dest="encoder_cache", action="store_false",
                   help="do not read or write the on-disk vector cache (default: use it)")
    add_seed(p, None, f"seed of every random draw (default {defaults.seed})")

    add_backend_option(p)


def _context_draws(p, default: int, help: str) -> None:
    add_option(p, "--context-draws", deprecated=("--draws",), dest="draws",
               type=positive_int, default=default, metavar="N", help=help)


def register(sub) -> None:
    """Add ``seat``, ``ceat`` and ``contexts`` to `sub`."""
    p = add_parser(
        sub, "seat", "Sentence Encoder Association Test (WEAT on template sentences)",
        "  bayesbias seat --encoder all-MiniLM-L6-v2 --wordlist seat7\n"
        "  bayesbias seat --encoder ./my-model --wordlist weat6 --json\n"
        "  bayesbias seat --encoder all-MiniLM-L6-v2 --wordlist gender --alternative two-sided",
        description=SEAT_DESCRIPTION)
    _encoder_args(p, corpus_required=False)
    add_wordlist(p, "seat7", "shipped SEAT test (seat6, seat7), a SEAT TOML file, or a "
                             "two-class word list turned into template sentences "
                             "(default seat7)", deprecated=("--test",))
    p.add_argument("--permutations", type=positive_int, default=defaults.n_permutations,
                   help="Monte Carlo re-partitions of the words for p (default "
                        "%(default)s; exact enumeration when there are at most "
                        f"{defaults.exact_permutation_limit} splits)")
    p.add_argument("--alternative", choices=ALTERNATIVES, default="two-sided",
                   help="two-sided (default, as weat and the report), greater (May et al.'s "
                        "one-sided test) or less")
    p.add_argument("--sd-convention", choices=list(SD_CONVENTIONS), default="sample",
                   help="sd of the effect size: sample (n - 1, default) or population (n)")
    add_bootstrap(p, 0, "resamples of the words (with all their sentences) for an "
                        "effect-size interval (default 0)")
    add_ci_prob(p, None, f"probability of the interval (default {defaults.ci_prob})")
    add_json(p)
    p.set_defaults(run=run_seat)

    p = add_parser(
        sub, "ceat", "Contextualized Embedding Association Test (random-effects over contexts)",
        "  bayesbias ceat --encoder all-MiniLM-L6-v2 --corpus sentences.txt.gz --wordlist weat7\n"
        "  bayesbias ceat --encoder ./my-model --corpus c.txt --context-draws 10000 --json",
        description=CEAT_DESCRIPTION)
    _encoder_args(p, corpus_required=True)
    add_wordlist(p, "weat7", "two-class word list (shipped name or TOML file; default weat7)",
                 deprecated=("--test",))
    _context_draws(p, 1000, "random context draws (default %(default)s; the paper: 10,000)")
    add_ci_prob(p, None, f"probability of the intervals (default {defaults.ci_prob})")
    add_bootstrap(p, 500, "resamples of the two-stage bootstrap over words and contexts "
                          "(default 500; 0: only the paper's random-effects interval)")
    p.add_argument("--on-missing", choices=["error", "drop"], default="error",
                   help="words with no context in the corpus: error (fail; default) or drop")
    add_json(p)
    p.set_defaults(run=run_ceat)

    p = add_parser(
        sub, "contexts", "distance table with a context column (for the context model)",
        "  bayesbias contexts --encoder all-MiniLM-L6-v2 --corpus madlibs "
        "--wordlist religion -o ctx.csv\n"
        "  bayesbias fit --distances ctx.csv --model context",
        description=CONTEXTS_DESCRIPTION)
    _encoder_args(p, corpus_required=True)
    add_wordlist(p)
    _context_draws(p, 10, "context draws (default %(default)s)")
    add_output(p, "CSV file to write", required=True)
    p.add_argument("--on-missing", choices=["error", "drop"], default="drop",
                   help="words with no context in the corpus: drop and list them (default) "
                        "or fail")
    p.add_argument("--fit", action="store_true",
                   help="also fit the context model (models/context.toml; as `bayesbias fit "
                        "--model context`) and print its verdict and intervals")
    p.add_argument("--model", default="context",
                   help="context model spec (name or TOML) (default context)")
    p.add_argument("--fit-draws", type=int_range(1, MAX_DRAWS, "draws"), default=defaults.draws,
                   help="with --fit: posterior draws per chain, and as many tuning steps "
                        "(default %(default)s)")
    p.add_argument("--chains", type=int_range(1, MAX_CHAINS, "chains"), default=defaults.chains,
                   help="with --fit: chains (default %(default)s)")
    add_ci_prob(p, None, f"with --fit: interval probability (default {defaults.ci_prob})")
    add_json(p)
    p.set_defaults(run=run_contexts)


def _source(args, how: str):
    from ..encoders import EncoderSource

    return EncoderSource(args.encoder, how=how, corpus=args.corpus,
                         contexts=args.contexts,
                         seed=defaults.seed if args.seed is None else args.seed,
                         cache=args.encoder_cache, backend=args.encoder_backend)


def run_seat(args) -> int:
    """Run ``bayesbias seat``; return the exit code."""
    from ..comparators.seat import seat

    src = _source(args, "word")
    result = seat(src.encoder, args.wordlist, alternative=args.alternative,
                  sd=args.sd_convention, n_permutations=args.permutations, seed=args.seed,
                  bootstrap=args.bootstrap, ci_prob=args.ci_prob)
    payload = result.to_dict()
    payload["encoder"] = src.encoder.describe()
    payload.pop("association", None)  # one value per sentence: in the Python API
    emit(args, payload, str(result))
    return 0


def run_ceat(args) -> int:
    """Run ``bayesbias ceat``; return the exit code."""
    from ..comparators.ceat import ceat

    src = _source(args, "contexts")
    result = ceat(src, args.wordlist, n_draws=args.draws, ci_prob=args.ci_prob,
                  on_missing=args.on_missing, bootstrap=args.bootstrap)
    payload = result.to_dict()
    payload["encoder"] = src.encoder.describe()
    emit(args, payload, str(result))
    return 0


def run_contexts(args) -> int:
    """Run ``bayesbias contexts``; return the exit code."""
    from ..encoders.contexts import check_context_draws, context_distance_table

    wl = load_wordlist(args.wordlist)
    try:
        check_context_draws(wl, args.draws)  # before the encoder is loaded
    except BayesbiasError as exc:  # the library names the flag by its earlier spelling
        raise type(exc)(str(exc).replace("--draws ", "--context-draws ", 1)) from None
    src = _source(args, "contexts")
    table, dropped = context_distance_table(src, wl, n_draws=args.draws,
                                            on_missing=args.on_missing)
    if table.empty:
        raise BayesbiasError("no rows: no word of the list has a context in the corpus")
    with atomic_path(args.output) as tmp:
        table.to_csv(tmp, index=False)
    payload = {"output": args.output, "rows": len(table), "draws": args.draws,
               "contexts_per_word": args.contexts, "dropped_words": dropped,
               "source": str(src)}
    text = (f"wrote {len(table)} rows ({args.draws} context draws) to {args.output}"
            + (f"; {dropped_line(dropped, 'dropped (no context)')}"
               if dropped_line(dropped) else ""))
    if args.fit:
        text = _fit_contexts(table, args, src.seed, payload) + "\n\n" + text
    emit(args, payload, text)
    return 0


def _fit_contexts(table, args, seed: int, payload: dict) -> str:
    """Fit the context family to `table` (as ``bayesbias fit --model context``).

    Adds ``fit`` (the Fit's ``to_dict``) and ``verdict`` to `payload`; returns the text,
    which leads with the verdict block of ``bayesbias fit``.
    """
    import warnings

    from ..models import fit_model
    from ..report.sections import coverage_warning
    from ..verdicts import verdict_from_fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the diagnostics are printed below
        fit = fit_model(table, args.model, draws=args.fit_draws, tune=args.fit_draws,
                        chains=args.chains, seed=seed)
    verdict = verdict_from_fit(fit, args.output, args.ci_prob)
    lines = [str(verdict), f"  {verdict.rule}"]
    warn = coverage_warning(fit)
    if warn:
        lines.append(f"  warning: {warn}")
    params = fit.parameters(args.ci_prob)
    lines += ["", fit.to_text(args.ci_prob, ppc=False), "",
              f"parameters ({params.attrs['interval']}; context_share: the share of the "
              "spread between (word, context) means due to the contexts):",
              params.set_index("parameter")[["mean", "sd", "lower", "upper"]].round(4)
              .to_string()]
    if not fit.diagnostics().ok:
        lines.append("What to do: raise --fit-draws (draws and tuning steps) and --chains, or "
                     "fit the written table with `bayesbias fit --model context` (--tune, "
                     "--target-accept 0.95, --strict). Until then, read the intervals as "
                     "rough.")
    payload["fit"] = fit.to_dict(args.ci_prob)
    payload["verdict"] = verdict.to_dict()
    return "\n".join(lines)
