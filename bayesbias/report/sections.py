"""Section builders of the report: one function per part of a word list's section.

A builder is ``builder(ctx: WordListContext) -> None``: it reads the lazily computed
results of ``ctx`` (``ctx.fit``, ``ctx.verdict``, ``ctx.weats``, ``ctx.mac``, ``ctx.null``),
adds items to ``ctx.section`` and plain-JSON data to ``ctx.results``. :data:`SECTIONS` lists
them in the order they appear.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import pandas as pd

from ..comparators.mac import mac_from_table
from ..comparators.weat import weat_class_pairs
from ..errors import DistanceTableError, InputDataError, ModelSpecError
from ..inputs.distances import n_embeddings
from ..models import load_spec
from ..models.plots import (
    FOREST_MAX_UNITS,
    figure_png,
    fit_forest_data,
    fit_forest_figure,
    label_width,
    new_figure,
)
from ..parallel import Job, JobPool
from ..plain import DROPPED_KEY, dropped_line
from ..progress import progress
from ..verdicts import drivers_sentence, verdict_from_fit, word_drivers
from ..verdicts.ensemble import ensemble_figure, summarize_ensemble
from ..verdicts.reconcile import p_bound, weat_sentence
from .card import VerdictCard, cards_html
from .document import Report, Section

__all__ = ["WordListContext", "Glossary", "SECTIONS", "records", "diagnostic_advice",
           "verdict_card", "verdict_cards",
           "coverage_warning", "NULL_VS_PERMUTATION", "JOB_NAMES"]

log = logging.getLogger(__name__)

#: Why the null share and the permutation p differ (printed under the null figure).
NULL_VS_PERMUTATION = (
    "This share is not WEAT's permutation p: the permutation test keeps these very words and "
    "only reshuffles which protected words count as X or Y, while each null replication draws "
    "new words from the neutral-word similarities, so it also carries the variation of "
    "choosing words, a different question with a different reference distribution.")


def records(df: pd.DataFrame) -> list[dict]:
    """`df` as plain JSON records (NaN -> None, numpy scalars -> Python)."""
    return json.loads(df.to_json(orient="records", double_precision=15))


class Glossary:
    """One-line explanations, each given where its term first appears in the report."""

    TERMS = {
        "hdi": "{iv}: the narrowest interval holding {p} of the posterior probability; "
               "with this model and data the quantity lies inside it with that probability",
        "eti": "{iv}: the interval from the {lo:.1%} to the {hi:.1%} posterior quantile",
        "different": "`different`: stereotypes listed for another protected class "
                     "({example}); "
                     "`associated - different` "
                     "asks whether a word is closer to its own class's stereotypes than to "
                     "the other classes'",
        "tau": "tau[c]: the between-word sd of the mean distance in connection c (how much "
               "protected words differ from each other)",
        "sigma": "sigma[c]: the residual sd of single distances around their word's mean",
        "ess": "ESS: effective sample size, how many independent draws the correlated MCMC "
               "draws are worth (bulk: for the centre, tail: for the interval ends)",
        "rhat": "r-hat: agreement between chains (1.00 = the chains agree; above 1.01 they "
                "have not converged to the same distribution)",
    }

    def __init__(self, ci_prob: float, ci_kind: str):
        self.ci_prob, self.ci_kind = ci_prob, ci_kind
        self.used: set[str] = set()
        #: The example of a `different` attribute (the report puts in its own lists' words).
        self.example = "for a religion word such as 'jew', a stereotype of christians or muslims"

    def __call__(self, term: str) -> str:
        """Return the explanation the first time `term` is asked for, else ``""``."""
        if term in self.used:
            return ""
        self.used.add(term)
        iv = f"{self.ci_prob:.0%} {self.ci_kind.upper()}"
        lo = (1 - self.ci_prob) / 2
        return self.TERMS[term].format(iv=iv, p=f"{self.ci_prob:.0%}", lo=lo, hi=1 - lo,
                                       example=self.example)


def diagnostic_advice(problems: list[str], command: str = "report") -> str:
    """Say what to do about failed sampler diagnostics, naming options of `command`."""
    if not problems:
        return ""
    text = " ".join(problems)
    tips = []
    if "divergen" in text:
        tips.append("raise --target-accept (e.g. 0.95 or 0.99)")
    if "r-hat" in text or "ESS" in text:
        tips.append("run longer with --tune and --draws (e.g. 2000 each) or more --chains")
    tips.append(f"add --strict to make `bayesbias {command}` fail instead of warning")
    return "What to do: " + "; ".join(tips) + ". Until then, read the intervals as rough."


def coverage_warning(fit, ppc: pd.DataFrame | None = None) -> str | None:
    """Return the posterior-predictive coverage warning of a fit, or None when coverage is fine.

    Uses the models layer's own check when the fit has one (``fit.checks``, the failed
    ``"ppc_coverage"`` check); otherwise reads the 89% coverage of :meth:`Fit.ppc` with the
    same tolerance (0.05).
    """
    checks = getattr(fit, "checks", None)
    if checks is not None:  # the models layer's check
        bad = [c.message for c in checks if not c.ok and getattr(c, "code", "") in
               ("ppc_coverage", "attribute_dependence")]
        return "; ".join(bad) if bad else None
    ppc = fit.ppc() if ppc is None else ppc
    col = "inside_0.89"
    if col not in ppc:
        return None
    share = float(ppc.set_index("connection").loc["all", col])
    if abs(share - 0.89) <= 0.05:
        return None
    way = "wider" if share > 0.89 else "narrower"
    return (f"posterior predictive check: {share:.0%} of observed distances lie inside the "
            f"89% predictive interval (ideally about 89%); the model's predictions are "
            f"{way} than the data, so its intervals are probably too "
            f"{'wide' if way == 'wider' else 'narrow'}: prefer the hierarchical model or "
            "read the intervals with caution")


@dataclass
class WordListContext:
    """One word list's analysis: computed on first use, shared by the section builders."""

    name: str
    key: str
    table: pd.DataFrame
    settings: object
    report: Report
    section: Section
    glossary: Glossary
    results: dict = field(default_factory=dict)
    #: Where the jobs run (default: in this process, when first needed).
    pool: JobPool = field(default_factory=JobPool)
    jobs: dict[str, Job] = field(default_factory=dict)

    def start(self, names=None) -> None:
        """Queue the jobs that need only the table and the settings (WEAT, null, metrics).

        They run in :attr:`pool`'s workers while this process fits the model; called by
        :func:`~bayesbias.report.run_report` for every word list before the first builder
        (`names`: these of :data:`_JOBS` only, in their order there).
        """
        for name in _JOBS if names is None else [n for n in _JOBS if n in names]:
            if name == "robustness" and not _wants_robustness(self.settings):
                continue
            if self.multi and name in ("comparators", "embedding_metrics"):
                continue  # they describe one embedding: per embedding in the ensemble section
            self.job(name)

    def job(self, name: str) -> Job:
        """Return the job `name` (``"comparators"``, ``"embedding_metrics"``), queued if new."""
        if name not in self.jobs:
            fn, args, here = _JOBS[name](self)
            self.jobs[name] = self.pool.submit(fn, *args, here=here,
                                               _label=f"{self.name}: {JOB_LABELS[name]}")
        return self.jobs[name]

    @cached_property
    def multi(self) -> bool:
        """Whether the table holds two or more embeddings (:mod:`bayesbias.ensemble`)."""
        return n_embeddings(self.table) >= 2

    @property
    def iv(self) -> str:
        """E.g. ``"89% HDI"``."""
        s = self.settings
        return f"{s.ci_prob:.0%} {s.ci_kind.upper()}"

    @cached_property
    def fit(self):
        """The Bayesian fit (sampler warnings are shown in the report, not repeated)."""
        from ..models import SamplerWarning
        from ..verdicts.precision import fit_for_verdict

        s = self.settings
        progress.info(f"{self.name}: fitting the {s.model} model "
                      f"({s.chains} chains x {s.draws} draws)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            return fit_for_verdict(self.table, s.model, draws=s.draws, tune=s.tune,
                                   chains=s.chains, seed=s.seed, strict=s.strict,
                                   sampler=s.sampler, target_accept=s.target_accept,
                                   ci_prob=s.ci_prob, ci_kind=s.ci_kind, rope=s.rope,
                                   keep_word_draws=True if s.keep_word_draws else None)

    @cached_property
    def verdict(self):
        """The control-group :class:`~bayesbias.verdicts.Verdict`."""
        s = self.settings
        return verdict_from_fit(self.fit, self.name, s.ci_prob, s.ci_kind, s.rope)

    @cached_property
    def drivers(self) -> pd.DataFrame:
        """Per-word verdict contrasts, sorted."""
        s = self.settings
        return word_drivers(self.fit, s.ci_prob, s.ci_kind, s.rope)

    @cached_property
    def ppc(self) -> pd.DataFrame:
        """Posterior predictive coverage."""
        return self.fit.ppc(seed=self.settings.seed)

    @cached_property
    def weats(self) -> list:
        """WEAT for every pair of classes ([] for a table of several embeddings)."""
        if self.multi:
            return []
        # the null distribution comes from the same job: its progress lines follow this
        progress.info(f"{self.name}: WEAT permutation tests, bootstrap and null distribution "
                      f"({self.settings.null_reps} replications)")
        return self.job("comparators").result()[0]

    @cached_property
    def null(self):
        """Null distributions of WEAT d and MAC for the first class pair (a frame).

        ``None`` without a pair or for a table of several embeddings; the input error that
        made them impossible, if any.
        """
        if self.multi:
            return None
        return self.job("comparators").result()[1]

    @cached_property
    def embedding_metrics(self):
        """The :class:`~bayesbias.comparators.metrics.MetricTable` (None without vectors)."""
        return self.job("embedding_metrics").result()

    @cached_property
    def ensemble(self):
        """The :class:`~bayesbias.ensemble.EnsembleSummary` of a multi-embedding table."""
        from ..models import SamplerWarning

        s = self.settings
        progress.info(f"{self.name}: each of {self.table['embedding'].nunique()} embeddings "
                      f"alone (crossed model), WEAT and reliability per embedding")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplerWarning)
            return summarize_ensemble(self.table, self.fit, ci_prob=s.ci_prob,
                                      ci_kind=s.ci_kind, rope=s.rope, seed=s.seed,
                                      n_permutations=s.n_permutations,
                                      sd_convention=s.sd_convention, draws=s.draws,
                                      tune=s.tune, chains=s.chains, sampler=s.sampler,
                                      target_accept=s.target_accept)

    @cached_property
    def robustness(self):
        """Leave-one-out and resampled-list refits, or why they do not apply.

        A ``Sensitivity``, the reason as a str, or None when not asked for.
        """
        if not _wants_robustness(self.settings):
            return None
        progress.info(f"{self.name}: robustness (refits leaving out each word, resampled "
                      "word lists)")
        return self.job("robustness").result()

    @cached_property
    def mac(self):
        """MAC over all classes."""
        return mac_from_table(self.table)


