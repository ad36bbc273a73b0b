"""Generalized fairness metrics of Czarnowska et al. (2021): PCM, BCM, VBCM and MCM.

Every metric is a scoring function phi (a number or a set of numbers computed on a subset of
examples) and a comparison function d:

- Pairwise Comparison Metric (PCM): sum over unordered group pairs of d(phi(S_i), phi(S_j)),
  divided by N (corrected normalisation: the number of pairs).
- Background Comparison Metric (BCM): sum over groups of d(phi(background_t), phi(S_t)) / N
  (N = number of groups); the background is all examples or the examples outside the group.
- Vector-valued BCM (VBCM): the per-group terms of the BCM, not summed.
- Multi-group Comparison Metric (MCM): d(phi(S_1), ..., phi(S_T)) with a multivariate d.

Counterfactual versions apply the same comparison within each source example (the
variations of one template / sentence that differ only in the identity term) and average over
the source examples. When a group has several identity terms (rows) in a source,
``cf_average="groups"`` scores each group on all its rows (the authors' ``FlattenGroup.AVERAGE``
option), ``"combinations"`` compares combinations of one row per group and averages over all
combinations of all sources (their default; a seeded sample of 100 where a source has more);
a set-valued phi (AvgIF) compares the groups' whole sets in either mode. Per-group scores are
always returned next to the aggregate.

Each registry entry states its relation to the authors' code (``NamedMetric.code``).

Comparison functions take the background (or first group) first: ``ratio(x, y) = y / x``
(so the FPR ratio is group over background), ``aeg(X, Y) = 1/2 - MWU(X, Y) / (|X||Y|)`` with
MWU(X, Y) the number of pairs with x > y (ties one half), the Average Equality Gap of
Borkan et al. (2019): positive when the group scores higher than the background.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance

from ..config import defaults
from ..display import card
from ..errors import InputDataError, InvalidArgumentError
from ..intervals import tail_probabilities
from ..plain import format_number, to_plain
from ..resampling import bootstrap_indices
from .auc import average_equality_gap
from .data import check_boolean_flags

__all__ = [
    "SCORING_FUNCTIONS",
    "COMPARISONS",
    "MULTI_COMPARISONS",
    "NamedMetric",
    "METRICS",
    "FairnessResult",
    "pcm",
    "bcm",
    "vbcm",
    "mcm",
    "compute_metric",
    "list_metrics",
    "PARITY_CODE",
    "CF_AVERAGES",
    "CF_AVERAGE_ALIASES",
    "MAX_COMBINATIONS",
    "term_combinations",
]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- scoring functions
def _rate(num, den):
    return float(num.sum() / den.sum()) if den.sum() else np.nan


def _tpr(y, p, s):
    return _rate(p & y, y)


def _tnr(y, p, s):
    return _rate(~p & ~y, ~y)


def _fpr(y, p, s):
    return _rate(p & ~y, ~y)


def _fnr(y, p, s):
    return _rate(~p & y, y)


def _acc(y, p, s):
    return float((p == y).mean()) if len(y) else np.nan


def _f1(y, p, s):
    tp, fp, fn = (p & y).sum(), (p & ~y).sum(), (~p & y).sum()
    return float(2 * tp / (2 * tp + fp + fn)) if (2 * tp + fp + fn) else np.nan


def _precision(y, p, s):
    return _rate(p & y, p)


def _pos_rate(y, p, s):
    return float(p.mean()) if len(p) else np.nan


def _mean_prob(y, p, s):
    return float(s.mean()) if len(s) else np.nan


def _mean_true(y, p, s):
    return float(np.where(y, s, 1 - s).mean()) if len(s) else np.nan


@dataclass(frozen=True)
class ScoringFunction:
    """phi: a score computed on a subset of examples.

    Attributes
    ----------
    name : str
    fn : callable (y, pred, prob) -> float or ndarray
    kind : {"scalar", "set"}
    needs : {"pred", "prob"}
    description : str
    """

    name: str
    fn: Callable
    kind: str
    needs: str
    description: str


SCORING_FUNCTIONS: dict[str, ScoringFunction] = {s.name: s for s in [
    ScoringFunction("tpr", _tpr, "scalar", "pred", "true positive rate (recall)"),
    ScoringFunction("recall", _tpr, "scalar", "pred", "recall (= true positive rate)"),
    ScoringFunction("tnr", _tnr, "scalar", "pred", "true negative rate"),
    ScoringFunction("fpr", _fpr, "scalar", "pred", "false positive rate"),
    ScoringFunction("fnr", _fnr, "scalar", "pred", "false negative rate"),
    ScoringFunction("accuracy", _acc, "scalar", "pred",
                    "accuracy |{x in A: yhat(x) = y(x)}| / |A|"),
    ScoringFunction("f1", _f1, "scalar", "pred", "F1 of the positive class"),
    ScoringFunction("precision", _precision, "scalar", "pred", "precision"),
    ScoringFunction("positive_rate", _pos_rate, "scalar", "pred",
                    "rate of positive predictions (demographic parity)"),
    ScoringFunction("mean_prob", _mean_prob, "scalar", "prob",
                    "mean probability of the positive class, mean({F(x,1) | x in A})"),
    ScoringFunction("mean_prob_true_class", _mean_true, "scalar", "prob",
                    "mean probability of the gold class, mean(F(x, y(x)))"),
    ScoringFunction("probs", lambda y, p, s: s, "set", "prob",
                    "set of positive-class probabilities {F(x,1) | x in A}"),
    ScoringFunction("probs_pos", lambda y, p, s: s[y], "set", "prob",
                    "positive-class probabilities of gold positives {F(x,1) | x in A, y(x)=1}"),
    ScoringFunction("probs_neg", lambda y, p, s: s[~y], "set", "prob",
                    "positive-class probabilities of gold negatives {F(x,1) | x in A, y(x)=0}"),
    ScoringFunction("probs_true_class", lambda y, p, s: np.where(y, s, 1 - s), "set", "prob",
                    "gold-class probabilities {F(x, y(x)) | x in A}"),
]}


# --------------------------------------------------------------------------- comparisons
def _w1(x, y):
    """Wasserstein-1 distance of two samples (NaN when one is empty)."""
    if len(x) == 0 or len(y) == 0:
        return np.nan
    return float(wasserstein_distance(x, y))


def _ratio(x, y):
    return float(y / x) if x else (np.nan if y == 0 else np.inf)


COMPARISONS: dict[str, tuple[Callable, bool, str, str]] = {
    # name: (function, commutative, input kind, description)
    "difference": (lambda x, y: float(x - y), False, "scalar", "x - y"),
    "abs_difference": (lambda x, y: float(abs(x - y)), True, "scalar", "|x - y|"),
    "ratio": (_ratio, False, "scalar", "y / x (second over first: group over background)"),
    "wasserstein1": (_w1, True, "set", "Wasserstein-1 distance W1(X, Y)"),
    "aeg": (average_equality_gap, False, "set",
            "1/2 - MWU(X, Y) / (|X| |Y|) (Average Equality Gap, the definition of "
            "classifier.auc)"),
}

MULTI_COMPARISONS: dict[str, tuple[Callable, str]] = {
    "std": (lambda v: float(np.std(v)), "population standard deviation of the group scores"),
    "range": (lambda v: float(np.max(v) - np.min(v)), "max - min of the group scores"),
}


# --------------------------------------------------------------------------- results
@dataclass
class FairnessResult:
    """A generalized fairness metric with per-group results (MetricFrame-like).

    Attributes
    ----------
    name : str
        Metric name (registry name or a description of the parametrisation).
    value : float
        Aggregate (NaN for a vector-valued BCM, whose result is ``by_group['comparison']``).
    by_group : DataFrame
        Per group: ``n`` (examples), ``score`` (scalar phi of the group; NaN for set phi),
        ``comparison`` (BCM / VBCM: d(background, group)), and interval columns.
    pairs : DataFrame or None
        PCM: one row per pair with ``value`` (and intervals).
    overall : float
        Scalar phi on all examples (NaN for set phi).
    difference : float
        max - min of the per-group scalar scores.
    lower, upper : float
        Bootstrap interval of `value` (NaN when not computed).
    ci_prob : float or None
    info : dict
        The parametrisation (generalized metric, version, phi, d, normalisation, background,
        bootstrap method, skipped sources ...).
    """

    name: str
    value: float
    by_group: pd.DataFrame
    pairs: pd.DataFrame | None = None
    overall: float = np.nan
    difference: float = np.nan
    lower: float = np.nan
    upper: float = np.nan
    ci_prob: float | None = None
    info: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row for the aggregate, one per group (and per pair)."""
        rows = [{"metric": self.name, "level": "aggregate", "group": "", "value": self.value,
                 "lower": self.lower, "upper": self.upper, "n": int(self.by_group["n"].sum())}]
        col = "comparison" if "comparison" in self.by_group else "score"
        for g, r in self.by_group.iterrows():
            rows.append({"metric": self.name, "level": "group", "group": g, "value": r[col],
                         "lower": r.get(f"{col}_lower", np.nan),
                         "upper": r.get(f"{col}_upper", np.nan), "n": int(r["n"])})
        if np.isfinite(self.overall):
            rows.append({"metric": self.name, "level": "overall", "group": "",
                         "value": self.overall, "lower": np.nan, "upper": np.nan,
                         "n": np.nan})
        if np.isfinite(self.difference):
            rows.append({"metric": self.name, "level": "difference", "group": "max - min",
                         "value": self.difference, "lower": np.nan, "upper": np.nan,
                         "n": np.nan})
        if self.pairs is not None:
            for _, r in self.pairs.iterrows():
                rows.append({"metric": self.name, "level": "pair",
                             "group": f"{r['group_a']} | {r['group_b']}", "value": r["value"],
                             "lower": r.get("lower", np.nan), "upper": r.get("upper", np.nan),
                             "n": np.nan})
        return pd.DataFrame(rows)

    @property
    def ci_kind(self) -> str | None:
        """``"bootstrap"`` when an interval was computed, else None."""
        return "bootstrap" if self.ci_prob else None

    def to_dict(self) -> dict:
        """Plain JSON data (NaN as null)."""
        return to_plain({
            "name": self.name, "value": self.value, "overall": self.overall,
            "difference": self.difference, "lower": self.lower, "upper": self.upper,
            "ci_prob": self.ci_prob, "ci_kind": self.ci_kind,
            "by_group": self.by_group.reset_index(),
            "pairs": self.pairs if self.pairs is not None else [], "info": self.info})

    def __str__(self) -> str:
        head = repr(self)
        col = "comparison" if "comparison" in self.by_group else "score"
        cols = [c for c in self.by_group.columns if c.startswith(col) or c == "n"]
        return head + "\n" + self.by_group[cols].round(4).to_string()

    def __repr__(self) -> str:
        ci = (f" [{self.lower:.4g}, {self.upper:.4g}] ({self.ci_prob:.0%} bootstrap)"
              if self.ci_prob and np.isfinite(self.lower) else "")
        if self.info.get("generalized") == "vbcm":
            per = ", ".join(f"{g}: {v:.3g}" for g, v in self.by_group["comparison"].items())
            return f"FairnessResult({self.name}, per group: {per})"
        return (f"FairnessResult({self.name} = {self.value:.4g}{ci}; "
                f"{len(self.by_group)} groups)")

    def _repr_html_(self) -> str:
        return _fairness_html(self)


