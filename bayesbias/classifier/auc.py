"""Nuanced AUC bias metrics of Borkan et al. (2019), computed for many groups at once.

For a subgroup g, with D+ / D- the positive / negative examples and "background" the
examples outside g:

- Subgroup AUC: AUC of the subgroup's positives against the subgroup's negatives.
- BPSN AUC (background positive, subgroup negative): background positives vs subgroup
  negatives; low values mean subgroup negatives score high (false positives).
- BNSP AUC (background negative, subgroup positive): subgroup positives vs background
  negatives; low values mean subgroup positives score low (false negatives).
- Negative AEG: 0.5 - P(background negative scores higher than subgroup negative).
- Positive AEG: 0.5 - P(background positive scores higher than subgroup positive).

Ties count one half everywhere. The AEGs follow the published code (the Mann-Whitney U of
the background over the subgroup, normalised by the number of pairs), so a positive AEG
means the subgroup's scores are shifted up relative to the background.

Hand-written for speed (measured by ``benchmarks/bench_auc.py`` against the per-group
baseline :func:`nuanced_auc_baseline` and scikit-learn's ``roc_auc_score``): the scores are
sorted once and replaced by tie-block ids. Every metric is a
pair count U(A, B) = #{a > b} + #{a = b}/2 between two disjoint sets; with per-block counts
of all positives and negatives computed once, each group needs only sums over its own
members (and one searchsorted within the group for the Subgroup AUC), so the cost is
O(n log n + sum of group sizes). Intervals (optional) are DeLong's: the variance of a
two-sample U statistic from its placement values, with a normal approximation; they need
sums over the background's placement values, which are piecewise constant between the
group's own tie blocks, so they too cost O(group size) per group.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .._xarray import xr
from ..errors import InputDataError
from ..intervals import normal_quantile
from .data import check_boolean_flags

__all__ = ["nuanced_auc_metrics", "nuanced_auc_table", "pairwise_u", "AUC_METRICS",
           "nuanced_auc_baseline", "average_equality_gap"]

log = logging.getLogger(__name__)

#: Metric names in reporting order.
AUC_METRICS: tuple[str, ...] = ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg",
                                "positive_aeg")


def average_equality_gap(background, group) -> float:
    """Average Equality Gap: 1/2 - U(background, group) / (|background| |group|).

    U counts the pairs with the background score above the group score (ties one half);
    positive when the group's scores are shifted up. The positive (negative) AEG of
    :func:`nuanced_auc_metrics` is this on the positives (negatives); NaN when a side is empty.
    """
    x, y = np.asarray(background, float), np.asarray(group, float)
    if len(x) == 0 or len(y) == 0:
        return np.nan
    xs = np.sort(x)
    left, right = np.searchsorted(xs, y, "left"), np.searchsorted(xs, y, "right")
    u = (len(xs) - right).sum() + 0.5 * (right - left).sum()
    return float(0.5 - u / (len(x) * len(y)))


def pairwise_u(high: np.ndarray, low: np.ndarray) -> float:
    """U(high, low) = #{h > l} + #{h = l}/2 over all pairs, by direct counting (O(n m)).

    A slow, obviously correct reference for tests.
    """
    h = np.asarray(high, dtype=float)[:, None]
    lo = np.asarray(low, dtype=float)[None, :]
    return float((h > lo).sum() + 0.5 * (h == lo).sum())


def _as_arrays(y, score, groups):
    y = np.asarray(y)
    if y.dtype != bool:
        u = np.unique(y)
        if not set(u.tolist()) <= {0, 1}:
            raise InputDataError(f"labels must be binary (0/1 or bool), found {u[:10]}")
        y = y.astype(bool)
    s = np.asarray(score, dtype=float)
    if s.shape != y.shape or s.ndim != 1:
        raise InputDataError(f"score shape {s.shape} does not match label shape {y.shape}")
    if not np.isfinite(s).all():
        raise InputDataError(f"scores contain {int((~np.isfinite(s)).sum())} NaN/inf values")
    if isinstance(groups, pd.DataFrame):
        names = [str(c) for c in groups.columns]
        m = check_boolean_flags(groups).to_numpy(dtype=bool)
    else:
        m = np.asarray(groups, dtype=bool)
        if m.ndim == 1:
            m = m[:, None]
        names = [f"group{i}" for i in range(m.shape[1])]
    if m.shape[0] != len(y):
        raise InputDataError(f"groups have {m.shape[0]} rows, labels {len(y)}")
    return y, s, m, names


def nuanced_auc_metrics(
    y,
    score,
    groups,
    *,
    ci_prob: float | None = None,
    group_names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Subgroup, BPSN and BNSP AUCs and the negative / positive AEGs for every group.

    Parameters
    ----------
    y : array of bool, shape (n,)
        Gold labels (True = positive).
    score : array of float, shape (n,)
        Classifier scores.
    groups : DataFrame or array of bool, shape (n, n_groups)
        Group membership; groups may overlap. The background of a group is every row
        outside it.
    ci_prob : float, optional
        If given, add DeLong intervals (normal approximation) with this coverage.
    group_names : list of str, optional
        Names when `groups` is an array.

    Returns
    -------
    DataFrame
        One row per group: ``n``, ``n_pos``, ``n_neg`` and the five metrics
        (:data:`AUC_METRICS`); with `ci_prob`, ``<metric>_se``, ``<metric>_lower`` and
        ``<metric>_upper``; ``note`` says why a metric is NaN (a class missing in the
        subgroup or the background). ``attrs`` hold the AUC on all rows (``overall_auc``)
        and the interval method.
    """
    y, s, m, names = _as_arrays(y, score, groups)
    if group_names is not None:
        names = list(map(str, group_names))
    n = len(y)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    ys = y[order]
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    blk = np.cumsum(new) - 1  # tie-block id of each sorted row
    k_blocks = int(blk[-1]) + 1 if n else 0
    pk = np.bincount(blk, weights=ys, minlength=k_blocks)
    nk = np.bincount(blk, minlength=k_blocks) - pk
    n_pos, n_neg = float(pk.sum()), float(nk.sum())
    cp, cn = np.cumsum(pk), np.cumsum(nk)
    below_n = cn - 0.5 * nk  # mid-count of negatives below a block
    above_p, above_n = n_pos - cp + 0.5 * pk, n_neg - cn + 0.5 * nk
    ms = m[order]
    z = normal_quantile(ci_prob) if ci_prob is not None else None

    rows = []
    for j, name in enumerate(names):
        mem = np.flatnonzero(ms[:, j])
        kb = blk[mem]
        yy = ys[mem]
        spb, snb = kb[yy], kb[~yy]  # sorted block ids of subgroup positives / negatives
        nsp, nsn = float(len(spb)), float(len(snb))
        nbp, nbn = n_pos - nsp, n_neg - nsn
        lt = np.searchsorted(snb, spb, "left")
        le = np.searchsorted(snb, spb, "right")
        c_sp = lt + 0.5 * (le - lt)  # per subgroup positive: subgroup negatives below
        u_sub = c_sp.sum()
        u_p_sn = above_p[snb].sum()  # U(P, SN)
        u_sp_n = below_n[spb].sum()  # U(SP, N)
        u_bpsn = u_p_sn - u_sub
        u_bnsp = u_sp_n - u_sub
        u_bn_sn = above_n[snb].sum() - nsn * nsn / 2
        u_bp_sp = above_p[spb].sum() - nsp * nsp / 2
        rec = {"group": name, "n": len(mem), "n_pos": int(nsp), "n_neg": int(nsn)}
        notes = []

        def ratio(u, a, b, what, notes=notes):
            if a == 0 or b == 0:
                notes.append(what)
                return np.nan
            return u / (a * b)

        rec["subgroup_auc"] = ratio(u_sub, nsp, nsn, "subgroup_auc: subgroup has one class")
        rec["bpsn_auc"] = ratio(u_bpsn, nbp, nsn,
                                "bpsn_auc: no subgroup negatives or background positives")
        rec["bnsp_auc"] = ratio(u_bnsp, nsp, nbn,
                                "bnsp_auc: no subgroup positives or background negatives")
        rec["negative_aeg"] = 0.5 - ratio(u_bn_sn, nbn, nsn,
                                          "negative_aeg: no negatives in subgroup or background")
        rec["positive_aeg"] = 0.5 - ratio(u_bp_sp, nbp, nsp,
                                          "positive_aeg: no positives in subgroup or background")
        if z is not None:
            se = _delong_se(spb, snb, c_sp, cp, cn, below_n, above_p, above_n, nsp, nsn,
                            nbp, nbn)
            for metric in AUC_METRICS:
                v, e = rec[metric], se[metric]
                lo, hi = (0.0, 1.0) if metric.endswith("auc") else (-0.5, 0.5)
                rec[f"{metric}_se"] = e
                rec[f"{metric}_lower"] = max(lo, v - z * e) if np.isfinite(e) else np.nan
                rec[f"{metric}_upper"] = min(hi, v + z * e) if np.isfinite(e) else np.nan
        rec["note"] = "; ".join(notes)
        rows.append(rec)
    out = pd.DataFrame(rows).set_index("group")
    overall = float((pk * below_n).sum() / (n_pos * n_neg)) if n_pos and n_neg else np.nan
    out.attrs.update(
        overall_auc=overall, metrics=list(AUC_METRICS), ties="count one half",
        background="rows outside the subgroup", reference="Borkan et al. (2019)")
    if ci_prob is not None:
        out.attrs.update(ci_prob=float(ci_prob),
                         ci_kind="delong",
                         ci_method="DeLong variance, normal approximation, clipped to range")
    return out


