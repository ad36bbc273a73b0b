"""Which words drive a verdict: leave-one-word-out and resampled word lists.

For every protected word and every attribute word, the table is refitted without it and the
change in each contrast (posterior mean, HDI) and in each verdict is recorded. Over
resampled word lists (protected words drawn with replacement within their class, attribute
words with replacement within their attribute class: each stereotype class, human, none),
the share of lists under which each verdict holds measures how much the verdict rests on
the particular words chosen.

Method: **exact refits on sufficient statistics.** For the hierarchical spec with one
residual sd per connection, the posterior depends on the data only through per-cell counts,
sums and sums of squares, and :mod:`bayesbias.studies.exact_posterior` computes it without MCMC; a
left-out word or a resampled list only changes those statistics, so every refit is exact
(up to the quadrature and Monte Carlo error of the draws) and costs milliseconds. Other
specs have no such form and are refused here (importance sampling with Pareto-k checks is
not implemented). For the crossed spec (the default) the refits use the plug-in form of the
design study (:mod:`bayesbias.studies.design`): the attribute deviations estimated on the
whole table are removed from every row, the exact hierarchical posterior of the adjusted
statistics is drawn, and each attribute group's mean effect, ``Normal(0, omega /
sqrt(n_group))``, is subtracted (the same draws for every refit).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from .._atomic import atomic_path
from ..config import CONNECTIONS, DEFAULT_MODEL, defaults
from ..errors import InputDataError, InvalidArgumentError, ModelSpecError
from ..inputs.distances import check_pilot
from ..models import cells_from_table, load_spec
from ..models.families import family
from ..models.plots import new_figure
from ..models.summaries import resolve_ci
from ..models.word_summaries import mixture_cdf, mixture_interval
from ..parallel import chunks, run_tasks
from ..progress import progress
from ..verdicts import contrast_evidence
from .design import (
    VERDICTS,
    _contrast_index,
    _hierarchical_part,
    attribute_variances,
    subtract_group_effects,
    verdict_holds,
)
from .exact_posterior import marginal_posterior, supports

__all__ = ["Sensitivity", "sensitivity", "check_model", "report_section", "METHOD"]

log = logging.getLogger(__name__)

METHOD = ("exact refit on sufficient statistics (hierarchical model, mu_bar and the cell "
          "means integrated out analytically, quadrature over tau and sigma)")
_CONTRASTS = VERDICTS + ("human - none",)


@dataclass
class _Rows:
    """Rows of a distance table as codes (protected word, attribute, connection)."""

    y: np.ndarray
    unit: np.ndarray
    conn: np.ndarray
    attr: np.ndarray
    units: np.ndarray
    unit_class: np.ndarray
    attrs: np.ndarray
    attr_group: np.ndarray   # attribute class (stereotype class, human, none)
    #: Crossed plug-in: within-cell ss rescaling, attribute-effect variance, and the number
    #: of attribute words per group (stereotype, human, none); omega2 (one variance per
    #: group) = 0 otherwise.
    ss_scale: float = 1.0
    omega2: tuple = (0.0, 0.0, 0.0)
    per_kind: bool = False
    group_sizes: tuple = (1, 1, 1)

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> _Rows:
        cells = cells_from_table(table, "word")  # validates the table
        if "attribute" not in table.columns:
            raise InputDataError("distance table lacks column 'attribute' (needed to leave "
                                 "attribute words out)")
        attr_codes, attrs = pd.factorize(table["attribute"].astype(str), sort=False)
        if "attribute_class" in table.columns:
            grp = table["attribute_class"].astype(str).to_numpy()
        else:
            grp = table["connection"].astype(str).to_numpy()
        group = pd.Series(grp).groupby(attr_codes).first().reindex(
            range(len(attrs))).to_numpy()
        return cls(cells.y, cells.unit_idx.astype(np.intp), cells.conn_idx.astype(np.intp),
                   attr_codes.astype(np.intp), cells.units, cells.unit_class,
                   np.asarray(attrs, dtype=object), group.astype(object))

    @cached_property
    def by_connection(self):
        """Per connection, its rows laid out by unit, in table order: ``(attr, y, y2)``.

        Each (R, U), R the connection's largest cell: the rows' attribute codes (-1 past a
        cell's last row), y and y**2 (0 there).
        """
        out = []
        for c in range(len(CONNECTIONS)):
            r = np.flatnonzero(self.conn == c)
            unit = self.unit[r]
            order = np.argsort(unit, kind="stable")
            count = np.bincount(unit, minlength=self.units.size)
            pos = np.arange(r.size) - np.repeat(np.cumsum(count) - count, count)
            idx = np.full((max(int(count.max(initial=0)), 1), self.units.size), -1)
            idx[pos, unit[order]] = r[order]
            out.append((np.where(idx >= 0, self.attr[idx], -1),
                        np.where(idx >= 0, self.y[idx], 0.0),
                        np.where(idx >= 0, self.y[idx] ** 2, 0.0)))
        return out

    def stats(self, attr_weight=None, drop_unit=None):
        """Per (unit, connection) weighted count, sum and sum of squares."""
        w = np.ones(self.y.size) if attr_weight is None else attr_weight[self.attr]
        if drop_unit is not None:
            w = np.where(self.unit == drop_unit, 0.0, w)
        U, C = self.units.size, len(CONNECTIONS)
        flat = self.unit * C + self.conn
        n = np.bincount(flat, weights=w, minlength=U * C).reshape(U, C)
        s1 = np.bincount(flat, weights=w * self.y, minlength=U * C).reshape(U, C)
        s2 = np.bincount(flat, weights=w * self.y**2, minlength=U * C).reshape(U, C)
        return n, s1, s2


def _cells(n, s1, s2):
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s1 / np.where(n > 0, n, 1), np.nan)
    ss = np.maximum(s2 - n * np.nan_to_num(mean) ** 2, 0.0)
    return n, mean, ss


#: How a refit's contrasts are summarised: ``"draws"`` (sample HDI of the draws) or
#: ``"mixture"`` (Rao-Blackwellised: the Normal mixture over the scale draws).
ESTIMATORS = ("draws", "mixture")


def _mixture_evidence(post, rows, rng, ci_prob):
    """Mean, HDI and P(< 0) of the contrasts from their Normal mixture over the scale draws.

    Given tau and sigma, each connection's mu_bar is Normal (``mu_bar_mean``, ``mu_bar_sd``)
    and the connections are independent; the crossed plug-in's group mean effects are Normal
    given their variance (drawn once per draw, as :func:`subtract_group_effects` draws them,
    and cancelling in a contrast within one group). So every contrast is an equal-weight
    Normal mixture over the draws, whose HDI and CDF are computed, not sampled.
    """
    m, s = post["mu_bar_mean"], post["mu_bar_sd"]                  # (B, D, C)
    B, D, _ = m.shape
    gv = None
    if rows is not None and max(rows.omega2) > 0:
        size = np.maximum(np.asarray(rows.group_sizes, float), 1)
        var = np.broadcast_to(np.asarray(rows.omega2, float), (D, 3))
        if rows.per_kind:
            dof = np.maximum(size - 1, 1)
            var = var * dof / rng.chisquare(dof, size=(D, 3))
        gv = var / size                                             # (D, 3)
    group = (0, 0, 1, 2)  # connection -> attribute group (stereotypes, human, none)
    means, sds = [], []
    for label in _CONTRASTS:
        i, j = _contrast_index(label)
        v = s[..., i] ** 2 + s[..., j] ** 2
        if gv is not None and group[i] != group[j]:
            v = v + gv[:, group[i]] + gv[:, group[j]]
        means.append(m[..., i] - m[..., j])
        sds.append(np.sqrt(v))
    mean = np.stack(means, -1).transpose(1, 0, 2).reshape(D, -1)  # (D, B * K)
    sd = np.stack(sds, -1).transpose(1, 0, 2).reshape(D, -1)
    ci = mixture_interval(mean, sd, ci_prob, "hdi").reshape(B, len(_CONTRASTS), 2)
    return {"mean": mean.mean(0).reshape(B, -1), "lower": ci[..., 0], "upper": ci[..., 1],
            "prob_below_zero": mixture_cdf(np.zeros(mean.shape[1]), mean, sd).reshape(B, -1)}


def _analyse(spec, n, mean, ss, ci_prob, n_draws, rng, rows=None, estimator="draws"):
    """Posterior mean, HDI and P(< 0) of the contrasts for a batch of cell statistics.

    `rng` is a fixed seed shared by every refit (common random numbers): the difference
    between a refit and the baseline is then the effect of the data, not draw noise.
    `estimator`: one of :data:`ESTIMATORS`.
    """
    ok = ~_degenerate(n, ss)
    out = {k: np.full((n.shape[0], len(_CONTRASTS)), np.nan)
           for k in ("mean", "lower", "upper", "prob_below_zero")}
    if not ok.any():
        return out
    scale = 1.0 if rows is None else rows.ss_scale
    post = marginal_posterior(n[ok], mean[ok], ss[ok] * scale, spec).draw(
        np.random.default_rng(rng), n_draws, common=True, moments=estimator == "mixture")
    if estimator == "mixture":
        ev = _mixture_evidence(post, rows, np.random.default_rng([rng, 1]), ci_prob)
        for key in out:
            out[key][ok] = ev[key]
        return out
    mb = post["mu_bar"]
    if rows is not None and max(rows.omega2) > 0:
        mb = subtract_group_effects(mb, rows.omega2, rows.group_sizes,
                                    np.random.default_rng([rng, 1]), rows.per_kind,
                                    common=True)
    d = np.stack([mb[..., _contrast_index(v)[0]] - mb[..., _contrast_index(v)[1]]
                  for v in _CONTRASTS], axis=1)                 # (B, K, D)

    ev = contrast_evidence(d, ci_prob, "hdi")
    for key in out:
        out[key][ok] = ev[key]
    return out


def _analyse_baseline(spec, n, mean, ss, ci_prob, n_draws, crn, rows):
    """Refit the whole table (:func:`_analyse`, mixture); return it and its draws.

    Returns ``(evidence, draws)``: `evidence` as :func:`_analyse` gives it (batch of one);
    `draws` holds the scale draws ``tau``, ``sigma`` (D, C), the group-effect variances
    ``gv`` (D, 3) or None, the differences of the exact interval ends from those of
    :func:`_screen` on the whole table (``offset``: lower, upper) and the screen's sd of
    each contrast (``sd``), which :func:`_screen` and its margins start from.
    """
    post = marginal_posterior(n[None], mean[None], ss[None] * rows.ss_scale, spec).draw(
        np.random.default_rng(crn), n_draws, common=True, moments=True)
    ev = _mixture_evidence(post, rows, np.random.default_rng([crn, 1]), ci_prob)
    gv = _group_variances(rows, np.random.default_rng([crn, 1]), n_draws)
    draws = {"tau": post["tau"][0], "sigma": post["sigma"][0], "gv": gv}
    raw = _screen(spec, n[None], mean[None], ss[None], rows, draws, ci_prob,
                        baseline=True)
    draws["offset"] = (ev["lower"][0] - raw["lower"], ev["upper"][0] - raw["upper"])
    draws["sd"] = raw["sd"]
    return ev, draws


def _group_variances(rows, rng, n_draws):
    """Per draw, the variance of each attribute group's mean effect (D, 3), or None.

    The numbers :func:`_mixture_evidence` draws from the same generator.
    """
    if rows is None or max(rows.omega2) <= 0:
        return None
    size = np.maximum(np.asarray(rows.group_sizes, float), 1)
    var = np.broadcast_to(np.asarray(rows.omega2, float), (n_draws, 3))
    if rows.per_kind:
        dof = np.maximum(size - 1, 1)
        var = var * dof / rng.chisquare(dof, size=(n_draws, 3))
    return var / size


def _scale_terms(spec, nc, mc, sc, tau, sigma):
    """Per member and value of tau: log posterior of tau and mu_bar's conditional Normal.

    `nc`, `mc`, `sc` (B, W): one connection's counts, means and (scaled) sums of squares;
    `tau` (T,) values of tau, `sigma` (B,) one residual sd per member. Returns ``(logp,
    mean, sd)``, each (B, T): the log posterior of tau given sigma (unnormalised, per unit
    of log tau; mu_bar and the cell means integrated out as in
    :func:`~.exact_posterior.marginal_posterior`), and the Normal of mu_bar given both.
    """
    from .exact_posterior import _cell_sums, prior_logpdf

    p_mu = dict(spec.priors["mu_bar"].params)
    m0, s0 = float(p_mu["mu"]), float(p_mu["sigma"])
    has = nc > 0
    k = has.sum(-1)
    ref = np.where(has, mc, 0.0).sum(-1) / np.maximum(k, 1)             # (B,)
    y = np.where(has, mc - ref[:, None], 0.0)
    tau2 = (tau * tau)[None, :, None]
    sig2 = (sigma * sigma)[:, None, None]
    logv, a, b, q = _cell_sums(tau2, sig2, nc, has, y)                  # (B, T)
    m0c = (m0 - ref)[:, None]
    prec = 1.0 / s0**2 + a
    mhat = (m0c / s0**2 + b) / prec
    logml = (-0.5 * logv - 0.5 * np.log(s0**2 * prec)
             - 0.5 * (q + m0c**2 / s0**2 - prec * mhat**2))
    logp = logml + (prior_logpdf(spec.priors["tau"], tau) + np.log(tau))[None]
    return logp, mhat + ref[:, None], 1.0 / np.sqrt(prec)


#: Points of the screen's grid over log tau (:func:`_screen_upper`), and how far it reaches
#: below and above the whole table's tau draws (in log tau).
SCREEN_TAU = 64
SCREEN_BELOW, SCREEN_ABOVE = 3.0, 1.5


def _screen(spec, n, mean, ss, rows, draws, ci_prob, baseline=False):
    """Approximate evidence about the contrasts of a batch of refits, cheaply.

    Instead of the two-dimensional quadrature of :func:`~.exact_posterior.marginal_posterior`
    per refit: sigma fixed at its estimate from the within-cell spread (thousands of degrees
    of freedom pin it down), tau on a grid of :data:`SCREEN_TAU` points over the whole
    table's range of tau draws widened by a factor e either way, mu_bar's conditional Normal
    per grid point; the interval is that of the Normal with the resulting mixture's mean and
    variance (group effects as :func:`_mixture_evidence`), each end shifted by the whole
    table's difference between its exact mixture HDI end and this approximation
    (``draws["offset"]``). Returns ``mean``, ``lower``, ``upper`` and ``prob_below_zero``
    (B, K) and ``edge`` (B,), the largest posterior share on an end of a tau grid (a refit
    whose tau lies outside the grid); with `baseline`, the approximation's own ``lower``,
    ``upper`` and ``sd`` (K,).
    """
    from scipy.special import ndtr, ndtri

    B, _, C = n.shape
    mom = {}
    edge = np.zeros(B)
    for c in range(C):
        nc, sc = n[..., c], ss[..., c] * rows.ss_scale
        has = nc > 0
        df = np.where(has, nc - 1, 0).sum(-1)
        sigma = np.sqrt(np.where(has, sc, 0.0).sum(-1) / np.maximum(df, 1))
        lt = np.log(draws["tau"][:, c])
        tau = np.exp(np.linspace(lt.min() - SCREEN_BELOW, lt.max() + SCREEN_ABOVE, SCREEN_TAU))
        logp, mh, sd = _scale_terms(spec, nc, np.nan_to_num(mean[..., c]), sc, tau, sigma)
        w = np.exp(logp - logp.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        edge = np.maximum(edge, w[:, [0, -1]].sum(1))
        em = (w * mh).sum(1)
        mom[c] = (em, (w * (sd * sd + mh * mh)).sum(1) - em * em)        # mean, variance
    gv = draws["gv"]
    gmean = None if gv is None else gv.mean(0)
    group = (0, 0, 1, 2)
    z = ndtri(0.5 + ci_prob / 2)
    mean_k, sd_k = np.empty((B, len(_CONTRASTS))), np.empty((B, len(_CONTRASTS)))
    for k, label in enumerate(_CONTRASTS):
        i, j = _contrast_index(label)
        var = mom[i][1] + mom[j][1]
        if gmean is not None and group[i] != group[j]:
            var = var + gmean[group[i]] + gmean[group[j]]
        mean_k[:, k] = mom[i][0] - mom[j][0]
        sd_k[:, k] = np.sqrt(np.maximum(var, 0.0))
    lower, upper = mean_k - z * sd_k, mean_k + z * sd_k
    if baseline:
        return {"lower": lower[0], "upper": upper[0], "sd": sd_k[0]}
    with np.errstate(divide="ignore", invalid="ignore"):
        p0 = ndtr(-mean_k / sd_k)
    return {"mean": mean_k, "lower": lower + draws["offset"][0][None],
            "upper": upper + draws["offset"][1][None], "prob_below_zero": p0, "edge": edge}


def _degenerate(n, ss) -> np.ndarray:
    """Batch members (B,) whose rows of some connection repeat one value per cell.

    A list resampled with replacement can repeat one attribute word throughout a
    connection's cells: every within-cell spread is then zero while there are repeated
    rows, the likelihood grows without bound as sigma -> 0 and there is no posterior.
    """
    has = n > 0
    df = np.where(has, n - 1, 0).sum(1)                           # (B, C)
    tot = np.where(has, ss, 0.0).sum(1)
    return ((df > 0) & (tot <= 1e-12 * df)).any(-1)


def _variant_stats(rows, variants):
    """Stacked cell counts, means and sums of squares of ("all" / "word" / "attribute") variants.

    The numbers of :meth:`_Rows.stats` with the word's or attribute word's rows weighted 0, to
    the bit, batched: a left-out word empties its own cells and leaves the others as in the
    whole table; a left-out attribute word changes only its connections' columns, summed
    over the remaining rows in table order (:func:`_ordered_sum`).
    """
    whole = rows.stats()
    V = len(variants)
    n, s1, s2 = (np.repeat(x[None], V, axis=0) for x in whole)
    kind = np.array([k for k, _ in variants], dtype=object)
    index = np.array([i for _, i in variants], dtype=np.intp)
    words = np.flatnonzero(kind == "word")
    for x in (n, s1, s2):
        x[words, index[words]] = 0.0
    attrs = np.flatnonzero(kind == "attribute")
    for c, (attr, y, y2) in enumerate(rows.by_connection):        # each (R, U)
        hit = attrs[np.isin(index[attrs], attr)]
        for part in np.array_split(hit, max(1, -(-hit.size * attr.size // _CHUNK))):
            keep = attr[:, None, :] != index[part][None, :, None]  # (R, V, U)
            n[part, :, c] = (keep & (attr >= 0)[:, None, :]).sum(0)
            s1[part, :, c] = _ordered_sum(np.where(keep, y[:, None, :], 0.0))
            s2[part, :, c] = _ordered_sum(np.where(keep, y2[:, None, :], 0.0))
    return _cells(n, s1, s2)


#: Elements of the (row, variant or list, unit) blocks of :func:`_variant_stats` and
#: :func:`_weighted_stats` (bounds their memory: 8 MB a block).
_CHUNK = 1_000_000


def _ordered_sum(z):
    """Sum over the first axis, one term after another in order, as :func:`numpy.bincount`.

    NumPy reduces a leading axis slice by slice when a slice has two or more elements (a
    single column, or :func:`numpy.sum` over the last axis, it adds pairwise, in another
    order; then a cumulative sum). Plus 0.0: a sum of signed zeros is +0, as from
    bincount's +0 start.
    """
    if z.shape[0] == 0:
        return np.zeros(z.shape[1:])
    if z[0].size < 2:
        return np.cumsum(z, axis=0)[-1] + 0.0
    return np.add.reduce(z, axis=0) + 0.0


def _weighted_stats(rows, weight):
    """:meth:`_Rows.stats` for a batch of attribute weights (L, A): each (L, U, C).

    The same products added in the same order as a call per list (rows of weight 0 add a
    signed zero, which changes no sum), so the same numbers to the bit.
    """
    L, U, C = weight.shape[0], rows.units.size, len(CONNECTIONS)
    out = tuple(np.zeros((L, U, C)) for _ in range(3))
    wx = np.concatenate([weight, np.zeros((L, 1))], axis=1).T    # (A + 1, L); -1: weight 0
    for c, (attr, y, y2) in enumerate(rows.by_connection):        # each (R, U)
        for part in np.array_split(np.arange(L), max(1, -(-L * attr.size // _CHUNK))):
            w = wx[:, part][attr]                                   # (R, U, L)
            out[0][part, :, c] = w.sum(0).T  # whole numbers: exact in any order
            out[1][part, :, c] = _ordered_sum(w * y[:, :, None]).T
            out[2][part, :, c] = _ordered_sum(w * y2[:, :, None]).T
    return out


def _resampled_stats(rows, n_lists, rng):
    """Stacked cell statistics of `n_lists` word lists resampled within classes.

    Per list, each protected class's and then each attribute group's members drawn with
    replacement, one generator call each in that order: ``members[rng.integers(0, k, k)]``,
    the draws of ``rng.choice(members, k)`` (which calls it; tested).
    """
    # each class's members once (the same draws as looking them up per list)
    unit_classes = [np.flatnonzero(rows.unit_class == k) for k in pd.unique(rows.unit_class)]
    attr_groups = [np.flatnonzero(rows.attr_group == g) for g in pd.unique(rows.attr_group)]
    A = rows.attrs.size
    units = np.empty((n_lists, sum(m.size for m in unit_classes)), dtype=np.intp)
    picks = np.empty((n_lists, sum(m.size for m in attr_groups)), dtype=np.intp)
    u_at = np.cumsum([0] + [m.size for m in unit_classes])
    a_at = np.cumsum([0] + [m.size for m in attr_groups])
    for i in range(n_lists):  # the generator's calls in the order of one list at a time
        for k, members in enumerate(unit_classes):
            units[i, u_at[k]:u_at[k + 1]] = members[rng.integers(0, members.size,
                                                                 size=members.size)]
        for k, members in enumerate(attr_groups):
            picks[i, a_at[k]:a_at[k + 1]] = members[rng.integers(0, members.size,
                                                                 size=members.size)]
    weight = np.bincount((picks + A * np.arange(n_lists)[:, None]).ravel(),
                         minlength=n_lists * A).reshape(n_lists, A).astype(float)
    n, s1, s2 = (np.take_along_axis(x, units[:, :, None], axis=1)
                 for x in _weighted_stats(rows, weight))
    return _cells(n, s1, s2)


def _leave_out_task(rows, spec, variants, ci_prob, n_draws, crn, estimator="draws", *, rng):
    """Refit for a list of ("all", -1) / ("word", i) / ("attribute", j) variants."""
    return _analyse(spec, *_variant_stats(rows, variants), ci_prob, n_draws, crn, rows,
                    estimator)


def _resample_task(rows, spec, n_lists, ci_prob, n_draws, crn, estimator="draws", *, rng):
    """Refit `n_lists` word lists resampled with replacement within classes."""
    return _analyse(spec, *_resampled_stats(rows, n_lists, rng), ci_prob, n_draws, crn, rows,
                    estimator)


#: Screened refits (``sensitivity(..., screen=True)``): a refit is made exactly when the
#: screen's upper end of a verdict contrast lies within this many of the whole table's
#: posterior sds of that contrast from 0 (left-out words; resampled lists), or when the
#: screen's tau grid holds more than :data:`SCREEN_EDGE` of its mass on an end. Checked on
#: the shipped lists at 4 seeds against the exact refits of every variant: the screen's
#: largest error was 0.032 sd (left-out words) and 0.078 sd (resampled lists), a third or
#: less of these margins (``benchmarks/robustness_screen_agreement.py``, docs/validation.md).
SCREEN_MARGIN = {"leave_one_out": 0.1, "resampled": 0.25}
SCREEN_EDGE = 1e-3


def _screened(spec, stats, rows, draws, ci_prob, n_draws, crn, margin, sd0, chunk_size):
    """Evidence of a batch of refits: the screen's, and exact refits where it could err.

    Returns (evidence dict as :func:`_analyse`, exact mask (B,)).
    """
    n, mean, ss = stats
    scr = _screen(spec, n, mean, ss, rows, draws, ci_prob)
    verdict = [_CONTRASTS.index(v) for v in VERDICTS]
    near = (np.abs(scr["upper"][:, verdict]) < margin * sd0[verdict]).any(1)
    exact = near | (scr["edge"] > SCREEN_EDGE) | ~np.isfinite(scr["upper"]).all(1)
    out = {k: scr[k].copy() for k in ("mean", "lower", "upper", "prob_below_zero")}
    bad = _degenerate(n, ss)  # no posterior (resampled lists): as _analyse, NaN
    for k in out:
        out[k][bad] = np.nan
    exact &= ~bad
    idx = np.flatnonzero(exact)
    for start in range(0, idx.size, chunk_size):
        part = idx[start:start + chunk_size]
        ev = _analyse(spec, n[part], mean[part], ss[part], ci_prob, n_draws, crn, rows,
                      "mixture")
        for k in out:
            out[k][part] = ev[k]
    return out, exact


def _screened_refits(rows, spec, loo, res_tasks, ci_prob, n_draws, seed, chunk_size):
    """Make the refits of :func:`sensitivity` with ``screen=True``, in this process.

    The same variants as the exact path (the resampled lists of task ``(2, k)`` from its
    generator), the whole table's refit exact, the others through :func:`_screened`.
    Returns the baseline evidence, the left-out words' evidence, the resampled lists'
    upper ends, the left-out words' exact mask and a summary of the screen for the settings.
    """
    from ..parallel import task_rng

    n, mean, ss = _variant_stats(rows, [("all", -1)])
    base, draws = _analyse_baseline(spec, n[0], mean[0], ss[0], ci_prob, n_draws, seed, rows)
    sd0 = draws["sd"]
    progress.info("sensitivity: screening %d left-out words", len(loo))
    cat, exact = _screened(spec, _variant_stats(rows, loo), rows, draws, ci_prob, n_draws,
                           seed, SCREEN_MARGIN["leave_one_out"], sd0, chunk_size)
    progress.info("sensitivity: %d left-out words screened, %d refitted exactly; screening "
                  "%d resampled word lists", exact.size, exact.sum(),
                  sum(args[2] for _, args in res_tasks))
    stats = [_resampled_stats(rows, args[2], task_rng(seed, key)) for key, args in res_tasks]
    stats = tuple(np.concatenate([st[i] for st in stats]) for i in range(3))
    boot, boot_exact = _screened(spec, stats, rows, draws, ci_prob, n_draws, seed,
                                 SCREEN_MARGIN["resampled"], sd0, chunk_size)
    progress.info("sensitivity: %d resampled word lists screened, %d refitted exactly",
                  boot_exact.size, boot_exact.sum())
    summary = {"margin_sd": dict(SCREEN_MARGIN), "exact_leave_one_out": int(exact.sum()),
               "exact_resampled": int(boot_exact.sum()), "leave_one_out": int(exact.size),
               "resampled": int(boot_exact.size)}
    return base, cat, boot["upper"], exact, summary


@dataclass
class Sensitivity:
    """Leave-one-word-out changes and resampled-list shares of the verdicts.

    Attributes
    ----------
    baseline : pandas.DataFrame
        One row per contrast: ``mean, lower, upper, prob_below_zero, holds``.
    leave_one_out : pandas.DataFrame
        One row per (left-out word, contrast): ``word, kind`` (protected or attribute),
        ``group`` (its class or attribute class), ``contrast``, ``mean, lower, upper,
        holds``, ``change`` (mean minus the baseline mean), ``flips`` (verdict differs).
    resampled : pandas.DataFrame
        One row per contrast: ``share_holds`` over the resampled lists and its MC se.
    """

    baseline: pd.DataFrame
    leave_one_out: pd.DataFrame
    resampled: pd.DataFrame
    settings: dict = field(default_factory=dict)

    @property
    def method(self) -> str:
        """How the refits were made."""
        return self.settings.get("method", METHOD)

    def influential(self, k: int = 10) -> pd.DataFrame:
        """Return the `k` words whose removal moves the verdict contrasts most (by |change|)."""
        f = self.leave_one_out.loc[self.leave_one_out["contrast"].isin(VERDICTS)]
        score = f.assign(abs_change=f["change"].abs()).groupby(["word", "kind", "group"])
        top = score["abs_change"].max().sort_values(ascending=False).head(k)
        wide = f.pivot_table(index=["word", "kind", "group"], columns="contrast",
                             values="change").reindex(top.index)
        flips = f.groupby(["word", "kind", "group"])["flips"].any().reindex(top.index)
        out = wide[list(VERDICTS)].reset_index()
        out["flips a verdict"] = flips.to_numpy()
        out.attrs.update(self.settings)
        return out

    def to_dict(self, k: int = 10) -> dict:
        """Plain data for JSON (``results.json``)."""
        return {"method": self.method, "settings": self.settings,
                "baseline": self.baseline.to_dict(orient="records"),
                "resampled": self.resampled.to_dict(orient="records"),
                "most_influential": self.influential(k).to_dict(orient="records"),
                "leave_one_out": self.leave_one_out.to_dict(orient="records")}

    def __str__(self) -> str:
        s = self.settings
        top = self.influential(8)
        lines = [f"sensitivity of the verdicts ({self.method}; {s['ci_prob']:.0%} HDI below 0)",
                 "share of resampled word lists (with replacement within class, "
                 f"{s['n_resamples']} lists) under which each verdict holds:",
                 self.resampled.set_index("contrast").round(3).to_string(), "",
                 "most influential words (change in the contrast's posterior mean when left "
                 "out):", top.round(4).to_string(index=False)]
        n_flip = int(self.leave_one_out.loc[self.leave_one_out["contrast"].isin(VERDICTS),
                                            "flips"].sum())
        lines.append(f"{n_flip} (word, verdict) pair(s) where leaving the word out flips "
                     "the verdict")
        return "\n".join(lines)

    def plot(self, path=None, k: int = 15):
        """Change in each verdict contrast when the most influential words are left out.

        Saved as PNG at `path` (returned), or the Figure is returned when `path` is None.
        """
        top = self.influential(k)
        fig = new_figure(figsize=(7, 0.32 * len(top) + 1.6))
        ax = fig.subplots()
        ypos = np.arange(len(top))[::-1]
        for j, v in enumerate(VERDICTS):
            ax.scatter(top[v], ypos + (j - 1) * 0.22, s=18, label=v)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(ypos)
        ax.set_yticklabels([f"{w} ({g})" for w, g in zip(top["word"], top["group"],
                                                          strict=True)], fontsize=8)
        ax.set_xlabel("change in the contrast's posterior mean when the word is left out")
        ax.set_title("Most influential words", fontsize=10)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        if path is None:
            return fig
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, dpi=120, format="png")
        return path


def check_model(spec):
    """Return `spec` if sensitivity refits support it, else raise ModelSpecError."""
    if family(spec.family).ATTRIBUTE_EFFECTS:
        if spec.level == "word" and supports(_hierarchical_part(spec)):
            return spec
    if not supports(spec) or spec.level != "word":
        raise ModelSpecError(f"model {spec.name!r}: sensitivity refits are exact only for the "
                             "hierarchical spec at level word with residual_sd "
                             "per_connection (other specs are not supported)")
    return spec


def sensitivity(table: pd.DataFrame, model=None, *, ci_prob: float | None = None,
                n_resamples: int = 200, n_draws: int = 4000, seed: int | None = None,
                chunk_size: int = 25, workers: int | None = None,
                scheduler: str | None = None, estimator: str = "draws",
                screen: bool = False) -> Sensitivity:
    """Leave-one-word-out and resampled-list sensitivity of the verdicts.

    Parameters
    ----------
    table : pandas.DataFrame
        A distance table with an ``attribute`` column.
    model : str, path-like or ModelSpec
        A hierarchical spec with one residual sd per connection (exact refits).
    ci_prob : float, optional
        HDI probability of the verdicts (default ``defaults.ci_prob``).
    n_resamples : int
        Resampled word lists.
    n_draws : int
        Posterior draws per refit.
    seed, chunk_size, workers, scheduler
        See :func:`bayesbias.parallel.run_tasks` (results do not depend on the workers).
    estimator : {"draws", "mixture"}
        Each refit's HDI ends and P(< 0) from its `n_draws` draws, or Rao-Blackwellised from
        the Normal mixture of the contrast over the scale draws (far smaller Monte Carlo
        error for the same draws; the report's robustness line uses it).
    screen : bool
        With the mixture estimator: refit exactly only the variants a cheap screen
        (:func:`_screen`: sigma fixed, one-dimensional quadrature over tau) puts within
        :data:`SCREEN_MARGIN` of a verdict threshold; the others keep the screen's numbers
        (column ``exact`` of ``leave_one_out`` False). Every verdict (``holds``, ``flips``,
        the resampled shares) is that of the exact refits, checked on the shipped lists;
        the report's robustness line uses it (not ``--sensitivity``, which shows the
        numbers). Runs in this process (`workers` and `scheduler` are not used).
    """
    if estimator not in ESTIMATORS:
        raise InvalidArgumentError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if screen and estimator != "mixture":
        raise InvalidArgumentError("screen=True needs estimator='mixture'")

    model = DEFAULT_MODEL if model is None else model
    spec = check_model(load_spec(model))
    check_pilot(table, str(table.attrs.get("source", "distance table")))
    ci_prob, _ = resolve_ci(ci_prob, "hdi")
    seed = defaults.seed if seed is None else int(seed)
    rows = _Rows.from_table(table)
    name, method = spec.name, METHOD
    if family(spec.family).ATTRIBUTE_EFFECTS:
        method = ("crossed plug-in: attribute deviations removed, exact hierarchical refit on "
                  "the adjusted statistics, each attribute group's mean effect drawn from "
                  "Normal(0, omega / sqrt(n_group))")

        rows = _attribute_adjusted(rows, per_kind=spec.attribute_sd == "per_kind")
        spec = _hierarchical_part(spec)
    loo = [("word", i) for i in range(rows.units.size)] + \
        [("attribute", j) for j in range(rows.attrs.size)]
    tasks = [((0, 0), (rows, spec, [("all", -1)], ci_prob, n_draws, seed, estimator))]
    for k, (start, n) in enumerate(chunks(len(loo), chunk_size)):
        tasks.append(((1, k), (rows, spec, loo[start:start + n], ci_prob, n_draws, seed,
                               estimator)))
    res_tasks = [((2, k), (rows, spec, n, ci_prob, n_draws, seed, estimator))
                 for k, (_, n) in enumerate(chunks(n_resamples, chunk_size))]
    exact = None
    if screen:
        base, cat, boot, exact, screened = _screened_refits(
            rows, spec, loo, res_tasks, ci_prob, n_draws, seed, chunk_size)
    else:
        loo_res = run_tasks(_leave_out_task, tasks, seed=seed, workers=workers,
                            scheduler=scheduler, label="sensitivity: left-out words")
        boot_res = run_tasks(_resample_task, res_tasks, seed=seed, workers=workers,
                             scheduler=scheduler, label="sensitivity: resampled lists")
        if not (loo_res.complete and boot_res.complete):
            raise KeyboardInterrupt("sensitivity interrupted")
        base = loo_res.results[(0, 0)]
        parts = [loo_res.results[(1, k)] for k in range(len(tasks) - 1)]
        cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        boot = np.concatenate([p["upper"] for p in boot_res.ordered()])
    baseline = pd.DataFrame({"contrast": list(_CONTRASTS),
                             **{k: v[0] for k, v in base.items()}})
    baseline["holds"] = verdict_holds(baseline["upper"])
    # one row per (left-out word, contrast), built by columns (a dict per row cost 30 ms a
    # list): the records' values and dtypes
    K = len(_CONTRASTS)
    is_word = np.array([kind == "word" for kind, _ in loo], dtype=bool)
    words = [str(rows.units[j] if kind == "word" else rows.attrs[j]) for kind, j in loo]
    groups = [str(rows.unit_class[j] if kind == "word" else rows.attr_group[j])
              for kind, j in loo]
    holds = verdict_holds(cat["upper"])
    cols = {"word": np.repeat(np.array(words, dtype=object), K),
            "kind": np.repeat(np.where(is_word, "protected", "attribute").astype(object), K),
            "group": np.repeat(np.array(groups, dtype=object), K),
            "contrast": np.tile(np.array(_CONTRASTS, dtype=object), len(loo)),
            "mean": cat["mean"].ravel(), "lower": cat["lower"].ravel(),
            "upper": cat["upper"].ravel(), "holds": holds.ravel(),
            "change": (cat["mean"] - baseline["mean"].to_numpy()).ravel(),
            "flips": (holds != baseline["holds"].to_numpy()).ravel()}
    if exact is not None:
        cols["exact"] = np.repeat(np.asarray(exact, dtype=bool), K)
    leave_one_out = pd.DataFrame({k: (v.tolist() if v.dtype == object else v)
                                  for k, v in cols.items()})
    usable = np.isfinite(boot).all(1)  # degenerate lists (see _degenerate) have no posterior
    if not usable.any():
        raise InputDataError("sensitivity: every resampled word list repeats one attribute "
                             "word throughout a connection (too few attribute words per "
                             "class to resample)")
    boot = boot[usable]
    share = verdict_holds(boot).mean(0)
    resampled = pd.DataFrame({"contrast": list(_CONTRASTS), "share_holds": share,
                              "mc_se": np.sqrt(share * (1 - share) / boot.shape[0]),
                              "lists": boot.shape[0],
                              "degenerate_lists": int((~usable).sum())})
    settings = {"ci_prob": ci_prob, "ci_kind": "hdi", "n_resamples": int(n_resamples),
                "n_draws": int(n_draws), "estimator": estimator, "seed": seed, "model": name,
                "method": method, "rule": "a verdict holds when the contrast's HDI lies "
                "below zero"}
    if screen:
        settings["screen"] = screened
    return Sensitivity(baseline, leave_one_out, resampled, settings)


def _attribute_adjusted(rows: _Rows, per_kind: bool = False) -> _Rows:
    """Rows minus their attribute's estimated deviation, with the crossed plug-in terms."""
    from dataclasses import replace

    n, s1, _ = rows.stats()
    with np.errstate(invalid="ignore", divide="ignore"):
        cell_mean = np.where(n > 0, s1 / np.where(n > 0, n, 1), 0.0)
    resid = rows.y - cell_mean[rows.unit, rows.conn]
    A = rows.attrs.size
    cnt = np.bincount(rows.attr, minlength=A).astype(float)
    vhat = np.bincount(rows.attr, weights=resid, minlength=A) / np.maximum(cnt, 1)
    # attribute groups: stereotypes (any class), human, none
    kind = np.array([0 if c in ("associated", "different") else (1 if c == "human" else 2)
                     for c in pd.Series(np.asarray(CONNECTIONS)[rows.conn]).groupby(
                         rows.attr).first().reindex(range(A)).to_numpy()])
    y = rows.y - vhat[rows.attr]
    cells = int((n > 0).sum())
    df = rows.y.size - cells
    ss_res = np.sum((y - _cell_means(rows, y)[rows.unit, rows.conn]) ** 2)
    s2 = ss_res / max(df - A, 1)
    o2 = attribute_variances(vhat, kind, s2, float(np.median(cnt)), per_kind)
    sizes = tuple(int((kind == g).sum()) for g in range(3))
    return replace(rows, y=y, ss_scale=df / max(df - A, 1), omega2=tuple(o2.tolist()),
                   group_sizes=sizes, per_kind=per_kind)


def _cell_means(rows: _Rows, y: np.ndarray) -> np.ndarray:
    U, C = rows.units.size, len(CONNECTIONS)
    flat = rows.unit * C + rows.conn
    n = np.bincount(flat, minlength=U * C).reshape(U, C)
    s = np.bincount(flat, weights=y, minlength=U * C).reshape(U, C)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)


