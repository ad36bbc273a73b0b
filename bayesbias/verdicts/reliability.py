"""Frequentist reliability of bias scores across embeddings (Du, Fang & Nguyen 2021).

The definitions of Du, Fang & Nguyen (EMNLP 2021, "Assessing the reliability of word
embedding gender bias measures"; their code: nlpsoc/reliability_bias,
``reliability_metrics.py``), on an array of scores ``(subjects, raters)``:

- two-way ANOVA mean squares: rows ``MSR = k var(row means)``, columns
  ``MSC = n var(column means)`` and error ``MSE = (SST - (n-1) MSR - (k-1) MSC) /
  ((n-1)(k-1))`` (all with ddof 1; n subjects, k raters);
- ICC(2,1) (absolute agreement, raters random) ``(MSR - MSE) / (MSR + (k-1) MSE +
  k/n (MSC - MSE))``: test-retest reliability when the raters are embeddings;
- ICC(3,1) (consistency, raters fixed) ``(MSR - MSE) / (MSR + (k-1) MSE)``: inter-rater
  consistency when the raters are scoring rules;
- Cronbach's alpha on ``(items, observations)``: ``k/(k-1) (1 - sum_i var(item i) /
  var(sum over items))``: internal consistency of the items.

:func:`ensemble_reliability` applies them to a multi-embedding distance table
(:mod:`bayesbias.ensemble`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputDataError, InvalidArgumentError

__all__ = ["mean_squares", "icc", "cronbach_alpha", "word_scores", "ensemble_reliability",
           "Reliability", "SCORING_RULES", "read_icc", "read_alpha"]

#: Scoring rules of a protected word: mean distance to a control group minus the mean
#: distance to its own stereotypes (positive: closer to its stereotypes).
SCORING_RULES = ("none", "human", "different")


def _matrix(scores, what: str = "scores") -> np.ndarray:
    a = np.asarray(scores, dtype=np.float64)
    if a.ndim != 2 or min(a.shape) < 2:
        raise InputDataError(f"{what} must be a 2-d array with at least 2 rows and 2 columns, "
                             f"got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputDataError(f"{what} has non-finite values")
    return a


def mean_squares(scores) -> tuple[float, float, float]:
    """Row, column and error mean squares of a two-way layout ``(subjects, raters)``."""
    a = _matrix(scores)
    n, k = a.shape
    grand = a.mean()
    ss_rows = k * ((a.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((a.mean(axis=0) - grand) ** 2).sum()
    ss_err = ((a - grand) ** 2).sum() - ss_rows - ss_cols
    return ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))


def icc(scores, kind: str = "2,1") -> float:
    """Intraclass correlation of `scores` ``(subjects, raters)``: ``"2,1"`` or ``"3,1"``."""
    msr, msc, mse = mean_squares(scores)
    n, k = np.shape(scores)
    if kind == "2,1":
        return float((msr - mse) / (msr + (k - 1) * mse + k / n * (msc - mse)))
    if kind == "3,1":
        return float((msr - mse) / (msr + (k - 1) * mse))
    raise InvalidArgumentError(f"kind must be '2,1' or '3,1', got {kind!r}")


def cronbach_alpha(scores) -> float:
    """Cronbach's alpha of `scores` ``(items, observations)``."""
    a = _matrix(scores)
    k = a.shape[0]
    item_var = a.var(axis=1, ddof=1).sum()
    total_var = a.sum(axis=0).var(ddof=1)
    return float(k / (k - 1) * (1.0 - item_var / total_var))


def word_scores(table: pd.DataFrame, rule: str = "none") -> pd.DataFrame:
    """Association score of each protected word in each embedding.

    ``mean distance to the rule's group (none, human or different) - mean distance to the
    word's own stereotypes``; a DataFrame with protected words as rows and embeddings as
    columns.
    """
    if rule not in SCORING_RULES:
        raise InvalidArgumentError(f"rule must be one of {', '.join(SCORING_RULES)}, got {rule!r}")
    if "embedding" not in table.columns:
        raise InputDataError("the table has no embedding column (one embedding only)")
    t = table.assign(connection=table["connection"].astype(str))
    m = t.groupby(["protected_word", "embedding", "connection"])["cosine_distance"].mean()
    m = m.unstack("connection")
    if "associated" not in m or rule not in m:
        raise InputDataError(f"the table has no associated or no {rule} rows")
    return (m[rule] - m["associated"]).unstack("embedding")


