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
from bayesbias.models.crossed import _kinds, integrated_data
from bayesbias.models.spec import load_spec
from bayesbias.testing import simulate_table

SPECS = {"shipped": {}, "shared": {"residual_sd": "single", "attribute_sd": "shared"}}


def _case(seed, overrides):
    spec = load_spec("crossed", **overrides)
    t, _ = simulate_table("crossed", seed=seed, n_classes=2, words_per_class=3,
                          stereotypes_per_class=2, n_human=4, n_none=5)
    cells = cells_from_table(t)
    data = integrated_data(spec, cells)
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


@pytest.mark.slow
def test_scale_sampler_matches_default_sampler(monkeypatch):
    """NUTS on the log scales + Gaussian draws against the sampler on every parameter.

    A simulated table (per-kind omega, per-connection sigma); posterior means of mu_bar,
    tau, sigma, omega agree within 4.5 combined MCSEs (15 quantities), sds within 10%.
    """
    pytest.importorskip("nutpie")
    from bayesbias.models import crossed, fit_model

    monkeypatch.setattr(crossed, "MAX_INTEGRATED_GROUPS", 0)  # the reference: every parameter

    t, _ = simulate_table("crossed", seed=11, n_classes=2, words_per_class=4,
                          stereotypes_per_class=4, n_human=10, n_none=20)
    ref = fit_model(t, "crossed", checked=False, draws=4000, seed=1)
    data = integrated_data(load_spec("crossed"), cells_from_table(t))
    theta, stats = ci.sample_scales(data, draws=4000, seed=2)
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


# -- the C kernel (bayesbias.models._native: cxi_logp, cxi_moments, cxi_draw) --------------

C_CASES = {
    "religion": ("religion", {}),
    "race": ("race", {}),
    "gender": ("gender", {}),
    "race-shared": ("race", SPECS["shared"]),
    # the reference's prior gradient is analytic for HalfNormal (compared to 1e-9)
    "gender-halfnormal": ("gender", {"priors": {
        "tau": {"dist": "HalfNormal", "sigma": 0.3}, "sigma": {"dist": "HalfNormal", "sigma": 1.0},
        "omega": {"dist": "HalfNormal", "sigma": 0.2}}}),
    # and by central differences for these (compared to 1e-7 absolute on that part)
    "religion-gamma": ("religion", {"residual_sd": "single", "priors": {
        "tau": {"dist": "Gamma", "alpha": 2.0, "beta": 10.0},
        "sigma": {"dist": "LogNormal", "mu": -1.0, "sigma": 1.0},
        "omega": {"dist": "HalfStudentT", "nu": 3.0, "sigma": 0.1}}}),
    # half the rows at random: cells of many sizes, 56 groups, ~320 types (the kernel's
    # workspace on the heap)
    "religion-scattered": ("religion", {}),
}
_FD_PRIORS = {"religion-gamma"}


@pytest.fixture(scope="module")
def c_data():
    """Integrated data of the shipped lists on the default embedding, per case."""
    from bayesbias.inputs.distances import distance_table
    from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
    from bayesbias.inputs.wordlists import load_wordlist

    if ci.entry_points() is None:
        pytest.skip("no C compiler")
    emb = load_embedding(default_embedding_path())
    tables = {n: distance_table(emb, load_wordlist(n)) for n in ("religion", "race", "gender")}
    cells = {n: cells_from_table(t) for n, t in tables.items()}
    scattered = tables["religion"].sample(frac=0.5, random_state=0).reset_index(drop=True)
    cells["religion-scattered"] = cells_from_table(scattered)
    return {case: integrated_data(load_spec("crossed", **over), cells.get(case, cells[name]))
            for case, (name, over) in C_CASES.items()}


def _thetas(data, seed, n=4):
    """Random log scales around the posterior's region and well away from it."""
    rng = np.random.default_rng(seed)
    base = ci.initial_point(data, rng)
    return [base + rng.normal(0.0, s, base.size) for s in (0.0, 0.3, 1.0, 2.0)[:n]]


def _c_logp(theta, packed):
    import ctypes

    logp, _ = ci.entry_points()
    dp = ctypes.POINTER(ctypes.c_double)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    grad, lp = np.empty(theta.size), np.zeros(1)
    rc = logp.ctypes(theta.size, theta.ctypes.data_as(dp), grad.ctypes.data_as(dp),
                     lp.ctypes.data_as(dp), packed.ctypes.data_as(dp))
    return int(rc), lp[0], grad


