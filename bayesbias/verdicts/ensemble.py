"""Many embeddings: each one's verdict beside the corpus-level verdict, and what varies.

The table of many embeddings (one block of rows per embedding: columns ``embedding`` and
``corpus_sample``) is made by :mod:`bayesbias.inputs.ensemble` and checked by
:mod:`bayesbias.inputs.distances`; its simulator is
:func:`bayesbias.testing.simulate_ensemble_table`. Here: per-embedding verdicts, variance
shares, factor contrasts, WEAT per embedding, the leave-one-embedding-out sensitivity and
:class:`EnsembleSummary`, what the user reads. The table's names are importable from here
too (kept for one release: this module was ``bayesbias.ensemble``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..comparators.weat import weat_class_pairs
from ..config import CONNECTIONS, defaults
from ..errors import InputDataError
from ..inputs.distances import ENSEMBLE_COLUMNS, n_embeddings, single_embedding
from ..inputs.ensemble import ensemble_table, manifest_path, manifest_table
from ..intervals import posterior_interval
from ..models.embedding_level import BOOTSTRAP_PREFIX, has_strength, structure
from ..models.families import family
from ..models.plots import _save, forest_axes, new_figure
from ..plain import to_plain
from . import class_contrast_clause, contrast_evidence, verdict_from_fit
from .reliability import ensemble_reliability

__all__ = ["ensemble_table", "manifest_table", "manifest_path", "single_embedding",
           "per_embedding_verdicts", "weat_per_embedding",
           "variance_shares", "summarize_ensemble", "EnsembleSummary", "factor_contrasts",
           "n_embeddings", "ensemble_kind", "ensemble_caveat", "ENSEMBLE_COLUMNS",
           "ENSEMBLE_CONTRASTS", "leave_one_embedding_out", "EmbeddingRobustness",
           "class_clause", "CLASS_CONTRAST"]

log = logging.getLogger(__name__)


def __getattr__(name: str):
    # kept for one release: the simulator moved to bayesbias.testing (imported on first use:
    # the testing module is not needed to read a fit)
    if name == "simulate_ensemble_table":
        from ..testing import simulate_ensemble_table

        return simulate_ensemble_table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _class_contrast_flag(verdict) -> str:
    """Return "closer", "further" or "": the case of the class-contrast clause for `verdict`."""
    try:
        clause = class_contrast_clause(verdict.code, verdict[CLASS_CONTRAST])
    except (KeyError, IndexError):
        return ""
    return "" if not clause else ("closer" if "closer" in clause else "further")


def per_embedding_verdicts(table: pd.DataFrame, model: str = "crossed", ci_prob=None,
                           ci_kind=None, rope=None, **fit_kwargs) -> pd.DataFrame:
    """Return the verdict each embedding of a multi-embedding table would give on its own.

    Fits `model` (default ``crossed``) to each embedding's rows, with more draws only where
    they can move a deciding interval end, as every verdict
    (:func:`~bayesbias.verdicts.fit_for_verdict`); returns one row per
    embedding with ``corpus_sample``, the verdict ``code`` and the contrasts of
    :data:`ENSEMBLE_CONTRASTS` (mean, lower, upper). Set beside the
    embedding-level verdict, it says how many single embeddings would have said otherwise.
    """
    import warnings

    from .precision import fit_for_verdict

    if "embedding" not in table.columns:
        raise InputDataError("the table has no embedding column")
    rows = []
    for label, part in table.groupby("embedding", sort=False):
        one = part.drop(columns=[c for c in ENSEMBLE_COLUMNS if c in part.columns])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_for_verdict(one.reset_index(drop=True), model, ci_prob=ci_prob,
                                  ci_kind=ci_kind, rope=rope, **fit_kwargs)
        v = verdict_from_fit(fit, str(label), ci_prob, ci_kind, rope)
        c = fit.contrasts(ci_prob, ci_kind).set_index("contrast")
        row = {"embedding": label, "corpus_sample": part["corpus_sample"].iloc[0]
               if "corpus_sample" in part else "original", "verdict": v.code,
               "class_contrast": _class_contrast_flag(v)}
        for name in ENSEMBLE_CONTRASTS:
            for k in ("mean", "lower", "upper"):
                row[f"{name} {k}"] = float(c.loc[name, k])
        rows.append(row)
    return pd.DataFrame(rows)


# -- what the user reads: the ensemble beside the corpus-level verdict -----------------------

#: The contrasts shown per embedding and in the figure (the verdict's first three).
ENSEMBLE_CONTRASTS = ("associated - none", "associated - human", "associated - different")


def ensemble_kind(table: pd.DataFrame) -> str:
    """``"bootstrap"``, ``"seeds"``, ``"corpora"`` or ``"mixed"``: what the embeddings vary."""
    samples = {str(x) for x in table["corpus_sample"].unique()} \
        if "corpus_sample" in table else {"original"}
    boot = [x.rsplit("/", 1)[-1].startswith(BOOTSTRAP_PREFIX) for x in samples]
    if all(boot):
        return "bootstrap"
    if any(boot):
        return "mixed"
    return "seeds" if len(samples) == 1 else "corpora"


#: Independent corpora from which the corpus-level intervals were near calibrated in
#: simulation (``--corpora 8``: 92-99% coverage of 90% intervals; 4 corpora: 97.5-100%).
CALIBRATED_CORPORA = 8


def ensemble_caveat(table: pd.DataFrame) -> str:
    """Say what the corpus-level intervals of `table`'s ensemble cannot separate ("": nothing).

    Bootstrap resamples trained once each: a resample's shift mixes its documents with its
    training run, and the model counts the whole shift as corpus-sampling noise (the
    observed corpus is one more draw), so the corpus-level intervals are conservative.
    Fewer than :data:`CALIBRATED_CORPORA` independent corpora: the spread between corpora
    rests on few degrees of freedom and leans on its prior, so the intervals are wider than
    calibrated ones (measured in ``benchmarks/results/corpus_coverage.txt``).
    """
    kind = ensemble_kind(table)
    if kind == "corpora" and "corpus_sample" in table:
        r = table["corpus_sample"].nunique()
        if r >= CALIBRATED_CORPORA:
            return ""
        dof = f"{r - 1} degree{'s' if r > 2 else ''} of freedom"
        return (f"with {r} independent corpora the spread between corpora rests on {dof} "
                "and leans on its prior (kappa), so the corpus-level "
                "intervals are conservative: on synthetic corpora whose stereotypes share one "
                "strength, 90% intervals covered the truth in 97.5-100% of replications with 4 "
                "corpora and 92-99% with 8 (86-91% with 8 when each stereotype has its own "
                "strength); add corpora for narrower, calibrated intervals")
    if kind != "bootstrap" or "embedding" not in table:
        return ""
    runs = table.groupby("corpus_sample", sort=False)["embedding"].nunique()
    if (runs >= 2).any():
        return ""
    return ("each bootstrap resample was trained once, so training-run noise cannot be told "
            "from corpus-sampling noise and the corpus-level intervals count both as corpus "
            "noise (conservative: wider than needed); train two or more seeds per resample "
            "(bayesbias train --bootstrap B --seeds K --seeds-within) to separate them")


def variance_shares(fit, ci_prob=None, ci_kind=None) -> pd.DataFrame:
    """Share of the variation of (word, embedding) cell means that comes from the embedding.

    From the posterior draws of an ``embedding_level`` fit. Per connection ``c`` the variance
    of one protected word's mean distance in one embedding around the corpus-level mean splits
    into the choice of words: the protected word ``tau[c]^2`` and its ``A`` attribute words
    ``omega^2 / A`` (plus ``gamma^2 / (4 A)``, their strengths as stereotypes, on associated
    and different rows); the word's own variation between embeddings ``eta[c]^2``; the corpus
    sample ``kappa0^2 + kappa[c]^2`` (plus ``xi[c]^2``, the word's deviation shared by a
    sample's runs, and ``psi^2 / A`` and ``phi^2 / (4 A)``, its attributes' deviations in that
    sample); and the training run ``lambda0^2 + lambda[c]^2`` (a level the ensemble lacks
    counts 0). ``A`` is the cell's attribute words (the mean of 1 / A over the connection's
    cells). For a contrast ``a - b`` the parts of ``a`` and ``b`` add, except the shifts
    shared by all connections (``kappa0``, ``lambda0``), which cancel. ``embedding_share`` =
    (word x embedding + corpus sample + training run) / total, with its interval; the other
    columns are posterior means of each part's share.
    """
    ci_prob = defaults.ci_prob if ci_prob is None else ci_prob
    ci_kind = defaults.ci_kind if ci_kind is None else ci_kind

    if not family(fit.spec.family).EMBEDDINGS:
        raise InputDataError(f"variance shares need an embedding_level fit, got "
                             f"{fit.spec.family!r}")
    st = structure(fit.cells)
    post = fit.posterior

    def flat(name):
        return post[name].values.reshape(-1, *post[name].shape[2:])

    n = flat("tau").shape[0]
    zero = np.zeros(n)
    vs_none = list(CONNECTIONS[:3])

    # 1 / A averaged over a connection's nonempty cells (a cell's rows are its attributes)
    cell_rows = fit.cells.n
    inv_attr = {c: float(np.mean(1.0 / cell_rows[cell_rows[:, j] > 0, j]))
                if (cell_rows[:, j] > 0).any()
                else 0.0 for j, c in enumerate(CONNECTIONS)}
    strength = has_strength(fit.spec) and "gamma" in post

    def parts(c: str, shared: bool) -> dict:
        j = CONNECTIONS.index(c)
        stereo = 0.25 * inv_attr[c] if strength and c in ("associated", "different") else 0.0
        out = {"word choice": flat("tau")[:, j] ** 2,
               "attribute choice": flat("omega") ** 2 * inv_attr[c]
               + (flat("gamma") ** 2 * stereo if stereo else zero),
               "word x embedding": flat("eta")[:, j] ** 2}
        for key, lev, s0, s in (("corpus sample", "sample_level", "kappa0", "kappa"),
                                ("training run", "run_level", "lambda0", "lambda")):
            if not st[lev]:
                out[key] = zero
                continue
            v = flat(s)[:, vs_none.index(c)] ** 2 if c in vs_none else zero
            out[key] = v + (flat(s0) ** 2 if shared else zero)
        if st["word_sample_level"] and "xi" in post:
            out["corpus sample"] = out["corpus sample"] + flat("xi")[:, j] ** 2
        if st["attribute_sample_level"] and "psi" in post:
            out["corpus sample"] = out["corpus sample"] + flat("psi") ** 2 * inv_attr[c]
            if stereo and "phi" in post:
                out["corpus sample"] = out["corpus sample"] + flat("phi") ** 2 * stereo
        return out

    rows = []
    quantities = [(c, parts(c, True)) for c in CONNECTIONS]
    for con in ENSEMBLE_CONTRASTS:
        a, b = con.split(" - ")
        pa, pb = parts(a, False), parts(b, False)
        quantities.append((con, {k: pa[k] + pb[k] for k in pa}))
    for name, p in quantities:
        total = sum(p.values())
        share = (total - p["word choice"] - p["attribute choice"]) / total
        lo, hi = posterior_interval(share, ci_prob, ci_kind)
        row = {"quantity": name}
        row.update({k: float(np.mean(v / total)) for k, v in p.items()})
        row.update({"embedding_share": float(np.mean(share)), "lower": float(lo),
                    "upper": float(hi)})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs.update(ci_prob=ci_prob, ci_kind=ci_kind)
    return frame


def weat_per_embedding(table: pd.DataFrame, seed=None, n_permutations: int = 100_000,
                       sd_convention: str = "sample") -> pd.DataFrame:
    """WEAT (two-sided) of the first pair of classes in each embedding of `table`.

    One row per embedding: ``embedding, corpus_sample, X, Y, effect_size, p_value``; empty
    when the table has no pair of classes with stereotypes.
    """
    if "embedding" not in table.columns:
        raise InputDataError("the table has no embedding column")
    rows = []
    for label, part in table.groupby("embedding", sort=False):
        one = part.drop(columns=[c for c in ENSEMBLE_COLUMNS if c in part.columns])
        pairs = weat_class_pairs(one.reset_index(drop=True), alternative="two-sided",
                                 sd=sd_convention, n_permutations=n_permutations, seed=seed)
        if not pairs:
            return pd.DataFrame(columns=["embedding", "corpus_sample", "X", "Y",
                                         "effect_size", "p_value"])
        (x, y), r = pairs[0]
        rows.append({"embedding": label, "corpus_sample": str(part["corpus_sample"].iloc[0])
                     if "corpus_sample" in part else "original", "X": x, "Y": y,
                     "effect_size": float(r.effect_size), "p_value": float(r.p_value)})
    return pd.DataFrame(rows)


def factor_contrasts(fit, ci_prob=None, ci_kind=None) -> pd.DataFrame | None:
    """Return the verdict contrasts per level of the ensemble's factor, and between levels.

    For a fit whose table has ``factor_<name>`` columns (:func:`bayesbias.models.
    embedding_level.cells`): one row per level and contrast (``quantity`` "level"), the
    difference of each later level from the first ("difference from <first>") and, when
    the levels are numbers (decades, years), the least-squares slope of the contrast on the
    level per unit of the level ("trend"), each with its interval and P(< 0). With several
    factors the levels are their combinations (``factor`` "decade x language"), followed by
    the same rows for each factor alone, its levels averaged over the other factors' levels
    (column ``factor`` names it); these need every combination observed, and otherwise the
    frame's ``attrs["note"]`` says why they are missing. None without a factor.
    """
    fac = (fit.cells.sub_cells or {}).get("factor")
    if not fac or "factor_mean" not in fit.posterior:
        return None
    fm = fit.posterior["factor_mean"]
    levels = [str(x) for x in fm["factor_level"].values]
    parts = [(fac["name"], levels, bool(fac.get("numeric")), np.eye(len(levels)))]
    note = None
    if "factors" in fac:
        codes = np.asarray(fac["level_codes"])
        sizes = [len(f["levels"]) for f in fac["factors"]]
        if len(levels) == int(np.prod(sizes)):
            for j, f in enumerate(fac["factors"]):
                # each level of factor j: the mean over the combinations that hold it
                weights = (codes[:, j][None, :] == np.arange(sizes[j])[:, None]).astype(float)
                parts.append((f["name"], [str(x) for x in f["levels"]], bool(f["numeric"]),
                              weights / weights.sum(axis=1, keepdims=True)))
        else:
            note = (f"{len(levels)} of the {int(np.prod(sizes))} combinations of "
                    f"{fac['name']} have corpora, so each factor's levels averaged over the "
                    "others are not given; compare the combinations' levels instead")
    rows, draws = [], []
    for name, labels, numeric, weights in parts:
        for c in ENSEMBLE_CONTRASTS:
            a, b = c.split(" - ")
            d = (fm.sel(connection=a) - fm.sel(connection=b)).transpose("factor_level", ...)
            d = weights @ d.values.reshape(len(levels), -1)
            for i, lev in enumerate(labels):
                rows.append((name, "level", lev, c))
                draws.append(d[i])
            for i in range(1, len(labels)):
                rows.append((name, f"difference from {labels[0]}", labels[i], c))
                draws.append(d[i] - d[0])
            if numeric and len(labels) > 2:
                x = np.asarray(labels, dtype=float)
                w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
                rows.append((name, "trend", f"per unit of {name}", c))
                draws.append(w @ d)
    ev = contrast_evidence(np.stack(draws), ci_prob, ci_kind)
    frame = pd.DataFrame(rows, columns=["factor", "quantity", "level", "contrast"])
    for k in ("mean", "lower", "upper", "prob_below_zero", "status"):
        frame[k] = ev[k]
    frame.attrs.update(ci_prob=ev.get("ci_prob"), factor=fac["name"])
    if note:
        frame.attrs["note"] = note
    return frame


@dataclass
class EnsembleSummary:
    """The corpus-level verdict of many embeddings with what each embedding says alone.

    Attributes
    ----------
    verdict : Verdict
        The control-aware verdict of the ``embedding_level`` fit (corpus level).
    per_embedding : DataFrame
        :func:`per_embedding_verdicts`: one row per embedding.
    variance : DataFrame
        :func:`variance_shares`.
    reliability : Reliability or str
        Du et al.'s ICC(2,1), ICC(3,1) and Cronbach's alpha, or why they were not computed.
    weat : DataFrame
        :func:`weat_per_embedding`.
    kind : str
        :func:`ensemble_kind`.
    model : str
        The model of the single-embedding fits.
    factor : DataFrame or None
        :func:`factor_contrasts`: the contrasts per level of the table's factors and between
        levels (None without a ``factor_*`` column).
    caveat : str
        :func:`ensemble_caveat`: what the corpus-level intervals cannot separate ("" if
        nothing).
    """

    verdict: object
    per_embedding: pd.DataFrame
    variance: pd.DataFrame
    reliability: object
    weat: pd.DataFrame
    kind: str
    model: str = "crossed"
    factor: pd.DataFrame | None = None
    caveat: str = ""

    #: The embeddings' count (set when the single fits were skipped).
    embeddings: int | None = None

    @property
    def single(self) -> bool:
        """Whether each embedding was fitted alone (not skipped with ``single=False``)."""
        return not self.per_embedding.empty

    @property
    def n_embeddings(self) -> int:
        """K, the number of embeddings."""
        return len(self.per_embedding) if self.embeddings is None else int(self.embeddings)

    @property
    def disagree(self) -> int:
        """How many single embeddings give another verdict code than the corpus level."""
        return int((self.per_embedding["verdict"] != self.verdict.code).sum())

    @property
    def factor_note(self) -> str:
        """Why :attr:`factor` lacks each factor's levels averaged over the others, or ""."""
        return "" if self.factor is None else str(self.factor.attrs.get("note", ""))

    def weat_spread(self) -> dict:
        """Between-embedding spread of WEAT's d: mean, sd, min, max and the share p < 0.05."""
        d = self.weat["effect_size"].to_numpy(dtype=float)
        if not d.size:
            return {}
        p = self.weat["p_value"].to_numpy(dtype=float)
        return {"pair": f"{self.weat['X'].iloc[0]} vs {self.weat['Y'].iloc[0]}",
                "mean": float(d.mean()), "sd": float(d.std(ddof=1)) if d.size > 1 else 0.0,
                "min": float(d.min()), "max": float(d.max()),
                "share_p_below_0.05": float(np.mean(p < 0.05)),
                "n_p_below_0.05": int((p < 0.05).sum())}

    def headline(self) -> str:
        """Return one sentence: the corpus-level verdict and what it leaves out.

        A credible class contrast the verdict code does not name
        (:func:`class_clause`), and how many embeddings alone differ.
        """
        k, n = self.disagree, self.n_embeddings
        clause = class_clause(self.verdict)
        singles = (f"{k} of {n} single embeddings would have said otherwise" if self.single
                   else "single embeddings not fitted")
        return (f"corpus level ({n} embeddings, {self.kind}): {self.verdict.label}"
                + clause + f"; {singles}"
                + (" (borderline: an interval end sits on its threshold; not a finding)"
                   if getattr(self.verdict, "borderline", False) else ""))

    def to_frame(self) -> pd.DataFrame:
        """Per-embedding contrasts and verdicts with the corpus-level row last."""
        rows = self.per_embedding.copy()
        rows.insert(0, "level", "single embedding")
        pooled = {"level": "corpus level", "embedding": "corpus level (pooled)",
                  "corpus_sample": "all", "verdict": self.verdict.code}
        for c in ENSEMBLE_CONTRASTS:
            ev = self.verdict[c]
            pooled.update({f"{c} mean": ev.mean, f"{c} lower": ev.lower,
                           f"{c} upper": ev.upper})
        frame = pd.concat([rows, pd.DataFrame([pooled])], ignore_index=True)
        frame.attrs.update(ci_prob=self.verdict.ci_prob, ci_kind=self.verdict.ci_kind)
        return frame

    def to_dict(self) -> dict:
        """Plain JSON data."""
        rel = (self.reliability.to_dict() if hasattr(self.reliability, "to_dict")
               else {"skipped": str(self.reliability)})
        return {"headline": self.headline(), "kind": self.kind,
                "embeddings": self.n_embeddings, "single_model": self.model,
                "corpus_level": self.verdict.to_dict(),
                "disagree": self.disagree, "per_embedding": to_plain(self.per_embedding),
                "variance_shares": to_plain(self.variance), "reliability": to_plain(rel),
                "weat_per_embedding": to_plain(self.weat), "weat_spread": self.weat_spread(),
                "factor": None if self.factor is None else to_plain(self.factor),
                "factor_note": self.factor_note, "caveat": self.caveat}

    def __str__(self) -> str:
        iv = self.verdict.interval_label
        lines = [self.headline()]
        for c in ENSEMBLE_CONTRASTS:
            ev = self.verdict[c]
            lines.append(f"  corpus-level `{c}` {ev.mean:+.3f} ({iv} {ev.lower:+.3f} to "
                         f"{ev.upper:+.3f})")
        if self.caveat:
            lines.append(f"  note: {self.caveat}")
        if self.factor is not None:
            for _, r in self.factor.iterrows():
                if r["contrast"] != "associated - none" and r["quantity"] != "trend":
                    continue
                what = (f"{r['factor']} {r['level']}" if r["quantity"] == "level"
                        else f"{r['factor']} {r['quantity']} ({r['level']})")
                lines.append(f"  {what}: `{r['contrast']}` {r['mean']:+.3f} ({iv} "
                             f"{r['lower']:+.3f} to {r['upper']:+.3f}, P(< 0) "
                             f"{r['prob_below_zero']:.2f})")
            if self.factor_note:
                lines.append(f"  note: {self.factor_note}")
        if self.single:
            counts = self.per_embedding["verdict"].value_counts()
            lines.append(f"  single embeddings ({self.model}): " + "; ".join(
                f"{n} {code}" for code, n in counts.items()))
            if "class_contrast" in self.per_embedding:
                flags = self.per_embedding["class_contrast"]
                other = self.per_embedding["verdict"] != "stereotype-specific"
                k_c = int(((flags == "closer") & other).sum())
                if k_c:
                    lines.append(f"  {k_c} of {len(flags)} single embeddings are not "
                                 f"stereotype-specific but have a credible class contrast "
                                 f"(`{CLASS_CONTRAST}` below 0)")
        else:
            lines.append("  single embeddings: not fitted (--no-single)")
        v = self.variance.set_index("quantity")
        for q in ("associated - none", "associated - different"):
            lines.append(f"  share of `{q}` variation from training/corpus sampling (vs "
                         f"the choice of words): {v.loc[q, 'embedding_share']:.0%} ({iv} "
                         f"{v.loc[q, 'lower']:.0%} to {v.loc[q, 'upper']:.0%})")
        rel = self.reliability
        lines.append("  " + (str(rel).replace("\n", "\n  ") if hasattr(rel, "to_dict")
                             else f"reliability: not computed ({rel})"))
        s = self.weat_spread()
        if s:
            lines.append(f"  WEAT per embedding ({s['pair']}): d mean {s['mean']:.2f}, sd "
                         f"{s['sd']:.2f}, range {s['min']:.2f} to {s['max']:.2f}; p < 0.05 in "
                         f"{s['n_p_below_0.05']} of {len(self.weat)}")
        return "\n".join(lines)

    def plot(self, path=None):
        """Figure: per-embedding intervals of each contrast beside the corpus-level one.

        Returns the figure, or writes it to `path` (.png, .svg, .pdf) and returns the path.
        """
        fig = ensemble_figure(self.to_frame(), self.verdict.interval_label)
        return _save(fig, path) if path is not None else fig


