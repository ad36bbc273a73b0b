"""The report pipeline: settings, reading the tables, running the section builders."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from pathlib import Path

import pandas as pd

from ..config import PAPER_MODEL, defaults
from ..errors import DistanceTableError, InvalidArgumentError
from ..inputs.datasets import read_table
from ..inputs.distances import distance_table, n_embeddings, single_embedding
from ..inputs.embeddings import load_embedding
from ..inputs.ensemble import manifest_path, manifest_table
from ..inputs.wordlists import load_wordlist
from ..models import SamplerWarning
from ..models.checks import ATTRIBUTE_ALPHA, attribute_dependence
from ..models.families import family
from ..models.plots import prepare
from ..models.spec import load_spec
from ..parallel import JobPool
from ..progress import once_per_message, progress
from ..provenance import provenance
from ..verdicts import RULE, fit_for_verdict, verdict_from_fit
from ..verdicts.reconcile import p_bound, sidedness
from .document import Report, check_output, unique_names
from .navigation import front_matter
from .reproduce import back_matter, report_inputs
from .sections import (
    JOB_NAMES,
    ROBUSTNESS_DRAWS,
    SECTIONS,
    Glossary,
    WordListContext,
    records,
    verdict_cards,
)
from .settings import DEFAULT_WORDLISTS, ReportSettings

__all__ = ["ReportSettings", "run_report", "DEFAULT_WORDLISTS"]

log = logging.getLogger(__name__)

def _tables(settings: ReportSettings) -> list[tuple[str, pd.DataFrame]]:
    """(display name, table) per word list or distance table, in the order given."""
    if settings.distances:
        out = []
        for spec in settings.distances:
            progress.info(f"reading distance table {spec}")
            name = ("_".join(spec.split(":")[1:]) if spec.startswith("published:")
                    else Path(spec).name.split(".")[0])
            out.append((name, read_table(spec)))
        return out
    lists = [load_wordlist(w) for w in settings.wordlists]
    manifest = manifest_path(settings.embedding)
    if manifest is not None:  # the embeddings of `bayesbias train`: one table of all
        progress.info(f"reading the embeddings of training manifest {manifest}")
        return [(wl.name, manifest_table(manifest, wl)) for wl in lists]
    words = list(dict.fromkeys(w for wl in lists for w in wl.all_words))
    progress.info(f"reading {len(words)} words from embedding {settings.embedding}")
    emb = load_embedding(settings.embedding, words, format=settings.format,
                         trust_pickle=settings.trust_pickle)
    with once_per_message("bayesbias.inputs.embeddings"):  # shared control lists: one warning
        return [(wl.name, distance_table(emb, wl, on_missing=settings.on_missing))
                for wl in lists]


def _check_embeddings(tables, model) -> None:
    """Refuse, before any work, a table the model cannot take (one vs several embeddings)."""
    spec = load_spec(model)
    many = family(spec.family).EMBEDDINGS
    for name, table in tables:
        if not many:
            single_embedding(table, spec.name, name)
        elif n_embeddings(table) < 2:
            raise DistanceTableError(
                f"{name}: the {spec.name} model needs a table of 2 or more embeddings (an "
                "'embedding' column, as bayesbias train writes); with one embedding the "
                "variation between training runs cannot be estimated: use --model crossed")


def _choices(report: Report, settings: ReportSettings) -> None:
    from ..models.sampling import default_target_accept, default_tune

    s = settings

    def own(value, get) -> str:  # a setting given, or the model's default (per sampler)
        if value is not None:
            return f"{value}"
        native, pymc = get(s.model), get(s.model, pymc=True)
        return (f"{native} (the model's default"
                + (f"; {pymc} where its PyMC model is sampled)" if pymc != native else ")"))

    accept, tune = own(s.target_accept, default_target_accept), own(s.tune, default_tune)
    kind_label = {"hdi": "highest-density interval (HDI)",
                  "eti": "equal-tailed (percentile) interval"}[s.ci_kind]
    report.choice("source", ", ".join(s.distances) if s.distances
                  else f"embedding `{s.embedding}`, word lists {', '.join(s.wordlists)}")
    report.choice("interval", f"{s.ci_prob:.0%} {kind_label} (ci_prob={s.ci_prob}, "
                              f"ci_kind={s.ci_kind})")
    report.choice("region of practical equivalence",
                  f"±{s.rope:g} (--rope)" if s.rope is not None else "none (--rope not given)")
    report.choice("model", f"{s.model}; sampler {s.sampler}, {s.chains} chains x {s.draws} "
                           f"draws after {tune} tuning steps, target_accept {accept}; "
                           f"seed {s.seed}")
    report.choice("WEAT", f"effect size with the {s.sd_convention} sd "
                          f"({'n - 1' if s.sd_convention == 'sample' else 'n'}); "
                          f"two-sided permutation test, exact if at most "
                          f"{defaults.exact_permutation_limit:,} splits else "
                          f"{s.n_permutations:,} Monte Carlo splits (seed {s.seed}"
                          + (f"; the Normal with the exact re-partition moments when both "
                             f"sets have {defaults.normal_permutation_min:,} words or more"
                             if defaults.normal_permutation_min is not None else "")
                          + "); "
                          f"{s.ci_prob:.0%} equal-tailed percentile bootstrap interval "
                          f"over words ({s.n_bootstrap} resamples)")
    report.choice("null distributions", f"{s.null_reps} replications resampling real "
                                        "neutral-word similarities of the same table")
    report.choice("robustness", "each verdict box gives the share of 200 resampled word "
                                "lists under which each verdict contrast holds and the words "
                                "whose removal flips one (exact refits of the hierarchical "
                                f"model, intervals from the Normal mixture over {ROBUSTNESS_DRAWS} "
                                "scale draws, for the refits a one-dimensional screen puts "
                                "near a verdict threshold; the screen decides the rest, as "
                                "the exact refits would: docs/validation.md); for a table "
                                "of several embeddings, the refits of the "
                                "embedding_level model with each embedding left out in turn "
                                "(--no-robustness leaves it out)" if s.robustness else
                  "not computed (--no-robustness)")
    report.choice("missing words", f"on_missing={s.on_missing}")


def _overview(report: Report, contexts: list[WordListContext], glossary: Glossary,
              settings: ReportSettings, paper: dict | None = None) -> pd.DataFrame:
    iv = f"{settings.ci_prob:.0%} {settings.ci_kind.upper()}"
    sec = report.section("Verdicts", first=True)

    verdict_cards(report, contexts, settings)  # under the title: the answer first
    rows = []
    for c in contexts:
        row = {"word list": c.name, "verdict": c.verdict.label}
        for ev in c.verdict.contrasts:
            row[f"{ev.contrast} [{iv}]"] = (
                "no data" if ev.status == "no data" else
                f"{ev.mean:+.3f} [{ev.lower:+.3f}, {ev.upper:+.3f}] P(<0)={ev.prob_below_zero:.2f}"
                + (f" in ROPE {ev.share_in_rope:.0%}" if settings.rope is not None else ""))
        weats = c.weats if "weats" in c.__dict__ else []
        (x, y), first = weats[0] if weats else (("", ""), None)
        row.update({"WEAT pair": f"{x} vs {y}" if first else "",
                    "WEAT d": first.effect_size if first else float("nan"),
                    "WEAT p": (f"{p_bound(first)} ({sidedness(first.alternative)})"
                               if first else ""),
                    "MAC": c.mac.mac if "mac" in c.__dict__ else float("nan")})
        rows.append(row)
    over = pd.DataFrame(rows)
    explain = glossary(settings.ci_kind)
    sec.text(RULE.format(iv=iv) + (f" ROPE = ±{settings.rope:g}; `in ROPE` is the posterior "
                                   "share inside it." if settings.rope is not None else ""))
    sec.text(f"Contrasts are differences of group-level mean cosine distance (distance = "
             f"1 - cosine similarity; negative = the first connection is closer). "
             f"`human - none` is the control's own effect: how much closer any human "
             f"attribute is than a neutral word. {explain}. {glossary('different')}. "
             "WEAT and MAC are the frequentist comparators.")
    sec.table(over, "overview", f"One row per word list: each verdict contrast as mean [{iv}] "
              "and P(< 0); the numbers are in each word list's verdict table and in "
              "results.json. WEAT and MAC are the comparators")
    _paper_model(sec, contexts, settings, paper or {})
    return over


#: Why the default model is not the paper's, in one sentence (report; docs/notes/models.md).
WHY_CROSSED = (
    "The default model (`crossed`) is the paper's hierarchical model plus an effect for every "
    "attribute word, with one sd for stereotypes, human attributes and neutral words each, "
    "because the stereotypes and control words are a sample of words just as the protected "
    "words are: the paper's model treats the listed attributes as fixed, and on tables like "
    "the shipped Reddit ones that makes it call a null effect stereotype-specific in 12-20% of "
    "simulated cases.")


def _omega_label(posterior):
    """Posterior mean sd of the attribute-word effects: a number, or one per attribute kind."""
    if "omega" not in posterior:
        return None
    om = posterior["omega"]
    kinds = [d for d in om.dims if d not in ("chain", "draw")]
    if not kinds:
        return round(float(om.mean()), 4)
    means = om.mean(("chain", "draw"))
    return ", ".join(f"{k} {float(means.sel({kinds[0]: k})):.3f}"
                     for k in om[kinds[0]].values)


def _beside_paper(settings: ReportSettings) -> bool:
    """Whether the report fits the paper's model beside the default (one with attribute effects)."""
    from ..models import load_spec

    return family(load_spec(settings.model).family).ATTRIBUTE_EFFECTS


