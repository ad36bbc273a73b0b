"""Bayesian group rates of a classifier: every small and intersectional group kept.

:class:`GroupRates` takes fairlearn's arguments (``y_true``, ``y_pred``,
``sensitive_features``, ``metrics``) and gives a posterior for every cell (one combination of
the sensitive features' levels) and metric, pooled across cells by
:mod:`bayesbias.models.group_rates`. Everything derived (differences, ratios, equalized odds,
demographic parity, differential fairness, the interaction share) is computed on the same
draws, so each has an interval::

    from bayesbias.datasets import adult_llama
    from bayesbias.groups import GroupRates

    t = adult_llama()
    g = GroupRates(t["label"], t["pred"], sensitive_features=t[["race", "sex", "age"]],
                   metrics=["tpr", "fpr", "error_rate"], pos_label="greater than 50K",
                   bins={"age": [25, 65]})
    g.by_group; g.overall; g.equalized_odds(); g.interaction_share()
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import defaults
from ..errors import InputDataError, InvalidArgumentError
from ..models.group_rates import (
    DENOMINATORS,
    METRICS,
    GroupSpec,
    cell_counts,
    exact_posterior,
    fit_counts,
    load_group_spec,
    metric_name,
)
from ..models.plots import _save, new_figure
from ..validation import validate_choice, validate_ci_prob

__all__ = ["GroupRates", "Comparison", "prepare_groups", "prepare_terms", "bin_column",
           "binary_labels"]

log = logging.getLogger(__name__)

MISSING_LEVEL = "missing"
#: Interaction share below which the harm counts as additive (a region of practical
#: equivalence fixed a priori, not tuned; see docs/groups.md and
#: benchmarks/groups_interaction_sim.py for its false-detection rate).
INTERACTION_FLOOR = 0.05
_SHOW_ROWS = 10


# --------------------------------------------------------------------------------------
# input

def _rows(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    shown = ", ".join(map(str, idx[:_SHOW_ROWS]))
    return shown + (f", ... ({idx.size} rows)" if idx.size > _SHOW_ROWS else "")


def binary_labels(values, name: str, pos_label=None, allowed=None) -> tuple[np.ndarray, list]:
    """Return `values` as booleans (True = positive) and the distinct values seen.

    Without `pos_label` the values must be 0/1 or booleans; with it, at most two distinct
    values (one of them, if present, `pos_label`). Missing values are refused with their
    row numbers (0-based positions).
    """
    s = pd.Series(np.asarray(values, dtype=object) if not isinstance(values, pd.Series)
                  else values.to_numpy(dtype=object))
    miss = s.isna().to_numpy()
    if miss.any():
        raise InputDataError(f"{name}: missing values in rows {_rows(miss)}")
    if s.map(type).eq(str).any():
        s = s.map(lambda v: v.strip() if isinstance(v, str) else v)
    seen = sorted(pd.unique(s).tolist(), key=str)
    if pos_label is not None:
        pos = pos_label.strip() if isinstance(pos_label, str) else pos_label
        values_ok = allowed if allowed is not None else seen
        if len(seen) > 2 or (allowed is not None and not set(seen) <= set(allowed)):
            raise InputDataError(f"{name}: expected two classes ({', '.join(map(repr, values_ok))}"
                                 f"), got {', '.join(map(repr, seen[:10]))}")
        return (s == pos).to_numpy(), seen
    ok = {0, 1}
    bad = [v for v in seen if not (isinstance(v, (bool, int, float, np.integer, np.floating,
                                                  np.bool_)) and v in ok)]
    if bad:
        raise InputDataError(f"{name}: labels must be 0/1 or True/False (or name the positive "
                             f"class: pos_label / --positive), got {', '.join(map(repr, bad[:5]))}")
    return s.astype(float).to_numpy() == 1.0, seen


def bin_column(values, edges, name: str) -> tuple[np.ndarray, list[str]]:
    """Bin a numeric column at `edges` (left-closed bands): codes and labels.

    ``edges=[25, 65]`` gives ``<25``, ``25-64`` (whole numbers) or ``[25, 65)``, ``>=65``.
    Missing values get code -1.
    """
    x = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
    raw = pd.Series(values)
    bad = np.isnan(x) & raw.notna().to_numpy()
    if bad.any():
        raise InputDataError(f"{name}: --bins needs numbers; not numbers in rows {_rows(bad)}")
    edges = [float(e) for e in edges]
    if not edges or any(not np.isfinite(e) for e in edges) or np.any(np.diff(edges) <= 0):
        raise InvalidArgumentError(f"bins for {name}: give increasing finite edges, got {edges}")
    whole = bool(np.all(np.isnan(x) | (x == np.round(x)))) and all(e == round(e) for e in edges)

    def f(v):
        return f"{int(v)}" if whole else f"{v:g}"

    labels = [f"<{f(edges[0])}"]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        labels.append(f"{f(lo)}-{f(hi - 1)}" if whole else f"[{f(lo)}, {f(hi)})")
    labels.append(f">={f(edges[-1])}")
    codes = np.searchsorted(np.asarray(edges), x, side="right")
    codes = np.where(np.isnan(x), -1, codes)
    return codes, labels


def _as_frame(sensitive_features, rows: int) -> pd.DataFrame:
    sf = sensitive_features
    if isinstance(sf, pd.DataFrame):
        frame = sf.reset_index(drop=True)
    elif isinstance(sf, pd.Series):
        frame = sf.reset_index(drop=True).to_frame(sf.name if sf.name is not None
                                                   else "sensitive_feature_0")
    elif isinstance(sf, dict):
        frame = pd.DataFrame({k: np.asarray(v) for k, v in sf.items()})
    else:
        arr = np.asarray(sf, dtype=object)
        arr = arr[:, None] if arr.ndim == 1 else arr
        frame = pd.DataFrame(arr, columns=[f"sensitive_feature_{i}" for i in range(arr.shape[1])])
    if frame.shape[1] == 0:
        raise InvalidArgumentError("sensitive_features: no columns")
    if len(frame) != rows:
        raise InputDataError(f"sensitive_features has {len(frame)} rows, y_true has {rows}")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def prepare_groups(sensitive_features, rows: int, bins=None, missing: str = "error"):
    """Return each row's cell, the levels per feature and the feature names.

    Parameters
    ----------
    sensitive_features : DataFrame, Series, dict or array
    rows : int
    bins : dict, optional
        ``{column: edges}`` for numeric columns (left-closed bands).
    missing : {"error", "level"}
        Missing values in a sensitive column: refuse with the row numbers, or make them an
        explicit level ``"missing"``.
    """
    validate_choice(missing, ("error", "level"), "missing")
    frame = _as_frame(sensitive_features, rows)
    bins = dict(bins or {})
    unknown = [c for c in bins if c not in frame.columns]
    if unknown:
        raise InvalidArgumentError(f"bins: no sensitive column {', '.join(map(repr, unknown))}; "
                                   f"columns: {', '.join(frame.columns)}")
    codes, levels = [], []
    for col in frame.columns:
        values = frame[col]
        if col in bins:
            c, labels = bin_column(values, bins[col], col)
            miss = c < 0
        else:
            # factorize first (vectorised), then strip and sort the few distinct levels
            raw_codes, uniques = pd.factorize(values, use_na_sentinel=True)
            miss = raw_codes < 0
            stripped = [u.strip() if isinstance(u, str) else u for u in uniques]
            labels = sorted(set(stripped), key=lambda v: (isinstance(v, str), v)
                            if not isinstance(v, str) else (True, v))
            lookup = {v: i for i, v in enumerate(labels)}
            to_level = np.array([lookup[v] for v in stripped] + [-1], dtype=np.int64)
            c = to_level[raw_codes]  # code -1 (missing) picks the appended -1
            labels = [str(v) for v in labels]
        if miss.any():
            if missing == "error":
                raise InputDataError(f"sensitive column {col!r}: missing values in rows "
                                     f"{_rows(miss)} (pass missing='level' / --missing level to "
                                     f"keep them as a level {MISSING_LEVEL!r})")
            labels = [*labels, MISSING_LEVEL]
            c = np.where(miss, len(labels) - 1, c)
        codes.append(np.asarray(c, dtype=np.int64))
        levels.append(labels)
    shape = tuple(len(lv) for lv in levels)
    cell = np.ravel_multi_index(tuple(codes), shape) if rows else np.zeros(0, dtype=np.int64)
    return cell, levels, list(frame.columns)


def prepare_terms(term, cell: np.ndarray, cell_names: list[str], shared: str = "error",
                  name: str = "term"):
    """Return each row's term, each term's cell and the terms' names (sorted by cell, name).

    A term is nested in one cell. A label found in two cells is refused, naming the label
    and the cells (``shared="error"``), or with ``shared="split"`` it is a different term in
    each cell, named ``"label [cell]"``. Missing terms are refused with their row numbers.
    """
    validate_choice(shared, ("error", "split"), "shared_terms")
    raw = term.to_numpy(dtype=object) if isinstance(term, pd.Series) else \
        np.asarray(term, dtype=object)
    if raw.ndim != 1 or len(raw) != len(cell):
        raise InputDataError(f"{name}: {len(raw)} values, y_true has {len(cell)} rows")
    s = pd.Series(raw)
    miss = s.isna().to_numpy() | s.map(lambda v: isinstance(v, str) and not v.strip()) \
        .to_numpy(dtype=bool)
    if miss.any():
        raise InputDataError(f"{name}: missing or empty terms in rows {_rows(miss)}")
    codes, uniques = pd.factorize(s)
    labels = np.array([str(u).strip() for u in uniques], dtype=object)
    # (cell, label) pairs; a label stripped to the same text is one term
    label_codes, label_names = pd.factorize(pd.Series(labels[codes]))
    pair = cell.astype(np.int64) * len(label_names) + label_codes
    pairs = np.unique(pair)
    p_cell, p_label = pairs // len(label_names), pairs % len(label_names)
    count = np.bincount(p_label, minlength=len(label_names))
    if shared == "error" and np.any(count > 1):
        bad = np.flatnonzero(count > 1)
        parts = [f"{label_names[b]!r} in " + ", ".join(
            repr(cell_names[c]) for c in p_cell[p_label == b]) for b in bad[:5]]
        more = f" and {bad.size - 5} more" if bad.size > 5 else ""
        raise InputDataError(
            f"{name}: a term must be nested in one group; found in several: "
            f"{'; '.join(parts)}{more} (if the same label means a different term in each "
            f"group, pass shared_terms='split' / --shared-terms split)")
    names = [str(label_names[lb]) if count[lb] == 1 or shared == "error"
             else f"{label_names[lb]} [{cell_names[c]}]" for c, lb in zip(p_cell, p_label,
                                                                           strict=True)]
    order = np.lexsort((np.array(names, dtype=object).astype(str), p_cell))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    row_term = rank[np.searchsorted(pairs, pair)]
    return row_term, p_cell[order].astype(np.int64), [names[i] for i in order]


# --------------------------------------------------------------------------------------
# summaries of draws

def _eti(draws: np.ndarray, ci_prob: float, axis: int = 0):
    lo, hi = np.quantile(draws, [(1 - ci_prob) / 2, (1 + ci_prob) / 2], axis=axis)
    return lo, hi


def _summary(draws: np.ndarray, ci_prob: float) -> dict:
    d = draws[np.isfinite(draws)]
    if d.size == 0:
        return {"mean": np.nan, "lower": np.nan, "upper": np.nan}
    lo, hi = _eti(d, ci_prob)
    return {"mean": float(d.mean()), "lower": float(lo), "upper": float(hi)}


def _verdict(lower: float, upper: float, delta: float) -> str:
    if not np.isfinite(lower):
        return "no comparison"
    if lower > delta:
        return f"gap larger than {delta:g}"
    if upper < delta:
        return f"within {delta:g}"
    return "not enough evidence"


@dataclass
class Comparison:
    """A derived quantity of the cell rates: its draws and the verdict against ``delta``."""

    name: str
    metric: str
    draws: np.ndarray
    delta: float | None
    ci_prob: float
    drivers: str = ""

    def row(self) -> dict:
        """Return one table row: estimate, interval, P(> delta), verdict, drivers."""
        s = _summary(self.draws, self.ci_prob)
        row = {"quantity": self.name, "metric": self.metric, **s}
        if self.delta is not None:
            ok = np.isfinite(self.draws)
            row["delta"] = self.delta
            row["p_above_delta"] = float((self.draws[ok] > self.delta).mean()) if ok.any() \
                else np.nan
            row["verdict"] = _verdict(s["lower"], s["upper"], self.delta)
        row["drivers"] = self.drivers
        return row


def _drivers(arg_hi: np.ndarray, arg_lo: np.ndarray, names: list[str]) -> str:
    def top(arg):
        counts = np.bincount(arg, minlength=len(names))
        i = int(counts.argmax())
        return f"{names[i]} ({counts[i] / arg.size:.0%})"

    return f"high: {top(arg_hi)}; low: {top(arg_lo)}"


# --------------------------------------------------------------------------------------
# the result

class GroupRates:
    """Posterior rates of a classifier per group, with fairlearn's argument names.

    Parameters
    ----------
    y_true : array-like
        True labels: 0/1, booleans, or two classes with `pos_label`.
    y_pred : array-like, optional
        Predicted labels (same coding). Or give `y_score` and `threshold`.
    sensitive_features : DataFrame, Series, dict or array
        One column per sensitive feature; a cell is one combination of their levels.
    metrics : sequence of str
        Names of :data:`bayesbias.models.group_rates.METRICS` (``tpr``, ``fpr``,
        ``selection_rate``, ``error_rate``, ...) or fairlearn-style aliases.
    y_score, threshold : optional
        Scores in [0, 1]; a row is predicted positive when ``score >= threshold``.
    pos_label : optional
        The positive class when labels are not 0/1 (e.g. ``"greater than 50K"``).
    bins : dict, optional
        ``{column: edges}`` binning numeric sensitive columns (e.g. ``{"age": [25, 65]}``).
    missing : {"error", "level"}
        Missing sensitive values: refuse with row numbers, or a level ``"missing"``.
    structure : {"full", "additive", "independent"}, optional
        Default: the spec's (``full``).
    spec : GroupSpec or path, optional
        Priors and structure (default ``models/groups/group_rates.toml``).
    weights : array-like, optional
        A weight per cell (in :attr:`cells` order) for the marginal and overall rates;
        default: each metric's observed cell sizes (post-stratification).
    ci_prob : float
        Probability of every (equal-tailed) interval.
    draws, tune, chains, seed : sampler settings (``draws`` per chain).
    term : array-like, optional
        A term per row nested in its cell (identity terms within a group, e.g. "muslim",
        "christian" within religion). Each term's logit is its cell's plus a deviation
        ``Normal(0, sd_term)``; the counts are then per term, and a cell's rate is its terms'
        rates post-stratified by `term_weights` (:attr:`by_term`, :meth:`term_sd`).
    term_weights : dict or array-like, optional
        A weight per term (name -> weight, or in :attr:`terms` order) for the cells' rates;
        default: each metric's observed term sizes.
    shared_terms : {"error", "split"}
        A term label found in two cells: refused, naming it and the cells (default); or a
        different term in each cell (named ``"label [cell]"``).
    """

    ci_kind = "eti"

    def __init__(self, y_true, y_pred=None, *, sensitive_features, metrics=("selection_rate",),
                 y_score=None, threshold: float = 0.5, pos_label=None, bins=None,
                 missing: str = "error", structure: str | None = None, spec=None,
                 weights=None, ci_prob: float = 0.9, draws: int = 1000, tune: int = 1000,
                 chains: int = 4, seed: int | None = None, term=None, term_weights=None,
                 shared_terms: str = "error"):
        self.ci_prob = validate_ci_prob(ci_prob)
        self.seed = defaults.seed if seed is None else int(seed)
        if isinstance(metrics, str):
            metrics = [metrics]
        self.metrics = list(dict.fromkeys(metric_name(m) for m in metrics))
        if not self.metrics:
            raise InvalidArgumentError("metrics: give at least one metric")
        y_arr = y_true.to_numpy() if isinstance(y_true, pd.Series) else np.asarray(y_true)
        rows = len(y_arr)
        if rows == 0:
            raise InputDataError("y_true: no rows")
        y, classes = binary_labels(y_arr, "y_true", pos_label)
        if (y_pred is None) == (y_score is None):
            raise InvalidArgumentError("give exactly one of y_pred and y_score")
        if y_pred is not None:
            p_arr = y_pred.to_numpy() if isinstance(y_pred, pd.Series) else np.asarray(y_pred)
            if len(p_arr) != rows:
                raise InputDataError(f"y_pred has {len(p_arr)} rows, y_true has {rows}")
            allowed = None
            if pos_label is not None:
                allowed = sorted({*classes, pos_label.strip() if isinstance(pos_label, str)
                                  else pos_label}, key=str)
            pred, _ = binary_labels(p_arr, "y_pred", pos_label, allowed=allowed)
        else:
            score = pd.to_numeric(pd.Series(np.asarray(y_score)), errors="coerce").to_numpy(float)
            if len(score) != rows:
                raise InputDataError(f"y_score has {len(score)} rows, y_true has {rows}")
            bad = ~np.isfinite(score)
            if bad.any():
                raise InputDataError(f"y_score: missing or non-numeric scores in rows "
                                     f"{_rows(bad)}")
            out = (score < 0) | (score > 1)
            if out.any():
                raise InputDataError(f"y_score: scores must lie in [0, 1]; outside in rows "
                                     f"{_rows(out)} (e.g. {score[out][0]:g}); pass y_pred "
                                     "(thresholded labels) for other scores")
            if not 0 <= threshold <= 1:
                raise InvalidArgumentError(f"threshold must lie in [0, 1], got {threshold}")
            pred = score >= threshold
        cell, self.levels, self.features = prepare_groups(sensitive_features, rows, bins,
                                                          missing)
        self.shape = tuple(len(lv) for lv in self.levels)
        self.n_cells = int(np.prod(self.shape))
        self.rows = rows
        self.k, self.n = cell_counts(y, pred, cell, self.n_cells, self.metrics)
        self.rows_per_cell = np.bincount(cell, minlength=self.n_cells)
        self.spec: GroupSpec = load_group_spec(spec, structure=structure)
        self.structure = self.spec.structure
        self.cell_names = [" | ".join(c) for c in self._cell_tuples()]
        self._set_weights(weights)
        self.terms: list[str] = []
        terms = None
        if term is not None:
            self.term_name = str(term.name) if isinstance(term, pd.Series) and \
                term.name is not None else "term"
            row_term, self.term_cell, self.terms = prepare_terms(
                term, cell, self.cell_names, shared_terms, self.term_name)
            self.term_k, self.term_n = cell_counts(y, pred, row_term, len(self.terms),
                                                   self.metrics)
            terms = (self.term_cell, self.term_k, self.term_n)
            self._set_term_weights(term_weights)
        elif term_weights is not None:
            raise InvalidArgumentError("term_weights needs term")
        self.notes = self._notes()
        self.fit_info = fit_counts(self.k, self.n, self.shape, self.spec, draws=draws,
                                   tune=tune, chains=chains, seed=self.seed, terms=terms)
        p = self.fit_info["p"]
        self._p = p.reshape(-1, *p.shape[2:])  # (samples, metrics, cells)
        if terms is not None:
            pt = self.fit_info["p_term"]
            self._p_term = pt.reshape(-1, *pt.shape[2:])  # (samples, metrics, terms)
            self._p = self._cells_from_terms()
        if self.fit_info.get("divergences"):
            self.notes.append(f"{self.fit_info['divergences']} divergent transitions: the "
                              "sampler may not have explored the posterior fully")

    # ------------------------------------------------------------------ layout
    def _cell_tuples(self) -> list[tuple[str, ...]]:
        import itertools

        return list(itertools.product(*self.levels))

    @property
    def index(self) -> pd.MultiIndex | pd.Index:
        """The cells as fairlearn's ``by_group`` indexes them."""
        tuples = self._cell_tuples()
        if len(self.features) == 1:
            return pd.Index([t[0] for t in tuples], name=self.features[0])
        return pd.MultiIndex.from_tuples(tuples, names=self.features)

    def _set_weights(self, weights) -> None:
        if weights is None:
            self.weights = self.n.astype(float)
            self.weighting = "observed cell sizes"
            return
        w = np.asarray(weights, dtype=float)
        if w.shape != (self.n_cells,) or not np.all(np.isfinite(w)) or np.any(w < 0) \
                or w.sum() <= 0:
            raise InvalidArgumentError(f"weights: one finite weight >= 0 per cell ({self.n_cells}"
                                       f" cells, in the order of .by_group), not all zero")
        self.weights = np.broadcast_to(w, self.n.shape).astype(float)
        self.weighting = "user weights"

    def _set_term_weights(self, weights) -> None:
        NT = len(self.terms)
        if weights is None:
            self.term_weights = self.term_n.astype(float)
            self.term_weighting = "observed term sizes"
            return
        if isinstance(weights, dict):
            unknown = [t for t in weights if t not in self.terms]
            if unknown:
                raise InvalidArgumentError(f"term_weights: no term "
                                           f"{', '.join(map(repr, unknown[:5]))}; terms: "
                                           f"{', '.join(self.terms[:12])}")
            lost = [t for t in self.terms if t not in weights]
            if lost:
                raise InvalidArgumentError(f"term_weights: no weight for the terms "
                                           f"{', '.join(map(repr, lost[:5]))}")
            weights = [weights[t] for t in self.terms]
        w = np.asarray(weights, dtype=float)
        if w.shape != (NT,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise InvalidArgumentError(f"term_weights: one finite weight >= 0 per term ({NT} "
                                       "terms, in the order of .terms)")
        self.term_weights = np.broadcast_to(w, self.term_n.shape).astype(float)
        self.term_weighting = "user weights"

    def _cells_from_terms(self) -> np.ndarray:
        """Cell draws post-stratified over their terms (:attr:`term_weights`).

        A cell whose terms all weigh 0 for a metric (none in its denominator) averages its
        terms equally; a cell with no terms (no rows) keeps the model's cell rate (a term
        with deviation 0).
        """
        out = self._p.copy()
        has = np.bincount(self.term_cell, minlength=self.n_cells) > 0
        for i in range(len(self.metrics)):
            out[:, i][:, has] = (self._p_term[:, i] @ self._term_matrix(i))[:, has]
        return out

    def _term_matrix(self, i: int) -> np.ndarray:
        """(terms, cells): each term's share of its cell's rate for metric `i`."""
        w = self.term_weights[i].copy()
        tot = np.bincount(self.term_cell, weights=w, minlength=self.n_cells)
        w[tot[self.term_cell] == 0] = 1.0
        tot = np.bincount(self.term_cell, weights=w, minlength=self.n_cells)
        a = np.zeros((len(self.terms), self.n_cells))
        a[np.arange(len(self.terms)), self.term_cell] = w / tot[self.term_cell]
        return a

    def _notes(self) -> list[str]:
        def listed(names: list[str]) -> str:
            more = f" and {len(names) - 8} more" if len(names) > 8 else ""
            return ", ".join(names[:8]) + more

        notes = []
        if self.terms:
            for i, m in enumerate(self.metrics):
                empty = np.flatnonzero(self.term_n[i] == 0)
                if empty.size:
                    names = listed([self.terms[t] for t in empty])
                    notes.append(f"{m}: {empty.size} term(s) have no "
                                 f"{DENOMINATORS[METRICS[m][0]]} ({names}); their {m} "
                                 "is the model's (their cell's rate and sd_term)")
        for i, m in enumerate(self.metrics):
            empty = np.flatnonzero(self.n[i] == 0)
            if empty.size:
                names = listed([self.cell_names[c] for c in empty])
                notes.append(f"{m}: {empty.size} cell(s) have no {DENOMINATORS[METRICS[m][0]]} "
                             f"({names}); their {m} is undefined from data and the "
                             f"model's prior (pooled through the other cells) answers; they "
                             f"are left out of the comparisons")
            if self.n[i].sum() == 0:
                notes.append(f"{m}: no {DENOMINATORS[METRICS[m][0]]} at all: every value is "
                             "the prior's")
        if self.n_cells == 1:
            notes.append("one group only: rates, but no comparison between groups")
        return notes

    # ------------------------------------------------------------------ cells
    def _metric(self, metric: str) -> int:
        m = metric_name(metric)
        if m not in self.metrics:
            raise InvalidArgumentError(f"metric {m!r} was not fitted; fitted: "
                                       f"{', '.join(self.metrics)}")
        return self.metrics.index(m)

    def draws(self, metric: str) -> np.ndarray:
        """Posterior draws of every cell's rate: (samples, cells)."""
        return self._p[:, self._metric(metric)]

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per metric and cell with n, k, raw rate, mean and interval.

        ``prior_driven`` marks cells with n = 0 (the prior's answer). With structure
        ``independent`` mean, mode and interval are the exact Beta posterior's.
        """
        from scipy import stats

        tuples = self._cell_tuples()
        frames = []
        lo_q, hi_q = (1 - self.ci_prob) / 2, (1 + self.ci_prob) / 2
        for i, m in enumerate(self.metrics):
            n, k = self.n[i], self.k[i]
            d = pd.DataFrame(tuples, columns=self.features)
            d.insert(0, "metric", m)
            d["n"], d["k"] = n, k
            with np.errstate(invalid="ignore", divide="ignore"):
                d["raw"] = np.where(n > 0, k / np.maximum(n, 1), np.nan)
            if self.structure == "independent" and self.terms:
                # the cell is a weighted mean of its terms' exact Betas: mean exact, interval
                # from the draws
                a, b = exact_posterior(self.term_k[i], self.term_n[i], self.spec.alpha,
                                       self.spec.beta)
                d["mean"] = np.where(np.bincount(self.term_cell, minlength=self.n_cells) > 0,
                                     (a / (a + b)) @ self._term_matrix(i),
                                     self.spec.alpha / (self.spec.alpha + self.spec.beta))
                d["lower"], d["upper"] = _eti(self._p[:, i], self.ci_prob)
            elif self.structure == "independent":
                a, b = exact_posterior(k, n, self.spec.alpha, self.spec.beta)
                d["mean"] = a / (a + b)
                with np.errstate(invalid="ignore", divide="ignore"):
                    mode = (a - 1) / (a + b - 2)
                d["mode"] = np.where((a > 1) & (b > 1) | ((a + b > 2) & (a >= 1) & (b >= 1)),
                                     mode, np.nan)
                d["lower"] = stats.beta.ppf(lo_q, a, b)
                d["upper"] = stats.beta.ppf(hi_q, a, b)
            else:
                dr = self._p[:, i]
                d["mean"] = dr.mean(axis=0)
                d["lower"], d["upper"] = _eti(dr, self.ci_prob)
            d["prior_driven"] = n == 0
            frames.append(d)
        return pd.concat(frames, ignore_index=True)

    def term_frame(self) -> pd.DataFrame:
        """Return the terms as a tidy table: one row per metric and term.

        Its cell, n, k, raw rate, posterior mean and interval (exact Beta under
        ``independent``), and its share of its cell's rate (``weight``).
        """
        from scipy import stats

        if not self.terms:
            raise InvalidArgumentError("no term column was given (term= / --term)")
        tuples = self._cell_tuples()
        lo_q, hi_q = (1 - self.ci_prob) / 2, (1 + self.ci_prob) / 2
        frames = []
        for i, m in enumerate(self.metrics):
            n, k = self.term_n[i], self.term_k[i]
            d = pd.DataFrame([tuples[c] for c in self.term_cell], columns=self.features)
            d.insert(0, "metric", m)
            d[self.term_name] = self.terms
            d["n"], d["k"] = n, k
            with np.errstate(invalid="ignore", divide="ignore"):
                d["raw"] = np.where(n > 0, k / np.maximum(n, 1), np.nan)
            if self.structure == "independent":
                a, b = exact_posterior(k, n, self.spec.alpha, self.spec.beta)
                d["mean"] = a / (a + b)
                d["lower"] = stats.beta.ppf(lo_q, a, b)
                d["upper"] = stats.beta.ppf(hi_q, a, b)
            else:
                dr = self._p_term[:, i]
                d["mean"] = dr.mean(axis=0)
                d["lower"], d["upper"] = _eti(dr, self.ci_prob)
            d["weight"] = self._term_matrix(i)[np.arange(len(self.terms)), self.term_cell]
            d["prior_driven"] = n == 0
            frames.append(d)
        return pd.concat(frames, ignore_index=True)

    @property
    def by_term(self) -> pd.DataFrame:
        """Per term (index: the cell's features and the term): columns (metric, statistic).

        ``weight`` is the term's share of its cell's rate (:attr:`term_weighting`).
        """
        t = self.term_frame()
        stats_ = ["n", "k", "raw", "mean", "lower", "upper", "weight", "prior_driven"]
        index = pd.MultiIndex.from_frame(t[t.metric == self.metrics[0]][[*self.features,
                                                                         self.term_name]])
        parts = {m: t[t.metric == m][stats_].set_axis(index) for m in self.metrics}
        return pd.concat(parts, axis=1, names=["metric", "statistic"])

    def term_gaps(self, delta: float = 0.05) -> pd.DataFrame:
        """Per metric and cell: the gap between its terms (max - min over terms with rows).

        With interval, P(gap > `delta`), the verdict and the terms most often highest and
        lowest (``drivers``); cells with fewer than two such terms are left out.
        """
        if not self.terms:
            raise InvalidArgumentError("no term column was given (term= / --term)")
        rows = []
        for i, m in enumerate(self.metrics):
            for c in np.unique(self.term_cell):
                sel = np.flatnonzero((self.term_cell == c) & (self.term_n[i] > 0))
                if sel.size < 2:
                    continue
                dr = self._p_term[:, i][:, sel]
                comp = Comparison("term gap (max - min)", m, dr.max(axis=1) - dr.min(axis=1),
                                  delta, self.ci_prob,
                                  _drivers(dr.argmax(axis=1), dr.argmin(axis=1),
                                           [self.terms[j] for j in sel]))
                rows.append({"group": self.cell_names[c], "terms": int(sel.size),
                             **comp.row()})
        return pd.DataFrame(rows)

    def term_sd(self) -> pd.DataFrame:
        """Per metric: the sd of the terms' logits around their cell's (posterior)."""
        if not self.terms:
            raise InvalidArgumentError("no term column was given (term= / --term)")
        rows = []
        sd = self.fit_info.get("sd_term")
        for i, m in enumerate(self.metrics):
            if sd is None:
                rows.append({"metric": m, "mean": np.nan, "lower": np.nan, "upper": np.nan,
                             "note": f"not estimated (structure {self.structure})"})
                continue
            rows.append({"metric": m, **_summary(sd.reshape(-1, sd.shape[-1])[:, i],
                                                 self.ci_prob), "note": ""})
        return pd.DataFrame(rows)

    @property
    def by_group(self) -> pd.DataFrame:
        """Per cell (fairlearn's ``by_group`` index): columns (metric, statistic)."""
        t = self.to_frame()
        stats_ = [c for c in ("n", "k", "raw", "mean", "mode", "lower", "upper", "prior_driven")
                  if c in t.columns]
        parts = {m: t[t.metric == m][stats_].set_axis(self.index) for m in self.metrics}
        return pd.concat(parts, axis=1, names=["metric", "statistic"])

    # ------------------------------------------------------------------ marginals
    def _marginal_draws(self, i: int, groups: np.ndarray, n_groups: int) -> np.ndarray:
        w = self.weights[i]
        dr = self._p[:, i]
        out = np.full((dr.shape[0], n_groups), np.nan)
        for g in range(n_groups):
            sel = groups == g
            if w[sel].sum() > 0:
                out[:, g] = dr[:, sel] @ (w[sel] / w[sel].sum())
        return out

    def _overall_draws(self, i: int) -> np.ndarray:
        return self._marginal_draws(i, np.zeros(self.n_cells, dtype=int), 1)[:, 0]

    @property
    def overall(self) -> pd.DataFrame:
        """Per metric: the rate over all rows, post-stratified (:attr:`weighting`)."""
        rows = []
        for i, m in enumerate(self.metrics):
            n, k = int(self.n[i].sum()), int(self.k[i].sum())
            rows.append({"metric": m, "n": n, "k": k, "raw": k / n if n else np.nan,
                         **_summary(self._overall_draws(i), self.ci_prob)})
        return pd.DataFrame(rows).set_index("metric")

    def marginal(self, feature: str) -> pd.DataFrame:
        """Per level of one sensitive feature (post-stratified over the other features)."""
        if feature not in self.features:
            raise InvalidArgumentError(f"no sensitive feature {feature!r}; features: "
                                       f"{', '.join(self.features)}")
        a = self.features.index(feature)
        groups = np.indices(self.shape).reshape(len(self.shape), -1)[a]
        rows = []
        for i, m in enumerate(self.metrics):
            dr = self._marginal_draws(i, groups, self.shape[a])
            for g, level in enumerate(self.levels[a]):
                sel = groups == g
                n, k = int(self.n[i][sel].sum()), int(self.k[i][sel].sum())
                rows.append({"metric": m, feature: level, "n": n, "k": k,
                             "raw": k / n if n else np.nan, **_summary(dr[:, g], self.ci_prob),
                             "prior_driven": n == 0})
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ comparisons
    def _groups(self, i: int, feature: str | None):
        """Draws and names of the groups compared: cells with rows, or one feature's levels."""
        if feature is None:
            keep = np.flatnonzero(self.n[i] > 0)
            return self._p[:, i][:, keep], [self.cell_names[c] for c in keep]
        if feature not in self.features:
            raise InvalidArgumentError(f"no sensitive feature {feature!r}; features: "
                                       f"{', '.join(self.features)}")
        a = self.features.index(feature)
        groups = np.indices(self.shape).reshape(len(self.shape), -1)[a]
        dr = self._marginal_draws(i, groups, self.shape[a])
        keep = [g for g in range(self.shape[a]) if self.n[i][groups == g].sum() > 0]
        return dr[:, keep], [self.levels[a][g] for g in keep]

    def _gap(self, metric, feature, method, delta, reference=None) -> Comparison:
        i = self._metric(metric)
        m = self.metrics[i]
        dr, names = self._groups(i, feature)
        if dr.shape[1] < 2 and method != "to_overall":
            return Comparison(f"difference ({method})", m, np.full(dr.shape[0], np.nan),
                              delta, self.ci_prob, "fewer than two groups with rows")
        if method == "between_groups":
            hi, lo = dr.argmax(axis=1), dr.argmin(axis=1)
            val = dr.max(axis=1) - dr.min(axis=1)
            return Comparison("difference (between_groups)", m, val, delta, self.ci_prob,
                              _drivers(hi, lo, names))
        if method == "to_overall":
            dev = np.abs(dr - self._overall_draws(i)[:, None])
            arg = dev.argmax(axis=1)
            return Comparison("difference (to_overall)", m, dev.max(axis=1), delta,
                              self.ci_prob, _drivers(arg, arg, names).split(";")[0])
        raise InvalidArgumentError(f"method must be between_groups or to_overall, got {method!r}")

    def difference(self, method: str = "between_groups", *, feature: str | None = None,
                   reference: str | None = None, delta: float = 0.05) -> pd.DataFrame:
        """Largest gap per metric (MetricFrame's ``difference``), with interval and verdict.

        ``between_groups``: max - min over the groups; ``to_overall``: the largest absolute
        gap to the overall rate. Groups are the cells with rows, or the levels of `feature`.
        With `reference` (a group name), the signed gap of every group to it instead.
        """
        if reference is not None:
            return self.against(reference, feature=feature, delta=delta)
        return pd.DataFrame([self._gap(m, feature, method, delta).row()
                             for m in self.metrics])

    def against(self, reference: str, *, feature: str | None = None,
                delta: float = 0.05) -> pd.DataFrame:
        """Signed gap of every group's rate to the `reference` group's (group - reference)."""
        rows = []
        for i, m in enumerate(self.metrics):
            dr, names = self._groups(i, feature)
            if reference not in names:
                raise InvalidArgumentError(f"reference {reference!r} is not a group with rows "
                                           f"for {m}; groups: {', '.join(names[:12])}")
            r = names.index(reference)
            for j, name in enumerate(names):
                if j == r:
                    continue
                c = Comparison(f"{name} - {reference}", m, np.abs(dr[:, j] - dr[:, r]), delta,
                               self.ci_prob)
                row = c.row()
                signed = _summary(dr[:, j] - dr[:, r], self.ci_prob)
                row.update({"mean": signed["mean"], "lower": signed["lower"],
                            "upper": signed["upper"], "drivers": ""})
                row["verdict"] = _verdict(*_abs_interval(dr[:, j] - dr[:, r], self.ci_prob),
                                          delta)
                rows.append(row)
        return pd.DataFrame(rows)

    def ratio(self, method: str = "between_groups", *, feature: str | None = None,
              tolerance: float = 0.8) -> pd.DataFrame:
        """Smallest ratio per metric (MetricFrame's ``ratio``): min / max, or to overall.

        Verdict against `tolerance` (0.8: the four-fifths rule): "ratio below" when the
        interval lies below it, "within" when above.
        """
        rows = []
        for i, m in enumerate(self.metrics):
            dr, names = self._groups(i, feature)
            with np.errstate(divide="ignore", invalid="ignore"):
                if method == "between_groups":
                    val = dr.min(axis=1) / dr.max(axis=1) if dr.shape[1] >= 2 else \
                        np.full(dr.shape[0], np.nan)
                elif method == "to_overall":
                    o = self._overall_draws(i)[:, None]
                    val = np.minimum(dr / o, o / dr).min(axis=1)
                else:
                    raise InvalidArgumentError(f"method must be between_groups or to_overall, "
                                               f"got {method!r}")
            s = _summary(val, self.ci_prob)
            verdict = ("no comparison" if not np.isfinite(s["lower"]) else
                       f"ratio below {tolerance:g}" if s["upper"] < tolerance else
                       f"within {tolerance:g}" if s["lower"] > tolerance else
                       "not enough evidence")
            rows.append({"quantity": f"ratio ({method})", "metric": m, **s,
                         "tolerance": tolerance,
                         "p_below_tolerance": float((val[np.isfinite(val)] < tolerance).mean())
                         if np.isfinite(val).any() else np.nan, "verdict": verdict})
        return pd.DataFrame(rows)

    def equalized_odds(self, *, feature: str | None = None, delta: float = 0.05) -> pd.DataFrame:
        """Equalized-odds difference: max(TPR gap, FPR gap) per draw, with its verdict.

        Needs metrics ``tpr`` and ``fpr``. The verdict table also has each gap alone.
        """
        for m in ("tpr", "fpr"):
            if m not in self.metrics:
                raise InvalidArgumentError(f"equalized odds needs metrics tpr and fpr; fitted: "
                                           f"{', '.join(self.metrics)}")
        gt = self._gap("tpr", feature, "between_groups", delta)
        gf = self._gap("fpr", feature, "between_groups", delta)
        eo = Comparison("equalized_odds_difference", "tpr,fpr", np.fmax(gt.draws, gf.draws),
                        delta, self.ci_prob,
                        f"TPR gap larger in {np.mean(gt.draws >= gf.draws):.0%} of draws")
        return pd.DataFrame([eo.row(), gt.row(), gf.row()])

    def demographic_parity(self, *, feature: str | None = None,
                           delta: float = 0.05) -> pd.DataFrame:
        """Demographic-parity difference: the selection-rate gap between groups."""
        if "selection_rate" not in self.metrics:
            raise InvalidArgumentError("demographic parity needs the metric selection_rate")
        c = self._gap("selection_rate", feature, "between_groups", delta)
        c.name = "demographic_parity_difference"
        return pd.DataFrame([c.row()])

    def differential_fairness(self, metric: str | None = None, *,
                              feature: str | None = None) -> pd.DataFrame:
        """Foulds et al.'s (2020) differential-fairness epsilon of each metric.

        epsilon = max over pairs of groups i, j and outcomes y of
        ``|log P(y | i) - log P(y | j)|``: with a rate p per group,
        ``max(log max p - log min p, log max(1-p) - log min(1-p))``, on every draw.
        """
        metrics = self.metrics if metric is None else [self.metrics[self._metric(metric)]]
        rows = []
        for m in metrics:
            dr, names = self._groups(self._metric(m), feature)
            if dr.shape[1] < 2:
                eps = np.full(dr.shape[0], np.nan)
            else:
                lp, lq = np.log(dr), np.log1p(-dr)
                eps = np.fmax(lp.max(1) - lp.min(1), lq.max(1) - lq.min(1))
            rows.append({"quantity": "differential_fairness_epsilon", "metric": m,
                         **_summary(eps, self.ci_prob)})
        return pd.DataFrame(rows)

    def interaction_share(self, floor: float = INTERACTION_FLOOR) -> pd.DataFrame:
        """Share of the between-cell variance (logit scale) due to interactions.

        Per draw, ``sum_{o >= 2} s_o**2 / sum_o s_o**2`` with ``s_o`` the sd over the cells
        with rows of order ``o``'s contribution. `floor` is a region of practical equivalence:
        a share below it is treated as additive. With ``q = (1 + ci_prob) / 2`` (0.95 by
        default): "intersectional" when ``p_above_floor`` = P(share > floor) exceeds ``q``,
        "additive" when P(share < floor) exceeds ``q``, else "not enough evidence" (the
        equal-tailed interval lies above / below the floor, up to the draws' granularity).
        """
        info = self.fit_info
        rows = []
        for i, m in enumerate(self.metrics):
            if self.structure != "full" or info["order_sd"] is None or len(info["orders"]) < 2:
                rows.append({"metric": m, "mean": np.nan, "lower": np.nan, "upper": np.nan,
                             "floor": floor, "p_above_floor": np.nan,
                             "verdict": f"not estimated (structure "
                             f"{self.structure}, {len(self.features)} feature(s))"})
                continue
            osd = info["order_sd"].reshape(-1, *info["order_sd"].shape[2:])[:, i] ** 2
            share = osd[:, 1:].sum(axis=1) / osd.sum(axis=1)
            s = _summary(share, self.ci_prob)
            p_above, q = float((share > floor).mean()), (1 + self.ci_prob) / 2
            verdict = ("intersectional" if p_above > q else
                       "additive" if 1 - p_above > q else "not enough evidence")
            rows.append({"metric": m, **s, "floor": floor, "p_above_floor": p_above,
                         "verdict": verdict,
                         **{f"sd_order_{o}": float(np.sqrt(osd[:, j]).mean())
                            for j, o in enumerate(info["orders"])}})
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ planning
    def labelling_plan(self, width: float = 0.1, delta: float | None = None,
                       assurance: float = 0.8, reps: int = 200) -> pd.DataFrame:
        """Labels per cell needed for an interval `width` (and to detect a gap `delta`).

        For each metric and cell: the denominator size at which the exact Beta(1, 1)
        posterior interval at the cell's posterior mean is at most `width` wide (no
        pooling: a conservative plan), the rows to label for it (denominator share of the
        cell's rows), and how many more than today. With `delta`, also the common cell size
        at which the largest gap's interval excludes `delta` with probability `assurance`
        (simulated from the posterior; the verdict rule of
        :func:`bayesbias.studies.design.verdict_holds`).
        """
        from scipy import stats

        frame = self.to_frame()
        need = []
        lo_q, hi_q = (1 - self.ci_prob) / 2, (1 + self.ci_prob) / 2
        grid = np.unique(np.round(np.logspace(0, 7, 300)).astype(np.int64))
        for _, r in frame.iterrows():
            p = r["mean"]
            wid = (stats.beta.ppf(hi_q, 1 + grid * p, 1 + grid * (1 - p))
                   - stats.beta.ppf(lo_q, 1 + grid * p, 1 + grid * (1 - p)))
            ok = np.flatnonzero(wid <= width)
            need.append(int(grid[ok[0]]) if ok.size else np.nan)
        frame = frame[["metric", *self.features, "n", "k", "mean"]].copy()
        frame["n_needed"] = need
        rows_cell = np.tile(self.rows_per_cell, len(self.metrics))
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(rows_cell > 0, frame["n"] / np.maximum(rows_cell, 1), np.nan)
        base = {m: self.n[i].sum() / max(self.rows_per_cell.sum(), 1)
                for i, m in enumerate(self.metrics)}
        share = np.where(np.isfinite(share) & (share > 0), share,
                         frame["metric"].map(base).to_numpy())
        with np.errstate(divide="ignore", invalid="ignore"):
            frame["rows_to_label"] = np.ceil(frame["n_needed"] / share)
        frame["more_rows"] = np.maximum(frame["rows_to_label"] - rows_cell, 0)
        frame.attrs["width"] = width
        if delta is not None:
            frame.attrs["assurance"] = self._assurance(delta, assurance, reps)
        return frame

    def _assurance(self, delta: float, target: float, reps: int) -> dict:
        from ..studies.design import verdict_holds

        rng = np.random.default_rng(self.seed)
        lo_q = (1 - self.ci_prob) / 2
        out = {}
        for i, m in enumerate(self.metrics):
            keep = np.flatnonzero(self.n[i] > 0)
            if keep.size < 2:
                continue
            found = None
            for size in (25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800):
                p = self._p[rng.integers(self._p.shape[0], size=reps), i][:, keep]
                k = rng.binomial(size, p)
                a, b = 1 + k, 1 + size - k
                # the gap between the cells with the largest and smallest true rate
                hi, lo = p.argmax(1), p.argmin(1)
                rr = np.arange(reps)
                gap = (rng.beta(a[rr, hi][:, None], b[rr, hi][:, None], (reps, 400))
                       - rng.beta(a[rr, lo][:, None], b[rr, lo][:, None], (reps, 400)))
                lower = np.quantile(gap, lo_q * 2, axis=1)  # one-sided at ci_prob
                rate = float(np.mean(verdict_holds(delta - lower)))
                if rate >= target:
                    found = {"labels_per_cell": size, "assurance": rate}
                    break
            out[m] = found or {"labels_per_cell": None, "assurance": rate}
        return out

    # ------------------------------------------------------------------ output
    def plot(self, path=None):
        """Plot raw cell rate (x) against pooled posterior mean (y), sized by n, per metric."""
        t = self.to_frame()
        fig = new_figure(figsize=(4.2 * len(self.metrics), 4.2))
        axes = fig.subplots(1, len(self.metrics), squeeze=False)
        for ax, m in zip(axes[0], self.metrics, strict=True):
            d = t[t.metric == m]
            has = d["n"] > 0
            size = 12 + 200 * np.sqrt(d["n"] / max(d["n"].max(), 1))
            ax.errorbar(d["raw"][has], d["mean"][has],
                        yerr=[d["mean"][has] - d["lower"][has], d["upper"][has] - d["mean"][has]],
                        fmt="none", ecolor="0.6", lw=0.8, zorder=1)
            ax.scatter(d["raw"][has], d["mean"][has], s=size[has], alpha=0.6, zorder=2,
                       label="cells (area ~ n)")
            if (~has).any():
                ax.scatter(np.zeros((~has).sum()) - 0.03, d["mean"][~has], marker="x",
                           color="C3", label="n = 0 (prior)")
            o = self.overall.loc[m, "mean"]
            ax.axline((0, 0), slope=1, color="0.3", lw=0.8, ls="--")
            ax.axhline(o, color="C2", lw=0.8, label="overall")
            ax.set(xlabel="raw cell rate k/n", ylabel=f"posterior mean ({self.structure})",
                   title=m)
            ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        if path is not None:
            _save(fig, path)
        return fig

    def comparisons(self, delta: float = 0.05) -> pd.DataFrame:
        """Every comparison with its verdict: gaps per metric, equalized odds, parity."""
        parts = [self.difference(delta=delta)]
        if {"tpr", "fpr"} <= set(self.metrics):
            parts.append(self.equalized_odds(delta=delta).iloc[:1])
        if "selection_rate" in self.metrics:
            parts.append(self.demographic_parity(delta=delta))
        return pd.concat(parts, ignore_index=True)

    def to_dict(self, delta: float = 0.05) -> dict:
        """Plain data: settings, cells, marginals, overall, comparisons, interaction share."""
        return {
            "ci_prob": self.ci_prob, "ci_kind": self.ci_kind, "structure": self.structure,
            "spec": self.spec.to_dict(), "spec_hash": self.spec.hash, "seed": self.seed,
            "features": self.features, "levels": self.levels, "metrics": self.metrics,
            "rows": self.rows, "weighting": self.weighting,
            "cells": self.to_frame().to_dict(orient="records"),
            "overall": self.overall.reset_index().to_dict(orient="records"),
            "marginals": {f: self.marginal(f).to_dict(orient="records") for f in self.features},
            "comparisons": self.comparisons(delta).to_dict(orient="records"),
            "differential_fairness": self.differential_fairness().to_dict(orient="records"),
            "interaction_share": self.interaction_share().to_dict(orient="records"),
            "fit": {k: v for k, v in self.fit_info.items()
                    if k not in ("p", "order_sd", "sd", "p_term", "sd_term")},
            "notes": list(self.notes),
            **({"term_column": self.term_name, "term_weighting": self.term_weighting,
                "terms": self.term_frame().to_dict(orient="records"),
                "term_sd": self.term_sd().to_dict(orient="records"),
                "term_gaps": self.term_gaps(delta).to_dict(orient="records")}
               if self.terms else {}),
        }

    def __str__(self) -> str:
        pct = f"{self.ci_prob:.0%}"
        lines = [f"group rates: {self.rows:,} rows, {self.n_cells} cells "
                 f"({' x '.join(self.features)})"
                 + (f", {len(self.terms)} terms ({self.term_name})" if self.terms else "")
                 + f", structure {self.structure}, {pct} intervals"]
        pd_opts = {"display.width": 120, "display.max_columns": 20, "display.max_rows": 200}
        with pd.option_context(*[x for kv in pd_opts.items() for x in kv]):
            t = self.to_frame()
            t = t.assign(raw=t.raw.round(3), mean=t["mean"].round(3), lower=t.lower.round(3),
                         upper=t.upper.round(3))
            lines += ["", "cells:", t.drop(columns=[c for c in ("mode",) if c in t])
                      .to_string(index=False)]
            if self.terms:
                tf = self.term_frame()
                tf = tf.assign(raw=tf.raw.round(3), mean=tf["mean"].round(3),
                               lower=tf.lower.round(3), upper=tf.upper.round(3),
                               weight=tf.weight.round(3))
                lines += ["", f"terms ({self.term_name}; a cell's rate is its terms' "
                          f"post-stratified by {self.term_weighting}):",
                          tf.to_string(index=False), "",
                          "sd of the terms' logits within a cell (sd_term):",
                          self.term_sd().round(3).to_string(index=False), "",
                          "gaps between the terms of a cell:",
                          self.term_gaps().round(4).to_string(index=False)]
            lines += ["", "overall (post-stratified by " + self.weighting + "):",
                      self.overall.round(4).to_string()]
            comp = self.comparisons()
            lines += ["", "comparisons:", comp.round(4).to_string(index=False)]
            share = self.interaction_share()
            lines += ["", "interaction share of between-cell variance:",
                      share.round(3).to_string(index=False)]
        if self.notes:
            lines += ["", "notes:", *[f"- {n}" for n in self.notes]]
        return "\n".join(lines)


def _abs_interval(diff: np.ndarray, ci_prob: float) -> tuple[float, float]:
    """Interval of |group - reference| read from the signed interval (for the verdict)."""
    lo, hi = _eti(diff, ci_prob)
    if lo > 0:
        return float(lo), float(hi)
    if hi < 0:
        return float(-hi), float(-lo)
    return 0.0, float(max(-lo, hi))