# -- builders -------------------------------------------------------------------------------

def verdict_section(ctx: WordListContext) -> None:
    """Add the verdict card (details folded), its contrasts table and the coverage warning."""
    v = ctx.verdict
    sec = ctx.section
    sec.heading("Verdict")

    robust = ([robustness_line(ctx.robustness)]
              if getattr(ctx.settings, "robustness", False) else [])
    warn = coverage_warning(ctx.fit, ctx.ppc)
    card = verdict_card(ctx, robust + ([f"Warning: {warn}."] if warn else []))
    sec.block(card.markdown(), cards_html([card]))
    frame = v.to_frame().drop(columns="word list")
    sec.table(frame, f"{ctx.key}_verdict", f"The contrasts behind the verdict ({ctx.iv}; "
              "negative = the first connection is closer to the protected words; "
              "`prob_below_zero` = posterior probability that the contrast is below 0)")
    if warn:
        sec.text(f"Warning: {warn}.")
    ctx.results["verdict"] = v.to_dict()
    ctx.results["card"] = card.to_dict()
    ctx.results["coverage_warning"] = warn
    if robust:
        ctx.results["robustness"] = robust[0]


def verdict_card(ctx: WordListContext, extra=()):
    """Return the :class:`~bayesbias.report.card.VerdictCard` of a word list.

    `extra`: lines for its folded details after the verdict's own (robustness, WEAT,
    warnings); a failed sampler diagnostic adds what to do about it.
    """
    extra = list(extra)
    diag = ctx.results.get("diagnostics") or {}
    if diag and not diag.get("ok", True):
        problems = list(diag.get("problems", []))
        extra.append("Sampler diagnostics failed: " + "; ".join(problems) + ". "
                     + diagnostic_advice(problems, "report"))
    return VerdictCard.from_verdict(ctx.verdict, extra, name=ctx.name)


