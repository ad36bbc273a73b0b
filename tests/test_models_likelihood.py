"""The sufficient-statistic likelihood equals the row-level one; the rotation is exact."""

import numpy as np
import pandas as pd
import pytest

from bayesbias.config import CONNECTIONS
from bayesbias.errors import DistanceTableError
from bayesbias.models import cells_from_table, load_spec
from bayesbias.models.additive import rotation
from bayesbias.models.base import build_model
from bayesbias.models.cells import normal_logp_cells, normal_logp_rows
from bayesbias.testing import simulate_table


def test_cell_statistics_match_pandas():
    table, _ = simulate_table(seed=3, words_per_class=2, n_human=7, n_none=9)
    cells = cells_from_table(table)
    grouped = table.groupby(["protected_word", "connection"], observed=True)["cosine_distance"]
    for (word, conn), rows in grouped:
        i = list(cells.units).index(word)
        j = CONNECTIONS.index(conn)
        assert cells.n[i, j] == len(rows)
        assert cells.mean[i, j] == pytest.approx(rows.mean(), abs=1e-14)
        assert cells.ss[i, j] == pytest.approx(((rows - rows.mean()) ** 2).sum(), abs=1e-12)
    assert cells.n.sum() == len(table)


def test_numpy_cell_logp_equals_row_logp():
    rng = np.random.default_rng(0)
    y = rng.normal(0.9, 0.2, 1000)
    cell = rng.integers(0, 7, 1000)
    mu, sigma = rng.normal(0.9, 0.1, 7), rng.uniform(0.1, 0.3, 7)
    n = np.bincount(cell, minlength=7)
    mean = np.bincount(cell, y, 7) / n
    ss = np.bincount(cell, (y - mean[cell]) ** 2, 7)
    rows = normal_logp_rows(y, mu[cell], sigma[cell]).sum()
    assert normal_logp_cells(mu, sigma, n, mean, ss) == pytest.approx(rows, rel=1e-12)


@pytest.mark.parametrize("model, overrides", [
    ("hierarchical", {}),
    ("hierarchical", {"residual_sd": "single", "noncentred": []}),
    ("hierarchical", {"level": "class"}),
    ("additive", {}),
    ("separate", {"residual_sd": "per_connection"}),
    ("hierarchical_authors", {}),
])
def test_sufficient_model_logp_equals_row_model_logp(model, overrides):
    """Same log-density (up to 1e-10 relative) at random points of each model variant."""
    spec = load_spec(model, **overrides)
    table, _ = simulate_table(model, seed=5, words_per_class=3, n_human=12, n_none=30,
                              **overrides)
    table = table.iloc[:-7]  # leave one cell short so cell sizes differ
    cells = cells_from_table(table, spec.level)
    suff, rows = build_model(spec, cells), build_model(spec, cells, "rows")
    # FAST_COMPILE: the Python linker, so the check costs no C compilation
    logp_s = suff.compile_logp(mode="FAST_COMPILE")
    logp_r = rows.compile_logp(mode="FAST_COMPILE")
    rng = np.random.default_rng(1)
    start = suff.initial_point()  # compiled once
    for _ in range(3):
        point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in start.items()}
        a, b = logp_s(point), logp_r(point)
        assert np.isfinite(a)
        assert a == pytest.approx(b, rel=1e-10, abs=1e-10)


def test_additive_rotation_is_orthogonal_and_keeps_the_prior():
    spec = load_spec("additive")
    table, _ = simulate_table("additive", seed=2, words_per_class=4, n_human=5, n_none=5)
    mu0, s, v = rotation(spec, cells_from_table(table))
    assert np.allclose(v @ v.T, np.eye(v.shape[0]), atol=1e-12)
    # theta = mu0 + s * (V w), w ~ N(0, I)  =>  cov(theta) = diag(s^2): the prior is unchanged
    cov = (s[:, None] * v) @ (s[:, None] * v).T
    assert np.allclose(cov, np.diag(s**2), atol=1e-12)
    assert mu0[0] == 1.0 and mu0[-1] == 0.0