# --------------------------------------------------------------------------- engine
@dataclass
class _Data:
    y: np.ndarray
    pred: np.ndarray | None
    prob: np.ndarray | None
    groups: np.ndarray  # (n, T) bool
    names: list[str]
    source: np.ndarray | None = None


def _prepare(y, groups, pred, prob, source, phi: ScoringFunction) -> _Data:
    y = np.asarray(y)
    if y.dtype != bool:
        u = set(np.unique(y).tolist())
        if not u <= {0, 1}:
            raise InputDataError(f"labels must be binary (0/1 or bool), found {sorted(u)[:10]}")
        y = y.astype(bool)
    if isinstance(groups, pd.Series):  # categorical
        if groups.isna().any():
            raise InputDataError("the group column has missing values")
        g = pd.get_dummies(groups.astype(str), dtype=bool)
    elif isinstance(groups, pd.DataFrame):
        g = check_boolean_flags(groups)
    else:
        raise InputDataError("groups must be a DataFrame of boolean columns or a categorical "
                             "Series")
    if len(g) != len(y):
        raise InputDataError(f"groups have {len(g)} rows, labels {len(y)}")
    if g.shape[1] < 1:
        raise InputDataError("no groups")
    if pred is not None:
        pred = np.asarray(pred).astype(bool)
    if prob is not None:
        prob = np.asarray(prob, dtype=float)
        if not np.isfinite(prob).all():
            raise InputDataError("probabilities contain NaN or inf")
    if phi.needs == "pred" and pred is None:
        raise InputDataError(f"scoring function {phi.name!r} needs predicted labels "
                             "(pred=, or a score with a threshold)")
    if phi.needs == "prob" and prob is None:
        raise InputDataError(f"scoring function {phi.name!r} needs probabilities (prob=)")
    if pred is None:
        pred = np.zeros(len(y), bool)
    if prob is None:
        prob = np.zeros(len(y))
    src = None
    if source is not None:
        src = pd.Series(source).reset_index(drop=True)
    return _Data(y, pred, prob, g.to_numpy(dtype=bool), [str(c) for c in g.columns], src)