def report_section(section, sens: Sensitivity, name: str, k: int = 10) -> dict:
    """Add the sensitivity of word list `name` to a report section; return its JSON data.

    `section` is a :class:`bayesbias.reporting.Section` (anything with ``text``, ``table``
    and ``figure_from``): a paragraph on the method, the share of resampled lists under
    which each verdict holds, the `k` most influential words and their figure. The returned
    dict (:meth:`Sensitivity.to_dict`) belongs in ``results.json`` under the word list's
    ``"sensitivity"`` key.
    """
    s = sens.settings
    if hasattr(section, "heading"):
        section.heading("Which words drive the verdicts: leave-one-out and resampled lists")
    flips = sens.leave_one_out.loc[sens.leave_one_out["contrast"].isin(VERDICTS)
                                   & sens.leave_one_out["flips"]]
    flip_text = ("No single left-out word changes a verdict." if flips.empty else
                 "Leaving out " + "; ".join(
                     f"`{r.word}` changes `{r.contrast}` to "
                     f"{'holds' if r.holds else 'does not hold'}"
                     for r in flips.head(6).itertuples())
                 + (f" (and {len(flips) - 6} more)" if len(flips) > 6 else "") + ".")
    section.text(
        f"Which words drive the verdicts: every protected word and every attribute word was "
        f"left out in turn, and {s['n_resamples']} word lists were resampled with replacement "
        f"within each class (protected words within their class, attributes within their "
        f"stereotype class, human or neutral group). Method: {sens.method}. A verdict holds when "
        f"the contrast's {s['ci_prob']:.0%} HDI lies below zero. {flip_text}")
    section.table(sens.resampled, f"{name}_sensitivity_resampled",
                  "Share of resampled word lists under which each verdict holds (with its "
                  "Monte Carlo se)")
    section.table(sens.influential(k), f"{name}_sensitivity_words",
                  f"The {k} most influential words: change in each contrast's posterior mean "
                  "when the word is left out (negative: the contrast becomes more negative)")
    section.figure_from(lambda path: sens.plot(path, k=max(k, 15)), f"{name}_sensitivity",
                        "Change in the verdict contrasts when each of the most influential "
                        "words is left out")
    return sens.to_dict(k)


def report_builder(ctx) -> None:
    """Report section builder (``bayesbias report --sensitivity``) for one word list."""
    s = ctx.settings
    spec = load_spec(s.model)
    try:
        check_model(spec)
    except ModelSpecError as exc:
        ctx.section.text(f"Sensitivity of the verdicts: not computed ({exc}).")
        ctx.results["sensitivity"] = {"skipped": str(exc)}
        return
    sens = sensitivity(ctx.table, spec, ci_prob=s.ci_prob, seed=s.seed)
    ctx.results["sensitivity"] = report_section(ctx.section, sens, ctx.key)