@pytest.mark.parametrize("case", C_CASES)
def test_c_density_matches_numpy(c_data, case):
    """Value and gradient of cxi_logp against the type-collapsed and Schur references.

    1e-9 relative (the same formulas in another order: ~1e-13 seen); the prior part of the
    reference's gradient is a central difference for Gamma, LogNormal, HalfStudentT (error
    ~1e-10), hence 1e-7 absolute there.
    """
    data = c_data[case]
    packed = ci.pack_types_c(data)
    assert packed[0] == packed.size
    if case == "religion-scattered":
        assert data["ng"] > 22  # 7 ng^2 + 25 ng + 8 nt > 4096: the heap
    atol = 1e-7 if case in _FD_PRIORS else 1e-9
    for i, t in enumerate(_thetas(data, 20)):
        rc, value, grad = _c_logp(t, packed)
        assert rc == 0
        v0, g0 = ci.log_marginal_types_grad(t, data)
        assert value == pytest.approx(v0, rel=1e-9)
        np.testing.assert_allclose(grad, g0, rtol=1e-9, atol=atol)
        if i == 1:
            v1, g1 = ci.log_marginal_schur_grad(t, data)
            assert value == pytest.approx(v1, rel=1e-9)
            np.testing.assert_allclose(grad, g1, rtol=1e-9, atol=atol)


@pytest.mark.parametrize("case", ["race", "race-shared", "religion-gamma",
                                  "religion-scattered"])
def test_c_gradient_matches_finite_differences(c_data, case):
    """cxi_logp's gradient against central differences of its value (h = 1e-5).

    Truncation ~h^2 x third derivatives and rounding ~1e-16 x |logp| (~2e3) / h, both
    below 1e-7 here.
    """
    data = c_data[case]
    packed = ci.pack_types_c(data)
    h = 1e-5
    for t in _thetas(data, 21, n=3):
        _, _, grad = _c_logp(t, packed)
        fd = np.array([(_c_logp(t + h * e, packed)[1] - _c_logp(t - h * e, packed)[1]) / (2 * h)
                       for e in np.eye(t.size)])
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-5)


def test_c_kernel_reports_failures(c_data):
    data = c_data["gender"]
    packed = ci.pack_types_c(data)
    t = _thetas(data, 22, n=1)[0]
    bad = t.copy()
    bad[0] = 800.0  # tau = exp(800) = inf: non-finite
    assert _c_logp(bad, packed)[0] != 0
    assert _c_logp(t[:-1], packed)[0] == -1  # wrong dimension
    _, expand = ci.entry_points()
    out = np.empty(t.size)
    import ctypes

    dp = ctypes.POINTER(ctypes.c_double)
    assert expand.ctypes(t.size, t.size, t.ctypes.data_as(dp), out.ctypes.data_as(dp),
                         packed.ctypes.data_as(dp)) == 0
    np.testing.assert_array_equal(out, np.exp(t))
    with pytest.raises(ValueError, match="pack_draws_c"):
        ci.draw_c(t, packed, np.random.default_rng(0))
    with pytest.raises(ValueError, match="log scales"):
        ci.conditional_moments_c(t[:-1], packed)