def _nan(fn, *args, **kwargs):
    """Call a NaN-aware numpy reduction without its all-NaN warnings (NaN is the answer)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def _phi(phi: ScoringFunction, d: _Data, rows) -> float | np.ndarray:
    return phi.fn(d.y[rows], d.pred[rows], d.prob[rows])


def _norm(normalization, n_terms: int) -> float:
    if isinstance(normalization, (int, float)) and not isinstance(normalization, bool):
        return float(normalization)
    if normalization == "none":
        return 1.0
    if normalization in ("pairs", "groups"):
        return float(n_terms)
    raise InvalidArgumentError(f"normalization must be 'pairs', 'groups', 'none' or a number, "
                     f"got {normalization!r}")


def _pair_list(names, commutative: bool):
    if not commutative and len(names) != 2:
        raise InputDataError(
            f"a non-commutative comparison is defined for exactly two groups; got "
            f"{len(names)} ({', '.join(names[:6])}{'...' if len(names) > 6 else ''})")
    return list(itertools.combinations(range(len(names)), 2))


def _group_eval(kind, d: _Data, phi, comp, background, normalization, rows=None):
    """Aggregate and per-group / per-pair values on the given rows (indices into d)."""
    idx = np.arange(len(d.y)) if rows is None else rows
    member = d.groups[idx]
    T = len(d.names)
    scores = [_phi(phi, d, idx[member[:, t]]) for t in range(T)]
    if kind == "pcm":
        fn, commutative, _, _ = COMPARISONS[comp]
        pairs = _pair_list(d.names, commutative)
        vals = np.array([fn(scores[i], scores[j]) for i, j in pairs])
        N = _norm(normalization, len(pairs) if normalization == "pairs" else T)
        return float(np.sum(vals) / N), scores, None, vals
    if kind in ("bcm", "vbcm"):
        fn = COMPARISONS[comp][0]
        comps = []
        b_all = _phi(phi, d, idx) if background == "all" else None
        for t in range(T):
            if background == "all":
                b = b_all
            elif background == "rest":
                b = _phi(phi, d, idx[~member[:, t]])
            else:
                raise InvalidArgumentError(
                    f"background must be 'all' or 'rest', got {background!r}")
            comps.append(fn(b, scores[t]))
        comps = np.array(comps, dtype=float)
        value = np.nan if kind == "vbcm" else float(np.sum(comps) / _norm(normalization, T))
        return value, scores, comps, None
    if kind == "mcm":
        fn = MULTI_COMPARISONS[comp][0]
        return fn(np.asarray(scores, dtype=float)), scores, None, None
    raise InvalidArgumentError(f"unknown generalized metric {kind!r}")


#: Averaging of counterfactual metrics when a group has several identity terms (rows) in a
#: source: ``"groups"`` scores each group on all its rows (the authors' ``FlattenGroup.AVERAGE``
#: option); ``"combinations"`` evaluates combinations of one row per group, pooled over all
#: sources (the authors' default, ``FlattenGroup.RANDOM_MATCH``).
CF_AVERAGES = ("groups", "combinations")
#: Earlier names of the ``cf_average`` values.
CF_AVERAGE_ALIASES = {"terms": "combinations"}
#: Most combinations evaluated in one source; above it a seeded sample of this many distinct
#: combinations (Czarnowska et al. 2021, Sec. 5, and their code's ``MAX_N_GROUPINGS``).
MAX_COMBINATIONS = 100


def _check_cf_average(cf_average: str) -> str:
    cf = CF_AVERAGE_ALIASES.get(cf_average, cf_average)
    if cf not in CF_AVERAGES:
        raise InvalidArgumentError(
            f"cf_average must be one of {', '.join(CF_AVERAGES)} ('terms' is "
            f"an alias of 'combinations'), got {cf_average!r}")
    return cf


def term_combinations(sizes, rs: np.random.RandomState, limit: int = MAX_COMBINATIONS
                      ) -> list[tuple[int, ...]]:
    """Return the combinations of one term index per group: all, or a sample above `limit`.

    Parameters
    ----------
    sizes : sequence of int
        Number of terms of each group in one source.
    rs : numpy.random.RandomState
        Draws the sample. One index per group is drawn in group order with
        ``rs.choice(size)`` until `limit` distinct combinations are found, the procedure of
        the authors' ``CoreRecord.flatten_within_group`` (which uses the global, unseeded
        ``np.random`` state): with ``rs = RandomState(s)`` it picks the combinations their
        code picks after ``np.random.seed(s)``, sources taken in the same order.
    limit : int
        Most combinations (default 100).

    Returns
    -------
    list of tuple of int
        Sorted combinations.
    """
    total = 1
    for k in sizes:
        total *= int(k)
        if total > limit:
            break
    if total <= limit:
        return list(itertools.product(*[range(int(k)) for k in sizes]))
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < limit:
        chosen.add(tuple(int(rs.choice(int(k))) for k in sizes))
    return sorted(chosen)


def _source_values(kind, d, phi, comp, background, normalization, rows, cf_average, rs):
    """One source's evaluations: on its rows (groups), or on each term combination.

    Returns the values (one per evaluation), the per-group values (evaluations x groups) and
    the per-pair values (evaluations x pairs, or None).
    """
    if cf_average == "groups":
        subsets = [rows]
    else:
        member = d.groups[rows]
        per_group_rows = [rows[member[:, t]] for t in range(member.shape[1])]
        subsets = [np.array([r[i] for r, i in zip(per_group_rows, c, strict=True)])
                   for c in term_combinations([len(r) for r in per_group_rows], rs)]
    vals, per_group, per_pair = [], [], []
    for sub in subsets:
        v, scores, comps, pv = _group_eval(kind, d, phi, comp, background, normalization, sub)
        vals.append(v)
        per_group.append(comps if comps is not None else
                         [s if np.ndim(s) == 0 else np.nan for s in scores])
        per_pair.append(pv)
    return (np.asarray(vals, float), np.asarray(per_group, float),
            None if per_pair[0] is None else np.asarray(per_pair, float))


@dataclass
class _CFSums:
    """Per source: sums over its evaluations and their counts (pooled weighting)."""

    value: np.ndarray       # (J,) sum of the values
    count: np.ndarray       # (J,) number of evaluations (1, or its combinations)
    group: np.ndarray       # (J, T) sum of the finite per-group values
    group_count: np.ndarray  # (J, T) number of finite per-group values
    pair: np.ndarray | None  # (J, P) sum of the per-pair values
    skipped: int
    sampled: int             # sources with more than MAX_COMBINATIONS combinations

    def pooled(self, idx=None):
        """Pooled means over all evaluations (of the sources `idx`, rows of resamples)."""
        if idx is None:
            idx = np.arange(len(self.value))
        n = self.count[idx].sum(axis=-1)
        v = self.value[idx].sum(axis=-1) / n
        g = _nan(np.divide, self.group[idx].sum(axis=-2), self.group_count[idx].sum(axis=-2))
        p = None if self.pair is None else self.pair[idx].sum(axis=-2) / n[..., None]
        return v, g, p


def _cf_eval(kind, d: _Data, phi, comp, background, normalization, cf_average="groups",
             seed=None) -> _CFSums:
    """Per-source sums of a counterfactual metric (sources with every group only).

    With several identity terms (rows) per group in a source, ``cf_average="groups"`` scores
    each group on all its rows (averaging within groups first); ``"combinations"`` evaluates
    every combination of one row per group (a seeded sample of 100 above 100, see
    :func:`term_combinations`), and the metric is the mean over all combinations of all
    sources, as in the authors' code of Czarnowska et al. (2021). A set-valued phi (AvgIF)
    always compares the groups' whole sets of rows within a source.
    """
    cf_average = _check_cf_average(cf_average)
    if phi.kind == "set":
        cf_average = "groups"
    rs = np.random.RandomState(defaults.seed if seed is None else seed)
    codes, uniques = pd.factorize(d.source, use_na_sentinel=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    value, count, gsum, gcount, psum = [], [], [], [], []
    skipped = sampled = 0
    for j in range(len(uniques)):
        rows = order[bounds[j]:bounds[j + 1]]
        member = d.groups[rows]
        if not member.any(axis=0).all():
            skipped += 1
            continue
        if cf_average == "combinations":
            n_comb = 1
            for k in member.sum(axis=0):
                n_comb *= int(k)
            sampled += n_comb > MAX_COMBINATIONS
        v, g, p = _source_values(kind, d, phi, comp, background, normalization, rows,
                                 cf_average, rs)
        value.append(v.sum())
        count.append(len(v))
        gsum.append(np.nansum(g, axis=0))
        gcount.append(np.isfinite(g).sum(axis=0))
        psum.append(None if p is None else p.sum(axis=0))
    if not value:
        raise InputDataError(
            "no source example has variations for every group; check the source column")
    return _CFSums(np.array(value, float), np.array(count, float), np.array(gsum, float),
                   np.array(gcount, float), None if psum[0] is None else np.array(psum, float),
                   skipped, sampled)


def _run(kind, name, y, groups, *, phi, d, pred=None, prob=None, background="all",
         normalization=None, version="group", source=None, ci_prob=None, n_boot=200,
         seed=None, info=None, cf_average="groups") -> FairnessResult:
    phi_f = SCORING_FUNCTIONS.get(phi) if isinstance(phi, str) else phi
    if phi_f is None:
        raise InvalidArgumentError(f"unknown scoring function {phi!r}; choose from "
                         f"{', '.join(SCORING_FUNCTIONS)}")
    table = MULTI_COMPARISONS if kind == "mcm" else COMPARISONS
    if d not in table:
        raise InvalidArgumentError(
            f"unknown comparison {d!r} for {kind}; choose from {', '.join(table)}")
    if kind != "mcm" and COMPARISONS[d][2] != phi_f.kind:
        raise InputDataError(f"comparison {d!r} takes {COMPARISONS[d][2]} scores but phi "
                         f"{phi_f.name!r} gives {phi_f.kind} scores")
    if kind == "mcm" and phi_f.kind != "scalar":
        raise InputDataError("MCM comparisons (std, range) need a scalar phi")
    if normalization is None:
        normalization = {"pcm": "pairs", "bcm": "groups"}.get(kind, "none")
    if version not in ("group", "counterfactual"):
        raise InvalidArgumentError(f"version must be 'group' or 'counterfactual', got {version!r}")
    if version == "counterfactual" and source is None:
        raise InputDataError("a counterfactual metric needs source= (the source example / "
                             "template id of each row)")
    data = _prepare(y, groups, pred, prob, source, phi_f)
    rng = np.random.default_rng(defaults.seed if seed is None else seed)
    n_per_group = data.groups.sum(axis=0)
    info = dict(info or {})
    info.update(generalized=kind, version=version, phi=phi_f.name, d=d,
                normalization=normalization, background=background if kind in ("bcm", "vbcm")
                else None)
    q = None if ci_prob is None else tail_probabilities(ci_prob)
    pairs_df = None
    if version == "group":
        value, scores, comps, pvals = _group_eval(kind, data, phi_f, d, background,
                                                  normalization)
        scal = np.array([s if np.ndim(s) == 0 else np.nan for s in scores], float)
        by = pd.DataFrame({"n": n_per_group, "score": scal}, index=pd.Index(data.names,
                                                                          name="group"))
        if comps is not None:
            by["comparison"] = comps
        if pvals is not None:
            pairs = _pair_list(data.names, COMPARISONS[d][1])
            pairs_df = pd.DataFrame({"group_a": [data.names[i] for i, _ in pairs],
                                     "group_b": [data.names[j] for _, j in pairs],
                                     "value": pvals})
        lo = hi = np.nan
        if q is not None and n_boot:
            n = len(data.y)
            bv, bs, bc, bp = [], [], [], []
            for _ in range(n_boot):
                rows = bootstrap_indices(rng, n)
                v, s, c, p = _group_eval(kind, data, phi_f, d, background, normalization, rows)
                bv.append(v)
                bs.append([x if np.ndim(x) == 0 else np.nan for x in s])
                bc.append(c if c is not None else [np.nan] * len(s))
                bp.append(p if p is not None else [np.nan])
            bv, bs, bc, bp = map(lambda a: np.asarray(a, float), (bv, bs, bc, bp))
            if kind != "vbcm":
                lo, hi = _nan(np.nanquantile, bv, q)
            by["score_lower"], by["score_upper"] = _nan(np.nanquantile, bs, q, axis=0)
            if comps is not None:
                by["comparison_lower"], by["comparison_upper"] = _nan(np.nanquantile, bc, q, axis=0)
            if pairs_df is not None:
                pairs_df["lower"], pairs_df["upper"] = _nan(np.nanquantile, bp, q, axis=0)
            info["ci_method"] = f"percentile bootstrap over examples, {n_boot} resamples"
        all_rows = np.arange(len(data.y))
        overall = _phi(phi_f, data, all_rows)
        overall = float(overall) if np.ndim(overall) == 0 else np.nan
    else:
        cf_average = _check_cf_average(cf_average)
        sums = _cf_eval(kind, data, phi_f, d, background, normalization, cf_average, seed)
        v, g, p = sums.pooled()
        info["cf_average"] = cf_average
        if phi_f.kind == "set" and cf_average == "combinations":
            info["cf_note"] = (f"set-valued {phi_f.name}: each group's whole set of rows in a "
                               "source is compared; combinations do not apply")
        value = np.nan if kind == "vbcm" else float(v)
        col = "comparison" if kind in ("bcm", "vbcm") else "score"
        by = pd.DataFrame({"n": n_per_group, col: g}, index=pd.Index(data.names, name="group"))
        if p is not None:
            pairs = _pair_list(data.names, COMPARISONS[d][1])
            pairs_df = pd.DataFrame({"group_a": [data.names[i] for i, _ in pairs],
                                     "group_b": [data.names[j] for _, j in pairs],
                                     "value": p})
        info.update(sources=len(sums.value), sources_skipped=sums.skipped,
                    evaluations=int(sums.count.sum()))
        if cf_average == "combinations" and phi_f.kind != "set":
            info.update(sources_sampled=sums.sampled,
                        combination_seed=defaults.seed if seed is None else seed)
        lo = hi = np.nan
        if q is not None and n_boot:
            idx = bootstrap_indices(rng, len(sums.value), n_boot)
            bv, bg, bp = sums.pooled(idx)
            if kind != "vbcm":
                lo, hi = np.quantile(bv, q)
            by[f"{col}_lower"], by[f"{col}_upper"] = _nan(np.nanquantile, bg, q, axis=0)
            if pairs_df is not None:
                pairs_df["lower"], pairs_df["upper"] = np.quantile(bp, q, axis=0)
            info["ci_method"] = (f"percentile bootstrap over source examples (each with its "
                                 f"evaluations), {n_boot} resamples")
        overall = np.nan
    if phi_f.kind == "scalar" and "score" in by:
        by["note"] = np.where(by["n"] == 0, "no examples in the group",
                              np.where(by["score"].isna(), f"{phi_f.name} undefined: the "
                                       "group lacks the examples it needs (e.g. one class "
                                       "only)", ""))
        bad = [str(i) for i in by.index[by["note"] != ""]]
        if bad and kind != "vbcm" and not np.isfinite(value):
            info["note"] = f"aggregate undefined: {phi_f.name} undefined for {', '.join(bad)}"
    scal = by["score"] if "score" in by else pd.Series(dtype=float)
    diff = float(scal.max() - scal.min()) if scal.notna().any() else np.nan
    return FairnessResult(name=name or f"{version} {kind.upper()}({phi_f.name}, {d})",
                          value=value, by_group=by, pairs=pairs_df, overall=overall,
                          difference=diff, lower=float(lo), upper=float(hi), ci_prob=ci_prob,
                          info=info)


def pcm(y, groups, *, phi: str, d: str = "abs_difference", normalization="pairs", **kw
        ) -> FairnessResult:
    """Pairwise Comparison Metric: sum of d over group pairs / N (default N = #pairs).

    Parameters
    ----------
    y : array of bool
        Gold labels.
    groups : DataFrame of bool or categorical Series
        Group membership.
    phi : str
        Scoring function (see :data:`SCORING_FUNCTIONS`).
    d : str
        Comparison (see :data:`COMPARISONS`); non-commutative ones need exactly two groups.
    normalization : {"pairs", "groups", "none"} or float
        N: number of pairs (corrected), number of groups, or 1.
    **kw
        ``pred``, ``prob``, ``version`` ("group" / "counterfactual"), ``source`` (source
        example id per row, counterfactual), ``cf_average`` (see :func:`compute_metric`),
        ``ci_prob``, ``n_boot``, ``seed``, ``name``.
    """
    return _run("pcm", kw.pop("name", None), y, groups, phi=phi, d=d,
                normalization=normalization, **kw)


def bcm(y, groups, *, phi: str, d: str = "abs_difference", background: str = "all",
        normalization="groups", **kw) -> FairnessResult:
    """Background Comparison Metric: sum over groups of d(phi(background), phi(group)) / N.

    `background` is ``"all"`` (every example) or ``"rest"`` (examples outside the group).
    Other arguments as :func:`pcm`.
    """
    return _run("bcm", kw.pop("name", None), y, groups, phi=phi, d=d, background=background,
                normalization=normalization, **kw)


def vbcm(y, groups, *, phi: str, d: str = "abs_difference", background: str = "rest",
         **kw) -> FairnessResult:
    """Vector-valued BCM: the per-group d(phi(background), phi(group)), in ``by_group``."""
    return _run("vbcm", kw.pop("name", None), y, groups, phi=phi, d=d, background=background,
                **kw)


def mcm(y, groups, *, phi: str, d: str = "std", **kw) -> FairnessResult:
    """Multi-group Comparison Metric: d(phi(S_1), ..., phi(S_T)) with d in std / range."""
    return _run("mcm", kw.pop("name", None), y, groups, phi=phi, d=d, **kw)


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class NamedMetric:
    """A metric from the literature as a parametrisation of a generalized metric.

    Attributes
    ----------
    name : str
        Short name (registry key).
    title : str
    generalized : {"pcm", "bcm", "vbcm", "mcm"}
    version : {"group", "counterfactual"}
    phi, d : str
    background : {"all", "rest"} or None
    normalization : str or None
    source : str
        Who defined it.
    description : str
        What it measures, and the normalisation remark of Czarnowska et al. where relevant.
    two_groups_only : bool
        Defined for two groups only (non-commutative d).
    code : {"equal", "differs", "absent"}
        Relation to the authors' code of Czarnowska et al. (2021),
        amazon-research/generalized-fairness-metrics: the value of one of its metric classes
        (checked to 1e-9 on synthetic data in ``tests/test_generalized.py``), a different
        value by a named choice, or no class computes it.
    code_note : str
        Which class, and the choice where the value differs.
    """

    name: str
    title: str
    generalized: str
    version: str
    phi: str
    d: str
    background: str | None
    normalization: str | None
    source: str
    description: str
    two_groups_only: bool = False
    code: str = "absent"
    code_note: str = "no class of the authors' code computes it"


_M = NamedMetric
METRICS: dict[str, NamedMetric] = {m.name: m for m in [
    _M("fped", "False Positive Equality Difference (original)", "bcm", "group", "fpr",
       "abs_difference", "all", "none", "Dixon et al. 2018",
       "sum over groups of |FPR(all) - FPR(group)|; no normalisation, so it grows with the "
       "number of groups (Czarnowska et al. 2021: incorrectly normalised)",
       code="equal",
       code_note="FPED, positive class"),
    _M("fped*", "False Positive Equality Difference (corrected)", "bcm", "group", "fpr",
       "abs_difference", "all", "groups", "Czarnowska et al. 2021",
       "FPED divided by the number of groups",
       code="equal",
       code_note="FixedFPED, positive class"),
    _M("fned", "False Negative Equality Difference (original)", "bcm", "group", "fnr",
       "abs_difference", "all", "none", "Dixon et al. 2018",
       "sum over groups of |FNR(all) - FNR(group)|; no normalisation",
       code="equal",
       code_note="FNED, positive class"),
    _M("fned*", "False Negative Equality Difference (corrected)", "bcm", "group", "fnr",
       "abs_difference", "all", "groups", "Czarnowska et al. 2021",
       "FNED divided by the number of groups",
       code="equal",
       code_note="FixedFNED, positive class"),
    _M("avggf", "Average Group Fairness", "bcm", "group", "probs", "wasserstein1", "all",
       "groups", "Huang et al. 2020",
       "mean over groups of W1 between the positive-class probabilities of all examples and "
       "of the group (targets demographic parity)",
       code="equal",
       code_note="AverageGroupFairness: each group against all rows, as the paper reads"),
    _M("pos_avggf", "Average Group Fairness, true class positive (TC)", "bcm", "group",
       "probs_pos", "wasserstein1", "all", "groups", "Czarnowska et al. 2021",
       "AvgGF on gold positives only (targets equality of opportunity)",
       code="differs",
       code_note="the paper's reading (each group against all rows, as AvgGF); the authors' "
                 "AverageGroupFairnessOnlyClass compares with the other groups: pos_avggf_code"),
    _M("neg_avggf", "Average Group Fairness, true class negative (TC)", "bcm", "group",
       "probs_neg", "wasserstein1", "all", "groups", "Czarnowska et al. 2021",
       "AvgGF on gold negatives only",
       code="differs",
       code_note="the paper's reading (each group against all rows, as AvgGF); the authors' "
                 "AverageGroupFairnessOnlyClass compares with the other groups: neg_avggf_code"),
    _M("avggf_code", "Average Group Fairness (authors' code: the same as avggf)", "bcm",
       "group", "probs", "wasserstein1", "all", "groups", "Czarnowska et al. 2021, code",
       "avggf: the authors' AverageGroupFairness also compares each group with all examples "
       "(only its TC versions, pos/neg_avggf_code, compare with the other groups)",
       code="equal",
       code_note="AverageGroupFairness: the value of avggf; earlier versions gave this name "
                 "to each group against the other groups, which no class of the authors "
                 "computes"),
    _M("pos_avggf_code", "Average Group Fairness TC positive (authors' code)", "bcm", "group",
       "probs_pos", "wasserstein1", "rest", "groups", "Czarnowska et al. 2021, code",
       "pos_avggf against the other groups (authors' code)",
       code="equal",
       code_note="AverageGroupFairnessOnlyClass, positive class"),
    _M("neg_avggf_code", "Average Group Fairness TC negative (authors' code)", "bcm", "group",
       "probs_neg", "wasserstein1", "rest", "groups", "Czarnowska et al. 2021, code",
       "neg_avggf against the other groups (authors' code)",
       code="equal",
       code_note="AverageGroupFairnessOnlyClass, negative class"),
    _M("fpr_ratio", "FPR Ratio", "vbcm", "group", "fpr", "ratio", "rest", None,
       "Beutel et al. 2019", "per group FPR(group) / FPR(rest); relative, can amplify small "
       "differences between small rates",
       code="equal",
       code_note="FPRRatioBCM, per group (its denominator adds 1e-13; its mean over groups is not "
                 "a metric of the paper and is not computed)"),
    _M("pos_aeg", "Positive Average Equality Gap", "vbcm", "group", "probs_pos", "aeg", "rest",
       None, "Borkan et al. 2019",
       "per group 1/2 - P(background positive scores above group positive); signed; the "
       "positive_aeg of the auc metrics (one definition), here with a bootstrap interval",
       code="equal",
       code_note="AverageEqualityGap, positive class, per group (its mean over groups is "
                 "not computed)"),
    _M("neg_aeg", "Negative Average Equality Gap", "vbcm", "group", "probs_neg", "aeg", "rest",
       None, "Borkan et al. 2019",
       "per group 1/2 - P(background negative scores above group negative); signed; the "
       "negative_aeg of the auc metrics (one definition), here with a bootstrap interval",
       code="equal",
       code_note="AverageEqualityGap, negative class, per group (its mean over groups is "
                 "not computed)"),
    _M("disparity_score", "Disparity Score (original)", "pcm", "group", "f1", "abs_difference",
       None, "groups", "Gaut et al. 2020",
       "sum over group pairs of |F1_i - F1_j| divided by the number of groups (Czarnowska et "
       "al. 2021: incorrectly normalised, should divide by the number of pairs)",
       code="equal",
       code_note="DisparsityScore, positive class"),
    _M("disparity_score*", "Disparity Score (corrected)", "pcm", "group", "f1",
       "abs_difference", None, "pairs", "Czarnowska et al. 2021",
       "mean over group pairs of |F1_i - F1_j|",
       code="equal",
       code_note="FixedDisparsityScore, positive class"),
    _M("tpr_gap", "TPR Gap", "pcm", "group", "tpr", "abs_difference", None, "pairs",
       "Beutel et al. 2017; Prost et al. 2019", "mean over pairs of |TPR_i - TPR_j|",
       code="equal",
       code_note="TPRGapPCM, positive class"),
    _M("tnr_gap", "TNR Gap", "pcm", "group", "tnr", "abs_difference", None, "pairs",
       "Prost et al. 2019", "mean over pairs of |TNR_i - TNR_j|",
       code="equal",
       code_note="TNRGapPCM, positive class"),
    _M("parity_gap", "Parity Gap", "pcm", "group", "accuracy", "abs_difference", None,
       "pairs", "Beutel et al. 2017",
       "mean over pairs of |phi_i - phi_j| with phi(A) = |{x in A: yhat = y}| / |A| as "
       "written in Czarnowska et al.'s Table 2",
       code="differs",
       code_note="the paper's Table 2 (accuracy); the authors' ParityGap uses the "
                 "positive-prediction rate: parity_gap_code"),
    _M("parity_gap_code", "Parity Gap (authors' code)", "pcm", "group", "positive_rate",
       "abs_difference", None, "pairs", "Czarnowska et al. 2021, code",
       "mean over pairs of |phi_i - phi_j| with phi the positive-prediction rate, as the "
       "authors' code computes it (the paper's Table 2 reads accuracy: parity_gap)",
       code="equal",
       code_note="ParityGap, positive class"),
    _M("accuracy_difference", "Accuracy Difference", "pcm", "group", "accuracy", "difference",
       None, "none", "Blodgett & O'Connor 2017", "accuracy_1 - accuracy_2", True),
    _M("tpr_difference", "TPR Difference", "pcm", "group", "tpr", "difference", None, "none",
       "De-Arteaga et al. 2019", "TPR_1 - TPR_2", True),
    _M("f1_difference", "F1 Difference", "pcm", "group", "f1", "difference", None, "none",
       "Stanovsky et al. 2019", "F1_1 - F1_2", True),
    _M("recall_difference", "Recall Difference", "pcm", "group", "recall", "difference",
       None, "none", "Bamman et al. 2019", "recall_1 - recall_2", True),
    _M("f1_ratio", "F1 Ratio", "pcm", "group", "f1", "ratio", None, "none",
       "Webster et al. 2018", "F1_2 / F1_1 (second group over first)", True),
    _M("cfgap", "Counterfactual Token Fairness Gap (as PCM)", "pcm", "counterfactual",
       "mean_prob", "abs_difference", None, "pairs", "Garg et al. 2019",
       "mean over source examples and group pairs of |F(x_i,1) - F(x_j,1)| (converted to a "
       "PCM for templated data, as in Czarnowska et al.)",
       code="equal",
       code_note="CounterfactualFairnessGap; with several terms per group under "
                 "cf_average='combinations' (their default FlattenGroup.RANDOM_MATCH: every "
                 "combination of one term per group, pooled over all sources, 100 sampled above "
                 "100: seeded here, unseeded in their code); the default cf_average='groups' is "
                 "their FlattenGroup.AVERAGE option"),
    _M("pertss", "Perturbation Score Sensitivity (as PCM)", "pcm", "counterfactual",
       "mean_prob_true_class", "abs_difference", None, "pairs", "Prabhakaran et al. 2019",
       "mean over source examples and group pairs of |F(x_i, y) - F(x_j, y)| (gold class)",
       code="equal",
       code_note="PerturbationScoreSensitivity; with several terms per group under "
                 "cf_average='combinations' (their default FlattenGroup.RANDOM_MATCH: every "
                 "combination of one term per group, pooled over all sources, 100 sampled above "
                 "100: seeded here, unseeded in their code); the default cf_average='groups' is "
                 "their FlattenGroup.AVERAGE option"),
    _M("pertsd", "Perturbation Score Deviation", "mcm", "counterfactual",
       "mean_prob_true_class", "std", None, None, "Prabhakaran et al. 2019",
       "mean over source examples of the std of the gold-class probability across groups",
       code="equal",
       code_note="PerturbationScoreDeviation; with several terms per group under "
                 "cf_average='combinations' (their default FlattenGroup.RANDOM_MATCH: every "
                 "combination of one term per group, pooled over all sources, 100 sampled above "
                 "100: seeded here, unseeded in their code); the default cf_average='groups' is "
                 "their FlattenGroup.AVERAGE option"),
    _M("pertsr", "Perturbation Score Range", "mcm", "counterfactual", "mean_prob_true_class",
       "range", None, None, "Prabhakaran et al. 2019",
       "mean over source examples of max - min of the gold-class probability across groups",
       code="equal",
       code_note="PerturbationScoreRange; with several terms per group under "
                 "cf_average='combinations' (their default FlattenGroup.RANDOM_MATCH: every "
                 "combination of one term per group, pooled over all sources, 100 sampled above "
                 "100: seeded here, unseeded in their code); the default cf_average='groups' is "
                 "their FlattenGroup.AVERAGE option"),
    _M("avgif", "Average Individual Fairness", "pcm", "counterfactual", "probs",
       "wasserstein1", None, "pairs", "Huang et al. 2020",
       "mean over source examples and group pairs of W1 between the groups' positive-class "
       "probabilities",
       code="equal",
       code_note="AverageIndividualFairness (FlattenGroup.NONE: W1 between each group's whole set "
                 "of term probabilities in a source), in every cf_average mode"),
    _M("avg_score_difference", "Average Score Difference", "pcm", "counterfactual",
       "mean_prob", "difference", None, "none", "Huang et al. 2020",
       "mean over source examples of mean F(x,1) in group 1 minus group 2", True),
]}


#: Paper reading -> authors' code reading, where Czarnowska et al.'s text and code differ.
PARITY_CODE = {"parity_gap": "parity_gap_code", "pos_avggf": "pos_avggf_code",
               "neg_avggf": "neg_avggf_code"}


def list_metrics() -> pd.DataFrame:
    """Return the registry as a table."""
    return pd.DataFrame([m.__dict__ for m in METRICS.values()]).set_index("name")


def compute_metric(name: str, y, groups, *, pred=None, prob=None, source=None,
                   ci_prob: float | None = None, n_boot: int = 200,
                   seed: int | None = None, cf_average: str = "groups") -> FairnessResult:
    """Compute a named metric of :data:`METRICS`.

    Parameters
    ----------
    name : str
        Registry name (e.g. ``"fped"``, ``"fped*"``, ``"avgif"``).
    y, groups, pred, prob, source, ci_prob, n_boot
        As :func:`pcm`.
    seed : int, optional
        Seeds the bootstrap and the sample of term combinations (default: the package seed).
    cf_average : {"groups", "combinations"}
        Counterfactual metrics with several terms per group: score each group on all its
        terms (default; the authors' ``FlattenGroup.AVERAGE`` option), or average over the
        combinations of one term per group pooled over all sources (the authors' default;
        above 100 combinations in a source a sample of 100 drawn with `seed`, see
        :func:`term_combinations`; a group's k-th term is its k-th row of the source, in
        data order). ``"terms"`` is an alias of ``"combinations"``. AvgIF compares the groups'
        sets of terms in both.
    """
    try:
        m = METRICS[name.lower()]
    except KeyError:
        raise InvalidArgumentError(
            f"unknown metric {name!r}; choose from {', '.join(METRICS)}") from None
    kw = dict(pred=pred, prob=prob, version=m.version, source=source, ci_prob=ci_prob,
              n_boot=n_boot, seed=seed, cf_average=cf_average,
              info={"title": m.title, "source": m.source, "description": m.description})
    if m.generalized in ("bcm", "vbcm"):
        kw["background"] = m.background
    if m.generalized in ("pcm", "bcm"):
        kw["normalization"] = m.normalization
    return _run(m.generalized, m.name, y, groups, phi=m.phi, d=m.d, **kw)


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _fairness_html(r) -> str:
    """HTML card of a :class:`~bayesbias.classifier.FairnessResult`."""
    by = r.by_group.reset_index()
    tables = [("per group", by)]
    if r.pairs is not None:
        tables.append(("per pair", r.pairs))
    ci = (f", {r.ci_prob:.0%} bootstrap interval [{r.lower:.4g}, {r.upper:.4g}]"
          if r.ci_prob and np.isfinite(r.lower) else "")
    return card(f"Fairness metric: {r.name}", f"{len(r.by_group)} groups",
                f"value {format_number(r.value, '.4g')}{ci}", tables=tables)
