"""Nuanced AUC metrics: hand cases, direct pair counting, DeLong, published values, invariances."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesbias.classifier.auc import (
    AUC_METRICS,
    nuanced_auc_baseline,
    nuanced_auc_metrics,
    nuanced_auc_table,
    pairwise_u,
)
from bayesbias.classifier.data import MADLIBS_REFERENCE_TERMS, identity_groups, intersect_groups
from bayesbias.datasets import madlibs

DATA = Path(__file__).parent / "data"
# column names of the published tables (see tests/data/README.md)
PUBLISHED = {"subgroup_auc": "subgroup_auc", "bpsn_auc": "negative_cross_auc",
             "bnsp_auc": "positive_cross_auc", "negative_aeg": "negative_aeg",
             "positive_aeg": "positive_aeg"}


def _direct(y, s, g):
    """Compute the five metrics by counting every pair (no ranks, no scipy)."""
    sp, sn, bp, bn = s[g & y], s[g & ~y], s[~g & y], s[~g & ~y]
    r = lambda h, lo: pairwise_u(h, lo) / (len(h) * len(lo))  # noqa: E731
    return {"subgroup_auc": r(sp, sn), "bpsn_auc": r(bp, sn), "bnsp_auc": r(sp, bn),
            "negative_aeg": 0.5 - r(bn, sn), "positive_aeg": 0.5 - r(bp, sp)}


def test_hand_checkable_case():
    # subgroup: pos 0.8, neg 0.5 ; background: pos 0.9, 0.5 ; neg 0.1, 0.5
    y = np.array([1, 0, 1, 1, 0, 0], bool)
    s = np.array([0.8, 0.5, 0.9, 0.5, 0.1, 0.5])
    g = np.array([1, 1, 0, 0, 0, 0], bool)
    r = nuanced_auc_metrics(y, s, g[:, None]).iloc[0]
    assert r["subgroup_auc"] == 1.0                     # 0.8 > 0.5
    assert r["bpsn_auc"] == pytest.approx((1 + 0.5) / 2)  # 0.9 > 0.5, 0.5 = 0.5
    assert r["bnsp_auc"] == 1.0                         # 0.8 > 0.1, 0.8 > 0.5
    # negative AEG: 0.5 - P(bg neg > sub neg) = 0.5 - (0 + 0.5)/2
    assert r["negative_aeg"] == pytest.approx(0.25)
    # positive AEG: 0.5 - P(bg pos > 0.8) = 0.5 - (1 + 0)/2
    assert r["positive_aeg"] == pytest.approx(0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_direct_pair_counting_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = 400
    y = rng.random(n) < 0.35
    s = np.round(rng.normal(size=n) + 1.2 * y, 1)  # many ties
    groups = rng.random((n, 4)) < [0.1, 0.3, 0.5, 0.05]
    r = nuanced_auc_metrics(y, s, groups)
    for j in range(4):
        want = _direct(y, s, groups[:, j])
        for m in AUC_METRICS:
            assert r.iloc[j][m] == pytest.approx(want[m], abs=1e-12)
    base = nuanced_auc_baseline(y, s, groups)
    np.testing.assert_allclose(r[list(AUC_METRICS)].to_numpy(), base.to_numpy(), atol=1e-12)


def test_delong_standard_errors_match_placement_values():
    rng = np.random.default_rng(5)
    n = 300
    y = rng.random(n) < 0.4
    s = np.round(rng.normal(size=n) + y, 1)
    g = rng.random(n) < 0.3
    r = nuanced_auc_metrics(y, s, g[:, None], ci_prob=0.9).iloc[0]
    sets = {"subgroup_auc": (g & y, g & ~y), "bpsn_auc": (~g & y, g & ~y),
            "bnsp_auc": (g & y, ~g & ~y), "negative_aeg": (~g & ~y, g & ~y),
            "positive_aeg": (~g & y, g & y)}
    for m, (a, b) in sets.items():
        h, lo = s[a][:, None], s[b][None, :]
        psi = (h > lo) + 0.5 * (h == lo)
        se = np.sqrt(psi.mean(1).var(ddof=1) / a.sum() + psi.mean(0).var(ddof=1) / b.sum())
        assert r[f"{m}_se"] == pytest.approx(se, rel=1e-10)
        assert r[f"{m}_lower"] <= r[m] <= r[f"{m}_upper"]


@pytest.mark.parametrize("table, make_groups", [
    ("borkan2019_madlibs_unitary.csv", lambda ml: identity_groups(
        ml, list(MADLIBS_REFERENCE_TERMS))),
    ("borkan2019_madlibs_intersectional.csv", lambda ml: intersect_groups(
        identity_groups(ml, list(MADLIBS_REFERENCE_TERMS)), ["black", "white"],
        list(MADLIBS_REFERENCE_TERMS[:10]))),
])
def test_reproduces_published_values(table, make_groups):
    ml = madlibs()
    ref = pd.read_csv(DATA / table, index_col=0).set_index("subgroup")
    groups = make_groups(ml)[list(ref.index)]
    y = (ml["toxicity"] == "toxic").to_numpy()
    for model in ("TOXICITY@1", "TOXICITY@6"):
        r = nuanced_auc_metrics(y, ml[model], groups)
        assert (r["n"] == ref["subset_size"]).all()
        for ours, theirs in PUBLISHED.items():
            # published to 12 significant digits; the issue asks for 1e-6
            np.testing.assert_allclose(r[ours], ref[f"{model}_{theirs}"], atol=1e-9, rtol=0)


def test_invariances():
    rng = np.random.default_rng(3)
    n = 500
    y = rng.random(n) < 0.5
    s = np.round(rng.random(n), 2)
    groups = pd.DataFrame(rng.random((n, 3)) < 0.3, columns=["a", "b", "c"])
    r = nuanced_auc_metrics(y, s, groups)[list(AUC_METRICS)]
    perm = rng.permutation(n)  # reorder rows
    r2 = nuanced_auc_metrics(y[perm], s[perm], groups.iloc[perm].reset_index(drop=True))
    pd.testing.assert_frame_equal(r, r2[list(AUC_METRICS)], atol=1e-12)
    # relabel and reorder groups: same values per group
    renamed = groups[["c", "a", "b"]].rename(columns={"c": "z", "a": "x", "b": "y"})
    r3 = nuanced_auc_metrics(y, s, renamed)[list(AUC_METRICS)]
    np.testing.assert_allclose(r3.loc[["x", "y", "z"]].to_numpy(), r.to_numpy(), atol=1e-12)
    # strictly increasing transform of the scores changes nothing
    r4 = nuanced_auc_metrics(y, np.exp(3 * s), groups)[list(AUC_METRICS)]
    np.testing.assert_allclose(r4.to_numpy(), r.to_numpy(), atol=1e-12)


def test_aeg_sign_follows_a_shift_of_the_subgroup():
    rng = np.random.default_rng(9)
    n = 2000
    y = rng.random(n) < 0.5
    g = rng.random(n) < 0.2
    s = rng.normal(size=n) + 3 * y + 0.8 * g  # subgroup shifted up
    r = nuanced_auc_metrics(y, s, g[:, None]).iloc[0]
    assert r["negative_aeg"] > 0.1 and r["positive_aeg"] > 0.1
    assert r["bpsn_auc"] < r["bnsp_auc"]


def test_one_class_group_gives_nan_with_reason():
    y = np.array([1, 1, 0, 0, 1], bool)
    s = np.array([0.9, 0.8, 0.1, 0.3, 0.7])
    g = np.array([[1, 0], [1, 0], [0, 0], [0, 0], [0, 0]], bool)
    r = nuanced_auc_metrics(y, s, g, ci_prob=0.9)
    assert np.isnan(r.iloc[0]["subgroup_auc"]) and "one class" in r.iloc[0]["note"]
    assert np.isnan(r.iloc[0]["bpsn_auc"]) and np.isfinite(r.iloc[0]["bnsp_auc"])
    assert r.iloc[1]["n"] == 0 and r.iloc[1][list(AUC_METRICS)].isna().all()


def test_table_has_named_dims():
    ml = madlibs()
    y = (ml["toxicity"] == "toxic").to_numpy()
    g = identity_groups(ml, ["gay", "straight"])
    ds = nuanced_auc_table(y, {m: ml[m] for m in ("TOXICITY@1", "TOXICITY@6")}, g, ci_prob=0.9)
    assert ds["bpsn_auc"].dims == ("model", "group")
    assert ds["bpsn_auc_ci"].dims == ("model", "group", "ci_bound")
    assert ds.attrs["ci_prob"] == 0.9
    lo, hi = ds["bpsn_auc_ci"].sel(ci_bound="lower"), ds["bpsn_auc_ci"].sel(ci_bound="upper")
    assert bool(((lo <= ds["bpsn_auc"]) & (ds["bpsn_auc"] <= hi)).all())


def test_overall_auc_in_attrs():
    y = np.array([1, 0, 1, 0], bool)
    s = np.array([0.9, 0.5, 0.5, 0.1])
    r = nuanced_auc_metrics(y, s, np.ones((4, 1), bool))
    assert r.attrs["overall_auc"] == pytest.approx(pairwise_u(s[y], s[~y]) / 4)


@pytest.mark.slow
def test_delong_interval_coverage():
    """Binormal scores with known metrics; 95% DeLong intervals should cover ~95%.

    Negatives N(0, 1), positives N(2, 1); subgroup (20%) scores shifted by +0.3 (negatives)
    and -0.2 (positives). Truths: AUC(mu) = Phi(mu / sqrt(2)).
    """
    from scipy.stats import norm

    truth = {"subgroup_auc": norm.cdf((2 - 0.2 - 0.3) / np.sqrt(2)),
             "bpsn_auc": norm.cdf((2 - 0.3) / np.sqrt(2)),
             "bnsp_auc": norm.cdf((2 - 0.2) / np.sqrt(2)),
             "negative_aeg": 0.5 - norm.cdf(-0.3 / np.sqrt(2)),
             "positive_aeg": 0.5 - norm.cdf(0.2 / np.sqrt(2))}
    rng = np.random.default_rng(21)
    reps, n = 800, 3000
    hits = {m: 0 for m in AUC_METRICS}
    for _ in range(reps):
        y = rng.random(n) < 0.4
        g = rng.random(n) < 0.2
        s = rng.normal(size=n) + 2 * y + np.where(g, np.where(y, -0.2, 0.3), 0)
        r = nuanced_auc_metrics(y, s, g[:, None], ci_prob=0.95).iloc[0]
        for m in AUC_METRICS:
            hits[m] += r[f"{m}_lower"] <= truth[m] <= r[f"{m}_upper"]
    coverage = {m: h / reps for m, h in hits.items()}
    print(coverage)
    for m, c in coverage.items():  # binomial SE ~ 0.008 at 800 replicates
        assert abs(c - 0.95) < 0.03, (m, c)