#: The class contrast: a stereotype's distance to its own class's words minus to other
#: classes' words.
CLASS_CONTRAST = "associated - different"


def class_clause(verdict) -> str:
    """Return the headline's clause for a credible class contrast, with its numbers, or "".

    The rule is :func:`bayesbias.verdicts.class_contrast_clause` (the one single-embedding
    verdicts use): when the control-aware code is not "stereotype-specific" but
    ``associated - different`` is credibly below (above) 0, its clause, followed here by the
    contrast's mean and interval.
    """
    try:
        ev = verdict[CLASS_CONTRAST]
    except (KeyError, IndexError):
        return ""
    clause = class_contrast_clause(verdict.code, ev)
    if not clause:
        return ""
    return (f"{clause} (`{CLASS_CONTRAST}` {ev.mean:+.3f}, {verdict.interval_label} "
            f"{ev.lower:+.3f} to {ev.upper:+.3f})")


def ensemble_figure(frame: pd.DataFrame, interval: str):
    """Draw :meth:`EnsembleSummary.to_frame`: one panel per contrast, pooled row in red."""
    n = len(frame)
    fig = new_figure(figsize=(10, 1.2 + 0.22 * n), layout="constrained")
    axes = fig.subplots(1, len(ENSEMBLE_CONTRASTS), sharey=True)
    labels = [str(x) for x in frame["embedding"]]
    colours = ["#c33" if lv == "corpus level" else "#456" for lv in frame["level"]]
    for ax, c in zip(axes, ENSEMBLE_CONTRASTS, strict=True):
        forest_axes(ax, labels, frame[f"{c} mean"], frame[f"{c} lower"], frame[f"{c} upper"],
                    colours=colours, zero=True, title=c, xlabel="difference of mean distance")
    fig.suptitle(f"Each embedding alone (blue) and the corpus level (red), {interval}",
                 fontsize=10)
    return fig


