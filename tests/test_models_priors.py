"""The priors' table: each row's implementations agree, and a new prior is one row."""

import warnings

import numpy as np
import pytest
from scipy import stats

from bayesbias.models import _native, priors
from bayesbias.models.spec import Prior, load_spec

#: One example of each built-in row (the table must not grow without an example here).
EXAMPLES = {
    "Normal": {"mu": 0.9, "sigma": 0.4},
    "StudentT": {"nu": 4.0, "mu": 0.9, "sigma": 0.4},
    "Exponential": {"lam": 3.0},
    "HalfNormal": {"sigma": 0.5},
    "HalfCauchy": {"beta": 0.5},
    "HalfStudentT": {"nu": 3.0, "sigma": 0.5},
    "LogNormal": {"mu": -1.5, "sigma": 0.5},
    "Gamma": {"alpha": 2.0, "beta": 5.0},
}

#: A ninth distribution, written as one row: InverseGamma(alpha, beta), beta a scale.
INVERSE_GAMMA = priors.Distribution(
    "InverseGamma", ("alpha", "beta"), True,
    """
    *g = -(p1 + 1.0) / v + p2 / (v * v);
    return p1 * log(p2) - lgamma(p1) - (p1 + 1.0) * log(v) - p2 / v;
    """,
    lambda rng, p, size: p["beta"] / rng.gamma(p["alpha"], 1.0, size),
    lambda p: stats.invgamma(p["alpha"], scale=p["beta"]), "InverseGamma")


@pytest.fixture
def inverse_gamma():
    priors.register(INVERSE_GAMMA)
    try:
        yield
    finally:
        priors.unregister("InverseGamma")


def _points(prior):
    return [0.05, 0.2, 0.7, 1.5] if prior.positive else [-0.8, 0.1, 0.9, 2.3]


def _pymc_logp(prior, points):
    import pymc as pm

    fn = pm.compile([], pm.logp(prior.dist_(), np.asarray(points)), mode="FAST_COMPILE")
    return fn()


def _check_row(prior):
    """Compiled density and gradient vs SciPy (1e-10) and PyMC; gradient vs differences."""
    if _native.library() is None:
        pytest.skip("no working C compiler")
    pts = _points(prior)
    ref = priors.logpdf(prior, np.asarray(pts))
    # PyMC to 1e-6: it stores a whole-number parameter such as lam=3.0 as an integer constant,
    # so Exponential's 1/lam is computed in float32 (relative error ~3e-8)
    np.testing.assert_allclose(_pymc_logp(prior, pts), ref, rtol=1e-6, atol=1e-6)
    h = 1e-6
    for v, want in zip(pts, ref, strict=True):
        lp, g = _native.prior_logp(prior, v)
        assert lp == pytest.approx(want, rel=1e-10, abs=1e-12)
        num = (priors.logpdf(prior, v + h) - priors.logpdf(prior, v - h)) / (2 * h)
        assert g == pytest.approx(num, rel=1e-6, abs=1e-6)


def test_every_row_has_an_example():
    assert list(EXAMPLES) == list(priors.DISTRIBUTIONS)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_compiled_density_equals_scipy_and_pymc(name):
    _check_row(Prior.from_dict({"dist": name, **EXAMPLES[name]}))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_numpy_draws_have_the_scipy_distribution(name):
    """Prior.draw against the row's SciPy distribution: one-sample KS test (4000 draws)."""
    prior = Prior.from_dict({"dist": name, **EXAMPLES[name]})
    dist, folded = priors.scipy_dist(prior)
    draws = prior.draw(np.random.default_rng(0), 4000)
    cdf = (lambda x: 2 * dist.cdf(x) - 1) if folded else dist.cdf
    assert stats.kstest(draws, cdf).pvalue > 1e-3


#: Points off, on and at the edges of every support, and quantile levels with the ends.
_X = np.concatenate([np.random.default_rng(2).normal(0, 3, 2000),
                     np.random.default_rng(3).exponential(1, 2000),
                     [0.0, -0.0, -1.0, 1e-300, 1e300, np.inf, -np.inf, np.nan]])