def verdict_cards(report: Report, contexts: list[WordListContext], settings) -> None:
    """Put every word list's verdict card under the report's title, side by side.

    Each card's folded details end with the robustness line and WEAT read against the
    verdict (when computed); ``results.json`` gets the card under the word list (``card``:
    ``headline`` short, ``details`` separate).
    """
    cards = []
    for c in contexts:
        extra = []
        if getattr(settings, "robustness", False):
            extra.append(robustness_line(c.robustness))
        if "weats" in c.__dict__:
            extra.append(weat_sentence(c.verdict, c.weats))
        warn = c.results.get("coverage_warning")
        if warn:
            extra.append(f"Warning: {warn}.")
        card = verdict_card(c, extra)
        c.results["card"] = card.to_dict()
        cards.append(card)
    if cards:
        report.lead.append(("\n".join(card.markdown() for card in cards), cards_html(cards)))


def _extreme_word_contrasts(d: pd.DataFrame, unit: str):
    """Rows of the per-word contrast table a page shows, and what was left out.

    All rows (None, ``""``) up to :data:`bayesbias.models.plots.FOREST_MAX_UNITS` units;
    above, per contrast the third of that many most negative, the third most positive and
    the third with the widest intervals among the rest, in the table's order.
    """
    n = d[unit].nunique()
    if n <= FOREST_MAX_UNITS:
        return None, ""
    k = FOREST_MAX_UNITS // 3
    keep = []
    for _, rows in d.groupby("contrast", sort=False, observed=True):
        by_mean = rows["mean"].sort_values(kind="stable").index
        ends = by_mean[:k].union(by_mean[-k:])
        width = (rows["upper"] - rows["lower"]).drop(ends).sort_values(ascending=False,
                                                                       kind="stable")
        keep.append(ends.union(width.index[:k]))
    shown = d.loc[d.index.isin(np.concatenate(keep))]
    what = unit.replace("_", " ") + "s"
    return shown, (f"per contrast the {k} most negative, the {k} most positive and the {k} "
                   f"with the widest intervals among the rest of the {n:,} {what} are shown")


def drivers_section(ctx: WordListContext) -> None:
    """Which protected words drive each verdict contrast."""
    d = ctx.drivers
    if d.empty:
        return
    unit = ctx.fit.unit_dim
    ctx.section.heading("Which protected words drive the verdict")
    ctx.section.bullets([drivers_sentence(d, c, unit) for c in dict.fromkeys(d["contrast"])])
    shown, note = _extreme_word_contrasts(d, unit)
    ctx.section.table(d, f"{ctx.key}_word_contrasts",
                      f"Per-word contrasts with {ctx.iv}, sorted within each contrast from the "
                      "most negative (the words that most support 'stereotypes are closer')"
                      + (f"; {note}, the CSV has every word" if note else ""), shown=shown)
    ctx.results["word_contrasts"] = records(d)