def test_bad_tables_are_rejected_with_the_column_named():
    table, _ = simulate_table(seed=1, words_per_class=1, n_human=2, n_none=2)
    with pytest.raises(DistanceTableError, match="cosine_distance"):
        cells_from_table(table.drop(columns="cosine_distance"))
    bad = table.copy()
    bad["connection"] = bad["connection"].astype(str).replace({"none": "nothing"})
    with pytest.raises(DistanceTableError, match="nothing"):
        cells_from_table(bad)
    mixed = table.copy()
    mixed["protected_class"] = mixed["protected_class"].astype(str)
    mixed.loc[0, "protected_class"] = "class9"
    with pytest.raises(DistanceTableError, match="more than one protected class"):
        cells_from_table(mixed)
    nan = table.copy()
    nan.loc[3, "cosine_distance"] = np.nan
    with pytest.raises(DistanceTableError, match="non-finite"):
        cells_from_table(nan)
    with pytest.raises(DistanceTableError, match="no rows"):
        cells_from_table(pd.DataFrame(columns=table.columns))


# -- the cell-marginal kernel ---------------------------------------------------------------

_PRIOR_VARIANTS = {
    "hierarchical": {},
    "hierarchical_single_sd": {},
    "hierarchical_authors": {},
    "separate": {"residual_sd": "per_connection"},
    # every prior distribution the specs allow, through the same kernel
    "hierarchical_other": {"priors": {
        "mu_bar": {"dist": "StudentT", "nu": 4.0, "mu": 0.9, "sigma": 0.4},
        "tau": {"dist": "HalfStudentT", "nu": 3.0, "sigma": 0.5},
        "sigma": {"dist": "Gamma", "alpha": 2.0, "beta": 5.0}}},
    "hierarchical_more": {"priors": {
        "tau": {"dist": "HalfNormal", "sigma": 0.5},
        "sigma": {"dist": "LogNormal", "mu": -1.5, "sigma": 0.5}}},
    "hierarchical_cauchy": {"priors": {"tau": {"dist": "HalfCauchy", "beta": 0.5}}},
}


def _scipy_logpdf(prior, v):
    """Prior log-density with SciPy (independent of the kernel and of PyMC)."""
    from scipy import stats

    p = dict(prior.params)
    d = prior.dist
    if d == "Normal":
        return stats.norm.logpdf(v, p["mu"], p["sigma"])
    if d == "StudentT":
        return stats.t.logpdf(v, p["nu"], p["mu"], p["sigma"])
    if d == "Exponential":
        return stats.expon.logpdf(v, scale=1 / p["lam"])
    if d == "HalfNormal":
        return stats.halfnorm.logpdf(v, scale=p["sigma"])
    if d == "HalfCauchy":
        return stats.halfcauchy.logpdf(v, scale=p["beta"])
    if d == "HalfStudentT":
        return np.log(2) + stats.t.logpdf(v, p["nu"], 0, p["sigma"])
    if d == "LogNormal":
        return stats.lognorm.logpdf(v, p["sigma"], scale=np.exp(p["mu"]))
    return stats.gamma.logpdf(v, p["alpha"], scale=1 / p["beta"])