@dataclass
class EmbeddingRobustness:
    """The corpus-level verdict refitted with each embedding left out in turn.

    Attributes
    ----------
    baseline : DataFrame
        The full fit's verdict contrasts: ``contrast``, ``mean``, ``lower``, ``upper``,
        ``holds`` (the interval lies wholly below 0, or below -ROPE).
    left_out : DataFrame
        One row per (left-out embedding, verdict contrast): the refit's ``mean``, ``lower``,
        ``upper``, ``holds``, ``flips`` (``holds`` differs from the baseline) and the refit's
        verdict ``code``.
    settings : dict
        ``model``, ``ci_prob``, ``ci_kind``, ``rope``, ``seed`` and the sampler settings.
    """

    baseline: pd.DataFrame
    left_out: pd.DataFrame
    settings: dict

    @property
    def n_refits(self) -> int:
        """How many embeddings were left out (one refit each)."""
        return int(self.left_out["embedding"].nunique())

    def flips(self) -> pd.DataFrame:
        """Return the rows whose verdict contrast changes when that embedding is left out."""
        return self.left_out.loc[self.left_out["flips"]].reset_index(drop=True)

    def sentence(self) -> str:
        """Return the robustness line: how often each verdict contrast holds, what flips."""
        lo = self.left_out
        base = self.baseline.set_index("contrast")["holds"]
        held = lo.groupby("contrast", sort=False)["holds"].sum()
        n = self.n_refits
        iv = f"{self.settings['ci_prob']:.0%} {self.settings['ci_kind'].upper()}"
        parts = [f"`{c}` {'below 0' if base[c] else 'not below 0'} here, below 0 in "
                 f"{int(held[c])} of {n} refits" for c in ENSEMBLE_CONTRASTS]
        flips = self.flips()
        if flips.empty:
            flip = "no single left-out embedding flips a verdict contrast"
        else:
            flip = "leaving out " + "; ".join(
                ", ".join(f"`{e}`" for e in list(g)[:4])
                + (f" (or {len(g) - 4} other embeddings)" if len(g) > 4 else "")
                + f" flips `{c}`" for c, g in flips.groupby("contrast", sort=False)["embedding"])
        return (f"Robustness over the {n} embeddings left out one at a time ({iv} wholly "
                f"below 0; refits of the {self.settings['model']} model): " + "; ".join(parts)
                + f"; {flip}.")

    def to_frame(self) -> pd.DataFrame:
        """Return the refits, one row per (left-out embedding, contrast)."""
        frame = self.left_out.copy()
        frame.attrs.update(ci_prob=self.settings["ci_prob"], ci_kind=self.settings["ci_kind"])
        return frame

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return {"kind": "leave one embedding out", "refits": self.n_refits,
                "baseline": to_plain(self.baseline), "left_out": to_plain(self.left_out),
                "sentence": self.sentence(), "settings": to_plain(self.settings)}

    def __str__(self) -> str:
        return self.sentence()