def _paper_model(sec, contexts: list[WordListContext], settings: ReportSettings,
                 paper: dict) -> None:
    """Both models' verdicts per word list, and why the default differs from the paper's.

    `paper`: word list key -> the :class:`~bayesbias.parallel.Job` of :func:`paper_model`.
    """
    if not contexts or not _beside_paper(settings):
        return
    s = settings
    rows = []
    for c in contexts:
        pv, dep = paper[c.key].result()
        row = {"word list": c.name, f"verdict ({s.model})": c.verdict.label,
               f"verdict ({PAPER_MODEL}, the paper's)": pv.label}
        for label, v in ((s.model, c.verdict), (PAPER_MODEL, pv)):
            ev = v["associated - human"]
            row[f"associated - human ({label})"] = (
                f"{ev.mean:+.3f} [{ev.lower:+.3f}, {ev.upper:+.3f}]")
        row["attribute-word sd (omega)"] = _omega_label(c.fit.posterior)
        row["paper's model: attribute-dependence check"] = (
            "n/a" if dep is None else ("ok" if dep >= ATTRIBUTE_ALPHA else
                                       f"fails (p = {dep:.2g})"))
        rows.append(row)
        c.results["paper_model_verdict"] = pv.to_dict()
    sec.text(WHY_CROSSED + " The table shows both models' verdicts; where they differ, the "
             "paper's verdict rests on the particular attribute words listed.")
    sec.table(pd.DataFrame(rows), "models", f"The default model's verdict beside the paper's "
              f"model's, per word list ({s.ci_prob:.0%} {s.ci_kind.upper()} of "
              "`associated - human`; omega: posterior mean sd of the attribute-word effects, "
              "per kind of attribute where the model has one per kind)")