@dataclass
class Reliability:
    """Du et al.'s reliability of the association scores of an ensemble of embeddings.

    Attributes
    ----------
    test_retest : float
        ICC(2,1) of the word scores (rule ``none``) with the embeddings as raters.
    inter_rater : float
        ICC(3,1) of the word scores averaged over embeddings, with the scoring rules
        (:data:`SCORING_RULES`) as raters.
    internal : float
        Cronbach's alpha with the stereotypes as items and the protected words as
        observations (score: own-class sign times the distance below the word's neutral
        mean, averaged over embeddings).
    embeddings, words : int
    """

    test_retest: float
    inter_rater: float
    internal: float
    embeddings: int
    words: int

    def readings(self) -> dict:
        """One sentence per number on how to read it (:func:`read_icc`, :func:`read_alpha`)."""
        return {"test_retest": read_icc(self.test_retest, "embeddings", "the same words"),
                "inter_rater": read_icc(self.inter_rater, "scoring rules",
                                        "the words' average scores"),
                "internal": read_alpha(self.internal, "stereotypes")}

    def to_dict(self) -> dict:
        """Plain data, with :meth:`readings`."""
        r = self.readings()
        return {"icc_2_1_test_retest": self.test_retest, "icc_3_1_inter_rater": self.inter_rater,
                "cronbach_alpha_internal": self.internal, "embeddings": self.embeddings,
                "protected_words": self.words,
                "reading": {"icc_2_1_test_retest": r["test_retest"],
                            "icc_3_1_inter_rater": r["inter_rater"],
                            "cronbach_alpha_internal": r["internal"]}}

    def __str__(self) -> str:
        r = self.readings()
        return (f"reliability (Du, Fang & Nguyen 2021) over {self.embeddings} embeddings, "
                f"{self.words} protected words:\n"
                f"  test-retest ICC(2,1) across embeddings: {self.test_retest:.3f}: "
                f"{r['test_retest']}\n"
                f"  inter-rater ICC(3,1) across scoring rules: {self.inter_rater:.3f}: "
                f"{r['inter_rater']}\n"
                f"  internal consistency (Cronbach's alpha across stereotypes): "
                f"{self.internal:.3f}: {r['internal']}")


def read_icc(value: float, raters: str, subjects: str) -> str:
    """One sentence on how to read an intraclass correlation of `subjects` rated by `raters`.

    ICC = share of the scores' variance that lies between subjects. Bands (Koo & Li 2016):
    below 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, above 0.9 excellent; below 0 the
    {raters} disagree about {subjects} more than their own noise would make them.
    """
    if not np.isfinite(value):
        return "not defined (no variation in the scores)"
    if value < 0:
        return (f"negative: the {raters} disagree about {subjects} more than chance would "
                f"make them (no between-word signal to agree on); read it as 0")
    band = ("poor" if value < 0.5 else "moderate" if value < 0.75 else "good" if value < 0.9
            else "excellent")
    return (f"{value:.0%} of the scores' variance lies between words rather than between "
            f"{raters} ({band} agreement, Koo & Li 2016 bands)")


def read_alpha(value: float, items: str) -> str:
    """One sentence on how to read Cronbach's alpha with `items` as the items.

    Alpha = 1 - (sum of item variances) / (variance of the sum), rescaled: 1 when the items
    move together, 0 when they are unrelated. It is negative when the items covary
    negatively on average, i.e. disagree more than noise alone would make them (some rank
    the words one way, others the opposite way), or when the words barely differ.
    """
    if not np.isfinite(value):
        return "not defined (no variation in the scores)"
    if value < 0:
        return (f"negative: the {items} disagree about which words are most associated more "
                f"than noise would make them (on average they covary negatively), so they do "
                f"not rank the words by one shared association (a corpus-level effect can "
                f"still be present: alpha reads differences between words, not their mean)")
    band = ("low" if value < 0.5 else "moderate" if value < 0.7 else "acceptable"
            if value < 0.9 else "high")
    return (f"{band} internal consistency: the {items} rank the protected words alike to "
            f"that degree (1: they move together, 0: unrelated)")


def _stereotype_items(table: pd.DataFrame) -> np.ndarray:
    """(stereotype, protected word) scores averaged over embeddings."""
    t = table.assign(connection=table["connection"].astype(str))
    neutral = t[t["connection"] == "none"].groupby("protected_word")["cosine_distance"].mean()
    st = t[t["connection"].isin(["associated", "different"])]
    d = st.groupby(["attribute", "protected_word"])["cosine_distance"].mean()
    sign = st.groupby(["attribute", "protected_word"])["connection"].first()
    sign = np.where(sign == "associated", 1.0, -1.0)
    words = d.index.get_level_values("protected_word")
    score = sign * (neutral.reindex(words).to_numpy() - d.to_numpy())
    return pd.Series(score, index=d.index).unstack("protected_word").to_numpy()


def ensemble_reliability(table: pd.DataFrame) -> Reliability:
    """Test-retest, inter-rater and internal reliability of a multi-embedding table."""
    s = word_scores(table, "none")
    if s.shape[1] < 2:
        raise InputDataError("reliability across embeddings needs 2 or more embeddings")
    rules = np.column_stack([word_scores(table, r).mean(axis=1).to_numpy()
                             for r in SCORING_RULES])
    items = _stereotype_items(table)
    return Reliability(test_retest=icc(s.to_numpy(), "2,1"), inter_rater=icc(rules, "3,1"),
                       internal=cronbach_alpha(items[~np.isnan(items).any(axis=1)]),
                       embeddings=int(s.shape[1]), words=int(s.shape[0]))
