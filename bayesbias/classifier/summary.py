"""One call for several classifier bias metrics: a tidy table plus the detailed results."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..config import validate_ci_prob
from ..display import card
from ..errors import InputDataError, InvalidArgumentError
from ..plain import to_plain
from .auc import AUC_METRICS, nuanced_auc_metrics
from .bernstein import CRITERIA, bbu_by_group
from .data import ClassifierData, validate_classifier_data
from .generalized import METRICS, FairnessResult, compute_metric

__all__ = ["ClassifierBias", "classifier_bias", "classifier_bias_from_arrays", "TIDY_COLUMNS",
           "METRIC_CHOICES", "CI_KINDS"]

log = logging.getLogger(__name__)

#: Columns of the tidy table, in order.
TIDY_COLUMNS = ["metric", "model", "level", "group", "value", "lower", "upper", "ci_prob",
                "ci_kind", "n", "note"]
#: Interval kinds (``ci_kind`` codes) of the classifier metrics.
CI_KINDS = {"delong": "DeLong variance, normal approximation (nuanced AUCs)",
            "bernstein": "Bernstein bound (Ethayarajh 2020)",
            "hdi": "highest-density interval of a Beta-Binomial posterior",
            "bootstrap": "percentile bootstrap"}
#: Accepted metric names: ``bbu``, ``auc`` and the generalized-metric registry.
METRIC_CHOICES = ("bbu", "auc", *METRICS)


@dataclass
class ClassifierBias:
    """Results of :func:`classifier_bias`.

    Attributes
    ----------
    table : DataFrame
        Tidy: one row per metric, group (or aggregate / pair) and interval kind, with
        columns :data:`TIDY_COLUMNS`. ``ci_kind`` is a code of :data:`CI_KINDS`
        (delong, bernstein, hdi, bootstrap).
    auc : DataFrame or None
        :func:`~bayesbias.classifier.auc.nuanced_auc_metrics` output.
    bbu : DataFrame or None
        :func:`~bayesbias.classifier.bernstein.bbu_by_group` output.
    generalized : dict of {str: FairnessResult}
        Registry metrics by name.
    ci_prob : float
        Probability of every interval.
    model : str
        Name of the score / prediction column.
    settings : dict
        What was computed on what: ``n`` (rows), ``groups`` (rows per group), ``threshold``,
        ``metrics``, ``criterion``, ``cf_average``, ``n_boot``, ``seed``; the command line
        adds ``data``, ``reading`` and ``output``.

    Every metric has the same shape in :attr:`table` (fairlearn's MetricFrame): an overall
    value where the metric has one (level ``aggregate``), one row per group, the
    difference between groups (level ``difference``, for scalar per-group scores), and the
    interval of each (lower, upper, ci_prob, ci_kind).
    """

    table: pd.DataFrame
    auc: pd.DataFrame | None = None
    bbu: pd.DataFrame | None = None
    generalized: dict[str, FairnessResult] = field(default_factory=dict)
    ci_prob: float = 0.95
    model: str = ""
    settings: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Return the tidy table (a copy)."""
        return self.table.copy()

    def _details(self) -> dict:
        """Each metric's own result: AUC and BBU tables by group, generalized metrics."""
        out: dict = {}
        for metric in self.settings.get("metrics", []):
            if metric == "auc" and self.auc is not None:
                out["auc"] = {"overall_auc": self.auc.attrs["overall_auc"],
                              "ci_kind": self.auc.attrs.get("ci_kind"),
                              "by_group": self.auc.reset_index()}
            elif metric == "bbu" and self.bbu is not None:
                criterion = self.settings.get("criterion", "demographic_parity")
                out["bbu"] = {"criterion": criterion,
                              "description": CRITERIA[criterion].description,
                              "by_group": self.bbu.reset_index()}
            elif metric in self.generalized:
                r = self.generalized[metric]
                out[metric] = {"value": r.value, "lower": r.lower, "upper": r.upper,
                               "ci_kind": r.ci_kind, **r.info,
                               "by_group": r.by_group.reset_index(),
                               "pairs": r.pairs if r.pairs is not None else []}
        return out

    def to_dict(self) -> dict:
        """Plain JSON data (NaN as null); ``bayesbias classifier --json`` prints it.

        Keys: ``model``, ``ci_prob``, ``ci_kinds`` (the interval kinds used), the
        :attr:`settings` (``n``, ``groups``, ``threshold``, ...), ``metrics`` (each
        metric's detailed result) and ``rows`` (the tidy table).
        """
        return to_plain({
            "model": self.model, "ci_prob": self.ci_prob,
            "ci_kinds": {k: CI_KINDS[k] for k in dict.fromkeys(self.table["ci_kind"])
                         if k in CI_KINDS},
            **self.settings, "metrics": self._details(),
            "rows": self.table.to_dict("records")})

    def __str__(self) -> str:
        if self.table.empty:
            return f"classifier bias of {self.model}: no metrics"
        cols = ["metric", "level", "group", "value", "lower", "upper", "ci_kind"]
        return (f"classifier bias of {self.model} ({self.ci_prob:.0%} intervals)\n"
                + self.table[cols].round(4).to_string(index=False))

    def _repr_html_(self) -> str:
        return _classifier_html(self)

    def __repr__(self) -> str:
        return _classifier_repr(self)


def classifier_bias(cd: ClassifierData, metrics: Sequence[str] = ("bbu", "auc"), *,
                    ci_prob: float = 0.95, criterion: str = "demographic_parity",
                    gamma: float | None = None, variance: float | str = "estimate",
                    n_boot: int = 200, source=None, seed: int | None = None,
                    model: str | None = None, cf_average: str = "groups") -> ClassifierBias:
    """Compute several bias metrics of one classifier for every group.

    Parameters
    ----------
    cd : ClassifierData
        From :func:`~bayesbias.classifier.data.validate_classifier_data` or
        :func:`~bayesbias.classifier.data.madlibs_data`.
    metrics : list of str
        ``"bbu"`` (Bernstein-bounded disparity of each group against the rest, with Bayesian
        and bootstrap intervals), ``"auc"`` (the five nuanced AUC metrics, DeLong intervals)
        and names of :data:`~bayesbias.classifier.generalized.METRICS` (bootstrap intervals).
    ci_prob : float
        Probability of every interval (default 0.95).
    criterion : str
        Cost / annotation of ``bbu`` (see :data:`~bayesbias.classifier.bernstein.CRITERIA`).
    gamma, variance
        Passed to :func:`~bayesbias.classifier.bernstein.bbu_by_group`.
    n_boot : int
        Bootstrap resamples (0: no bootstrap intervals).
    source : array, optional
        Source-example id per row, needed by counterfactual metrics.
    seed : int, optional
        Random seed.
    model : str, optional
        Label of the classifier in the table (default: the score column name).
    cf_average : {"groups", "combinations"}
        Counterfactual metrics with several terms per group: each group on all its terms, or
        over the term combinations pooled over all sources (Czarnowska et al.'s code; see
        :func:`~bayesbias.classifier.generalized.compute_metric`).
    """
    metrics = [m.strip().lower() for m in metrics if m.strip()]
    unknown = [m for m in metrics if m not in METRIC_CHOICES]
    if unknown:
        raise InvalidArgumentError(f"unknown metric(s) {', '.join(unknown)}; choose from "
                                   + ", ".join(METRIC_CHOICES))
    if criterion not in CRITERIA:
        raise InvalidArgumentError(f"unknown criterion {criterion!r}; choose from "
                                   + ", ".join(CRITERIA))
    model = model or cd.score_column or "classifier"
    rows: list[dict] = []
    ci_prob = validate_ci_prob(ci_prob)
    if int(n_boot) < 0:
        raise InvalidArgumentError(f"n_boot must be >= 0, got {n_boot}")
    out = ClassifierBias(table=pd.DataFrame(columns=TIDY_COLUMNS), ci_prob=ci_prob,
                         model=model,
                         settings={"n": cd.n, "groups": {str(g): int(v) for g, v in
                                                         cd.groups.sum().items()},
                                   "threshold": cd.threshold, "metrics": list(metrics),
                                   "criterion": criterion, "cf_average": cf_average,
                                   "n_boot": int(n_boot), "seed": seed})
    for metric in metrics:
        if metric == "auc":
            if cd.score is None:
                raise InputDataError("the auc metrics need scores")
            r = nuanced_auc_metrics(cd.y, cd.score, cd.groups, ci_prob=ci_prob)
            out.auc = r
            for g, rec in r.iterrows():
                for m in AUC_METRICS:
                    rows.append({"metric": m, "model": model, "level": "group", "group": g,
                                 "value": rec[m], "lower": rec[f"{m}_lower"],
                                 "upper": rec[f"{m}_upper"], "ci_prob": ci_prob,
                                 "ci_kind": "delong",
                                 "n": rec["n"], "note": rec["note"]})
        elif metric == "bbu":
            if cd.pred is None:
                raise InputDataError("bbu needs predicted labels (a prediction column, or "
                                     "scores with a threshold)")
            r = bbu_by_group(cd.y, cd.pred, cd.groups, criterion_name=criterion,
                             confidence=ci_prob, gamma=gamma, variance=variance,
                             intervals=n_boot > 0, n_boot=max(n_boot, 1), seed=seed)
            out.bbu = r
            for g, rec in r.iterrows():
                kinds = [("bernstein", "lower", "upper")]
                if "bayes_lower" in rec:
                    kinds += [("hdi", "bayes_lower", "bayes_upper"),
                              ("bootstrap", "bootstrap_lower", "bootstrap_upper")]
                for kind, lo, hi in kinds:
                    rows.append({"metric": f"bbu:{criterion}", "model": model,
                                 "level": "group", "group": g, "value": rec["disparity"],
                                 "lower": rec.get(lo, np.nan), "upper": rec.get(hi, np.nan),
                                 "ci_prob": ci_prob, "ci_kind": kind, "n": rec["n_a"],
                                 "note": rec["note"]})
        else:
            m = METRICS[metric]
            if m.version == "counterfactual" and source is None:
                raise InputDataError(f"{metric} is a counterfactual metric: it needs the "
                                     "source example of each row (source= / --source)")
            if m.two_groups_only and cd.groups.shape[1] != 2:
                raise InputDataError(f"{metric} is defined for exactly two groups, got "
                                     f"{cd.groups.shape[1]}")
            res = compute_metric(metric, cd.y, cd.groups, pred=cd.pred, prob=cd.score,
                                 source=None if source is None else
                                 pd.Series(source).reset_index(drop=True),
                                 ci_prob=ci_prob if n_boot > 0 else None, n_boot=n_boot,
                                 seed=seed, cf_average=cf_average)
            out.generalized[metric] = res
            note = res.info.get("note", "")
            for rec in res.to_frame().to_dict("records"):
                rows.append({**rec, "model": model,
                             "ci_prob": ci_prob if n_boot > 0 else np.nan,
                             "ci_kind": "bootstrap" if n_boot > 0 else "",
                             "note": note if rec["level"] == "aggregate" else ""})
    out.table = pd.DataFrame(rows, columns=TIDY_COLUMNS)
    out.table.attrs.update(ci_prob=ci_prob, model=model)
    return out


def classifier_bias_from_arrays(y_true, y_score=None, *, sensitive_features, y_pred=None,
                                threshold: float | None = None, positive=None,
                                metrics: Sequence[str] = ("bbu", "auc"),
                                **options) -> ClassifierBias:
    """:func:`classifier_bias` called the way fairlearn's ``MetricFrame`` is.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Gold labels (0/1, bool, or name the positive value with `positive`).
    y_score : array-like, shape (n,), optional
        Scores (higher = more positive): the ``auc`` metrics need them.
    sensitive_features : array-like, Series, DataFrame or dict of arrays
        One value per example (each distinct value a group), or several columns: boolean
        columns are groups that may overlap (a text naming two identities); other columns
        are crossed, each combination of values a group (``"female & black"``).
    y_pred : array-like, shape (n,), optional
        Predicted labels; else ``y_score >= threshold`` when `threshold` is given. ``bbu``
        and the generalized metrics on labels need them.
    threshold, positive
        See :func:`~bayesbias.classifier.data.validate_classifier_data`.
    metrics : sequence of str
        As in :func:`classifier_bias` (default ``("bbu", "auc")``; ``"bbu"`` is skipped when
        there are no predicted labels and ``"auc"`` when there are no scores).
    **options
        Passed to :func:`classifier_bias` (``ci_prob``, ``n_boot``, ``seed``, ``model``, ...).

    Returns
    -------
    ClassifierBias

    Raises
    ------
    InputDataError
        Arrays of different lengths, or the checks of :func:`validate_classifier_data`.
    """
    y = pd.Series(np.asarray(y_true)).reset_index(drop=True)
    data = {"y_true": y}
    for name, values in (("y_score", y_score), ("y_pred", y_pred)):
        if values is not None:
            data[name] = pd.Series(np.asarray(values)).reset_index(drop=True)
    sf = sensitive_features
    if isinstance(sf, dict):
        sf = pd.DataFrame({str(k): np.asarray(v) for k, v in sf.items()})
    elif isinstance(sf, pd.Series):
        sf = sf.rename(str(sf.name) if sf.name is not None else "sensitive_feature")
    elif not isinstance(sf, pd.DataFrame):
        values = np.asarray(sf)
        if values.ndim != 1:
            raise InputDataError(f"sensitive_features must be 1-d or a DataFrame, got shape "
                                 f"{values.shape}")
        sf = pd.Series(values, name="sensitive_feature")
    sf = sf.reset_index(drop=True)
    lengths = {k: len(v) for k, v in data.items()}
    lengths["sensitive_features"] = len(sf)
    if len(set(lengths.values())) > 1:
        raise InputDataError("arrays of different lengths: " + ", ".join(
            f"{k} {n}" for k, n in lengths.items()))
    if isinstance(sf, pd.Series):
        kind = {"group_column": "_group"}
        data["_group"] = sf
    elif all(sf[c].dtype == bool for c in sf.columns):
        kind = {"groups": [str(c) for c in sf.columns]}
        data.update({str(c): sf[c] for c in sf.columns})
    else:
        if sf.isna().any().any():
            raise InputDataError("sensitive_features has missing values")
        kind = {"group_column": "_group"}
        data["_group"] = sf.astype(str).agg(" & ".join, axis=1)
    table = pd.DataFrame(data)
    cd = validate_classifier_data(
        table, "y_true", score="y_score" if y_score is not None else None,
        pred="y_pred" if y_pred is not None else None, positive=positive,
        threshold=threshold, **kind)
    chosen = [m for m in metrics
              if not (m == "bbu" and cd.pred is None) and not (m == "auc" and cd.score is None)]
    if not chosen:
        raise InputDataError("no metric can be computed: give y_score (auc), y_pred or a "
                             "threshold (bbu)")
    options.setdefault("model", "y_score" if y_score is not None else "y_pred")
    return classifier_bias(cd, chosen, **options)


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _classifier_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.ClassifierBias`."""
    cols = [c for c in ("metric", "level", "group", "value", "lower", "upper", "ci_kind", "n",
                        "note") if c in r.table]
    metrics = list(dict.fromkeys(r.table["metric"])) if len(r.table) else []
    return card(f"Classifier bias: {r.model}", f"{r.ci_prob:.0%} intervals",
                f"{len(metrics)} metric(s): {', '.join(map(str, metrics))}",
                tables=[("one row per metric, group and interval", r.table[cols])])


def _classifier_repr(r) -> str:
    """Short repr of a ClassifierBias."""
    metrics = list(dict.fromkeys(r.table["metric"])) if len(r.table) else []
    return (f"<ClassifierBias {r.model!r}: {len(r.table)} rows, metrics "
            f"{', '.join(map(str, metrics)) or 'none'}; {r.ci_prob:.0%} intervals>")