def _fit_kwargs(settings: ReportSettings) -> dict:
    """Return the sampler settings of the report's fits (:func:`~bayesbias.models.fit_model`'s)."""
    s = settings
    return dict(draws=s.draws, tune=s.tune, chains=s.chains, seed=s.seed, sampler=s.sampler,
                target_accept=s.target_accept,
                keep_word_draws=True if s.keep_word_draws else None)


def verdict_fit(table: pd.DataFrame, settings: ReportSettings, checked: bool = True):
    """Fit the model a word list's verdict rests on, as ``bayesbias fit`` does.

    Through :func:`bayesbias.verdicts.fit_for_verdict`: one fit at the settings' draws, and a
    refit with more draws only where more draws could settle the code (a deciding interval
    end near the edge of the borderline band); an end on its threshold stays borderline
    without refits. So ``report`` and ``fit`` give the same verdict for a seed. Sampler
    warnings are shown in the report, not repeated on stderr. Without `checked`, the
    diagnostics and model checks are left to :func:`checked_fit`.
    """
    s = settings
    kwargs = _fit_kwargs(s)
    draws = kwargs.pop("draws")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return fit_for_verdict(table, s.model, draws=draws, ci_prob=s.ci_prob,
                               ci_kind=s.ci_kind, rope=s.rope, strict=s.strict,
                               checked=checked, **kwargs)


def fit_checks(fit, seed: int) -> dict:
    """Report job: `fit`'s diagnostics, model and predictive checks (:meth:`Fit.run_checks`)."""
    return fit.run_checks(seed)


