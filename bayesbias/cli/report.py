"""``bayesbias report``: the whole analysis in one report folder."""

from __future__ import annotations

from ..progress import progress
from ..report import ReportSettings
from ..report.card import VerdictCard, terminal_summary
from ..report.reproduce import check_inputs, settings_from_results
from . import build_parser
from ._common import (
    add_bootstrap,
    add_distances,
    add_embedding_options,
    add_json,
    add_model_options,
    add_output,
    add_parser,
    add_rope,
    emit,
    int_range,
)

#: The word lists of a report without --wordlist (as ``report.pipeline.DEFAULT_WORDLISTS``,
#: which a test compares; here so that parsing the arguments does not import the report).
DEFAULT_WORDLISTS = ("religion", "race", "gender")


def register(sub) -> None:
    """Add the ``report`` sub-command to `sub`."""
    p = add_parser(
        sub, "report",
        "run everything (distances, WEAT, MAC, null distributions, Bayesian fit) into a report",
        "  bayesbias report                       # built-in GloVe subset, religion/race/gender\n"
        "  bayesbias report --embedding vectors.txt --wordlist religion --wordlist my.toml\n"
        "  bayesbias report --distances table.csv -o my-report\n"
        "  bayesbias report --distances published:religion:reddit --draws 500 --json",
        description="Run the whole analysis and write a self-contained folder: index.html, "
                    "report.md, tables/*.csv, figures/*.png, fits/*.nc, results.json.",
    )
    add_embedding_options(p, manifest=True)
    p.add_argument("--wordlist", action="append", dest="wordlists", metavar="NAME",
                   help=f"word list: a shipped name or a TOML file; repeat for several "
                        f"(default: {', '.join(DEFAULT_WORDLISTS)})")
    add_distances(p, action="append",
                  help="distance table(s) instead of an embedding (ours, the published CSV "
                       "format, or published:TOPIC:EMBEDDING for a shipped published table); "
                       "repeat for several (default: none, use --embedding)")
    add_output(p, "report folder; replaced only if it is an earlier report "
                  "(default bayesbias-report; with --rerun, the recorded one)")
    p.add_argument("--rerun", default=None, metavar="RESULTS_JSON",
                   help="write the report again with the settings recorded in an earlier "
                        "report's results.json (or its folder); the other options that "
                        "change numbers are ignored; warns when an input file's digest "
                        "differs (default: none)")
    add_model_options(p, "report")
    add_rope(p)
    p.add_argument("--permutations", type=int_range(1, 10**9, "permutations"), default=100_000,
                   help="Monte Carlo permutations for WEAT's p when exact enumeration is too "
                        "large (default %(default)s)")
    add_bootstrap(p, 2000, "bootstrap resamples for the WEAT interval, 0 for none "
                           "(default 2000)")
    p.add_argument("--null-reps", type=int_range(1, 10**8, "null-reps"), default=5000,
                   help="replications of the null distribution (default %(default)s)")
    p.add_argument("--sd-convention", choices=["sample", "population"], default="sample",
                   help="sd in WEAT's effect size: sample (n - 1) or population (n) "
                        "(default %(default)s)")
    p.add_argument("--sensitivity", action="store_true",
                   help="add which words drive the verdicts: each word left out, and 200 "
                        "resampled word lists (exact refits; hierarchical model only)")
    p.add_argument("--no-robustness", dest="robustness", action="store_false",
                   help="leave out the robustness line of each verdict box (the share of 200 "
                        "resampled word lists under which each verdict contrast holds, and "
                        "the words whose removal flips one; exact refits, hierarchical model "
                        "only; a few seconds per word list, in a worker process) (default: "
                        "shown)")
    p.add_argument("--jobs", type=int_range(1, 64, "jobs"), default=None,
                   help="processes: with 2 or more, worker processes compute the "
                        "comparators, metrics and figures while this one fits the models; 1 "
                        "runs everything in this process (default: 2 on a machine with two "
                        "or more cores; 1 with a sentence encoder); the report does not "
                        "depend on N")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias report``; return the exit code."""
    from ..report import run_report
    from ..report.sections import diagnostic_advice

    settings = _rerun_settings(args) if args.rerun else _settings(args)
    from ..parallel import default_jobs

    results = run_report(settings, default_jobs() if args.jobs is None else args.jobs)
    return _print(args, results, diagnostic_advice)


def _rerun_settings(args):
    settings = settings_from_results(args.rerun, args.output)
    ignored = ignored_with_rerun(args)
    if ignored:
        progress.warning(f"--rerun takes every setting from {args.rerun}; ignored: "
                         + ", ".join(ignored))
    for line in check_inputs(args.rerun, settings):
        progress.warning(f"--rerun: an input changed since the recorded run: {line}")
    return settings


#: Options of ``report`` that change a number (taken from results.json with --rerun).
_SETTINGS_OPTIONS = ("embedding", "wordlists", "distances", "format", "model", "ci_prob",
                     "ci_kind", "draws", "tune", "chains", "seed", "sampler", "target_accept",
                     "rope", "permutations", "bootstrap", "null_reps", "sd_convention",
                     "sensitivity", "robustness", "strict")


def ignored_with_rerun(args) -> list[str]:
    """Return the number-changing options given on the command line next to ``--rerun``."""
    defaults = build_parser(["report"]).parse_args(["report"])
    flags = {"wordlists": "--wordlist"}
    return [flags.get(name, "--" + name.replace("_", "-")) for name in _SETTINGS_OPTIONS
            if hasattr(args, name) and getattr(args, name) != getattr(defaults, name, None)]


def _draws(args) -> int:
    """``--draws``, or the model family's default when it was not given."""
    if args.draws is not None:
        return args.draws
    from ..models.sampling import default_draws

    return default_draws(args.model)


def _settings(args):
    return ReportSettings(
        embedding=args.embedding, wordlists=tuple(args.wordlists or DEFAULT_WORDLISTS),
        distances=tuple(args.distances or ()), output=args.output or "bayesbias-report",
        on_missing=args.on_missing,
        format=args.format, trust_pickle=args.trust_pickle, model=args.model,
        ci_prob=args.ci_prob, ci_kind=args.ci_kind, draws=_draws(args), tune=args.tune,
        chains=args.chains, seed=args.seed, n_permutations=args.permutations,
        n_bootstrap=args.bootstrap, null_reps=args.null_reps,
        sd_convention=args.sd_convention, strict=args.strict, sampler=args.sampler,
        target_accept=args.target_accept,
        rope=args.rope, sensitivity=args.sensitivity,
        robustness=args.robustness, keep_word_draws=args.keep_word_draws)


def _print(args, results, diagnostic_advice) -> int:
    # one headline line per word list first, then each list's contrasts and details (the
    # report's cards: results.json's `card`, which already holds warnings and advice)
    cards = [VerdictCard.from_verdict(res.get("card") or v, name=v["name"])
             for v, res in zip(results["verdicts"], results["wordlists"].values(), strict=True)]
    text = terminal_summary(cards, [res.get("ensemble", {}).get("headline")
                                    for res in results["wordlists"].values()])
    text.append("\n" + results["verdicts"][0]["rule"] if results["verdicts"] else "")
    text.append(f"report written to {results['output']}/index.html "
                f"({results['elapsed_s']:.0f} s)")
    emit(args, {"output": results["output"], "elapsed_s": results["elapsed_s"],
                "verdicts": results["verdicts"], "overview": results["overview"],
                "ensembles": {key: res["ensemble"] for key, res in results["wordlists"].items()
                              if res.get("ensemble")}},
         "\n".join(text))
    return 0
