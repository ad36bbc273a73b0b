"""``bayesbias fit``: fit a Bayesian model of cosine distances and report it."""

from __future__ import annotations

import warnings

from ..errors import BayesbiasError, DistanceTableError, InputDataError
from ..inputs.wordlists import load_wordlist
from ..models.families import family
from ..progress import progress
from ._common import (
    add_distances,
    add_json,
    add_model_options,
    add_output,
    add_parser,
    add_plot,
    add_rope,
    add_table_source,
    dropped_line,
    emit,
)

DESCRIPTION = """\
Fit a Bayesian model (default: the hierarchical model of Dobrzeniecka & Urbaniak) to the
cosine distances between protected words and attributes, grouped by connection
(associated, different, human, none). Reports group-level means per connection, contrasts
(associated - none, ...) with credible intervals, posterior predictive coverage and the
sampler diagnostics. The input is a distance table (--distances), a shipped published table
(--distances published:TOPIC:EMBEDDING), or an embedding plus a word list."""


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
    add_distances(p, help="distance table (CSV/Parquet, ours or the published format), or "
                          "published:TOPIC:EMBEDDING for a shipped table (default: none, use "
                          "--embedding with --wordlist)")
    add_table_source(p, manifest=True)
    add_model_options(p)
    add_rope(p)
    add_output(p, "save the fit as netCDF (.nc) (default: not saved)")
    add_plot(p, "save a forest plot (.png, .svg or .pdf) (default: none)")
    p.add_argument("--loo", action="store_true",
                   help="also report PSIS-LOO (elpd) (default: off)")
    p.add_argument("--show-model", action="store_true",
                   help="print the model card (priors) and exit (default: off)")
    p.add_argument("--sensitivity", action="store_true",
                   help="also: change of each contrast and verdict when each word is left "
                        "out, and the share of 200 resampled word lists under which each "
                        "verdict holds (exact refits; hierarchical model); with --model "
                        "embedding_level, the verdict with each embedding left out in turn "
                        "(default: off)")
    p.add_argument("--no-single", action="store_true",
                   help="with --model embedding_level: skip fitting each embedding alone "
                        "(the per-embedding verdicts; default: fit them)")
    add_json(p)
    p.set_defaults(run=run)


def load_table(source: str | None, args):
    """Read a distance table from a file, ``published:TOPIC:EMBEDDING``, or an embedding.

    A table read from a file with at least :data:`~bayesbias.distances.CATEGORICAL_ROWS`
    rows holds its label columns as categoricals (the same labels in a fraction of the
    memory; ``read_distance_table(..., labels="auto")``).
    """
    from ..inputs.datasets import read_table
    from ..inputs.distances import distance_table

    if source:
        return read_table(source, labels="auto")
    from ..inputs.embeddings import load_embedding

    if not args.wordlist:
        raise DistanceTableError("give --distances, or --embedding with --wordlist")
    from ..inputs.ensemble import manifest_path, manifest_table

    manifest = manifest_path(args.embedding)
    if manifest is not None:  # the embeddings of `bayesbias train`: one table of all
        return manifest_table(manifest, args.wordlist)
    wl = load_wordlist(args.wordlist)
    emb = load_embedding(args.embedding, wl.all_words, format=args.format,
                         trust_pickle=args.trust_pickle)
    return distance_table(emb, wl, on_missing=args.on_missing)


def fit_from_args(table, args):
    """Fit with the model and sampler options of `args`; sampler warnings go to the log.

    More draws are taken only where they can move a deciding interval end
    (:func:`~bayesbias.verdicts.fit_for_verdict`).
    """
    from ..verdicts.precision import fit_for_verdict

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the diagnostics are printed by the command
        return fit_for_verdict(table, args.model, draws=args.draws, tune=args.tune,
                               chains=args.chains, seed=args.seed, sampler=args.sampler,
                               strict=args.strict, level=args.level,
                               residual_sd=args.residual_sd, target_accept=args.target_accept,
                               ci_prob=args.ci_prob, ci_kind=args.ci_kind,
                               rope=getattr(args, "rope", None),
                               keep_word_draws=True if getattr(args, "keep_word_draws", False)
                               else None)


