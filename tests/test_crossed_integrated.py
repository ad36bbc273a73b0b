"""The crossed model with every Gaussian parameter integrated out (issue 49, exploratory).

Checked against dense row-level Gaussians: the marginal likelihood to 1e-8 (relative; both
are sums of a few hundred terms of order 1), the analytic gradient against central
differences (h = 1e-5: truncation error ~ h^2 times third derivatives, ~1e-8), and the
conditional draws of (mu_bar, v) against the dense conditional moments.
"""

import numpy as np
import pytest
import scipy.stats as st

from bayesbias.models import crossed_integrated as ci
from bayesbias.models import priors as P
from bayesbias.models.cells import cells_from_table
from bayesbias.models.crossed import _kinds
from bayesbias.models.spec import load_spec
from bayesbias.testing import simulate_table

SPECS = {"shipped": {}, "shared": {"residual_sd": "single", "attribute_sd": "shared"}}


def _case(seed, overrides):
    spec = load_spec("crossed", **overrides)
    t, _ = simulate_table("crossed", seed=seed, n_classes=2, words_per_class=3,
                          stereotypes_per_class=2, n_human=4, n_none=5)
    cells = cells_from_table(t)
    data = ci.integrated_data(spec, cells)
    rng = np.random.default_rng(seed)
    theta = rng.normal(-1.5, 0.5, 4 + data["ns"] + data["nk"])
    return spec, cells, data, theta


def _dense(spec, cells, data, theta):
    """Row covariance of y over (cell means, v, mu_bar), and the dense P, b of (mu_bar, v)."""
    tau, sig, om = ci._split(theta, data)
    ui, cc, ai = cells.unit_idx, cells.conn_idx, cells.attr_idx
    kind, _ = _kinds(spec, cells)
    sc = sig[data["smap"]][cc]
    same_c = cc[:, None] == cc[None, :]
    cov = (data["s0"] ** 2 * same_c + (tau[cc] ** 2)[:, None] * ((ui[:, None] == ui[None, :])
                                                                   & same_c)
           + (om[kind[ai]] ** 2)[:, None] * (ai[:, None] == ai[None, :]) + np.diag(sc**2))
    return cov


def _log_prior(data, theta):
    tau, sig, om = ci._split(theta, data)
    return sum(float(np.sum(P.logpdf(p, x)) + np.log(x).sum())
               for p, x in zip(data["priors"], (tau, sig, om), strict=True))


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_log_marginal_matches_dense_gaussian(name, seed):
    spec, cells, data, theta = _case(seed, SPECS[name])
    cov = _dense(spec, cells, data, theta)
    ref = st.multivariate_normal(np.full(cells.n_rows, data["m0"]), cov).logpdf(cells.y)
    ref += _log_prior(data, theta)
    assert ci.log_marginal(theta, data) == pytest.approx(ref, rel=1e-8, abs=1e-8)