def sensitivity_section(ctx: WordListContext) -> None:
    """Leave-one-word-out and resampled-list sensitivity (only with ``--sensitivity``)."""
    if getattr(ctx.settings, "sensitivity", False):
        from ..studies.sensitivity import Sensitivity, report_builder, report_section

        done = ctx.robustness  # the refits of the robustness line, when they were made
        if isinstance(done, Sensitivity):
            ctx.results["sensitivity"] = report_section(ctx.section, done, ctx.key)
        else:
            report_builder(ctx)


def bayes_section(ctx: WordListContext) -> None:
    """Group means, all contrasts, parameters, forest plot, PPC, diagnostics."""
    s, fit, sec, g = ctx.settings, ctx.fit, ctx.section, ctx.glossary
    sec.heading("Bayesian model")
    gm = fit.group_means(s.ci_prob, s.ci_kind)
    con = fit.contrasts(s.ci_prob, s.ci_kind, contrasts="all")
    sec.table(gm, f"{ctx.key}_group_means", f"Posterior group-level mean distance per "
              f"connection, {ctx.iv}")
    sec.table(con, f"{ctx.key}_contrasts", f"All six contrasts between connections ({ctx.iv}; "
              "the first four are the ones the verdict reads; negative = the first connection "
              "is closer; `prob_below_zero` = posterior probability of a value below 0): an "
              "interval that excludes zero is a difference the data support")
    params = fit.parameters(s.ci_prob, s.ci_kind)
    names = {str(n).split("[")[0] for n in params["parameter"]}
    explain = "; ".join(g(t) for t in ("tau", "sigma") if t in names and t not in g.used)
    sec.table(params, f"{ctx.key}_parameters", "Model parameters" + (f" ({explain})"
                                                                      if explain else ""))

    forest_data = fit_forest_data(fit, s.ci_prob, s.ci_kind, "all")
    ctx.results["forest_contrasts"] = list(forest_data["contrasts"]["contrast"])
    forest = ctx.pool.submit(figure_png, fit_forest_figure, forest_data,
                             _label=f"{ctx.name}: forest plot")
    note = forest_data["selection"]
    sec.figure_from(
        partial(_write_bytes, forest),
        f"{ctx.key}_forest", f"Forest plot: {ctx.iv} of the mean distance per protected word "
        "and connection, of the group-level means, and of the six contrasts (the verdict's "
        "four first)" + (f"; {note} (all in `tables/{ctx.key}_word_means.csv`)" if note else ""))
    if note:  # thousands of words: the page shows the drawn ones, the CSV has all
        sec.table(fit.word_means(s.ci_prob, s.ci_kind), f"{ctx.key}_word_means",
                  f"Posterior mean distance per protected word and connection, {ctx.iv}: "
                  f"{note}; the CSV has every word",
                  shown=forest_data["words"].drop(columns="_c"))
    from ..models.result import ppc_rows_note

    sec.table(ctx.ppc, f"{ctx.key}_ppc", "Posterior predictive check: share of observed "
              "distances inside the 89% and 50% predictive HDIs (ideally about 0.89 and 0.5"
              f"{ppc_rows_note(ctx.ppc)})")
    diag = fit.diagnostics()
    d = diag.to_dict()
    explain = "; ".join(x for x in (g("rhat"), g("ess")) if x)
    sec.text(f"Sampler diagnostics ({fit.idata.attrs.get('sampler')}): "
             f"{'all checks passed' if diag.ok else '; '.join(diag.problems)} "
             f"(max r-hat {d['max_rhat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
             f"min tail ESS {d['min_ess_tail']:.0f}, {diag.divergences} divergences). "
             + (f"{diagnostic_advice(diag.problems, 'report')} " if not diag.ok else "")
             + (f"({explain}.) " if explain else "")
             + f"Posterior saved as `fits/{ctx.key}.nc`.")
    ctx.results.update(group_means=records(gm), contrasts=records(con),
                       parameters=records(params), ppc=records(ctx.ppc),
                       diagnostics=json.loads(json.dumps(d, default=float)))


