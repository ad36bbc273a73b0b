"""Reliability metrics: Du, Fang & Nguyen (2021) definitions and published values."""

import numpy as np
import pytest

from bayesbias.errors import InputDataError, InvalidArgumentError
from bayesbias.reliability import cronbach_alpha, ensemble_reliability, icc, mean_squares

#: Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array([[9., 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6],
                          [10, 5, 6, 9], [6, 2, 4, 7]])


def test_published_values():
    # Shrout & Fleiss report ICC(2,1) = .29 and ICC(3,1) = .71
    assert icc(SHROUT_FLEISS, "2,1") == pytest.approx(0.29, abs=0.005)
    assert icc(SHROUT_FLEISS, "3,1") == pytest.approx(0.71, abs=0.005)


def test_equal_to_du_et_al_reference():
    # values from nlpsoc/reliability_bias reliability_metrics.py (icc, cronbachs_alpha)
    # on the same arrays, computed once with their code
    assert icc(SHROUT_FLEISS, "2,1") == pytest.approx(0.2897637795275592, abs=1e-12)
    assert icc(SHROUT_FLEISS, "3,1") == pytest.approx(0.7148407148407154, abs=1e-12)
    assert cronbach_alpha(SHROUT_FLEISS) == pytest.approx(0.9686190679777683, abs=1e-12)
    rng = np.random.default_rng(3)
    b = rng.normal(size=(7, 5)) + rng.normal(size=(7, 1))
    assert icc(b, "2,1") == pytest.approx(0.5545898830401986, abs=1e-12)
    assert icc(b, "3,1") == pytest.approx(0.5272596245898191, abs=1e-12)
    assert cronbach_alpha(b) == pytest.approx(-2.699657295860324, abs=1e-12)


def test_mean_squares_add_up():
    a = SHROUT_FLEISS
    msr, msc, mse = mean_squares(a)
    n, k = a.shape
    total = ((a - a.mean()) ** 2).sum()
    assert msr * (n - 1) + msc * (k - 1) + mse * (n - 1) * (k - 1) == pytest.approx(total)


def test_invariances():
    a = SHROUT_FLEISS
    perm = np.random.default_rng(0).permutation(a.shape[1])
    assert icc(a[:, perm]) == pytest.approx(icc(a))  # rater order
    assert icc(a * 3 + 1, "3,1") == pytest.approx(icc(a, "3,1"))  # affine
    # ICC(3,1) ignores a rater's constant offset; ICC(2,1) does not
    shifted = a + np.array([5, 0, 0, 0])  # the highest rater, higher still
    assert icc(shifted, "3,1") == pytest.approx(icc(a, "3,1"))
    assert icc(shifted, "2,1") < icc(a, "2,1")
    assert icc(np.tile(np.arange(5.0)[:, None], (1, 3)) + [0, 1e-9, 0]) \
        == pytest.approx(1.0)


def test_bad_input():
    with pytest.raises(InputDataError):
        icc(np.ones((1, 3)))
    with pytest.raises(InvalidArgumentError):
        icc(SHROUT_FLEISS, "1,1")
    with pytest.raises(InputDataError):
        cronbach_alpha([[1.0, np.nan], [2, 3]])


def test_ensemble_reliability_runs():
    from bayesbias.ensemble import simulate_ensemble_table

    t, _ = simulate_ensemble_table(kind="seeds", n_embeddings=4, seed=2, eta=0.0)
    r = ensemble_reliability(t)
    d = r.to_dict()
    assert d["embeddings"] == 4 and d["protected_words"] == 8
    assert -1 <= r.test_retest <= 1 and "ICC(2,1)" in str(r)
