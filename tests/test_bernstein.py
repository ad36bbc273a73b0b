"""Bernstein-bounded unfairness: the paper's worked example, closed forms, intervals, coverage."""

import math

import numpy as np
import pytest

from bayesbias.classifier.bernstein import (
    CRITERIA,
    bbu_by_group,
    bernstein_half_width,
    bernstein_min_n,
    criterion,
    disparity_intervals,
    groupwise_disparity,
    interval_coverage,
    smallest_claimable_delta,
)


def test_worked_example_minimum_n():
    # Ethayarajh (2020), section 3.3: C=1, delta=0.05, rho=0.95, gamma=0.5, sigma^2=4
    r = bernstein_min_n(0.05, confidence=0.95, gamma=0.5, variance=4, C=1)
    assert r["min_n"] == 11903
    assert 11902 < r["bound"] < 11903
    # sigma^2 = 4 is the worst case (C/gamma)^2, the default
    assert bernstein_min_n(0.05, 0.95, 0.5)["min_n"] == 11903


def test_worked_example_winobias():
    # "with WinoBias, which has 3160 examples, ... only if delta = 0.0975 or higher"
    d = smallest_claimable_delta(3160, confidence=0.95, gamma=0.5, variance=4)
    assert d == pytest.approx(0.0975, abs=5e-4)
    assert bernstein_min_n(d, 0.95, 0.5, 4)["bound"] == pytest.approx(3160, rel=1e-9)


@pytest.mark.parametrize("n, rho, gamma, s2", [(100, 0.9, 0.1, 1.0), (3160, 0.95, 0.5, 4.0),
                                                (50, 0.99, 0.3, 0.2)])
def test_half_width_solves_the_bernstein_bound(n, rho, gamma, s2):
    t = bernstein_half_width(n, rho, gamma, s2, C=1.0)
    bound = 2 * math.exp(-n * t * t / (2 * s2 + 2 * t / (3 * gamma)))  # formula (2)
    assert bound == pytest.approx(1 - rho, rel=1e-10)


def test_half_width_monotone():
    assert bernstein_half_width(1000) < bernstein_half_width(100)
    assert bernstein_half_width(500, 0.99) > bernstein_half_width(500, 0.9)
    assert bernstein_half_width(500, gamma=0.1) > bernstein_half_width(500, gamma=0.4)


@pytest.mark.parametrize("bad", [dict(confidence=1.0), dict(gamma=0.0), dict(gamma=0.6),
                                 dict(C=0.0)])
def test_bad_parameters_raise(bad):
    with pytest.raises(ValueError):
        bernstein_half_width(100, **bad)


def test_groupwise_disparity_is_difference_of_means():
    cost = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 0], float)
    f = np.array([1, 1, 1, 1, -1, -1, -1, -1, 0, 0])
    r = groupwise_disparity(cost, f, confidence=0.95)
    assert r.disparity == pytest.approx(0.75 - 0.25)
    assert (r.n, r.n_a, r.n_b) == (10, 4, 4)
    assert r.gamma == pytest.approx(0.4) and r.gamma_kind == "estimated"
    amort = np.where(f == 1, cost / 0.4, np.where(f == -1, -cost / 0.4, 0))
    assert r.variance == pytest.approx(amort.var(ddof=1))
    assert r.half_width == pytest.approx(bernstein_half_width(10, 0.95, 0.4, r.variance))
    worst = groupwise_disparity(cost, f, gamma=0.25, variance="worst")
    assert worst.variance == pytest.approx(16.0) and worst.variance_kind == "worst case"


def test_one_group_missing_gives_nan_with_reason():
    r = groupwise_disparity(np.ones(4), np.array([1, 1, 0, 0]))
    assert np.isnan(r.disparity) and "unprotected" in r.note
    iv = disparity_intervals(np.ones(4), np.array([1, 1, 0, 0]))
    assert iv["lower"].isna().all()


