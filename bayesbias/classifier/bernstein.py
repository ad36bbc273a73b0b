"""Bernstein-bounded unfairness (Ethayarajh 2020), with Bayesian and bootstrap intervals.

A cost ``c(y, yhat)`` in ``[0, C]`` and an annotation ``f(x)`` in {+1 (protected group A),
-1 (unprotected group B), 0 (neither)} define the groupwise disparity

    delta = E_A[c] - E_B[c].

Each example's amortized disparity is ``c_i f_i / Pr[f(x) = f(x_i)]``; its mean is the
sample disparity (difference of the group means). Bernstein's inequality with the bound
``|amortized disparity| <= C / gamma``, ``gamma = min(gamma_A, gamma_B)`` the smallest group
proportion, gives the half-width ``t`` of a ``rho`` confidence interval (formula (3) of the
paper) and the sample size needed to claim a bias of a given size (formula (4)).

Going further than the paper, :func:`disparity_intervals` puts the Bernstein interval
next to a Bayesian interval (independent Beta(1, 1)-Binomial posteriors of the two group
rates for 0-1 costs, difference by Monte Carlo, HDI by ArviZ) and a percentile bootstrap.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where used: `bayesbias bbu` starts without it
    import pandas as pd

from ..config import defaults
from ..display import card
from ..errors import InputDataError, InvalidArgumentError
from ..plain import to_plain
from ..resampling import bootstrap_means
from ..validation import validate_probability

__all__ = [
    "bernstein_half_width",
    "bernstein_min_n",
    "smallest_claimable_delta",
    "amortized_disparity",
    "groupwise_disparity",
    "BBUResult",
    "FairnessCriterion",
    "CRITERIA",
    "criterion",
    "disparity_intervals",
    "bbu_by_group",
    "interval_coverage",
]

log = logging.getLogger(__name__)


def _check(confidence: float, gamma: float, C: float) -> float:
    # a probability in (0, 1), as the CLI's --ci-prob: a "0% interval" is refused too
    confidence = validate_probability(confidence, "confidence")
    if not 0 < gamma <= 0.5:
        raise InvalidArgumentError(
            f"gamma = min(gamma_A, gamma_B) must be in (0, 0.5], got {gamma}")
    if not C > 0:
        raise InvalidArgumentError(f"the maximum cost C must be positive, got {C}")
    return math.log(0.5 * (1.0 - confidence))  # negative


def _variance(variance, gamma, C):
    worst = (C / gamma) ** 2
    if variance is None:
        return worst
    if variance < 0:
        raise InvalidArgumentError(f"variance must be >= 0, got {variance}")
    return float(variance)


def bernstein_half_width(n: int, confidence: float = 0.95, gamma: float = 0.5,
                         variance: float | None = None, C: float = 1.0) -> float:
    """Half-width t of the Bernstein confidence interval (Ethayarajh 2020, formula (3)).

    Parameters
    ----------
    n : int
        Number of annotated examples.
    confidence : float
        rho, the probability that the true disparity lies in [mean - t, mean + t].
    gamma : float
        Lower bound on the smaller of the protected / unprotected group proportions.
    variance : float, optional
        sigma^2, the variance of the amortized disparity; default the worst case (C/gamma)^2.
    C : float
        Maximum cost.

    Returns
    -------
    float
        t = (B + sqrt(B^2 - 8 n sigma^2 L)) / (2 n), B = -(2C / 3 gamma) L,
        L = log((1 - rho) / 2).
    """
    if n < 1:
        raise InvalidArgumentError(f"n must be >= 1, got {n}")
    L = _check(confidence, gamma, C)
    s2 = _variance(variance, gamma, C)
    B = -(2.0 * C / (3.0 * gamma)) * L
    return (B + math.sqrt(B * B - 8.0 * n * s2 * L)) / (2.0 * n)


def bernstein_min_n(delta: float, confidence: float = 0.95, gamma: float = 0.5,
                    variance: float | None = None, C: float = 1.0) -> dict:
    """Smallest sample size to claim a disparity of `delta` (formula (4)).

    Returns
    -------
    dict
        ``bound``: the right-hand side of n > (2 sigma^2 + 2 C delta / (3 gamma)) (-L) / delta^2;
        ``min_n``: the smallest integer above it; and the inputs.
    """
    if not delta > 0:
        raise InvalidArgumentError(f"delta must be positive, got {delta}")
    L = _check(confidence, gamma, C)
    s2 = _variance(variance, gamma, C)
    bound = (2.0 * s2 + 2.0 * C * delta / (3.0 * gamma)) * (-L) / delta ** 2
    return {"delta": delta, "confidence": confidence, "gamma": gamma, "variance": s2, "C": C,
            "bound": bound, "min_n": int(math.floor(bound)) + 1,
            "variance_is_worst_case": variance is None}


def smallest_claimable_delta(n: int, confidence: float = 0.95, gamma: float = 0.5,
                             variance: float | None = None, C: float = 1.0) -> float:
    """Smallest sample disparity for which 0 lies outside the interval with n examples.

    This is the half-width t itself: the interval [delta - t, delta + t] excludes 0 exactly
    when |delta| > t.
    """
    return bernstein_half_width(n, confidence, gamma, variance, C)


def amortized_disparity(cost, annotation) -> np.ndarray:
    """Per-example amortized disparity c_i f_i / Pr[f = f_i] with sample proportions."""
    c = np.asarray(cost, dtype=float)
    f = np.asarray(annotation)
    if c.shape != f.shape:
        raise InputDataError(f"cost shape {c.shape} != annotation shape {f.shape}")
    if not set(np.unique(f).tolist()) <= {-1, 0, 1}:
        raise InputDataError("annotation values must be -1 (unprotected), 0 or +1 (protected)")
    n = len(f)
    pa, pb = (f == 1).sum() / n, (f == -1).sum() / n
    out = np.zeros(n)
    if pa > 0:
        out[f == 1] = c[f == 1] / pa
    if pb > 0:
        out[f == -1] = -c[f == -1] / pb
    return out


@dataclass(frozen=True)
class BBUResult:
    """A groupwise disparity with its Bernstein interval.

    Attributes
    ----------
    disparity : float
        Sample disparity mean_A(c) - mean_B(c) (the mean amortized disparity).
    half_width : float
        Bernstein half-width t at `confidence`.
    lower, upper : float
        disparity -/+ t.
    n, n_a, n_b : int
        Examples in total, in A and in B.
    gamma : float
        Group-proportion bound used (given, or the smaller sample proportion).
    variance : float
        sigma^2 used (sample variance of the amortized disparities, or the worst case).
    confidence, C : float
        The inputs.
    variance_kind, gamma_kind : str
        ``"estimated"``, ``"worst case"`` or ``"given"``.
    """

    disparity: float
    half_width: float
    lower: float
    upper: float
    n: int
    n_a: int
    n_b: int
    gamma: float
    variance: float
    confidence: float
    C: float
    variance_kind: str
    gamma_kind: str
    note: str = ""

    @property
    def claims_bias(self) -> bool:
        """True when 0 lies outside the interval."""
        return bool(self.lower > 0 or self.upper < 0)

    @property
    def ci_prob(self) -> float:
        """Probability of the interval (the confidence rho)."""
        return self.confidence

    ci_kind = "bernstein"

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready; NaN as null)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(claims_bias=self.claims_bias, ci_prob=self.ci_prob, ci_kind=self.ci_kind)
        return to_plain(d)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        import pandas as pd

        return pd.DataFrame([{**{k: getattr(self, k) for k in self.__dataclass_fields__},
                              "claims_bias": self.claims_bias, "ci_prob": self.ci_prob,
                              "ci_kind": self.ci_kind}])

    def __str__(self) -> str:
        if self.note:
            return f"Bernstein-bounded disparity: not computed ({self.note})"
        return (f"disparity {self.disparity:.4f}, {self.confidence:.0%} Bernstein interval "
                f"[{self.lower:.4f}, {self.upper:.4f}] (n = {self.n}: {self.n_a} + {self.n_b}; "
                f"gamma {self.gamma:.3g} {self.gamma_kind}, sigma^2 {self.variance:.3g} "
                f"{self.variance_kind}){'; claims bias' if self.claims_bias else ''}")

    def _repr_html_(self) -> str:
        return _bbu_html(self)

    def __repr__(self) -> str:
        return _bbu_repr(self)


def groupwise_disparity(cost, annotation, *, confidence: float = 0.95,
                        gamma: float | None = None, variance: float | str = "estimate",
                        C: float = 1.0) -> BBUResult:
    """Groupwise disparity and its Bernstein-bounded interval.

    Parameters
    ----------
    cost : array of float in [0, C]
        c(y_i, yhat_i) per example.
    annotation : array of {-1, 0, 1}
        f(x_i): +1 protected (A), -1 unprotected (B), 0 neither.
    confidence : float
        rho.
    gamma : float, optional
        min(gamma_A, gamma_B); default: the smaller sample proportion of A and B.
    variance : "estimate", "worst" or float
        sigma^2: the sample variance of the amortized disparities, the worst case
        (C/gamma)^2, or a given value.
    C : float
        Maximum cost.
    """
    c = np.asarray(cost, dtype=float)
    f = np.asarray(annotation)
    if not np.isfinite(c).all():
        raise InputDataError("cost contains NaN or inf")
    if (c < 0).any() or (c > C).any():
        raise InputDataError(f"cost must lie in [0, C={C}], found [{c.min()}, {c.max()}]")
    n = len(c)
    n_a, n_b = int((f == 1).sum()), int((f == -1).sum())
    if n_a == 0 or n_b == 0:
        return BBUResult(np.nan, np.nan, np.nan, np.nan, n, n_a, n_b, np.nan, np.nan,
                         confidence, C, "", "",
                         note="no protected examples" if n_a == 0 else "no unprotected examples")
    amort = amortized_disparity(c, f)
    disparity = float(amort.mean())
    if gamma is None:
        g, gk = min(n_a, n_b) / n, "estimated"
    else:
        g, gk = float(gamma), "given"
        observed = min(n_a, n_b) / n
        if observed < g:
            log.warning("gamma = %g is larger than the observed smaller-group share %.4g: the "
                        "amortized costs can exceed C/gamma and the Bernstein bound does not "
                        "hold for this sample; pass gamma=None to use the observed share",
                        g, observed)
    if isinstance(variance, str):
        if variance == "estimate":
            s2, vk = float(amort.var(ddof=1)) if n > 1 else (C / g) ** 2, "estimated"
        elif variance == "worst":
            s2, vk = (C / g) ** 2, "worst case"
        else:
            raise InvalidArgumentError(
                f"variance must be 'estimate', 'worst' or a number, got {variance!r}")
    else:
        s2, vk = float(variance), "given"
        if not (math.isfinite(s2) and s2 > 0):
            raise InvalidArgumentError(f"variance must be a finite number > 0, got {variance!r}")
    t = bernstein_half_width(n, confidence, g, s2, C)
    return BBUResult(disparity, t, disparity - t, disparity + t, n, n_a, n_b, g, s2,
                     confidence, C, vk, gk)


@dataclass(frozen=True)
class FairnessCriterion:
    """A cost / annotation choice that turns a fairness criterion into a groupwise disparity.

    Attributes
    ----------
    name : str
    cost : callable (y, yhat) -> cost in [0, 1]
    annotate : callable (group_annotation, y) -> annotation in {-1, 0, 1}
    description : str
    """

    name: str
    cost: Callable[[np.ndarray, np.ndarray], np.ndarray]
    annotate: Callable[[np.ndarray, np.ndarray], np.ndarray]
    description: str


def _f(f, y):
    return f


CRITERIA: dict[str, FairnessCriterion] = {
    c.name: c for c in [
        FairnessCriterion(
            "demographic_parity", lambda y, p: 1.0 - p, _f,
            "cost 1 - yhat on every annotated example: difference in the rate of negative "
            "predictions (= minus the difference in positive-prediction rates)"),
        FairnessCriterion(
            "equal_opportunity", lambda y, p: 1.0 - p, lambda f, y: f * y,
            "cost 1 - yhat, annotation f(x) y(x) (only gold positives): difference in false "
            "negative rates (= minus the difference in true positive rates)"),
        FairnessCriterion(
            "equalized_odds_fpr", lambda y, p: p.astype(float), lambda f, y: f * (1 - y),
            "cost yhat, annotation f(x) (1 - y(x)) (only gold negatives): difference in false "
            "positive rates; with equal_opportunity the two halves of equalized odds"),
        FairnessCriterion(
            "accuracy", lambda y, p: (y != p).astype(float), _f,
            "zero-one loss on every annotated example: difference in error rates (the "
            "paper's WinoBias example)"),
        FairnessCriterion(
            "equalized_odds_paper", lambda y, p: (y != p).astype(float), lambda f, y: f * y,
            "the paper's literal suggestion for equalized odds: zero-one loss with the "
            "equal-opportunity annotation f(x) y(x); on gold positives the zero-one loss is "
            "1 - yhat, so it equals equal_opportunity -- prefer equalized_odds_fpr together "
            "with equal_opportunity"),
    ]
}


def criterion(name: str) -> FairnessCriterion:
    """Look up a ready-made criterion by name, listing the valid names on error."""
    try:
        return CRITERIA[name]
    except KeyError:
        raise InvalidArgumentError(
            f"unknown criterion {name!r}; choose from {', '.join(CRITERIA)}") from None


def _hdi(draws: np.ndarray, prob: float) -> tuple[float, float]:
    """ArviZ's highest-density interval of 1-d `draws` (its array function: no plotting)."""
    from arviz_stats.base import array_stats

    lo, hi = array_stats.hdi(np.asarray(draws, dtype=float).ravel(), prob)
    return float(lo), float(hi)