def _verdict_rows(fit, ci_prob, ci_kind, rope) -> pd.DataFrame:
    c = fit.contrasts(ci_prob, ci_kind).set_index("contrast")
    bound = -float(rope or 0.0)
    return pd.DataFrame([{"contrast": name, "mean": float(c.loc[name, "mean"]),
                          "lower": float(c.loc[name, "lower"]),
                          "upper": float(c.loc[name, "upper"]),
                          "holds": bool(c.loc[name, "upper"] < bound)}
                         for name in ENSEMBLE_CONTRASTS])


def _canonical_labels(table: pd.DataFrame) -> pd.DataFrame:
    """Rename embeddings and corpus samples by position (``embedding-0``, ``bootstrap-0``, ...).

    Tables of the same shape then share one compiled model (the labels are part of its
    structure, :func:`bayesbias.models.embedding_level.structure_key`), so the K refits of
    :func:`leave_one_embedding_out` compile once instead of K times (a compile of the model
    takes about a minute). A sample keeps what its name says: bootstrap or not, or
    ``original``.
    """
    out = table.reset_index(drop=True).copy()
    names = out["embedding"].astype(str).drop_duplicates().tolist()
    out["embedding"] = out["embedding"].astype(str).map(
        {e: f"embedding-{i}" for i, e in enumerate(names)})
    if "corpus_sample" in out:
        samples = out["corpus_sample"].astype(str).drop_duplicates().tolist()

        def rename(i, x):
            if x == "original":
                return x
            boot = x.rsplit("/", 1)[-1].startswith(BOOTSTRAP_PREFIX)
            return f"{BOOTSTRAP_PREFIX if boot else 'sample'}-{i}"

        out["corpus_sample"] = out["corpus_sample"].astype(str).map(
            {x: rename(i, x) for i, x in enumerate(samples)})
    return out