def test_criteria_on_a_hand_case():
    y = np.array([1, 1, 1, 0, 1, 1, 0, 0])
    p = np.array([1, 0, 0, 1, 1, 1, 0, 1])
    g = np.array([1, 1, 1, 1, -1, -1, -1, -1])
    eo = criterion("equal_opportunity")
    r = groupwise_disparity(eo.cost(y, p), eo.annotate(g, y))
    assert r.disparity == pytest.approx(2 / 3 - 0)  # FNR_A - FNR_B
    fpr = criterion("equalized_odds_fpr")
    r = groupwise_disparity(fpr.cost(y, p), fpr.annotate(g, y))
    assert r.disparity == pytest.approx(1 - 0.5)  # FPR_A - FPR_B
    dp = criterion("demographic_parity")
    r = groupwise_disparity(dp.cost(y, p), dp.annotate(g, y))
    assert r.disparity == pytest.approx((1 - 0.5) - (1 - 0.75))
    acc = criterion("accuracy")
    r = groupwise_disparity(acc.cost(y, p), acc.annotate(g, y))
    assert r.disparity == pytest.approx(3 / 4 - 1 / 4)
    with pytest.raises(ValueError, match="choose from"):
        criterion("nope")
    assert all(c.description for c in CRITERIA.values())


def test_intervals_side_by_side():
    rng = np.random.default_rng(0)
    f = np.where(rng.random(600) < 0.4, 1, -1)
    cost = (rng.random(600) < np.where(f == 1, 0.4, 0.2)).astype(float)
    iv = disparity_intervals(cost, f, confidence=0.9, seed=1)
    assert list(iv.index) == ["bernstein", "bayes", "bootstrap"]
    assert (iv["lower"] < iv["upper"]).all()
    # the Bernstein bound is the most conservative of the three
    assert iv.loc["bernstein", "width"] > iv.loc["bayes", "width"]
    assert iv.loc["bernstein", "width"] > iv.loc["bootstrap", "width"]
    # Bayes and bootstrap agree roughly for n = 600
    assert iv.loc["bayes", "width"] == pytest.approx(iv.loc["bootstrap", "width"], rel=0.15)
    nonbinary = disparity_intervals(cost * 0.5, f)
    assert np.isnan(nonbinary.loc["bayes", "lower"]) and "0-1" in nonbinary.loc["bayes", "note"]


def test_bbu_by_group_relabel_and_reorder():
    import pandas as pd

    rng = np.random.default_rng(2)
    n = 800
    y = rng.random(n) < 0.5
    p = rng.random(n) < np.where(y, 0.8, 0.3)
    g = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2})
    r = bbu_by_group(y, p, g, criterion_name="equal_opportunity", intervals=False)
    perm = rng.permutation(n)
    r2 = bbu_by_group(y[perm], p[perm], g.iloc[perm].rename(columns={"a": "x", "b": "z"}),
                      criterion_name="equal_opportunity", intervals=False)
    np.testing.assert_allclose(r[["disparity", "half_width"]].to_numpy(),
                               r2[["disparity", "half_width"]].to_numpy(), atol=1e-12)
    assert list(r2.index) == ["x", "z"]


@pytest.mark.slow
@pytest.mark.parametrize("n", [200, 2000])
def test_coverage_on_simulations(n):
    """Coverage with a known disparity of 0.05 (1000 replicates; binomial SE ~ 0.007)."""
    cov = interval_coverage(p_a=0.30, p_b=0.25, prop_a=0.3, n=n, reps=1000, confidence=0.95,
                            seed=11)
    print(cov)
    assert cov.loc["bernstein", "coverage"] >= 0.95  # a bound: conservative
    assert abs(cov.loc["bayes", "coverage"] - 0.95) < 0.03
    assert abs(cov.loc["bootstrap", "coverage"] - 0.95) < 0.03
    assert cov.loc["bernstein", "mean_width"] > cov.loc["bayes", "mean_width"]


def test_result_shapes_and_given_variance_checked():
    import json

    from bayesbias.classifier.bernstein import groupwise_disparity
    from bayesbias.errors import InvalidArgumentError

    cost = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    ann = np.array([1, 1, 1, -1, -1, -1])
    r = groupwise_disparity(cost, ann)
    json.dumps(r.to_dict())
    assert r.to_frame()["ci_kind"].iloc[0] == "bernstein"
    assert "Bernstein interval" in str(r)
    for bad in (float("inf"), float("nan"), 0.0):
        with pytest.raises(InvalidArgumentError, match="variance"):
            groupwise_disparity(cost, ann, variance=bad)


def test_hdi_is_arvizs():
    """The interval helper gives ``arviz.hdi``'s bounds without importing ArviZ's plotting."""
    import arviz as az
    import numpy as np

    from bayesbias.classifier.bernstein import _hdi

    x = np.random.default_rng(0).gamma(2.0, 1.0, 4000)
    assert _hdi(x, 0.9) == tuple(float(v) for v in np.asarray(az.hdi(x, prob=0.9)).ravel())