_boot_means = bootstrap_means  # one bootstrap for the package (bayesbias.resampling)


def disparity_intervals(cost, annotation, *, confidence: float = 0.95,
                        gamma: float | None = None, variance: float | str = "estimate",
                        C: float = 1.0, n_draws: int = 4000, n_boot: int = 2000,
                        seed: int | None = None) -> pd.DataFrame:
    """Compute the disparity with Bernstein, Bayesian and bootstrap intervals side by side.

    Parameters
    ----------
    cost, annotation, confidence, gamma, variance, C
        As :func:`groupwise_disparity`.
    n_draws : int
        Monte Carlo draws from the posterior of the difference.
    n_boot : int
        Bootstrap resamples (rows resampled with replacement).
    seed : int, optional
        Random seed (default ``bayesbias.config.defaults.seed``).

    Returns
    -------
    DataFrame
        Rows ``bernstein``, ``bayes`` and ``bootstrap`` with ``estimate``, ``lower``,
        ``upper``, ``width`` and ``method``. The Bayesian row needs 0-1 costs (each group's
        cost rate gets a Beta(1, 1) prior and a Binomial likelihood; HDI of the difference);
        it is NaN with a reason for other costs. ``attrs['confidence']`` is the common
        coverage of all three.
    """
    import pandas as pd

    rng = np.random.default_rng(defaults.seed if seed is None else seed)
    c = np.asarray(cost, dtype=float)
    f = np.asarray(annotation)
    bbu = groupwise_disparity(c, f, confidence=confidence, gamma=gamma, variance=variance, C=C)
    rows = [{"interval": "bernstein", "estimate": bbu.disparity, "lower": bbu.lower,
             "upper": bbu.upper,
             "method": f"Bernstein bound (Ethayarajh 2020), sigma^2 {bbu.variance_kind}, "
                       f"gamma {bbu.gamma_kind}", "note": bbu.note}]
    a, b = c[f == 1], c[f == -1]
    if len(a) and len(b) and np.isin(c[f != 0], (0.0, 1.0)).all():
        pa = rng.beta(1 + a.sum(), 1 + len(a) - a.sum(), n_draws)
        pb = rng.beta(1 + b.sum(), 1 + len(b) - b.sum(), n_draws)
        lo, hi = _hdi(pa - pb, confidence)
        rows.append({"interval": "bayes", "estimate": float(np.median(pa - pb)), "lower": lo,
                     "upper": hi, "method": "Beta(1,1)-Binomial per group, HDI of the "
                     "difference (posterior median as estimate)", "note": ""})
    else:
        rows.append({"interval": "bayes", "estimate": np.nan, "lower": np.nan, "upper": np.nan,
                     "method": "Beta-Binomial", "note": "needs 0-1 costs and both groups"})
    if len(a) and len(b):
        # Resampling within groups keeps both groups non-empty (stratified bootstrap).
        boot = _boot_means(a, n_boot, rng) - _boot_means(b, n_boot, rng)
        q = (1 - confidence) / 2
        rows.append({"interval": "bootstrap", "estimate": bbu.disparity,
                     "lower": float(np.quantile(boot, q)), "upper": float(np.quantile(boot, 1 - q)),
                     "method": f"percentile bootstrap, {n_boot} resamples within groups",
                     "note": ""})
    else:
        rows.append({"interval": "bootstrap", "estimate": np.nan, "lower": np.nan,
                     "upper": np.nan, "method": "bootstrap", "note": bbu.note})
    out = pd.DataFrame(rows).set_index("interval")
    out["width"] = out["upper"] - out["lower"]
    out.attrs.update(confidence=confidence, n=bbu.n, n_a=bbu.n_a, n_b=bbu.n_b, gamma=bbu.gamma,
                     variance=bbu.variance)
    return out


