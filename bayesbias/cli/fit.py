"""``bayesbias fit``: fit a Bayesian model of cosine distances and report it."""

from __future__ import annotations

import warnings

from ..config import defaults
from ..errors import DistanceTableError
from ._common import add_embedding_options, add_json, add_parser, emit, positive_int, probability

DESCRIPTION = """\
Fit a Bayesian model (default: the hierarchical model of Dobrzeniecka & Urbaniak) to the
cosine distances between protected words and attributes, grouped by connection
(associated, different, human, none). Reports group-level means per connection, contrasts
(associated - none, ...) with credible intervals, posterior predictive coverage and the
sampler diagnostics. The input is a distance table (--distances), a shipped published table
(--distances published:TOPIC:EMBEDDING), or an embedding plus a word list."""


def add_table_source(p) -> None:
    """Options that select a distance table or an embedding + word list."""
    add_embedding_options(p)
    p.add_argument("--wordlist", default=None,
                   help="shipped list name or TOML file (with --embedding)")


def add_model_options(p) -> None:
    """Model and sampler options shared by ``fit`` and ``compare``."""
    from ..models import available_models

    p.add_argument("--model", default="hierarchical",
                   help=f"shipped spec ({', '.join(available_models())}) or a .toml file")
    p.add_argument("--level", choices=["word", "class"], default=None,
                   help="override the spec: means per protected word or per protected class")
    p.add_argument("--residual-sd", choices=["per_connection", "single"], default=None,
                   help="override the spec: residual sd per connection or a single one")
    p.add_argument("--ci-prob", type=probability, default=defaults.ci_prob,
                   help="credible interval probability (default %(default)s)")
    p.add_argument("--ci-kind", choices=["hdi", "eti"], default=defaults.ci_kind,
                   help="highest-density (hdi, default) or equal-tailed (eti) intervals")
    p.add_argument("--draws", type=positive_int, default=1000,
                   help="draws per chain (default 1000)")
    p.add_argument("--tune", type=positive_int, default=1000,
                   help="tuning steps per chain (default 1000)")
    p.add_argument("--chains", type=positive_int, default=4, help="chains (default 4)")
    p.add_argument("--seed", type=int, default=defaults.seed, help="random seed")
    p.add_argument("--sampler", choices=["auto", "nutpie", "pymc"], default="auto",
                   help="NUTS implementation (auto: nutpie if installed)")
    p.add_argument("--target-accept", type=probability, default=0.8,
                   help="NUTS target acceptance rate (default 0.8); raise to 0.95-0.99 if "
                        "there are divergences")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 3 if r-hat, ESS or divergences fail")


def register(sub) -> None:
    """Add the ``fit`` sub-command to `sub`."""
    p = add_parser(
        sub, "fit", "fit a Bayesian model of cosine distances (HDIs, contrasts, PPC)",
        "  bayesbias fit --distances published:religion:reddit --plot forest.png\n"
        "  bayesbias fit --distances table.csv --model additive --json -o fit.nc\n"
        "  bayesbias fit --embedding default --wordlist gender --strict --ci-kind eti\n"
        "  bayesbias fit --distances t.csv --model my_priors.toml --draws 2000 --seed 1\n"
        "  bayesbias fit --show-model --model separate   # print the model card only",
        description=DESCRIPTION,
    )
    p.add_argument("--distances", default=None,
                   help="distance table (CSV/Parquet, ours or the published format), or "
                        "published:TOPIC:EMBEDDING for a shipped table")
    add_table_source(p)
    add_model_options(p)
    p.add_argument("-o", "--output", default=None, help="save the fit as netCDF (.nc)")
    p.add_argument("--plot", default=None, help="save a forest plot (PNG)")
    p.add_argument("--loo", action="store_true", help="also report PSIS-LOO (elpd)")
    p.add_argument("--show-model", action="store_true",
                   help="print the model card (priors) and exit")
    p.add_argument("--sensitivity", action="store_true",
                   help="also: change of each contrast and verdict when each word is left "
                        "out, and the share of 200 resampled word lists under which each "
                        "verdict holds (exact refits; hierarchical model)")
    add_json(p)
    p.set_defaults(run=run)