def checks_job(fit, pool: JobPool, name: str, settings: ReportSettings):
    """Queue `fit`'s r-hat and ESS, model checks and predictive check, ahead of other jobs.

    A worker computes them on a copy of the fit (the same numbers) while this process
    samples the next word list; with ``jobs=1``, or no worker free in time, this process
    does when :func:`checked_fit` asks.
    """
    return pool.submit(fit_checks, fit, settings.seed, first=True,
                       _label=f"{name}: r-hat, ESS, divergences and model checks")


def checked_fit(fit, checks, settings: ReportSettings):
    """Return `fit` with its diagnostics and model checks run, as :func:`verdict_fit` does.

    `checks` is the :class:`~bayesbias.parallel.Job` of :func:`checks_job`.
    """
    from ..models import sampling

    fit.take_checks(checks.result())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        return sampling.warn_checks(fit, bool(settings.strict))


def paper_model(table: pd.DataFrame, name: str, settings: ReportSettings):
    """Fit the paper's model beside the default; return its verdict and dependence p.

    A report job (a worker process fits it while this one fits the default model): it
    returns ``(Verdict, p or None)``, not the fit. Only what the report shows is computed:
    no sampler diagnostics and no predictive-coverage check of a model shown for comparison.
    The fit is the exact posterior's independent draws
    (:func:`~bayesbias.studies.exact_posterior.exact_fit`, the settings' chains x draws; a
    fifth of the sampler's CPU), or NUTS where the grid does not hold the posterior or the
    per-word draws would be too many to keep (the sampled fit keeps summaries).
    """
    from ..models import fit_model
    from ..models.result import _row_view
    from ..studies.exact_posterior import exact_fit

    s = settings
    try:
        fit = exact_fit(table, PAPER_MODEL, draws=s.draws, chains=s.chains, seed=s.seed)
    except (RuntimeError, InvalidArgumentError):  # grid edge; too many per-word draws
        fit = fit_model(table, PAPER_MODEL, checked=False, **_fit_kwargs(s))
    p = attribute_dependence(_row_view(fit))
    return (verdict_from_fit(fit, name, s.ci_prob, s.ci_kind, s.rope),
            None if p is None else float(p))


def _warm_kernels() -> threading.Thread:
    """Compile the sampler's C kernels in a thread (a compiler process) while the tables load.

    On the first run after installing, the compile (about 1 CPU-second) then overlaps the
    reading of the embedding; later runs find the kernels in the cache (milliseconds).
    """
    def build():
        try:
            from ..models._native import library

            library()
        except Exception:  # noqa: BLE001 - the first fit reports it, with its context
            log.debug("compiling the kernels ahead failed", exc_info=True)

    thread = threading.Thread(target=build, name="bayesbias-kernels", daemon=True)
    thread.start()
    return thread


def _model_card(report: Report, contexts: list[WordListContext]) -> None:
    if not contexts:
        return
    spec = contexts[0].fit.spec
    sec = report.section("Model card")
    sec.text("The likelihood and priors of the Bayesian model (the same for every word list); "
             "c is the connection (associated, different, human, none).")
    sec.pre(spec.card())


def run_report(settings: ReportSettings | None = None, jobs: int = 1) -> dict:
    """Run the whole analysis and write the report folder; return the results as plain data.

    Each word list (or distance table) gets one section built by the builders of
    :data:`~bayesbias.report.sections.SECTIONS`; an overview of the verdicts leads.
    With `jobs` > 1, ``jobs - 1`` worker processes compute the comparators, embedding
    metrics and figures while this one fits the models (:class:`~bayesbias.parallel.JobPool`);
    the report is the same for every `jobs`.
    """
    settings = settings or ReportSettings()
    if not isinstance(settings.embedding, (str, type(None))):
        jobs = 1  # a sentence encoder has started its own threads (torch): no fork after it
    with JobPool(jobs, preload=_job_modules(settings)) as pool:
        return _run(settings, pool)


def _prepare_figures() -> None:
    prepare()


#: What the report's jobs import first: done before the workers start, then not again.
_JOB_MODULES = ("bayesbias.comparators.weat", "bayesbias.comparators.null",
                "bayesbias.comparators.metrics", _prepare_figures)


def _job_modules(settings: ReportSettings) -> tuple:
    """:data:`_JOB_MODULES`, and those of the robustness refits and the paper's model when made.

    The refits run in a worker and the verdict boxes here read them (``robustness_line``
    imports :mod:`bayesbias.studies`): imported once before the fork, not in both processes
    (0.3 CPU-s with SciPy's special functions, which this process needs for the verdicts
    anyway).
    """
    from .sections import _wants_robustness

    extra = (("bayesbias.studies.sensitivity",) if _wants_robustness(settings) else ()) \
        + (("bayesbias.studies.exact_posterior",) if _beside_paper(settings) else ())
    return _JOB_MODULES + extra