def comparators_section(ctx: WordListContext) -> None:
    """Raw means, WEAT per class pair, MAC, and the null distribution figure."""
    s, sec, name, table = ctx.settings, ctx.section, ctx.name, ctx.table
    sec.heading("Frequentist comparators")
    g = table.groupby("connection", observed=True)["cosine_distance"]
    raw = g.agg(rows="count", mean="mean", sd="std").reset_index()
    sec.table(raw, f"{ctx.key}_raw_means", "Raw mean cosine distance per connection "
              "(descriptive; no uncertainty)" + (", over all embeddings" if ctx.multi else ""))
    if ctx.multi:
        sec.text("WEAT, MAC and their null distributions describe one embedding: WEAT is "
                 "given per embedding, with its spread between embeddings, in the section "
                 "on the embeddings above.")
        ctx.results.update(raw_means=records(raw), weat=[])
        return
    weats = ctx.weats
    weat_df = pd.DataFrame([{
        "X": x, "Y": y, "effect_size": r.effect_size,
        "ci_lower": r.ci[0] if r.ci else np.nan, "ci_upper": r.ci[1] if r.ci else np.nan,
        "p_value": r.p_value, "alternative": r.alternative, "permutation": r.permutation,
        "n_permutations": r.n_permutations,
    } for (x, y), r in weats])
    if weats:
        shown = weat_df.drop(columns="p_value")
        shown.insert(5, "p", [p_bound(r) for _, r in weats])
        sec.table(shown, f"{ctx.key}_weat", f"WEAT per pair of classes (X targets with their "
                  f"stereotypes A vs Y with B); {s.ci_prob:.0%} equal-tailed percentile "
                  f"bootstrap interval of d ({s.n_bootstrap} resamples of targets and "
                  "attributes: the one interval of each WEAT d in this report); p of the "
                  "two-sided permutation test, a bound below what the test resolves")
        sentence = weat_sentence(ctx.verdict, weats)
        sec.text(sentence)
        ctx.results["weat_reconciliation"] = sentence
    else:
        sec.text("WEAT and its null distribution need two protected classes with "
                 "stereotypes; this table has fewer, so they are skipped.")
    mac = ctx.mac
    (x, y), first = weats[0] if weats else ((None, None), None)
    pair_mac = None
    if first is not None:
        pair = table.loc[table["protected_class"].isin([x, y])
                         & table["attribute_class"].isin([x, y])]
        pair_mac = mac_from_table(pair).mac
    sec.text(f"MAC (Manzini et al.: mean cosine distance of the protected words to each "
             f"stereotype class, averaged) = {mac.mac:.3f} over all classes"
             + (f"; {pair_mac:.3f} for the pair {x} vs {y} that the null figure below uses"
                if pair_mac is not None and table["protected_class"].nunique() > 2 else "")
             + ". MAC has no reference point of its own; compare it with the null "
               "distribution below and with the neutral-word means above.")
    ctx.results.update(raw_means=records(raw), weat=records(weat_df), mac=float(mac.mac))
    if first is None:
        return
    null = ctx.null
    if isinstance(null, Exception):
        sec.text(f"No null distribution for this table: {null}.")
        ctx.results["null"] = {"skipped": str(null)}
        return
    observed = {"weat_effect": first.effect_size, "mac": pair_mac}
    q = {k: np.nanquantile(null[k].values, [0.025, 0.975]) for k in observed}
    share = float(np.mean(np.abs(null["weat_effect"].values) >= abs(first.effect_size)))

    figure = ctx.pool.submit(
        figure_png, _null_figure, null, observed,
        f"{name}: {x} vs {y}, null from resampled neutral-word similarities", dpi=110,
        _label=f"{ctx.name}: null distribution figure")
    sec.figure_from(
        partial(_write_bytes, figure), f"{ctx.key}_null",
        f"Null distributions of WEAT d and MAC for {x} vs {y} (same list sizes) with the "
        f"observed values (red: d = {first.effect_size:.2f}, MAC = {pair_mac:.3f}). "
        f"{share:.1%} of null replications have |d| at least the observed "
        f"{abs(first.effect_size):.2f}, while WEAT's permutation {first.p_text}. "
        f"{NULL_VS_PERMUTATION} 95% of null MAC values lie in [{q['mac'][0]:.3f}, "
        f"{q['mac'][1]:.3f}].")
    ctx.results["null"] = {"pair": [x, y], "share_abs_d_at_least_observed": share,
                           "permutation_p": float(first.p_value), "mac_pair": float(pair_mac),
                           "mac_95": q["mac"].tolist(), "weat_95": q["weat_effect"].tolist()}


def data_section(ctx: WordListContext) -> None:
    """Rows, words and what was dropped."""
    table = ctx.table
    missing = table.attrs.get("missing", {})
    ctx.section.heading("Data")
    ctx.section.text(
        f"{len(table)} distance rows: {table.protected_word.nunique()} protected words x "
        f"{table.attribute.nunique()} attributes"
        + (f" in each of {table['embedding'].nunique()} embeddings." if ctx.multi else ".")
        + (" " + dropped_line(missing, "Dropped (not in the embedding)") + "."
           if dropped_line(missing) else " No word was missing.")
        + (f" {table.attrs['repeats_dropped']} repeated pairs were kept once."
           if table.attrs.get("repeats_dropped") else ""))
    ctx.results["data"] = {"rows": int(len(table)),
                           "protected_words": int(table.protected_word.nunique()),
                           "attributes": int(table.attribute.nunique()),
                       "embeddings": int(table["embedding"].nunique()) if ctx.multi else 1,
                           DROPPED_KEY: {str(k): [str(w) for w in v]
                                         for k, v in missing.items()}}


#: What the corpus-level means describe, by kind of ensemble (:func:`ensemble_kind`).
ENSEMBLE_TARGET = {
    "bootstrap": "bootstrap resamples of one corpus: the corpus-level intervals describe the "
                 "language the corpus was drawn from (the observed corpus counts as one more "
                 "draw, so they do not shrink with more resamples)",
    "seeds": "training runs (seeds) of one corpus: the corpus-level intervals describe this "
             "corpus averaged over runs, not the language it was drawn from; a seed-only "
             "ensemble cannot tell a corpus artefact from an association of the language "
             "(train on bootstrap resamples for that)",
    "corpora": "independent corpora: the corpus-level intervals describe the population of "
               "corpora they stand for",
    "mixed": "bootstrap resamples mixed with other corpus samples: read the corpus-level "
             "intervals knowingly (models of resamples have larger distances than models of "
             "the corpus itself)",
}


