"""The vectorised PSIS (models/_psis.py) against arviz_stats' psislw, row by row.

Tolerance 1e-10 on log weights and khat (measured: <= 2e-15 on real log-likelihoods);
where arviz_stats raises (all tail ratios equal) ours leaves the row unsmoothed.
"""

import warnings

import numpy as np
import pytest

from bayesbias.models import _psis, checks

TOL = 1e-10


def _reference(ll):
    """arviz_stats' psislw of each row of `ll` (rows, draws)."""
    from arviz_stats.base import array_stats

    lw, k = array_stats.psislw(ll, axis=-1)
    return np.asarray(lw), np.asarray(k)


def _assert_same(ll, r_eff=1.0):
    from arviz_stats.base import array_stats

    ours_lw, ours_k = _psis.psislw(ll, r_eff=r_eff)
    ref_lw, ref_k = array_stats.psislw(ll, r_eff=r_eff, axis=-1)
    np.testing.assert_allclose(ours_lw, np.asarray(ref_lw), rtol=0, atol=TOL)
    np.testing.assert_allclose(ours_k, np.asarray(ref_k), rtol=0, atol=TOL, equal_nan=True)
    return ours_k


def _loglik(fit, n_rows=400):
    """Return the log-likelihood (rows, draws) of some rows' predictive Normal.

    The `n_rows` / 2 rows of largest spread over draws (the heaviest tails), and others.
    """
    mean, sd = checks._row_moments(fit)
    z = (fit.cells.y[None, :] - mean) / sd
    ll = (-0.5 * z * z - np.log(sd)).T
    spread = ll.std(axis=1)
    pick = np.unique(np.r_[np.argsort(spread)[-n_rows // 2:],
                           np.linspace(0, ll.shape[0] - 1, n_rows // 2).astype(int)])
    return np.ascontiguousarray(ll[pick])


@pytest.fixture(scope="module")
def crossed_fit():
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_model(published_table("religion", "reddit"), "crossed", draws=250, tune=250,
                         chains=2, seed=5)


def test_psis_equals_arviz_on_hierarchical_fit(religion_fit):
    k = _assert_same(_loglik(religion_fit))
    assert np.isfinite(k).all() and k.max() > 0.3  # heavy tails are among the rows checked


def test_psis_equals_arviz_on_crossed_fit(crossed_fit):
    ll = _loglik(crossed_fit)
    k = _assert_same(ll)
    assert np.isfinite(k).all() and k.max() > 0.3
    for r_eff in (0.3, 0.7, 1.8):  # other tail lengths
        _assert_same(ll[:80], r_eff=r_eff)


def test_loo_pit_equals_arviz_weights(religion_fit):
    """loo_pit with the vectorised weights equals the formula with arviz_stats' weights."""
    from scipy.special import log_ndtr

    rows = np.arange(0, religion_fit.cells.n_rows, 7)
    mean, sd = checks._row_moments(religion_fit, rows=rows)
    z = (religion_fit.cells.y[rows][None, :] - mean) / sd
    lw, _ = _reference((-0.5 * z * z - np.log(sd)).T)
    ref = np.exp(np.logaddexp.reduce(lw + log_ndtr(z.T), axis=-1))
    np.testing.assert_allclose(checks.loo_pit(religion_fit, rows), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("draws", [25, 26, 60, 225, 226, 1000])
def test_psis_small_and_odd_draw_counts(draws):
    rng = np.random.default_rng(draws)
    ll = rng.standard_t(3, size=(30, draws)) * rng.uniform(0.1, 3, size=(30, 1))
    _assert_same(ll)


def test_psis_too_few_draws_raises_like_arviz():
    ll = np.random.default_rng(0).normal(size=(3, 24))
    with pytest.raises(ValueError):
        _reference(ll)
    with pytest.raises(ValueError, match="24 draws"):
        _psis.psislw(ll)


def test_psis_ties_and_degenerate_fits():
    """Tied ratios (full sort path) and a tail whose first quartile is its minimum (khat nan)."""
    rng = np.random.default_rng(3)
    ties = np.round(rng.normal(size=(20, 500)), 1)  # many ties, tail still varied
    _assert_same(ties)
    lr = np.zeros((4, 500))
    lr[:, :10] = rng.uniform(1, 3, size=(4, 10))  # 10 large ratios above a flat block
    k = _assert_same(-lr)
    assert np.isnan(k).all()


def test_psis_constant_rows_are_left_unsmoothed():
    """arviz_stats raises on a row with equal tail ratios; ours keeps the raw weights."""
    rng = np.random.default_rng(4)
    ll = rng.normal(size=(5, 400))
    ll[1] = -2.5  # a constant row: uniform weights
    ll[3, :300] = rng.normal(size=300) + 5  # tail of ratios (low log-likelihoods) all equal
    ll[3, 300:] = -1.0
    with pytest.raises(ValueError):
        _reference(ll[1:2])
    lw, k = _psis.psislw(ll)
    np.testing.assert_allclose(lw[1], -np.log(400), rtol=0, atol=1e-14)
    raw = -ll[3] - np.logaddexp.reduce(-ll[3])
    np.testing.assert_allclose(lw[3], raw, rtol=0, atol=1e-12)
    assert np.isnan(k[[1, 3]]).all()
    ref_lw, ref_k = _reference(ll[[0, 2, 4]])  # the other rows as arviz_stats has them
    np.testing.assert_allclose(lw[[0, 2, 4]], ref_lw, rtol=0, atol=TOL)
    np.testing.assert_allclose(k[[0, 2, 4]], ref_k, rtol=0, atol=TOL)


def test_psis_leading_axes_and_normalisation():
    ll = np.random.default_rng(5).gumbel(size=(2, 3, 300))
    lw, k = _psis.psislw(ll)
    assert lw.shape == ll.shape and k.shape == (2, 3)
    np.testing.assert_allclose(np.logaddexp.reduce(lw, axis=-1), 0, atol=1e-13)
    flat_lw, flat_k = _psis.psislw(ll.reshape(6, 300))
    np.testing.assert_array_equal(lw.reshape(6, 300), flat_lw)
    np.testing.assert_array_equal(k.ravel(), flat_k)