def bbu_by_group(y, pred, groups: pd.DataFrame, *, criterion_name: str = "demographic_parity",
                 confidence: float = 0.95, gamma: float | None = None,
                 variance: float | str = "estimate", intervals: bool = True,
                 n_draws: int = 4000, n_boot: int = 2000,
                 seed: int | None = None) -> pd.DataFrame:
    """Bernstein-bounded disparity of every group against its background.

    For each group column, the protected group A is the group and the unprotected group B is
    every row outside it; the criterion's annotation may further restrict both (e.g. to gold
    positives for equal opportunity).

    Returns
    -------
    DataFrame
        One row per group: disparity, Bernstein half-width and interval, n_a, n_b, gamma,
        variance, claims_bias; with `intervals`, the Bayesian and bootstrap intervals too.
    """
    import pandas as pd

    crit = criterion(criterion_name)
    y = np.asarray(y).astype(int)
    p = np.asarray(pred).astype(int)
    cost = np.asarray(crit.cost(y, p), dtype=float)
    rows = []
    for name in groups.columns:
        g = groups[name].to_numpy(dtype=bool)
        f = crit.annotate(np.where(g, 1, -1), y)
        r = groupwise_disparity(cost, f, confidence=confidence, gamma=gamma, variance=variance)
        rec = {"group": str(name), **r.to_dict()}
        if intervals and np.isfinite(r.disparity):
            iv = disparity_intervals(cost, f, confidence=confidence, gamma=gamma,
                                     variance=variance, n_draws=n_draws, n_boot=n_boot,
                                     seed=seed)
            for kind in ("bayes", "bootstrap"):
                rec[f"{kind}_lower"] = iv.loc[kind, "lower"]
                rec[f"{kind}_upper"] = iv.loc[kind, "upper"]
        rows.append(rec)
    out = pd.DataFrame(rows).set_index("group")
    out.attrs.update(criterion=crit.name, criterion_description=crit.description,
                     confidence=confidence)
    return out