@pytest.mark.parametrize("case", ["religion", "race-shared", "gender-halfnormal"])
def test_c_moments_match_numpy(c_data, case):
    data = c_data[case]
    ths = np.array(_thetas(data, 23)).reshape(2, 2, -1)  # (chain, draw, k)
    mean, cov = ci.conditional_moments_c(ths, ci.pack_types_c(data))
    assert mean.shape == (2, 2, 4) and cov.shape == (2, 2, 4, 4)
    for idx in np.ndindex(2, 2):
        m0, c0 = ci.conditional_mu_bar(ths[idx], data)
        np.testing.assert_allclose(mean[idx], m0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(cov[idx], c0, rtol=1e-8, atol=1e-14)


def _dense_draw(theta, data, z):
    """Return cxi_draw's draw from the standard normals `z` by numpy, and P, b.

    The layout :func:`.crossed_integrated.draw_c` documents, on the dense P: mu_bar from
    its marginal Normal (the Cholesky factor of P^-1's 4 x 4 block), then v from its
    conditional given mu_bar, with the noise Dv^-1/2 e_v + Dv^-1 K R e_g (R R' = rg of the
    numpy Schur form, :func:`.crossed_integrated._schur`; R = diag(rc) L^-T, L L' = S).
    """
    s = ci._system(theta, data)
    na = data["na"]
    prec = np.diag(s["dg"]) + (s["y"] * s["lam"]) @ s["y"].T
    cov = np.linalg.inv(prec)
    mean = cov @ s["b"]
    mu = mean[:4] + np.linalg.cholesky(cov[:4, :4]) @ z[:4]
    pvv = prec[4:, 4:]
    m_v = np.linalg.solve(pvv, s["b"][4:] - prec[4:, :4] @ mu)
    dv = s["dg"][4:]
    sc = ci._schur(theta, data)
    rc = np.sqrt(sc["c"])  # R = diag(rc) L^-T with L L' = S: R R' = rg
    lo = np.linalg.cholesky(np.eye(rc.size) - rc[:, None] * sc["gm"] * rc[None, :])
    noise = z[4:4 + na] / np.sqrt(dv) + (data["kd"] @ (rc * (np.linalg.inv(lo).T
                                                              @ z[4 + na:]))) / dv
    return np.concatenate([mu, m_v + noise]), prec, s["b"]


@pytest.mark.parametrize("case", ["gender", "race-shared", "religion-gamma",
                                  "religion-scattered"])
def test_c_draws_match_dense_reference(c_data, case):
    """With the same normals cxi_draw equals the draw built on the dense P.

    1e-8 relative: P's condition number ~1e4 times rounding.
    """
    data = c_data[case]
    packed = ci.pack_draws_c(data)
    ths = np.array(_thetas(data, 24, n=3))
    mu, v = ci.draw_c(ths, packed, np.random.default_rng(7))
    normals = np.random.default_rng(7).standard_normal((3, ci.n_normals(packed)))
    assert normals.shape[1] == 4 + data["na"] + data["ng"]
    for i, t in enumerate(ths):
        x, _, _ = _dense_draw(t, data, normals[i])
        scale = np.abs(x).max()
        np.testing.assert_allclose(mu[i], x[:4], rtol=1e-8, atol=1e-10 * scale)
        np.testing.assert_allclose(v[i], x[4:], rtol=1e-8, atol=1e-10 * scale)
    # the moments from the logp block and the draws block agree
    m1, _ = ci.conditional_moments_c(ths, packed)
    m2, _ = ci.conditional_moments_c(ths, ci.pack_types_c(data))
    np.testing.assert_array_equal(m1, m2)


def test_c_draws_have_the_conditional_moments(c_data):
    """20,000 C draws at one theta have the mean P^-1 b and covariance P^-1.

    Mean within 4.5 standard errors per coordinate (339 coordinates: a false alarm ~2e-3),
    sds to 4% (standard error 0.5%), mu_bar's 4 x 4 correlations to 0.04 (standard error
    ~0.007).
    """
    data = c_data["gender"]
    theta = _thetas(data, 25, n=1)[0]
    n = 20_000
    mu, v = ci.draw_c(np.tile(theta, (n, 1)), ci.pack_draws_c(data), np.random.default_rng(8))
    x = np.column_stack([mu, v])
    _, prec, b = _dense_draw(theta, data, np.zeros(ci.n_normals(ci.pack_draws_c(data))))
    cov = np.linalg.inv(prec)
    mean = cov @ b
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(x.mean(axis=0) - mean) < 4.5 * sd / np.sqrt(n))
    np.testing.assert_allclose(x.std(axis=0), sd, rtol=0.04)
    corr = np.corrcoef(mu.T)
    np.testing.assert_allclose(corr, cov[:4, :4] / np.outer(sd[:4], sd[:4]), atol=0.04)


@pytest.mark.slow
def test_c_scale_sampler_matches_numpy_route(c_data):
    """The default crossed fit (the C kernel, bayesbias' nutpie driver) agrees with the numpy
    density sampled through nutpie's public API (Python callback, own seeding).

    4 chains x 1000 draws each on gender: tau, sigma, omega within 4 combined MCSEs.
    """
    pytest.importorskip("nutpie")
    from bayesbias.inputs.distances import distance_table
    from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
    from bayesbias.inputs.wordlists import load_wordlist
    from bayesbias.models import fit_model
    from bayesbias.models.contrast_mixture import _ess

    data = c_data["gender"]
    t = distance_table(load_embedding(default_embedding_path()), load_wordlist("gender"))
    fit = fit_model(t, "crossed", draws=1000, seed=1, checked=False)
    post = fit.idata.posterior
    theta = np.log(np.concatenate([post[n].transpose("chain", "draw", ...).values
                                   .reshape(4, 1000, -1) for n in ("tau", "sigma", "omega")],
                                  axis=-1))
    ref, _ = ci.sample_scales(data, draws=1000, tune=500, seed=2)
    assert theta.shape == ref.shape
    for j in range(theta.shape[-1]):
        x, y = np.exp(theta[..., j]), np.exp(ref[..., j])
        se = np.hypot(x.std() / np.sqrt(_ess(x)), y.std() / np.sqrt(_ess(y)))
        assert abs(x.mean() - y.mean()) < 4 * se, j


def test_c_draws_where_a_between_word_sd_is_almost_zero(c_data):
    """tau -> 0 for one connection (a tail the sampler can visit) leaves rg singular: the
    draws' square root diag(rc) L^-T needs no factorisation of it; finite draws equal to
    the dense construction."""
    data = c_data["gender"]
    packed = ci.pack_draws_c(data)
    th = np.array(_thetas(data, 3, n=1))
    th[:, 1] = -400.0  # tau[different] = 2e-174: tau^2 underflows to 0, so rc = 0 there
    mu, v = ci.draw_c(th, packed, np.random.default_rng(3))
    assert np.isfinite(mu).all() and np.isfinite(v).all()
    z = np.random.default_rng(3).standard_normal((1, ci.n_normals(packed)))[0]
    x, _, _ = _dense_draw(th[0], data, z)
    np.testing.assert_allclose(v[0], x[4:], rtol=1e-6, atol=1e-8)