def _mid_below(sorted_blocks: np.ndarray, at: np.ndarray) -> np.ndarray:
    """#{x < b} + #{x = b}/2 for each block id b in `at`, x in `sorted_blocks`."""
    lt = np.searchsorted(sorted_blocks, at, "left")
    return lt + 0.5 * (np.searchsorted(sorted_blocks, at, "right") - lt)


def _weighted_moments(sorted_blocks: np.ndarray, cum_w: np.ndarray) -> tuple[float, float]:
    """Sum over all tie blocks k of w_k f(k) and w_k f(k)^2, f = mid-below count of the set.

    `cum_w` is the cumulative weight (e.g. number of positives) over blocks. f is constant
    between the set's own blocks, so the sums need only O(set size) work.
    """
    if len(sorted_blocks) == 0:
        return 0.0, 0.0
    start = np.flatnonzero(np.r_[True, sorted_blocks[1:] != sorted_blocks[:-1]])
    u = sorted_blocks[start]
    c = np.diff(np.r_[start, len(sorted_blocks)])
    cum = np.cumsum(c).astype(float)
    prev_w = np.where(u > 0, cum_w[np.maximum(u - 1, 0)], 0.0)
    w_at = cum_w[u] - prev_w
    mid = cum - 0.5 * c
    nxt = np.append(u[1:], len(cum_w))
    seg = cum_w[nxt - 1] - cum_w[u]  # weight strictly between this block and the next
    return (float((w_at * mid).sum() + (seg * cum).sum()),
            float((w_at * mid ** 2).sum() + (seg * cum ** 2).sum()))