@pytest.mark.parametrize("name", SPECS)
def test_gradient_matches_finite_differences(name):
    _, _, data, theta = _case(4, SPECS[name])
    value, grad = ci.log_marginal_grad(theta, data)
    assert value == pytest.approx(ci.log_marginal(theta, data), rel=1e-12)
    h = 1e-5
    eye = np.eye(theta.size)
    fd = np.array([(ci.log_marginal(theta + h * e, data) - ci.log_marginal(theta - h * e, data))
                   / (2 * h) for e in eye])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_gaussian_draws_match_dense_conditional():
    """(mu_bar, v) | y, scales: y and theta jointly Gaussian, conditioned densely."""
    spec, cells, data, theta = _case(5, {})
    tau, sig, om = ci._split(theta, data)
    cc, ai = cells.conn_idx, cells.attr_idx
    kind, _ = _kinds(spec, cells)
    na = data["na"]
    # theta = (mu_bar, v): prior cov, and cov(y, theta) = rows' loadings
    prior = np.diag(np.r_[np.full(4, data["s0"] ** 2), om[kind] ** 2])
    load = np.zeros((cells.n_rows, 4 + na))
    load[np.arange(cells.n_rows), cc] = 1.0
    load[np.arange(cells.n_rows), 4 + ai] = 1.0
    cy = _dense(spec, cells, data, theta)
    cty = prior @ load.T
    mean0 = np.r_[np.full(4, data["m0"]), np.zeros(na)]
    gain = np.linalg.solve(cy, cty.T).T
    mean = mean0 + gain @ (cells.y - data["m0"])
    cov = prior - gain @ cty.T
    m4, c4 = ci.conditional_mu_bar(theta, data)
    np.testing.assert_allclose(m4, mean[:4], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(c4, cov[:4, :4], rtol=1e-8, atol=1e-12)
    rng = np.random.default_rng(0)
    n = 20_000
    x = np.array([ci.draw_gaussian(theta, data, rng) for _ in range(n)])
    sd = np.sqrt(np.diag(cov))
    # each coordinate's mean within 4.5 standard errors (d ~ 20 coordinates), sds to 4%
    # (the sd's standard error is sd / sqrt(2n) = 0.5%)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 4.5 * sd / np.sqrt(n))
    np.testing.assert_allclose(x.std(axis=0), sd, rtol=0.04)
    corr = np.corrcoef(x.T)
    np.testing.assert_allclose(corr, cov / np.outer(sd, sd), atol=0.04)


@pytest.mark.parametrize("name", SPECS)
def test_numba_prototype_matches_numpy(name):
    pytest.importorskip("numba")
    from bayesbias.models._crossed_integrated_numba import log_marginal_grad_sparse, pack_sparse

    _, _, data, theta = _case(6, SPECS[name])
    packed = pack_sparse(data)
    for t in (theta, theta + 0.7, theta - 0.9):
        v0, g0 = ci.log_marginal_grad(t, data)
        v1, g1 = log_marginal_grad_sparse(t, packed)
        assert v1 == pytest.approx(v0, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["numpy", "cfunc", "cfunc_types"])
def test_scale_sampler_matches_default_sampler(kernel):
    """NUTS on the log scales + Gaussian draws against the default crossed fit.

    A simulated table (per-kind omega, per-connection sigma); posterior means of mu_bar,
    tau, sigma, omega agree within 4.5 combined MCSEs (15 quantities), sds within 10%.
    """
    pytest.importorskip("nutpie")
    if kernel.startswith("cfunc"):
        pytest.importorskip("numba")
    from bayesbias.models import fit_model

    t, _ = simulate_table("crossed", seed=11, n_classes=2, words_per_class=4,
                          stereotypes_per_class=4, n_human=10, n_none=20)
    ref = fit_model(t, "crossed", checked=False, draws=4000, seed=1)
    data = ci.integrated_data(load_spec("crossed"), cells_from_table(t))
    theta, stats = ci.sample_scales(data, draws=4000, seed=2, kernel=kernel)
    assert int(stats["diverging"].sum()) == 0
    got = ci.posterior_draws(theta, data, seed=3)
    from bayesbias.models.contrast_mixture import _ess

    for name in ("mu_bar", "tau", "sigma", "omega"):
        a = np.asarray(ref.idata.posterior[name].transpose("chain", "draw", ...).values)
        b = got[name]
        for j in range(a.shape[-1]):
            x, y = a[..., j], b[..., j]
            se = np.hypot(x.std() / np.sqrt(_ess(x)), y.std() / np.sqrt(_ess(y)))
            assert abs(x.mean() - y.mean()) < 4.5 * se, (name, j)
            assert y.std() == pytest.approx(x.std(), rel=0.1), (name, j)


@pytest.mark.parametrize("name", SPECS)
def test_schur_factorisation_matches(name):
    _, _, data, theta = _case(7, SPECS[name])
    for t in (theta, theta + 1.0, theta - 1.5):
        assert ci.log_marginal_schur(t, data) == pytest.approx(ci.log_marginal(t, data),
                                                               rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("name", SPECS)
def test_schur_gradient_matches(name):
    _, _, data, theta = _case(8, SPECS[name])
    for t in (theta, theta + 1.0, theta - 1.5):
        v0, g0 = ci.log_marginal_grad(t, data)
        v1, g1 = ci.log_marginal_schur_grad(t, data)
        assert v1 == pytest.approx(v0, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(g1, g0, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", SPECS)
def test_numba_schur_matches_numpy(name):
    pytest.importorskip("numba")
    from bayesbias.models._crossed_integrated_numba import log_marginal_grad_sparse, pack_sparse

    _, _, data, theta = _case(9, SPECS[name])
    packed = pack_sparse(data)
    for t in (theta, theta + 0.7, theta - 0.9):
        v0, g0 = ci.log_marginal_schur_grad(t, data)
        v1, g1 = log_marginal_grad_sparse(t, packed, schur=True)
        assert v1 == pytest.approx(v0, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", SPECS)
def test_attribute_types_collapse_matches(name):
    _, _, data, theta = _case(10, SPECS[name])
    ty = ci.attribute_types(data)
    assert ty["count"].sum() == data["na"]
    for t in (theta, theta + 1.0, theta - 1.5):
        assert ci.log_marginal_types(t, data, ty) == pytest.approx(ci.log_marginal_schur(t, data),
                                                                   rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("name", SPECS)
def test_attribute_types_gradient_matches(name):
    _, _, data, theta = _case(12, SPECS[name])
    ty = ci.attribute_types(data)
    for t in (theta, theta + 1.0, theta - 1.5):
        v0, g0 = ci.log_marginal_schur_grad(t, data)
        v1, g1 = ci.log_marginal_types_grad(t, data, ty)
        assert v1 == pytest.approx(v0, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(g1, g0, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", SPECS)
def test_numba_types_matches_numpy(name):
    pytest.importorskip("numba")
    from bayesbias.models import _crossed_integrated_numba as nb

    _, _, data, theta = _case(13, SPECS[name])
    ty = ci.attribute_types(data)
    packed = nb.pack_types(data, ty)
    nb._jit()
    for t in (theta, theta + 0.7, theta - 0.9):
        v0, g0 = ci.log_marginal_types_grad(t, data, ty)
        v1, g1, m1, c1 = nb._impl_types(np.asarray(t, float), *packed)
        assert v1 == pytest.approx(v0, rel=1e-10, abs=1e-9)
        np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-9)
        m0, c0 = ci.conditional_mu_bar(t, data)
        np.testing.assert_allclose(m1, m0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(c1, c0, rtol=1e-8, atol=1e-14)