def interval_coverage(p_a: float = 0.30, p_b: float = 0.25, prop_a: float = 0.3,
                      n: int = 500, reps: int = 200, *, confidence: float = 0.95,
                      variance: float | str = "estimate", n_draws: int = 2000,
                      n_boot: int = 1000, seed: int | None = None) -> pd.DataFrame:
    """Coverage of the three intervals on simulated 0-1 costs with a known disparity.

    Each replicate draws n examples, a share `prop_a` in the protected group A (the rest in
    B), with error probabilities `p_a` / `p_b`; the true disparity is ``p_a - p_b``.

    Returns
    -------
    DataFrame
        Per interval kind: ``coverage`` (share of replicates containing the truth),
        ``mean_width``, ``reps``, ``n``, ``truth``.
    """
    import pandas as pd

    rng = np.random.default_rng(defaults.seed if seed is None else seed)
    truth = p_a - p_b
    hits: dict[str, list] = {"bernstein": [], "bayes": [], "bootstrap": []}
    widths: dict[str, list] = {k: [] for k in hits}
    for _ in range(reps):
        f = np.where(rng.random(n) < prop_a, 1, -1)
        cost = (rng.random(n) < np.where(f == 1, p_a, p_b)).astype(float)
        iv = disparity_intervals(cost, f, confidence=confidence, variance=variance,
                                 n_draws=n_draws, n_boot=n_boot, seed=int(rng.integers(2**31)))
        for k in hits:
            lo, hi = iv.loc[k, "lower"], iv.loc[k, "upper"]
            if np.isfinite(lo):
                hits[k].append(lo <= truth <= hi)
                widths[k].append(hi - lo)
    out = pd.DataFrame({"coverage": {k: float(np.mean(v)) for k, v in hits.items()},
                        "mean_width": {k: float(np.mean(v)) for k, v in widths.items()},
                        "reps": {k: len(v) for k, v in hits.items()}})
    out["n"], out["truth"], out["confidence"] = n, truth, confidence
    return out


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _bbu_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.BBUResult`."""
    if r.note:
        return card("Bernstein-bounded disparity", "", f"not computed: {r.note}")
    return card("Bernstein-bounded disparity",
                f"n = {r.n}: {r.n_a} + {r.n_b}",
                f"disparity {r.disparity:.4f}, {r.confidence:.0%} Bernstein interval "
                f"[{r.lower:.4f}, {r.upper:.4f}]"
                + ("; claims bias" if r.claims_bias else "; no claim of bias"),
                [f"gamma {r.gamma:.3g} ({r.gamma_kind}), sigma^2 {r.variance:.3g} "
                 f"({r.variance_kind}), C = {r.C:g}"])


def _bbu_repr(r) -> str:
    """Short repr of a BBUResult."""
    if r.note:
        return f"<BBUResult not computed: {r.note}>"
    return (f"<BBUResult disparity {r.disparity:.4f}, {r.confidence:.0%} interval "
            f"[{r.lower:.4f}, {r.upper:.4f}], n = {r.n}>")