def _var(sum_v, sum_v2, count):
    """Sample variance from the sum and sum of squares."""
    if count < 2:
        return np.nan
    return max(0.0, (sum_v2 - sum_v * sum_v / count) / (count - 1))


def _combine(a_sum, a_sq, na, b_sum, b_sq, nb):
    if na < 2 or nb < 2:
        return np.nan
    return float(np.sqrt(_var(a_sum, a_sq, na) / na + _var(b_sum, b_sq, nb) / nb))


def _delong_se(spb, snb, c_sp, cp, cn, below_n, above_p, above_n, nsp, nsn, nbp, nbn):
    """DeLong standard errors of the five metrics for one group.

    For U(A, B) the placements are V_A(a) = (#B below a)/|B| and V_B(b) = (#A above b)/|A|
    (ties one half); the variance of U/(|A||B|) is var(V_A)/|A| + var(V_B)/|B|. Sums over
    background sets are totals over all positives / negatives minus the subgroup's part.
    """
    n_neg = cn[-1]
    below_sn_sp = c_sp  # subgroup negatives below each subgroup positive
    below_sn_sn = _mid_below(snb, snb)
    below_sp_sp = _mid_below(spb, spb)
    above_sp_sn = nsp - _mid_below(spb, snb)
    above_sp_sp = nsp - below_sp_sp
    above_sn_sn = nsn - below_sn_sn
    p1_sn, p2_sn = _weighted_moments(snb, cp)  # sum over positives of below_SN (and squared)
    n1_sn, n2_sn = _weighted_moments(snb, cn)  # ... over negatives
    p1_sp, p2_sp = _weighted_moments(spb, cp)
    n1_sp, n2_sp = _weighted_moments(spb, cn)
    se = dict.fromkeys(AUC_METRICS, np.nan)
    if nsp and nsn:  # Subgroup AUC: A = SP, B = SN
        va, vb = below_sn_sp / nsn, above_sp_sn / nsp
        se["subgroup_auc"] = _combine(va.sum(), (va ** 2).sum(), nsp, vb.sum(),
                                      (vb ** 2).sum(), nsn)
    if nbp and nsn:  # BPSN: A = BP (SN below / nsn), B = SN (BP above / nbp)
        a1 = p1_sn - below_sn_sp.sum()
        a2 = p2_sn - (below_sn_sp ** 2).sum()
        vb = (above_p[snb] - above_sp_sn) / nbp
        se["bpsn_auc"] = _combine(a1 / nsn, a2 / nsn ** 2, nbp, vb.sum(), (vb ** 2).sum(), nsn)
    if nsp and nbn:  # BNSP: A = SP (BN below / nbn), B = BN (SP above / nsp)
        va = (below_n[spb] - below_sn_sp) / nbn
        # above_SP = nsp - below_SP, summed over background negatives (all minus subgroup)
        b1_all = nsp * n_neg - n1_sp
        b2_all = nsp ** 2 * n_neg - 2 * nsp * n1_sp + n2_sp
        b1 = b1_all - above_sp_sn.sum()
        b2 = b2_all - (above_sp_sn ** 2).sum()
        se["bnsp_auc"] = _combine(va.sum(), (va ** 2).sum(), nsp, b1 / nsp, b2 / nsp ** 2, nbn)
    if nbn and nsn:  # Negative AEG, U(BN, SN): A = BN (SN below / nsn), B = SN (BN above)
        a1 = n1_sn - below_sn_sn.sum()
        a2 = n2_sn - (below_sn_sn ** 2).sum()
        vb = (above_n[snb] - above_sn_sn) / nbn
        se["negative_aeg"] = _combine(a1 / nsn, a2 / nsn ** 2, nbn, vb.sum(), (vb ** 2).sum(),
                                      nsn)
    if nbp and nsp:  # Positive AEG, U(BP, SP): A = BP (SP below / nsp), B = SP (BP above)
        a1 = p1_sp - below_sp_sp.sum()
        a2 = p2_sp - (below_sp_sp ** 2).sum()
        vb = (above_p[spb] - above_sp_sp) / nbp
        se["positive_aeg"] = _combine(a1 / nsp, a2 / nsp ** 2, nbp, vb.sum(), (vb ** 2).sum(),
                                      nsp)
    return se