def ensemble_section(ctx: WordListContext) -> None:
    """Many embeddings: each embedding alone beside the corpus level, variance, reliability."""
    if not ctx.multi:
        return
    e = ctx.ensemble
    sec, iv = ctx.section, ctx.iv
    sec.heading("Many embeddings: the corpus level beside each embedding alone")
    counts = e.per_embedding["verdict"].value_counts()
    v = e.variance.set_index("quantity")
    share = ", ".join(f"`{q}` {v.loc[q, 'embedding_share']:.0%} ({iv} "
                      f"{v.loc[q, 'lower']:.0%} to {v.loc[q, 'upper']:.0%})"
                      for q in ("associated - none", "associated - human",
                                "associated - different"))
    spread = e.weat_spread()
    sec.text(f"**{e.headline()}.**")  # the finding first, with a credible class contrast
    singles = (
        f"Each embedding alone ({e.model} model, same rule and sampler settings): "
        + "; ".join(f"{n} {code}" for code, n in counts.items())
        + f". **{e.disagree} of {e.n_embeddings} single embeddings would have said otherwise** "
          f"than the corpus level ({ctx.verdict.label})." if e.single else
        "Single embeddings not fitted (`--no-single`): no per-embedding verdicts.")
    bullets = [
        f"**{e.n_embeddings} embeddings of {ENSEMBLE_TARGET[e.kind]}.** The verdict above is "
        "the corpus-level one (model `embedding_level`)."
        + (f" Note: {e.caveat}." if e.caveat else ""),
        singles,
        f"Share of the variation of a protected word's contrast in one embedding that comes "
        f"from training and corpus sampling rather than from which words were chosen: {share}.",
    ]
    if spread:
        bullets.append(
            f"WEAT ({spread['pair']}) per embedding: d from {spread['min']:.2f} to "
            f"{spread['max']:.2f} (mean {spread['mean']:.2f}, sd between embeddings "
            f"{spread['sd']:.2f}); p < 0.05 in {spread['n_p_below_0.05']} of "
            f"{len(e.weat)} embeddings.")
    rel = e.reliability
    if hasattr(rel, "readings"):  # each number with one sentence on how to read it
        r = rel.readings()
        bullets.append(
            "Reliability (Du, Fang & Nguyen 2021): "
            f"test-retest ICC(2,1) across embeddings {rel.test_retest:.3f}: "
            f"{r['test_retest']}. Inter-rater ICC(3,1) across scoring rules (none, human, "
            f"different) {rel.inter_rater:.3f}: {r['inter_rater']}. Internal consistency "
            f"(Cronbach's alpha across stereotypes) {rel.internal:.3f}: {r['internal']}.")
    else:
        bullets.append(f"Reliability (Du, Fang & Nguyen 2021): not computed ({rel}).")
    if e.factor is not None:
        crossed = e.factor["factor"].nunique() > 1
        for name, f in e.factor[e.factor["contrast"] == "associated - none"].groupby(
                "factor", sort=False):
            levels = f[f["quantity"] == "level"]
            moves = f[f["quantity"] != "level"]
            how = ("each combination's corpora pooled" if " x " in str(name)
                   else "averaged over the other factors' levels" if crossed
                   else "each level's corpora pooled")
            bullets.append(
                f"**By {name}** ({how}; `associated - none`): "
                + "; ".join(f"{r.level} {r.mean:+.3f} ({iv} {r.lower:+.3f} to {r.upper:+.3f})"
                            for r in levels.itertuples())
                + ". " + "; ".join(f"{r.quantity} ({r.level}) {r.mean:+.3f} ({iv} "
                                   f"{r.lower:+.3f} to {r.upper:+.3f}, P(< 0) "
                                   f"{r.prob_below_zero:.2f})" for r in moves.itertuples())
                + ".")
        if e.factor_note:
            bullets.append(f"Note: {e.factor_note}.")
    sec.bullets(bullets)
    if e.factor is not None:
        sec.table(e.factor, f"{ctx.key}_factor",
                  f"Contrasts per level of the factor (several factors: per combination, "
                  f"then each factor averaged over the others), differences from the first "
                  f"level and (numeric levels) the least-squares trend per unit, with {iv}")
    frame = e.to_frame()

    figure = ctx.pool.submit(figure_png, ensemble_figure, frame, iv,
                             _label=f"{ctx.name}: embeddings figure")
    sec.figure_from(partial(_write_bytes, figure), f"{ctx.key}_embeddings",
                    f"Each embedding alone (blue, {e.model} model) and the corpus level (red, "
                    f"embedding_level model): {iv} of the three contrasts with stereotypes")
    sec.table(frame, f"{ctx.key}_embeddings", f"Verdict and contrasts ({iv}) of each embedding "
              "alone, and at the corpus level (last row)")
    sec.table(e.variance, f"{ctx.key}_variance_shares",
              f"Where the variation of a (protected word, embedding) cell mean comes from, per "
              f"connection and contrast: posterior mean shares of the choice of protected "
              f"words (tau^2) and of attribute words (omega^2 / A, and the stereotypes' "
              f"strengths gamma^2 / 4A), the word's own variation between embeddings "
              f"(eta^2), corpus sample (kappa, and the word's and its attributes' deviations "
              f"in that sample: xi, psi, phi) and training run (lambda); `embedding_share` = "
              f"all but the choice of words, with its {iv}. A level this ensemble lacks "
              f"counts 0")
    if len(e.weat):
        sec.table(e.weat, f"{ctx.key}_weat_per_embedding",
                  "WEAT per embedding (two-sided permutation p; no control group)")
    ctx.results["ensemble"] = e.to_dict()