def leave_one_embedding_out(table: pd.DataFrame, fit=None, *, ci_prob=None, ci_kind=None,
                            rope=None, seed=None, **fit_kwargs) -> EmbeddingRobustness:
    """Refit the ``embedding_level`` model with each embedding of `table` left out in turn.

    Does the corpus-level verdict rest on one embedding (one training seed, one bootstrap
    resample, one corpus)? Each refit has the same settings and seed as `fit` (fitted here
    when not given); a contrast "holds" when its interval lies wholly below 0 (below -`rope`),
    the rule of the verdict. Needs 3 or more embeddings, so that every refit keeps two.
    """
    import warnings

    from ..models import fit_model
    from ..models.summaries import resolve_ci

    k = n_embeddings(table)
    if k < 3:
        raise InputDataError(f"leaving out one embedding needs 3 or more embeddings; the "
                             f"table holds {k}")
    ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
    seed = defaults.seed if seed is None else int(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fit is None:
            fit = fit_model(table, "embedding_level", seed=seed, **fit_kwargs)
        baseline = _verdict_rows(fit, ci_prob, ci_kind, rope)
        holds = baseline.set_index("contrast")["holds"]
        rows = []
        for label in table["embedding"].drop_duplicates():
            part = _canonical_labels(table.loc[table["embedding"] != label])
            part.attrs = dict(table.attrs)
            refit = fit_model(part, "embedding_level", seed=seed, **fit_kwargs)
            code = verdict_from_fit(refit, str(label), ci_prob, ci_kind, rope).code
            for _, r in _verdict_rows(refit, ci_prob, ci_kind, rope).iterrows():
                rows.append({"embedding": label, **r.to_dict(), "code": code,
                             "flips": bool(r["holds"] != holds[r["contrast"]])})
    settings = {"model": "embedding_level", "ci_prob": ci_prob, "ci_kind": ci_kind,
                "rope": rope, "seed": seed, **fit_kwargs}
    return EmbeddingRobustness(baseline, pd.DataFrame(rows), settings)


def summarize_ensemble(table: pd.DataFrame, fit, *, model: str = "crossed", ci_prob=None,
                       ci_kind=None, rope=None, seed=None, n_permutations: int = 100_000,
                       sd_convention: str = "sample", single: bool = True,
                       **fit_kwargs) -> EnsembleSummary:
    """Put the corpus-level verdict of `fit` beside what each embedding of `table` says alone.

    Parameters
    ----------
    table : DataFrame
        A multi-embedding distance table (``embedding`` column, 2 or more embeddings).
    fit : Fit
        The ``embedding_level`` fit of `table`.
    model : str
        The model fitted to each embedding alone (default ``crossed``).
    single : bool
        Fit each embedding alone too (default); ``False`` skips those K fits (``fit
        --no-single``): the summary then has no per-embedding verdicts.
    fit_kwargs
        Sampler settings of the single-embedding fits (draws, tune, chains, sampler, ...).
    """
    if n_embeddings(table) < 2:
        raise InputDataError("the table holds one embedding: nothing to compare")
    verdict = verdict_from_fit(fit, str(table.attrs.get("source", "")), ci_prob, ci_kind, rope)
    if single:
        per = per_embedding_verdicts(table, model, ci_prob, ci_kind, rope=rope, seed=seed,
                                     **fit_kwargs)
    else:
        per = pd.DataFrame(columns=["embedding", "corpus_sample", "verdict", "class_contrast",
                                    *[f"{c} {k}" for c in ENSEMBLE_CONTRASTS
                                      for k in ("mean", "lower", "upper")]])
    try:
        rel = ensemble_reliability(table)
    except InputDataError as exc:
        rel = str(exc)
    weat = weat_per_embedding(table, seed, n_permutations, sd_convention)
    return EnsembleSummary(verdict=verdict, per_embedding=per,
                           variance=variance_shares(fit, ci_prob, ci_kind), reliability=rel,
                           weat=weat, kind=ensemble_kind(table), model=str(model),
                           factor=factor_contrasts(fit, ci_prob, ci_kind),
                           caveat=ensemble_caveat(table), embeddings=n_embeddings(table))
