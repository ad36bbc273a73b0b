"""``bayesbias report``: the whole analysis in one report folder."""

from __future__ import annotations

from ..config import defaults
from ..report import DEFAULT_WORDLISTS, ReportSettings, run_report
from ._common import add_embedding_options, add_json, add_parser, emit, positive_int, probability


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
    add_embedding_options(p)
    p.add_argument("--wordlist", action="append", dest="wordlists",
                   help=f"word list name or TOML file; repeat for several "
                        f"(default: {', '.join(DEFAULT_WORDLISTS)})")
    p.add_argument("--distances", action="append",
                   help="distance table(s) instead of an embedding (ours, the published CSV "
                        "format, or published:TOPIC:EMBEDDING for a shipped published table)")
    p.add_argument("-o", "--output", default="bayesbias-report", help="report folder")
    p.add_argument("--model", default="hierarchical", help="model spec (name or TOML file)")
    p.add_argument("--ci-prob", type=probability, default=defaults.ci_prob,
                   help="interval probability (default %(default)s)")
    p.add_argument("--ci-kind", choices=["hdi", "eti"], default=defaults.ci_kind)
    p.add_argument("--draws", type=positive_int, default=1000)
    p.add_argument("--tune", type=positive_int, default=1000)
    p.add_argument("--chains", type=positive_int, default=4)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--permutations", type=positive_int, default=100_000)
    p.add_argument("--bootstrap", type=int, default=2000,
                   help="bootstrap resamples for the WEAT interval (0: none)")
    p.add_argument("--null-reps", type=positive_int, default=5000)
    p.add_argument("--sd-convention", choices=["sample", "population"], default="sample")
    p.add_argument("--strict", action="store_true",
                   help="exit with code 3 if sampler diagnostics fail")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias report``; return the exit code."""
    settings = ReportSettings(
        embedding=args.embedding, wordlists=tuple(args.wordlists or DEFAULT_WORDLISTS),
        distances=tuple(args.distances or ()), output=args.output, on_missing=args.on_missing,
        format=args.format, trust_pickle=args.trust_pickle, model=args.model,
        ci_prob=args.ci_prob, ci_kind=args.ci_kind, draws=args.draws, tune=args.tune,
        chains=args.chains, seed=args.seed, n_permutations=args.permutations,
        n_bootstrap=args.bootstrap, null_reps=args.null_reps,
        sd_convention=args.sd_convention, strict=args.strict)
    results = run_report(settings)
    over = results["overview"]
    text = [f"report written to {results['output']}/index.html "
            f"({results['elapsed_s']:.0f} s)", over.round(3).to_string(index=False)]
    emit(args, {"output": results["output"], "elapsed_s": results["elapsed_s"],
                "overview": over}, "\n".join(text))
    return 0