#: Section builders in display order. Add one with ``SECTIONS.insert(i, builder)`` (see the
#: package docstring).
def embedding_metrics_section(ctx: WordListContext) -> None:
    """RND, RNSB, ECT, RIPA, direct/indirect bias, WEAT-ES with intervals and null ranges."""
    from ..comparators.metrics import metrics_section

    if ctx.multi:
        ctx.section.heading("Embedding-bias metrics of other toolkits")
        ctx.section.text("RND, RNSB, ECT, RIPA and Bolukbasi's direct and indirect bias "
                         "describe one embedding's vectors; they are not computed for an "
                         "ensemble of embeddings (WEAT per embedding is in the section on "
                         "the embeddings).")
        return
    metrics_section(ctx)


SECTIONS = [verdict_section, ensemble_section, drivers_section, sensitivity_section,
            bayes_section, comparators_section, embedding_metrics_section, data_section]


# -- helpers ----------------------------------------------------------------------------------

def _write_bytes(job: Job, path) -> None:
    with open(path, "wb") as f:
        f.write(job.result())


def weat_and_null(table: pd.DataFrame, sd_convention: str, n_permutations: int, seed,
                  n_bootstrap: int, ci_prob: float, null_reps: int) -> tuple:
    """WEAT for every pair of classes, and the null distributions of the first pair.

    The null is a frame of ``weat_effect``, ``weat_p`` and ``mac`` per replication, ``None``
    without a pair, or the input error that makes it impossible (returned, not raised).
    """
    from ..comparators.null import NullStudy, neutral_pool, run_null_study

    weats = weat_class_pairs(table, alternative="two-sided", sd=sd_convention,
                             n_permutations=n_permutations, seed=seed, bootstrap=n_bootstrap,
                             ci_prob=ci_prob)
    if not weats:
        return weats, None
    sizes = weats[0][1].sizes
    try:
        study = NullStudy(null="resample", targets=(sizes["X"], sizes["Y"]),
                          attributes=(sizes["A"], sizes["B"]), reps=null_reps, seed=seed,
                          statistics=("weat_effect", "weat_p", "mac"), pool=neutral_pool(table),
                          alternative="two-sided", sd_convention=sd_convention,
                          n_permutations=999)
        return weats, run_null_study(study)
    except (InputDataError, DistanceTableError) as exc:
        return weats, exc


def _wants_robustness(settings) -> bool:
    return bool(getattr(settings, "robustness", False) or getattr(settings, "sensitivity",
                                                                  False))


#: Scale draws per refit of the report's robustness line, whose HDI ends and P(< 0) come
#: from the Rao-Blackwellised Normal mixture over them (``sensitivity(...,
#: estimator="mixture")``; ``sensitivity``'s own default is the sample HDI of 4,000 draws).
#: Checked on the shipped lists with the same resampled lists against the mixture of 1,000
#: draws and the sample HDI of 4,000 (``benchmarks/robustness_draws_agreement.py``,
#: docs/validation.md).
ROBUSTNESS_DRAWS = 250


def robustness(table: pd.DataFrame, model: str, ci_prob: float, seed, screen: bool = False,
               **fit_kwargs):
    """Exact leave-one-out and resampled-list refits of `table`, or why they do not apply.

    Returns a ``Sensitivity``, or the reason as a str when `model` has no exact refits. A
    table of several embeddings gets the corpus-level verdict refitted with each embedding
    left out (:func:`~bayesbias.ensemble.leave_one_embedding_out`, sampler `fit_kwargs`).
    With `screen` (the robustness line alone, no ``--sensitivity`` tables) only the refits a
    cheap screen puts near a verdict threshold are made exactly (``sensitivity(...,
    screen=True)``): the line is the same, the numbers of the other refits approximate.
    """
    from ..studies.sensitivity import check_model, sensitivity
    from ..verdicts.ensemble import leave_one_embedding_out, n_embeddings

    if n_embeddings(table) >= 2:
        try:
            return leave_one_embedding_out(table, ci_prob=ci_prob, seed=seed, **fit_kwargs)
        except InputDataError as exc:
            return str(exc)

    try:
        spec = check_model(load_spec(model))
    except ModelSpecError as exc:
        return str(exc)
    try:
        return sensitivity(table, spec, ci_prob=ci_prob, seed=seed,
                           n_draws=ROBUSTNESS_DRAWS, estimator="mixture", screen=screen)
    except InputDataError as exc:
        return str(exc)