_Q = np.concatenate([np.random.default_rng(4).random(2000), np.linspace(0, 1, 1001),
                     [1e-12, 1e-6, 1 - 1e-6, 1 - 1e-12, -0.1, 1.1, np.nan]])


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_closed_forms_equal_scipy_bitwise(name):
    """Log-density and quantiles without scipy.stats: exactly SciPy's numbers.

    Arrays, scalars (the cached scalar quantiles) and float32 input; NaN where SciPy's is.
    """
    prior = Prior.from_dict({"dist": name, **EXAMPLES[name]})
    assert priors.DISTRIBUTIONS[name].closed is not None
    dist, folded = priors.scipy_dist(prior)
    shift = np.log(2.0) if folded else 0.0

    def ref_ppf(q):
        return dist.ppf(0.5 + np.asarray(q) / 2 if folded else q)

    with np.errstate(all="ignore"):
        for x in (_X, _X.astype(np.float32)):
            np.testing.assert_array_equal(priors.logpdf(prior, x), dist.logpdf(x) + shift)
        np.testing.assert_array_equal(priors.ppf(prior, _Q), ref_ppf(_Q))
        for v in _X[:40]:
            np.testing.assert_array_equal(priors.logpdf(prior, float(v)),
                                          dist.logpdf(v) + shift)
        for v in _Q[-7:]:
            np.testing.assert_array_equal(priors.ppf(prior, float(v)), ref_ppf(float(v)))


def test_a_row_without_closed_forms_and_invalid_parameters_go_through_scipy(inverse_gamma):
    prior = Prior.from_dict({"dist": "InverseGamma", "alpha": 3.0, "beta": 0.2})
    ref = stats.invgamma(3.0, scale=0.2)
    np.testing.assert_array_equal(priors.ppf(prior, _Q), ref.ppf(_Q))
    assert priors.ppf(prior, 0.3) == ref.ppf(0.3)
    # a parameter SciPy calls invalid: SciPy's NaN (spec validation refuses it earlier)
    odd = Prior("Exponential", (("lam", -1.0),))
    assert np.isnan(priors.logpdf(odd, 0.5)) and np.isnan(priors.ppf(odd, 0.5))


def test_a_spec_names_the_valid_distributions():
    from bayesbias.errors import ModelSpecError

    with pytest.raises(ModelSpecError, match="Gamma, InverseGamma|Gamma$|Gamma,"):
        Prior.from_dict({"dist": "Weibull", "alpha": 1.0})


def test_a_new_prior_is_one_table_row(inverse_gamma):
    """Register InverseGamma: validation, draws, compiled density, a fit, the exact posterior."""
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model
    from bayesbias.studies.exact_posterior import prior_logpdf

    prior = Prior.from_dict({"dist": "InverseGamma", "alpha": 3.0, "beta": 0.2}, "tau")
    assert prior.positive and str(prior) == "InverseGamma(alpha=3, beta=0.2)"
    _check_row(prior)
    draws = prior.draw(np.random.default_rng(1), 4000)
    assert stats.kstest(draws, stats.invgamma(3.0, scale=0.2).cdf).pvalue > 1e-3
    assert prior_logpdf(prior, 0.1) == pytest.approx(stats.invgamma.logpdf(0.1, 3.0, scale=0.2))
    spec = load_spec("hierarchical", priors={"tau": prior})
    assert "tau[c] ~ InverseGamma(alpha=3, beta=0.2)" in spec.card()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(published_table("religion", "reddit"), spec, draws=200, tune=200,
                        chains=2, seed=3)
    assert fit.idata.attrs["marginal"] == 1
    tau = fit.posterior["tau"].values
    assert np.isfinite(tau).all() and (tau > 0).all()


@pytest.mark.slow
def test_a_new_prior_fits_as_the_pymc_reference_does(inverse_gamma):
    """A registered prior: the compiled kernel gives the PyMC reference's posterior.

    The PyMC model through nutpie (every cell mean sampled): means within 4.5 Monte Carlo
    standard errors, sds within 15%.
    """
    from test_models_sampling import assert_same_posterior  # tests/ is on sys.path

    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model

    spec = load_spec("hierarchical", priors={
        "tau": {"dist": "InverseGamma", "alpha": 3.0, "beta": 0.2}})
    table = published_table("religion", "reddit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = fit_model(table, spec, seed=3)
        full = fit_model(table, spec, seed=3, marginal=False)
    assert fast.idata.attrs["marginal"] == 1 and full.idata.attrs["marginal"] == 0
    assert_same_posterior({v: (fast.posterior[v], full.posterior[v])
                           for v in ("mu_bar", "tau", "sigma")})