def verdict_lines(fit, args, name: str = "") -> tuple[object, list[str]]:
    """Return the verdict of `fit` and the lines that lead the text output."""
    from ..report.sections import coverage_warning
    from ..verdicts import verdict_from_fit

    v = verdict_from_fit(fit, name, args.ci_prob, args.ci_kind, getattr(args, "rope", None))
    lines = [str(v), f"  {v.rule}"]
    warn = coverage_warning(fit)
    if warn:
        lines.append(f"  warning: {warn}")
    return v, lines


def weat_pairs(table, seed):
    """WEAT (two-sided, as the report) per pair of classes of `table`; [] when it cannot run."""
    from ..comparators.weat import weat_class_pairs

    try:
        return weat_class_pairs(table, alternative="two-sided", seed=seed)
    except BayesbiasError:
        return []


def weat_rows(pairs) -> list[dict]:
    """Plain rows of :func:`weat_pairs`: pair, d, p (number and as printed), sidedness."""
    from ..verdicts.reconcile import p_bound

    return [{"X": x, "Y": y, "effect_size": r.effect_size, "p_value": r.p_value,
             "p": p_bound(r), "alternative": r.alternative, "permutation": r.permutation}
            for (x, y), r in pairs]


def weat_reconciliation(table, verdict, seed) -> tuple[list[dict], str]:
    """WEAT rows of `table` and the sentence that says how WEAT relates to `verdict`."""
    from ..verdicts.reconcile import weat_sentence

    pairs = weat_pairs(table, seed)
    return weat_rows(pairs), weat_sentence(verdict, pairs)


def ensemble_summary(table, fit, args):
    """Each embedding of `table` alone beside the corpus-level `fit` (same sampler options)."""
    from ..verdicts.ensemble import summarize_ensemble

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # each single fit's diagnostics: in its row's verdict
        return summarize_ensemble(table, fit, ci_prob=args.ci_prob, ci_kind=args.ci_kind,
                                  rope=getattr(args, "rope", None), seed=args.seed,
                                  single=not getattr(args, "no_single", False),
                                  draws=args.draws, tune=args.tune, chains=args.chains,
                                  sampler=args.sampler, target_accept=args.target_accept)