def robustness_line(sens) -> str:
    """Return the verdict box's robustness line.

    How often each verdict contrast holds over resampled word lists, and which left-out
    words flip one.
    """
    from ..studies.design import VERDICTS

    if sens is None:
        return ""
    if isinstance(sens, str):
        return f"Robustness: not computed ({sens})."
    if hasattr(sens, "sentence"):  # many embeddings: each left out in turn
        return sens.sentence()
    share = sens.resampled.set_index("contrast")["share_holds"]
    base = sens.baseline.set_index("contrast")["holds"]
    parts = [f"`{c}` {'below 0' if base[c] else 'not below 0'} here, below 0 in "
             f"{share[c]:.0%} of the lists" for c in VERDICTS]
    lo = sens.leave_one_out
    flips = lo.loc[lo["contrast"].isin(VERDICTS) & lo["flips"]]
    if flips.empty:
        flip = "no single left-out word flips a verdict contrast"
    else:
        by = []
        for c, words in flips.groupby("contrast", sort=False)["word"]:
            words = list(words)
            by.append(", ".join(f"`{w}`" for w in words[:4])
                      + (f" (or {len(words) - 4} other words)" if len(words) > 4 else "")
                      + f" flips `{c}`")
        flip = "leaving out " + "; ".join(by)
    n = sens.settings.get("n_resamples")
    iv = f"{sens.settings.get('ci_prob', 0.89):.0%} HDI"
    how = ("exact refits" if not str(sens.settings.get("method", "")).startswith("crossed")
           else "refits of the crossed model's hierarchical part with the attribute-word "
                "effects plugged in")
    if sens.settings.get("screen"):
        how += ", made exactly where a screen puts a contrast near 0"
    return (f"Robustness over {n} word lists resampled within each class ({iv} wholly below "
            f"0; {how}): " + "; ".join(parts) + f"; {flip}.")


def _robustness_job(ctx: WordListContext) -> tuple:
    s = ctx.settings
    # the sampler settings of the report's fits (used by the refits of an ensemble's fit)
    sampler = {k: getattr(s, k) for k in ("draws", "tune", "chains", "sampler", "target_accept")}
    # --sensitivity shows every refit's numbers: exact; the line alone reads only verdicts
    screen = not getattr(s, "sensitivity", False)
    return (partial(robustness, screen=screen, **sampler), (ctx.table, s.model, s.ci_prob,
                                                           s.seed), False)


def _comparators_job(ctx: WordListContext) -> tuple:
    s = ctx.settings
    return weat_and_null, (ctx.table, s.sd_convention, s.n_permutations, s.seed,
                           s.n_bootstrap, s.ci_prob, s.null_reps), False


def _metrics_job(ctx: WordListContext) -> tuple:
    from ..comparators.metrics import report_metrics

    s = ctx.settings
    # an encoder (not a file name) is costly to send to a worker: its metrics run here
    return report_metrics, (s, ctx.name), not isinstance(s.embedding, (str, type(None)))


#: The jobs of :meth:`WordListContext.start`: name -> (function, arguments, run here?),
#: longest first: the report queues each for every word list in turn, so that the workers
#: (oldest first) start the robustness refits while this process fits the models, and this
#: process, waiting, takes the short jobs left (newest first).
_JOBS = {"robustness": _robustness_job, "comparators": _comparators_job,
         "embedding_metrics": _metrics_job}
#: The names of :data:`_JOBS`, in their order.
JOB_NAMES = tuple(_JOBS)
#: What each job computes, in the progress lines shown while waiting for it.
JOB_LABELS = {"robustness": "robustness refits",
              "comparators": "WEAT permutation tests, bootstrap and null distribution",
              "embedding_metrics": "embedding-bias metrics"}


def _null_figure(null, observed: dict, title: str):
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    width, height = 9.0, 3.5
    fig = new_figure(figsize=(width, height))
    panels = [("weat_effect", "WEAT effect size d", ".2f"),
              ("mac", "MAC (mean cosine distance)", ".3f")]
    hists = []
    for name, _, _ in panels:
        values = null[name].values
        hists.append(np.histogram(values[np.isfinite(values)], bins=50))
    # margins in inches from the widest count label (measured once), not a layout engine
    ticks = label_width(fig, [f"{max(int(c.max()) for c, _ in hists):,}0"], 10)
    left, gap = ticks + 0.45, ticks + 0.7
    axes = fig.subplots(1, 2, gridspec_kw={
        "left": left / width, "right": 1 - 0.12 / width, "bottom": 0.55 / height,
        "top": 1 - 0.62 / height, "wspace": gap / ((width - left - gap - 0.12) / 2)})
    for ax, (name, label, fmt), (counts, edges) in zip(axes, panels, hists, strict=True):
        # the bars as one filled outline with white gaps between them: a histogram of
        # 50 bars at a fraction of the cost of 50 patches
        ax.stairs(counts, edges, fill=True, color="#9ab")
        ax.vlines(edges[1:-1], 0, np.maximum(counts[:-1], counts[1:]), colors="white", lw=1)
        ax.axvline(observed[name], color="#c33", lw=2,
                   label=f"observed {format(observed[name], fmt)}")
        ax.set_xlabel(label)
        ax.set_ylabel("null replications")
        # above the panel, not over the bars
        ax.legend(frameon=False, loc="lower right", bbox_to_anchor=(1, 1), borderaxespad=0.1,
                  fontsize=9)
    fig.suptitle(title, fontsize=10, y=1 - 0.08 / height, va="top")
    fig.set_layout_engine(PlaceHolderLayoutEngine(adjust_compatible=True,
                                                  colorbar_gridspec=True))
    return fig