@pytest.mark.parametrize("variant", list(_PRIOR_VARIANTS))
def test_marginal_kernel_is_joint_minus_conditional(variant):
    """Kernel logp = priors + Jacobians + sum over cells of [rows | mu] + [mu] - [mu | rows].

    The identity holds at any mu, so it checks both the marginal likelihood and the Normal
    conditional the per-word means are drawn from. Gradient by central differences.
    """
    from scipy import stats

    from bayesbias.models import _native
    from bayesbias.models.marginal import _cell_array, _layout, _mts, _values

    if _native.library() is None:
        pytest.skip("no working C compiler")
    c_logp, _ = _native.entry_points("cell")

    def logp_grad(x, priors, maps, offsets, cells):
        rc, lp, grad = _call(c_logp, x, _native.pack_cells(priors, maps, offsets, cells))
        assert rc == 0
        return lp, grad

    name = variant if variant in ("hierarchical_single_sd", "hierarchical_authors",
                                  "separate") else "hierarchical"
    spec = load_spec(name, **_PRIOR_VARIANTS[variant])
    table, _ = simulate_table(seed=5, words_per_class=3, n_human=12, n_none=30)
    table = table.iloc[:-7]
    cells = cells_from_table(table, spec.level)
    blocks, priors, maps, offsets, _ = _layout(spec)
    from bayesbias.models.families import family_module

    _, fixed = family_module(spec.family).marginal_blocks(spec)
    rng = np.random.default_rng(2)
    pos = priors[:, 1] > 0.5
    for _ in range(3):
        x = np.where(pos, np.log(rng.uniform(0.05, 0.4, pos.size)), rng.normal(0.5, 0.3,
                                                                            pos.size))
        lp, grad = logp_grad(x, priors, maps, offsets, _cell_array(cells))
        v = np.where(pos, np.exp(x), x)
        expected = sum(_scipy_logpdf(p, val) for p, val in
                       zip([b.prior for b in blocks for _ in range(4 if b.per_connection else 1)],
                           v, strict=True)) + x[pos].sum()
        m, t, s = (a[0, 0] for a in _mts(blocks, fixed, {k: np.asarray(a)[None, None] for k, a
                                                         in _values(blocks, v).items()}, (1, 1)))
        mu_any = rng.normal(0.9, 0.2, cells.n.shape)
        for (u, c), _n in np.ndenumerate(cells.n):
            if cells.n[u, c] == 0:
                continue
            y = cells.y[(cells.unit_idx == u) & (cells.conn_idx == c)]
            prec = 1 / t[c] ** 2 + y.size / s[c] ** 2
            cmean = (m[c] / t[c] ** 2 + y.sum() / s[c] ** 2) / prec
            expected += (normal_logp_rows(y, mu_any[u, c], s[c]).sum()
                         + stats.norm.logpdf(mu_any[u, c], m[c], t[c])
                         - stats.norm.logpdf(mu_any[u, c], cmean, prec ** -0.5))
        assert lp == pytest.approx(expected, rel=1e-9, abs=1e-8)
        h = 1e-6
        num = [(logp_grad(x + h * e, priors, maps, offsets, _cell_array(cells))[0]
                - logp_grad(x - h * e, priors, maps, offsets, _cell_array(cells))[0]) / (2 * h)
               for e in np.eye(x.size)]
        assert np.allclose(grad, num, rtol=1e-5, atol=1e-4)


def test_conditional_draws_match_the_normal_conditional():
    """Draws of mu given (M, T, S) have the conjugate mean and sd (and prior draws if empty)."""
    from bayesbias.models.marginal import conditional_cell_means

    table, _ = simulate_table(seed=6, words_per_class=2, n_human=4, n_none=6)
    cells = cells_from_table(table)
    shape = (4, 5000)
    m = np.full(shape + (4,), 0.9)
    t = np.full(shape + (4,), 0.05)
    s = np.full(shape + (4,), 0.2)
    mu = conditional_cell_means(m, t, s, cells, np.random.default_rng(0))
    n, ybar = cells.n, np.nan_to_num(cells.mean)
    prec = 1 / 0.05**2 + n / 0.2**2
    mean = (0.9 / 0.05**2 + n * ybar / 0.2**2) / prec
    flat = mu.reshape(-1, *n.shape)
    assert np.allclose(flat.mean(0), mean, atol=4 * prec ** -0.5 / np.sqrt(flat.shape[0]))
    assert np.allclose(flat.std(0), prec ** -0.5, rtol=0.05)


# -- the additive family with (m, co) integrated out ------------------------------------------

def _additive_setup(residual_sd):
    from bayesbias.models.additive import marginal_kernel

    spec = load_spec("additive", residual_sd=residual_sd)
    table, _ = simulate_table("additive", seed=8, words_per_class=2, n_human=3, n_none=5,
                              residual_sd=residual_sd)
    table = table.iloc[:-4]  # cells of different sizes
    cells = cells_from_table(table, spec.level)
    return spec, cells, marginal_kernel(spec, cells)


def _cfunc_logp(kernel, x):
    """Call the kernel's C entry point exactly as nutpie does (through ctypes)."""
    rc, lp, grad = _call(kernel.logp, x, kernel.data)
    assert rc == 0
    return lp, grad


def _design(cells):
    """Row design (rows x (units + connections)) and each row's connection."""
    n_u = cells.units.size
    x = np.zeros((cells.n_rows, n_u + len(CONNECTIONS)))
    x[np.arange(cells.n_rows), cells.unit_idx] = 1.0
    x[np.arange(cells.n_rows), n_u + cells.conn_idx] = 1.0
    return x