def nuanced_auc_baseline(y, score, groups) -> pd.DataFrame:
    """Compute the five metrics the straightforward way: one Mann-Whitney U per group and metric.

    Used as the baseline of the benchmark and as an independent check in tests
    (``scipy.stats.mannwhitneyu``; its U counts ties one half).
    """
    y, s, m, names = _as_arrays(y, score, groups)
    rows = []
    for j, name in enumerate(names):
        g = m[:, j]
        sp, sn = s[g & y], s[g & ~y]
        bp, bn = s[~g & y], s[~g & ~y]

        def auc(high, low):
            if len(high) == 0 or len(low) == 0:
                return np.nan
            return stats.mannwhitneyu(high, low).statistic / (len(high) * len(low))

        rows.append({"group": name, "subgroup_auc": auc(sp, sn), "bpsn_auc": auc(bp, sn),
                     "bnsp_auc": auc(sp, bn), "negative_aeg": 0.5 - auc(bn, sn),
                     "positive_aeg": 0.5 - auc(bp, sp)})
    return pd.DataFrame(rows).set_index("group")


def nuanced_auc_table(y, scores: dict, groups, *, ci_prob: float | None = None) -> xr.Dataset:
    """Compute the five metrics for several classifiers as an xarray Dataset.

    Parameters
    ----------
    y : array of bool
        Gold labels.
    scores : dict of {str: array}
        Scores per classifier (model name -> scores).
    groups : DataFrame of bool
        Group membership.
    ci_prob : float, optional
        Add DeLong intervals with dim ``ci_bound`` (lower, upper).

    Returns
    -------
    xarray.Dataset
        One variable per metric with dims (``model``, ``group``) and, with intervals,
        ``<metric>_ci`` with dims (``model``, ``group``, ``ci_bound``).
    """
    frames = {name: nuanced_auc_metrics(y, sc, groups, ci_prob=ci_prob)
              for name, sc in scores.items()}
    models = list(frames)
    first = frames[models[0]]
    data = {}
    for metric in AUC_METRICS:
        data[metric] = (("model", "group"),
                        np.stack([frames[mo][metric].to_numpy() for mo in models]))
        if ci_prob is not None:
            lo = np.stack([frames[mo][f"{metric}_lower"].to_numpy() for mo in models])
            hi = np.stack([frames[mo][f"{metric}_upper"].to_numpy() for mo in models])
            data[f"{metric}_ci"] = (("model", "group", "ci_bound"), np.stack([lo, hi], -1))
    ds = xr.Dataset(data, coords={"model": models, "group": list(first.index),
                                  "n": ("group", first["n"].to_numpy())})
    if ci_prob is not None:
        ds = ds.assign_coords(ci_bound=["lower", "upper"])
    ds.attrs.update({k: v for k, v in first.attrs.items() if isinstance(v, (str, float, int))})
    return ds