def load_table(source: str | None, args):
    """Read a distance table from a file, ``published:TOPIC:EMBEDDING``, or an embedding."""
    from ..datasets import read_table
    from ..distances import distance_table

    if source:
        return read_table(source)
    from ..embeddings import load_embedding
    from ..wordlists import load_wordlist

    if not args.wordlist:
        raise DistanceTableError("give --distances, or --embedding with --wordlist")
    wl = load_wordlist(args.wordlist)
    emb = load_embedding(args.embedding, wl.all_words, format=args.format,
                         trust_pickle=args.trust_pickle)
    return distance_table(emb, wl, on_missing=args.on_missing)


def fit_from_args(table, args):
    """Fit with the model and sampler options of `args`; sampler warnings go to the log."""
    from ..models import fit_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the diagnostics are printed by the command
        return fit_model(table, args.model, draws=args.draws, tune=args.tune,
                         chains=args.chains, seed=args.seed, sampler=args.sampler,
                         strict=args.strict, level=args.level, residual_sd=args.residual_sd,
                         target_accept=args.target_accept)


def run(args) -> int:
    """Run ``bayesbias fit``; return the exit code."""
    from ..models import load_spec

    if args.show_model:
        spec = load_spec(args.model, level=args.level, residual_sd=args.residual_sd)
        emit(args, {"spec": spec.to_dict(), "spec_hash": spec.hash, "card": spec.card()},
             spec.card())
        return 0
    if args.sensitivity:  # refuse unsupported specs before sampling
        from ..studies.sensitivity import check_model

        check_model(load_spec(args.model, level=args.level, residual_sd=args.residual_sd))
    table = load_table(args.distances, args)
    fit = fit_from_args(table, args)
    summary = fit.summary(args.ci_prob, args.ci_kind)
    ppc = fit.ppc()
    missing = table.attrs.get("missing", {})
    run_attrs = ("seed", "draws", "tune", "chains", "sampler", "likelihood", "bayesbias_version",
                 "wall_time_s", "noncentred")
    payload = dict(summary, ppc=ppc, output=args.output, plot=args.plot,
                   dropped_words=missing,
                   run={k: fit.idata.attrs.get(k) for k in run_attrs},
                   target_accept=args.target_accept)
    if args.loo:
        loo = fit.loo()
        payload["loo"] = {"elpd": float(loo.elpd), "se": float(loo.se), "p": float(loo.p),
                          "pareto_k_bad": int((loo.pareto_k.values > 0.7).sum())}
    if args.output:
        fit.save(args.output, loo=args.loo)
    if args.plot:
        fit.plot_forest(args.plot, args.ci_prob, args.ci_kind)
    lines = [fit.to_text(args.ci_prob, args.ci_kind, ppc=False), "",
             "posterior predictive check (share of observed distances inside the "
             "predictive HDI):", ppc.set_index("connection").round(3).to_string()]
    if missing:
        lines.append("dropped (not in the embedding or the table): " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in missing.items()))
    if args.loo:
        lo = payload["loo"]
        lines.append(f"PSIS-LOO: elpd {lo['elpd']:.1f} (se {lo['se']:.1f}), p_loo "
                     f"{lo['p']:.1f}, {lo['pareto_k_bad']} rows with Pareto k > 0.7")
    if args.sensitivity:
        from ..studies.sensitivity import sensitivity

        sens = sensitivity(table, fit.spec, ci_prob=args.ci_prob, seed=args.seed)
        payload["sensitivity"] = sens.to_dict()
        lines += ["", str(sens)]
    if args.output:
        lines.append(f"wrote {args.output}")
    if args.plot:
        lines.append(f"wrote {args.plot}")
    emit(args, payload, "\n".join(lines))
    return 0