@pytest.mark.parametrize("residual_sd", ["single", "per_connection"])
def test_additive_marginal_equals_the_closed_form_and_pymc(residual_sd):
    """The additive marginal equals the closed form and PyMC's full model with theta removed.

    Kernel logp(log sigma) = log N(rows; X mu0, X S0 X' + diag(sigma^2)) + prior + Jacobian
    (the Gaussian integral in closed form, SciPy), and = PyMC's log density of the full model
    at any (w, log sigma) less log p(theta | sigma, rows) less the rotation's log-Jacobian.
    Both to 1e-9 relative; gradient by central differences.
    """
    from scipy import stats

    from bayesbias.models.additive import prior_moments

    spec, cells, kernel = _additive_setup(residual_sd)
    assert cells.n_rows < 200
    n_u = cells.units.size
    mu0, s0 = prior_moments(spec, n_u)
    xd = _design(cells)
    model = build_model(spec, cells)
    logp_pymc = model.compile_logp(mode="FAST_COMPILE")
    _, _, rot = rotation(spec, cells)
    beta = dict(spec.priors["sigma"].params)["beta"]
    rng = np.random.default_rng(3)
    k = 4 if residual_sd == "per_connection" else 1
    for _ in range(3):
        x = np.log(rng.uniform(0.05, 0.4, k))
        lp, grad = _cfunc_logp(kernel, x)
        sig = np.exp(x)
        s_row = (sig[cells.conn_idx] if k == 4 else np.full(cells.n_rows, sig[0]))
        cov = xd @ np.diag(s0**2) @ xd.T + np.diag(s_row**2)
        closed = (stats.multivariate_normal.logpdf(cells.y, xd @ mu0, cov)
                  + stats.halfcauchy.logpdf(sig, scale=beta).sum() + x.sum())
        assert lp == pytest.approx(closed, rel=1e-9)
        # full joint at a random theta, less the exact conditional of theta
        w = rng.normal(0, 1, n_u + 4)
        theta = mu0 + s0 * (rot @ w)
        prec = np.diag(s0**-2) + xd.T @ (xd / s_row[:, None] ** 2)
        mean = np.linalg.solve(prec, np.diag(s0**-2) @ mu0 + xd.T @ (cells.y / s_row**2))
        cond = stats.multivariate_normal.logpdf(theta, mean, np.linalg.inv(prec))
        joint = logp_pymc({"w": w, "sigma_log__": x if k == 4 else x[0]})
        assert lp == pytest.approx(joint - np.log(s0).sum() - cond, rel=1e-9)
        h = 1e-6
        num = [(_cfunc_logp(kernel, x + h * e)[0] - _cfunc_logp(kernel, x - h * e)[0]) / (2 * h)
               for e in np.eye(k)]
        assert np.allclose(grad, num, rtol=1e-6, atol=1e-5)


def test_additive_conditional_draws_have_the_exact_gaussian_conditional():
    """Draws of (m, co) given sigma: mean and covariance of N(P^-1 (S0^-1 mu0 + X'y/s^2), P^-1)."""
    from bayesbias.models.additive import conditional_theta, prior_moments

    spec, cells, _ = _additive_setup("per_connection")
    n_u = cells.units.size
    mu0, s0 = prior_moments(spec, n_u)
    sig = np.array([0.1, 0.2, 0.15, 0.3])
    xd = _design(cells)
    s_row = sig[cells.conn_idx]
    prec = np.diag(s0**-2) + xd.T @ (xd / s_row[:, None] ** 2)
    cov = np.linalg.inv(prec)
    mean = cov @ (np.diag(s0**-2) @ mu0 + xd.T @ (cells.y / s_row**2))
    draws = 40_000
    m, co = conditional_theta(np.tile(sig, (2, draws // 2, 1)), spec, cells,
                              np.random.default_rng(0))
    theta = np.concatenate([m, co], axis=-1).reshape(draws, -1)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(theta.mean(0) - mean) < 4.5 * sd / np.sqrt(draws))
    emp = np.cov(theta, rowvar=False)
    # covariance entries: sampling error about sd_i sd_j sqrt(2 / draws) ~ 0.007 sd_i sd_j
    assert np.all(np.abs(emp - cov) < 0.04 * np.outer(sd, sd))


def _call(fn, x, data):
    import ctypes

    x = np.ascontiguousarray(x, dtype=np.float64)
    grad, lp = np.zeros_like(x), np.zeros(1)
    ptr = ctypes.POINTER(ctypes.c_double)
    rc = fn.ctypes(x.size, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr),
                   lp.ctypes.data_as(ptr), data.ctypes.data_as(ptr))
    return rc, lp[0], grad