def run(args) -> int:
    """Run ``bayesbias fit``; return the exit code."""
    from ._common import resolve_draws

    resolve_draws(args)
    from ..inputs.distances import n_embeddings
    from ..models import load_spec
    from ..models.result import ppc_heading
    from ..report.sections import coverage_warning, diagnostic_advice

    if args.show_model:
        spec = load_spec(args.model, level=args.level, residual_sd=args.residual_sd)
        emit(args, {"spec": spec.to_dict(), "spec_hash": spec.hash, "card": spec.card()},
             spec.card())
        return 0
    spec = load_spec(args.model, level=args.level, residual_sd=args.residual_sd)
    per_embedding = args.sensitivity and family(spec.family).EMBEDDINGS
    if args.sensitivity and not per_embedding:  # refuse unsupported specs before sampling
        from ..studies.sensitivity import check_model

        check_model(spec)
    table = load_table(args.distances, args)
    if per_embedding and n_embeddings(table) < 3:  # refused before sampling too

        raise InputDataError(f"--sensitivity with --model {args.model} leaves out each "
                             f"embedding in turn: it needs 3 or more embeddings; the table "
                             f"holds {n_embeddings(table)}")
    if args.sensitivity and not per_embedding:  # a table it cannot use: refused before sampling
        from ..inputs.distances import check_pilot

        check_pilot(table, str(args.distances or table.attrs.get("source", "distance table")))

    progress.info(f"fitting the {spec.name} model ({args.chains} chains x {args.draws} draws)")
    fit = fit_from_args(table, args)
    progress.info("summaries, diagnostics and the posterior predictive check")
    summary = fit.summary(args.ci_prob, args.ci_kind)
    ppc = fit.ppc()
    verdict, head = verdict_lines(fit, args, args.distances or args.wordlist or "")
    if n_embeddings(table) < 2:
        progress.info("WEAT permutation tests per pair of classes")
    if n_embeddings(table) >= 2:  # WEAT describes one embedding: per embedding below
        weat_rows, weat_note = [], ("WEAT describes one embedding: it is given per embedding, "
                                    "with its spread, under 'many embeddings' below.")
    else:
        weat_rows, weat_note = weat_reconciliation(table, verdict, args.seed)
    head.append(f"  {weat_note}")
    diag = fit.diagnostics()
    missing = table.attrs.get("missing", {})
    run_attrs = ("seed", "draws", "tune", "chains", "sampler", "likelihood", "bayesbias_version",
                 "wall_time_s", "noncentred")
    payload = dict(verdict=verdict.to_dict(), **summary, ppc=ppc,
                   ppc_rows_checked=ppc.attrs["rows_checked"], output=args.output,
                   plot=args.plot, dropped_words=missing,
                   coverage_warning=coverage_warning(fit, ppc),
                   run={k: fit.idata.attrs.get(k) for k in run_attrs},
                   target_accept=fit.idata.attrs.get("target_accept"), weat=weat_rows,
                   weat_reconciliation=weat_note)
    if args.loo:
        progress.info("PSIS-LOO")
        loo = fit.loo()
        payload["loo"] = {"elpd": float(loo.elpd), "se": float(loo.se), "p": float(loo.p),
                          "pareto_k_bad": int((loo.pareto_k.values > 0.7).sum())}
    if args.output:
        progress.info(f"writing {args.output}")
        fit.save(args.output, loo=args.loo)
    if args.plot:
        progress.info(f"drawing {args.plot}")
        fit.plot_forest(args.plot, args.ci_prob, args.ci_kind)
    lines = head + ["", fit.to_text(args.ci_prob, args.ci_kind, ppc=False), "",
                    ppc_heading(ppc), ppc.set_index("connection").round(3).to_string()]
    if not diag.ok:
        lines.append(diagnostic_advice(diag.problems, "fit"))
    if missing:
        lines.append(dropped_line(missing, "dropped (not in the embedding or the table)"))
    if args.loo:
        lo = payload["loo"]
        lines.append(f"PSIS-LOO: elpd {lo['elpd']:.1f} (se {lo['se']:.1f}), p_loo "
                     f"{lo['p']:.1f}, {lo['pareto_k_bad']} rows with Pareto k > 0.7")
    if n_embeddings(table) >= 2 and family(fit.spec.family).EMBEDDINGS:
        if getattr(args, "no_single", False):
            progress.info(f"the {n_embeddings(table)} embeddings' WEAT and reliability "
                          "(single fits skipped: --no-single)")
        else:
            progress.info(f"each of {n_embeddings(table)} embeddings alone (crossed model)")
        ens = ensemble_summary(table, fit, args)
        payload["ensemble"] = ens.to_dict()
        lines += ["", "many embeddings: " + str(ens)]
        lines.insert(0, ens.headline())  # the corpus-level finding is the first line read
    if per_embedding:  # the corpus-level verdict with each embedding left out in turn
        from ..verdicts.ensemble import leave_one_embedding_out

        progress.info(f"sensitivity: the fit again with each of {n_embeddings(table)} "
                      "embeddings left out")
        sens = leave_one_embedding_out(
            table, fit, ci_prob=args.ci_prob, ci_kind=args.ci_kind,
            rope=getattr(args, "rope", None), seed=args.seed,
            draws=int(fit.posterior.sizes["draw"]), tune=args.tune, chains=args.chains,
            sampler=args.sampler, target_accept=args.target_accept)
        payload["sensitivity"] = sens.to_dict()
        lines += ["", str(sens)]
    elif args.sensitivity:
        from ..studies.sensitivity import sensitivity

        progress.info("sensitivity: refits leaving out each word, resampled word lists")
        sens = sensitivity(table, fit.spec, ci_prob=args.ci_prob, seed=args.seed)
        payload["sensitivity"] = sens.to_dict()
        lines += ["", str(sens)]
    if args.output:
        lines.append(f"wrote {args.output}")
    if args.plot:
        lines.append(f"wrote {args.plot}")
    emit(args, payload, "\n".join(lines))
    return 0
