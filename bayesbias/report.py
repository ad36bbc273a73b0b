"""The main job: one report from an embedding (or distance tables) and word lists.

For each word list: the distance table, raw connection means, WEAT for every pair of
classes (permutation p, bootstrap interval), MAC, both set against a null distribution from
resampled neutral-word similarities of the same table, and the Bayesian hierarchical fit
(group means, contrasts, per-word means, posterior predictive check, forest plot, netCDF).
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .config import defaults, validate_ci_prob
from .datasets import read_table
from .distances import distance_table
from .embeddings import load_embedding
from .errors import DistanceTableError, InputDataError
from .progress import progress
from .reporting import Report, check_replaceable
from .wordlists import load_wordlist

__all__ = ["ReportSettings", "run_report", "DEFAULT_WORDLISTS"]

log = logging.getLogger(__name__)

DEFAULT_WORDLISTS = ("religion", "race", "gender")


@dataclass
class ReportSettings:
    """Every choice that affects a number in the report."""

    embedding: str | None = "default"
    wordlists: tuple[str, ...] = DEFAULT_WORDLISTS
    distances: tuple[str, ...] = ()
    output: str = "bayesbias-report"
    on_missing: str = "drop"
    format: str = "auto"
    trust_pickle: bool = False
    model: str = "hierarchical"
    ci_prob: float = field(default_factory=lambda: defaults.ci_prob)
    ci_kind: str = field(default_factory=lambda: defaults.ci_kind)
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int = field(default_factory=lambda: defaults.seed)
    n_permutations: int = 100_000
    n_bootstrap: int = 2000
    null_reps: int = 5000
    sd_convention: str = "sample"
    strict: bool = False

    def __post_init__(self):
        self.ci_prob = validate_ci_prob(self.ci_prob)
        if self.ci_kind not in ("hdi", "eti"):
            raise ValueError(f"ci_kind must be 'hdi' or 'eti', got {self.ci_kind!r}")


def _tables(settings: ReportSettings) -> list[tuple[str, pd.DataFrame]]:
    if settings.distances:
        out = []
        for spec in settings.distances:
            progress.info(f"reading distance table {spec}")
            name = ("_".join(spec.split(":")[1:]) if spec.startswith("published:")
                    else Path(spec).name.split(".")[0])
            while name in {n for n, _ in out}:
                name += "_2"
            out.append((name, read_table(spec)))
        return out
    lists = [load_wordlist(w) for w in settings.wordlists]
    words = list(dict.fromkeys(w for wl in lists for w in wl.all_words))
    progress.info(f"reading {len(words)} words from embedding {settings.embedding}")
    emb = load_embedding(settings.embedding, words, format=settings.format,
                         trust_pickle=settings.trust_pickle)
    out = []
    for wl in lists:
        table = distance_table(emb, wl, on_missing=settings.on_missing)
        out.append((wl.name, table))
    return out


def _connection_means(table: pd.DataFrame) -> pd.DataFrame:
    g = table.groupby("connection", observed=True)["cosine_distance"]
    return g.agg(rows="count", mean="mean", sd="std").reset_index()


def _weat_rows(table: pd.DataFrame, settings: ReportSettings):
    from .comparators.weat import weat_class_pairs

    return weat_class_pairs(table, alternative="two-sided", sd=settings.sd_convention,
                            n_permutations=settings.n_permutations, seed=settings.seed,
                            bootstrap=settings.n_bootstrap, ci_prob=settings.ci_prob)


def _null(table: pd.DataFrame, pair_result, settings: ReportSettings):
    from .simulate import NullStudy, neutral_pool, run_null_study

    sizes = pair_result.sizes
    study = NullStudy(null="resample", targets=(sizes["X"], sizes["Y"]),
                      attributes=(sizes["A"], sizes["B"]), reps=settings.null_reps,
                      seed=settings.seed, statistics=("weat_effect", "weat_p", "mac"),
                      pool=neutral_pool(table), alternative="two-sided",
                      sd_convention=settings.sd_convention, n_permutations=999)
    return run_null_study(study)


def _null_figure(null, observed: dict, title: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, (name, label) in zip(axes, [("weat_effect", "WEAT effect size d"),
                                        ("mac", "MAC (mean cosine distance)")], strict=True):
        values = null[name].values
        ax.hist(values[np.isfinite(values)], bins=50, color="#9ab", edgecolor="white")
        ax.axvline(observed[name], color="#c33", lw=2, label="observed")
        ax.set_xlabel(label)
        ax.set_ylabel("null replications")
        ax.legend(frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def run_report(settings: ReportSettings | None = None) -> dict:
    """Run the whole analysis and write the report folder; return the results as data."""
    from .comparators.mac import mac_from_table
    from .models import SamplerWarning, fit_model

    settings = settings or ReportSettings()
    t0 = time.perf_counter()
    out_dir = Path(settings.output)
    check_replaceable(out_dir)  # fail before the work, not after
    report = Report(
        "bayesbias report",
        "Bias of protected words towards their stereotypes, measured on cosine distances, "
        "with the uncertainty shown: Bayesian intervals from a hierarchical model with control "
        "groups (Dobrzeniecka & Urbaniak 2024) next to WEAT (Caliskan et al. 2017) and MAC "
        "(Manzini et al. 2019). Distance = 1 - cosine similarity: a smaller distance means "
        "closer. A negative `associated - none` contrast means stereotypes are closer to "
        "their protected words than neutral words are.",
    )
    kind_label = {"hdi": "highest-density interval (HDI)",
                  "eti": "equal-tailed (percentile) interval"}[settings.ci_kind]
    report.choice("source", ", ".join(settings.distances) if settings.distances
                  else f"embedding `{settings.embedding}`, word lists "
                       f"{', '.join(settings.wordlists)}")
    report.choice("interval", f"{settings.ci_prob:.0%} {kind_label} (ci_prob={settings.ci_prob},"
                              f" ci_kind={settings.ci_kind})")
    report.choice("model", f"{settings.model}; {settings.chains} chains x {settings.draws} draws "
                           f"after {settings.tune} tuning steps; seed {settings.seed}")
    report.choice("WEAT", f"effect size with the {settings.sd_convention} sd "
                          f"({'n - 1' if settings.sd_convention == 'sample' else 'n'}); "
                          f"two-sided permutation test, exact if at most "
                          f"{defaults.exact_permutation_limit:,} splits else "
                          f"{settings.n_permutations:,} Monte Carlo splits (seed {settings.seed}); "
                          f"{settings.ci_prob:.0%} equal-tailed percentile bootstrap interval "
                          f"over words ({settings.n_bootstrap} resamples)")
    report.choice("null distributions", f"{settings.null_reps} replications resampling real "
                                        "neutral-word similarities of the same table")
    report.choice("missing words", f"on_missing={settings.on_missing}")
    results: dict = {"settings": settings.__dict__.copy(), "wordlists": {}}
    tables = _tables(settings)
    fits_dir = {}
    overview = []
    for name, table in tables:
        res: dict = {}
        sec = report.section(f"{name}")
        missing = table.attrs.get("missing", {})
        sec.text(f"{len(table)} distance rows: {table.protected_word.nunique()} protected words x "
                 f"{table.attribute.nunique()} attributes."
                 + (" Dropped (not in the embedding): " + "; ".join(
                     f"{k}: {', '.join(v)}" for k, v in missing.items()) + "."
                    if missing else " No word was missing.")
                 + (f" {table.attrs['repeats_dropped']} repeated pairs were kept once."
                    if table.attrs.get("repeats_dropped") else ""))
        raw = _connection_means(table)
        sec.table(raw, f"{name}_raw_means", "Raw mean cosine distance per connection "
                  "(descriptive; no uncertainty)")
        res["raw_means"] = raw

        progress.info(f"{name}: WEAT permutation tests and bootstrap")
        weats = _weat_rows(table, settings)
        weat_df = pd.DataFrame([{
            "X": x, "Y": y, "effect_size": r.effect_size,
            "ci_lower": r.ci[0] if r.ci else np.nan, "ci_upper": r.ci[1] if r.ci else np.nan,
            "p_value": r.p_value, "permutation": r.permutation, "n_permutations": r.n_permutations,
        } for (x, y), r in weats])
        if weats:
            sec.table(weat_df, f"{name}_weat", f"WEAT per pair of classes (X targets with their "
                      f"stereotypes A vs Y with B); {settings.ci_prob:.0%} equal-tailed "
                      "percentile bootstrap interval of d")
        else:
            sec.text("WEAT and its null distribution need two protected classes with "
                     "stereotypes; this table has fewer, so they are skipped.")
        res["weat"] = weat_df
        mac = mac_from_table(table)
        res["mac"] = mac.mac
        sec.text(f"MAC (Manzini et al.: mean cosine distance of the protected words to each "
                 f"stereotype class, averaged) = {mac.mac:.3f}. MAC has no reference point of its "
                 f"own; compare it with the null distribution below and with the neutral-word "
                 f"means above.")

        progress.info(f"{name}: null distribution ({settings.null_reps} replications)")
        (x, y), first = weats[0] if weats else ((None, None), None)
        try:
            null = _null(table, first, settings) if first is not None else None
        except (InputDataError, DistanceTableError) as exc:
            null = None
            sec.text(f"No null distribution for this table: {exc}.")
            res["null"] = {"skipped": str(exc)}
        if null is not None:
            pair_table = table.loc[table["protected_class"].isin([x, y])
                                   & table["attribute_class"].isin([x, y])]
            observed = {"weat_effect": first.effect_size, "mac": mac_from_table(pair_table).mac}
            q = {k: np.nanquantile(null[k].values, [0.025, 0.975]) for k in observed}
            share = float(np.mean(np.abs(null["weat_effect"].values) >= abs(first.effect_size)))
            sec.figure(_null_figure(null, observed, f"{name}: {x} vs {y}, null from resampled "
                                                    "neutral-word similarities"),
                       f"{name}_null", f"Null distributions of WEAT d and MAC for {x} vs {y} "
                       f"(same list sizes) with the observed values (red). {share:.1%} of null "
                       f"replications have |d| at least the observed "
                       f"{abs(first.effect_size):.2f}; 95% of null MAC values lie in "
                       f"[{q['mac'][0]:.3f}, {q['mac'][1]:.3f}].")
            res["null"] = {"pair": [x, y], "share_abs_d_at_least_observed": share,
                           "mac_95": q["mac"].tolist(), "weat_95": q["weat_effect"].tolist()}

        progress.info(f"{name}: fitting the {settings.model} model "
                            f"({settings.chains} chains x {settings.draws} draws)")
        with warnings.catch_warnings():  # failed diagnostics are logged and shown in the report
            warnings.simplefilter("ignore", SamplerWarning)
            fit = fit_model(table, settings.model, draws=settings.draws, tune=settings.tune,
                            chains=settings.chains, seed=settings.seed, strict=settings.strict)
        diag = fit.diagnostics()
        gm = fit.group_means(settings.ci_prob, settings.ci_kind)
        con = fit.contrasts(settings.ci_prob, settings.ci_kind)
        ppc = fit.ppc(seed=settings.seed)
        sec.table(gm, f"{name}_group_means", f"Posterior group-level mean distance per "
                  f"connection, {settings.ci_prob:.0%} {settings.ci_kind.upper()}")
        sec.table(con, f"{name}_contrasts", "Contrasts between connections: an interval that "
                  "excludes zero is a difference the data support")
        fits_dir[name] = fit
        sec.figure_from(
            lambda path, fit=fit: fit.plot_forest(path, settings.ci_prob, settings.ci_kind),
            f"{name}_forest", f"Forest plot: {settings.ci_prob:.0%} {settings.ci_kind.upper()} "
            "of the mean distance per protected word and connection, and of the group-level "
            "means")
        sec.table(ppc, f"{name}_ppc", "Posterior predictive check: share of observed distances "
                  "inside the 89% and 50% predictive HDIs (ideally about 0.89 and 0.5)")
        d = diag.to_dict()
        sec.text(f"Sampler diagnostics ({fit.idata.attrs.get('sampler')}): "
                 f"{'all checks passed' if diag.ok else '; '.join(diag.problems)} "
                 f"(max r-hat {d['max_rhat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}, "
                 f"min tail ESS {d['min_ess_tail']:.0f}, {diag.divergences} divergences). "
                 f"Posterior saved as `fits/{name}.nc`.")
        res.update(group_means=gm, contrasts=con, ppc=ppc, diagnostics=diag.to_dict())
        key = con.set_index("contrast")
        an = key.loc["associated - none"]
        overview.append({
            "word list": name,
            "associated - none": an["mean"], "lower": an["lower"], "upper": an["upper"],
            "excludes zero": bool(an["excludes_zero"]),
            "associated - different": key.loc["associated - different", "mean"],
            "human - none": key.loc["human - none", "mean"],
            "WEAT pair": f"{x} vs {y}" if first else "",
            "WEAT d": first.effect_size if first else np.nan,
            "WEAT p": first.p_value if first else np.nan,
            "MAC": mac.mac,
        })
        results["wordlists"][name] = res
    over = pd.DataFrame(overview)
    s = report.section("Overview", first=True)
    s.text("One row per word list. The Bayesian contrast `associated - none` (with its "
           f"{settings.ci_prob:.0%} {settings.ci_kind.upper()}) asks whether stereotypes are "
           "closer to their protected words than neutral words; `human - none` shows how much "
           "closer any human attribute is (the control the paper argues for). WEAT and MAC are "
           "the frequentist comparators.")
    s.table(over, "overview", "Overview")
    results["overview"] = over
    results["elapsed_s"] = round(time.perf_counter() - t0, 1)
    report.data = json.loads(json.dumps(_jsonable(results), default=str))

    def write_fits(folder: Path):
        folder.mkdir()
        for n, f in fits_dir.items():
            f.save(folder / f"{n}.nc")

    progress.info(f"writing report to {out_dir}")
    report.write(out_dir, extra_files={"fits": write_fits})
    results["output"] = str(out_dir)
    log.info("report done in %.0f s", results["elapsed_s"])
    return results


def _jsonable(obj):
    from .cli._common import to_jsonable

    return to_jsonable(obj)