def _run(settings: ReportSettings, pool: JobPool) -> dict:
    t0 = time.perf_counter()
    out_dir = check_output(settings.output)  # fail before the work, not after

    crossed = family(load_spec(settings.model).family).ATTRIBUTE_EFFECTS
    many = family(load_spec(settings.model).family).EMBEDDINGS
    report = Report(
        "bayesbias report",
        "Are stereotypes closer to their protected words than the control groups are? "
        "Measured on cosine distances with the uncertainty shown: Bayesian intervals from a "
        "hierarchical model with control groups (Dobrzeniecka & Urbaniak)"
        + (" plus an effect per attribute word, so that they also carry the uncertainty of "
           "which attribute words were listed," if crossed else "")
        + " next to WEAT (Caliskan et al. 2017) and MAC (Manzini et al. 2019)."
        + (" Each table holds several embeddings (training runs or corpus samples), fitted "
           "by one model of all of them, with what each embedding alone would have said "
           "beside it." if many else ""),
    )
    glossary = Glossary(settings.ci_prob, settings.ci_kind)
    _choices(report, settings)
    kernels = _warm_kernels()
    try:
        prov = provenance(report_inputs(settings))  # digests of the inputs before reading them
        tables = _tables(settings)
        _check_embeddings(tables, settings.model)
    finally:  # before the pool forks its workers (no fork beside a running thread), and no
        kernels.join()  # compile left half-done by an input error
    keys = unique_names(name for name, _ in tables)
    contexts = []
    for (name, table), key in zip(tables, keys, strict=True):
        title = name if key == name else f"{name} (files: {key}_*)"
        contexts.append(WordListContext(name=name, key=key, table=table, settings=settings,
                                        report=report, section=report.section(title),
                                        glossary=glossary, pool=pool))
    for name in JOB_NAMES:  # each job for every word list in turn: the longest first
        for ctx in contexts:
            ctx.start([name])
    paper = {}
    if _beside_paper(settings):  # the paper's model: a worker's (or, waiting, this one's)
        paper = {ctx.key: pool.submit(paper_model, ctx.table, ctx.name, settings,
                                      _label=f"{ctx.name}: the paper's {PAPER_MODEL} model")
                 for ctx in contexts}
    front_matter(report, settings, contexts, glossary)
    # every word list's fit first, while the pool's workers compute what needs only the
    # tables (robustness refits, comparators, metrics, the paper's model), which the
    # builders then wait for
    # each fit's r-hat and ESS (hundreds of parameters in the crossed model), model checks
    # and predictive check go to a worker while this process samples the next word list
    fitted = []
    for k, ctx in enumerate(contexts, 1):
        s = settings
        progress.info(f"{ctx.name}: fitting the {s.model} model, word list {k} of "
                      f"{len(contexts)} ({s.chains} chains x {s.draws} draws)")
        fit = verdict_fit(ctx.table, settings, checked=False)
        fitted.append((ctx, fit, checks_job(fit, pool, ctx.name, settings)))
    for ctx, fit, diag in fitted:
        ctx.fit = checked_fit(fit, diag, settings)  # (WordListContext.fit: cached)
    for build in SECTIONS:
        for ctx in contexts:
            build(ctx)
    over = _overview(report, contexts, glossary, settings, paper)
    _model_card(report, contexts)
    back_matter(report, settings, contexts, prov)
    results = {"settings": settings.to_dict(), "provenance": prov,
               "verdicts": [c.verdict.to_dict() for c in contexts],
               "overview": records(over),
               "wordlists": {c.key: dict(c.results, name=c.name) for c in contexts}}
    results["elapsed_s"] = round(time.perf_counter() - t0, 1)
    report.data = results

    def write_fits(folder: Path):
        folder.mkdir()
        for k, c in enumerate(contexts, 1):
            progress.info(f"writing fit {k} of {len(contexts)} ({c.key}.nc)")
            c.fit.save(folder / f"{c.key}.nc", provenance=prov)
        pool.help()  # the figures no worker has started yet

    progress.info(f"writing report to {out_dir}")
    report.write(out_dir, extra_files={"fits": write_fits})
    results = dict(results, output=str(out_dir))
    log.info("report done in %.0f s", results["elapsed_s"])
    return results
