"""The crossed model's scale posterior with every Gaussian parameter integrated out.

The default sampler of the crossed family (:mod:`.crossed`) for tables with few groups of
cells. Given the scales ``phi = (tau[c],
sigma[c], omega[kind])`` the crossed model (:mod:`.crossed`) is linear-Gaussian in the cell
means ``mu[w, c]``, the attribute effects ``v[a]`` and the group means ``mu_bar[c]`` (Normal
prior ``N(m0, s0^2)``), so ``log p(y | phi)`` is available in closed form and NUTS need only
run on the ~11 log scales. With ``theta = (mu_bar, v)`` (d = 4 + attributes), integrating
each cell mean out leaves ``log p(y, theta | phi) = K - (theta'P theta - 2 b.theta + cc)/2``
with ``P``, ``b`` as in :mod:`.contrast_mixture`'s docstring and

    cc = 4 m0^2/s0^2 + sum_c SS_c/sigma_c^2 + sum_g w2_g sum_{q in g} ybar_q^2,
    K  = -N/2 log(2 pi) - 4 log s0 - sum_a log omega[kind(a)]
         + sum_g cells_g (-(n_g - 1) log sigma_g + log(w2_g / n_g) / 2)

(``SS_c`` the within-cell sums of squares of connection c, ``w2_g = 1/(tau^2 + sigma^2/n)``
of group g of cells sharing (connection, n, attribute counts), :func:`.crossed.cell_groups`).
Integrating theta out: ``log p(y | phi) = K - log det P / 2 - (cc - b'P^-1 b)/2`` (the
``(2 pi)^(d/2)`` cancels the priors'). ``P = Dg + Y diag(lam) Y'`` with ``Dg`` diagonal and
2 columns of ``Y`` per group, so the Woodbury identity and the matrix determinant lemma
(``det P = det Dg det(lam) det(diag(1/lam) + Y'Dg^-1 Y)``) cost O(d G^2).

Gradient: ``dF = -tr(P^-1 dP)/2 - dcc/2 + m.db - m'dP m/2`` with ``m = P^-1 b``; ``dP`` is
diagonal plus ``Y diag(dlam) Y'``, so only ``diag(P^-1)`` and ``diag(Y'P^-1 Y)`` are needed.

Draws of theta given phi: ``x = P^-1 (b + z)`` with ``z ~ N(0, P)`` built from the terms
of P (each group's within-cell block ``cells u (diag(k) - k k'/n)`` is the covariance of
``e - k sum(e)/n``, ``e ~ N(0, cells u diag(k))``), so ``x ~ N(P^-1 b, P^-1)``.

The type-collapsed density (:func:`log_marginal_types_grad`), mu_bar's conditional moments
and the joint draws are also compiled C (:mod:`._native`: ``cxi_logp``, ``cxi_expand``,
``cxi_moments``, ``cxi_draw``) on the blocks of :func:`pack_types_c` / :func:`pack_draws_c`:
:func:`entry_points`, :func:`conditional_moments_c`, :func:`draw_c`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..config import CONNECTIONS
from . import _native
from . import priors as _priors

__all__ = ["log_marginal", "log_marginal_grad", "theta_names",
           "initial_point", "sample_scales", "posterior_draws",
           "draw_gaussian", "conditional_mu_bar", "pack_types_c", "pack_draws_c",
           "n_normals", "entry_points", "conditional_moments_c", "draw_c"]

_NC = len(CONNECTIONS)
_LOG2PI = float(np.log(2 * np.pi))


def theta_names(data: dict) -> list[str]:
    """Names of the unconstrained coordinates: log tau[4], log sigma[ns], log omega[nk]."""
    return ([f"log_tau[{c}]" for c in CONNECTIONS]
            + [f"log_sigma[{i}]" for i in range(data["ns"])]
            + [f"log_omega[{i}]" for i in range(data["nk"])])


def _split(theta, data):
    theta = np.asarray(theta, float)
    ns, nk = data["ns"], data["nk"]
    return (np.exp(theta[:_NC]), np.exp(theta[_NC:_NC + ns]),
            np.exp(theta[_NC + ns:_NC + ns + nk]))


def _system(theta, data):
    """Dg, Y, lam, b, cc and the pieces the gradient and draws reuse."""
    tau, sig, om = _split(theta, data)
    gc, gn, gw, kd = data["gc"], data["gn"], data["gw"], data["kd"]
    ng, na = data["ng"], data["na"]
    sig_c = sig[data["smap"]]
    u = 1.0 / sig_c**2
    p = 1.0 / om**2
    w2 = 1.0 / (tau[gc] ** 2 + sig_c[gc] ** 2 / gn)
    s0, m0 = data["s0"], data["m0"]
    dg = np.empty(_NC + na)
    dg[:_NC] = 1.0 / s0**2
    dg[_NC:] = p[data["kind"]] + u @ data["ksum"]
    y = np.zeros((_NC + na, 2 * ng))
    y[gc, np.arange(ng)] = 1.0
    y[_NC:, :ng] = kd / gn
    y[_NC:, ng:] = kd
    lam = np.concatenate([gw * w2, -gw * u[gc] / gn])
    b = np.zeros(_NC + na)
    b[:_NC] = m0 / s0**2
    np.add.at(b, gc, w2 * data["ysum"])
    b[_NC:] += u @ data["dsum"] + kd @ (w2 * data["ysum"] / gn)
    cc = _NC * m0**2 / s0**2 + u @ data["ss"] + w2 @ data["ysq"]
    return dict(tau=tau, sig=sig, om=om, u=u, p=p, w2=w2, dg=dg, y=y, lam=lam, b=b, cc=cc)


def _woodbury(s):
    """Add ``Z = Dg^-1 Y``, ``C = Y'Z``, ``M = diag(1/lam) + C``, its inverse, log det P, m."""
    dinv = 1.0 / s["dg"]
    z = dinv[:, None] * s["y"]
    c = s["y"].T @ z
    m = c.copy()
    m[np.diag_indices_from(m)] += 1.0 / s["lam"]
    sign, logdet_m = np.linalg.slogdet(m)
    sign_l = np.prod(np.sign(s["lam"]))
    if sign * sign_l <= 0:
        raise FloatingPointError("the conditional precision is not positive definite")
    minv = np.linalg.inv(m)
    logdet = float(np.log(s["dg"]).sum() + np.log(np.abs(s["lam"])).sum() + logdet_m)
    mean = dinv * s["b"] - z @ (minv @ (z.T @ s["b"]))
    s.update(dinv=dinv, z=z, c=c, minv=minv, logdet=logdet, mean=mean)
    return s


def _explicit(s, data):
    """K of the module docstring (without the prior terms of the log scales)."""
    gc, gn, gw = data["gc"], data["gn"], data["gw"]
    sig_c = s["sig"][data["smap"]]
    return float(-0.5 * data["n_rows"] * _LOG2PI - _NC * np.log(data["s0"])
                 - np.log(s["om"][data["kind"]]).sum()
                 + gw @ (-(gn - 1) * np.log(sig_c[gc]) + 0.5 * np.log(s["w2"] / gn)))


def _scale_priors(theta, data):
    """Log priors of tau, sigma, omega at exp(theta) plus the log-Jacobian, and gradient."""
    ns, nk = data["ns"], data["nk"]
    parts = (slice(0, _NC), slice(_NC, _NC + ns), slice(_NC + ns, _NC + ns + nk))
    theta = np.asarray(theta, float)
    lp, grad = 0.0, np.ones(theta.size)
    for prior, sl in zip(data["priors"], parts, strict=True):
        x = np.exp(theta[sl])
        lp += float(np.sum(_priors.logpdf(prior, x)) + theta[sl].sum())
        if prior.dist == "Exponential":
            grad[sl] += -dict(prior.params)["lam"] * x
        elif prior.dist == "HalfNormal":
            grad[sl] += -(x / dict(prior.params)["sigma"]) ** 2
        else:  # central difference of the log density in log x
            h = 1e-5
            grad[sl] += (_priors.logpdf(prior, x * np.exp(h))
                         - _priors.logpdf(prior, x * np.exp(-h))) / (2 * h)
    return lp, grad


def log_marginal(theta, data: dict) -> float:
    """``log p(y | tau, sigma, omega)`` + log priors + log-Jacobian, at log scales `theta`.

    `data`: :func:`integrated_data`. The cell means, attribute effects and ``mu_bar`` are
    integrated out exactly (module docstring).
    """
    s = _woodbury(_system(theta, data))
    lp, _ = _scale_priors(theta, data)
    quad = float(s["b"] @ s["mean"])
    return _explicit(s, data) - 0.5 * s["logdet"] - 0.5 * (s["cc"] - quad) + lp


def log_marginal_grad(theta, data: dict) -> tuple[float, np.ndarray]:
    """:func:`log_marginal` and its gradient in `theta` (analytic, module docstring)."""
    theta = np.asarray(theta, float)
    s = _woodbury(_system(theta, data))
    ns, nk, ng = data["ns"], data["nk"], data["ng"]
    gc, gn, gw = data["gc"], data["gn"], data["gw"]
    lp, grad = _scale_priors(theta, data)
    m = s["mean"]
    quad = float(s["b"] @ m)
    value = _explicit(s, data) - 0.5 * s["logdet"] - 0.5 * (s["cc"] - quad) + lp
    z, minv, c = s["z"], s["minv"], s["c"]
    diag_pinv = s["dinv"] - np.einsum("ij,ij->i", z @ minv, z)
    diag_ypy = np.diag(c) - np.einsum("ij,ji->i", c @ minv, c)
    ym = s["y"].T @ m
    h = -0.5 * (diag_pinv + m**2)  # coefficient of d Dg
    ell = -0.5 * (diag_ypy + ym**2)  # coefficient of d lam
    hv, mv = h[_NC:], m[_NC:]
    # F's derivatives in u_c = sigma_c^-2, w2_g, p_k = omega_k^-2
    d_p = np.bincount(data["kind"], weights=hv, minlength=nk)
    d_u = (data["ksum"] @ hv - 0.5 * data["ss"] + data["dsum"] @ mv
           + np.bincount(gc, weights=ell[ng:] * (-gw / gn), minlength=_NC))
    d_w2 = ell[:ng] * gw - 0.5 * data["ysq"] + data["ysum"] * ym[:ng]
    # explicit terms
    d_w2 = d_w2 + 0.5 * gw / s["w2"]
    tau, sig = s["tau"], s["sig"]
    sig_c = sig[data["smap"]]
    smap = data["smap"]
    g_tau = np.bincount(gc, weights=d_w2 * (-2 * tau[gc] ** 2 * s["w2"] ** 2), minlength=_NC)
    g_sig = np.bincount(smap[gc], weights=d_w2 * (-2 * sig_c[gc] ** 2 * s["w2"] ** 2 / gn)
                        - gw * (gn - 1), minlength=ns)
    g_sig += np.bincount(smap, weights=d_u * (-2 * s["u"]), minlength=ns)
    g_om = d_p * (-2 * s["p"]) - np.bincount(data["kind"], minlength=nk)
    grad = grad + np.concatenate([g_tau, g_sig, g_om])
    return value, grad


def conditional_mu_bar(theta, data: dict) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of ``mu_bar`` given the log scales `theta` (Woodbury)."""
    s = _woodbury(_system(theta, data))
    z4 = s["z"][:_NC]
    cov = np.diag(s["dinv"][:_NC]) - z4 @ s["minv"] @ z4.T
    return s["mean"][:_NC], cov


def draw_gaussian(theta, data: dict, rng) -> np.ndarray:
    """One draw of ``(mu_bar, v)`` given the log scales `theta`: ``P^-1 (b + z)``, z ~ N(0, P)."""
    s = _woodbury(_system(theta, data))
    na, ng = data["na"], data["ng"]
    gc, gn, gw, kd = data["gc"], data["gn"], data["gw"], data["kd"]
    zs = np.empty(_NC + na)
    zs[:_NC] = rng.standard_normal(_NC) / data["s0"]
    zs[_NC:] = rng.standard_normal(na) * np.sqrt(s["p"][data["kind"]])
    # within-cell blocks: e ~ N(0, cells u diag(k)), e - k sum(e)/n
    e = rng.standard_normal((na, ng)) * np.sqrt(kd * (gw * s["u"][gc])[None, :])
    zs[_NC:] += (e - kd * (e.sum(axis=0) / gn)[None, :]).sum(axis=1)
    # between: sqrt(cells w2) x_g eps_g
    zs += s["y"][:, :ng] @ (rng.standard_normal(ng) * np.sqrt(gw * s["w2"]))
    rhs = s["b"] + zs
    return s["dinv"] * rhs - s["z"] @ (s["minv"] @ (s["z"].T @ rhs))


def initial_point(data: dict, rng) -> np.ndarray:
    """Return a jittered start: tau 0.05, the pooled within-cell sds, omega 0.05 (logs)."""
    rows = data["ksum"].sum(axis=1)
    cells = np.bincount(data["gc"], weights=data["gw"], minlength=_NC)
    within = np.sqrt(np.maximum(data["ss"], 1e-12) / np.maximum(rows - cells, 1.0))
    if data["ns"] == 1:
        within = np.sqrt(data["ss"].sum() / max(rows.sum() - cells.sum(), 1.0))[None]
    base = np.r_[np.full(_NC, np.log(0.05)), np.log(within), np.full(data["nk"], np.log(0.05))]
    return base + rng.normal(0.0, 0.2, base.size)


def sample_scales(data: dict, draws: int = 1000, tune: int = 500, chains: int = 4,
                  seed: int = 1, cores: int = 1, target_accept: float = 0.8):
    """NUTS on the log scales through nutpie's public API with a numpy density.

    Returns ``(theta (chain, draw, coordinate), sample_stats)``. :func:`log_marginal_grad`
    as a Python callback: an independent route to the posterior that ``fit_model`` samples
    with the C kernel (:func:`.crossed.marginal_kernel`), for the tests.
    """
    k = _NC + data["ns"] + data["nk"]
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    def make_logp():
        def logp(x):
            try:
                return log_marginal_grad(x, data)
            except (FloatingPointError, np.linalg.LinAlgError):
                return -np.inf, np.zeros(k)
        return logp

    def make_expand(seed1, seed2, chain):
        def expand(x):
            return {"theta": np.asarray(x, float).copy()}
        return expand

    def init(s):
        return initial_point(data, np.random.default_rng(s))

    model = from_pyfunc(k, make_logp, make_expand, [np.dtype("float64")], [(k,)], ["theta"],
                        coords={"coordinate": theta_names(data)},
                        dims={"theta": ("coordinate",)}, make_initial_point_fn=init)
    tr = nutpie.sample(model, draws=draws, tune=tune, chains=chains, cores=cores, seed=seed,
                       save_warmup=False, progress_bar=False, target_accept=target_accept)
    theta = np.asarray(tr.posterior["theta"].transpose("chain", "draw", ...).values)
    return theta, tr.sample_stats.to_dataset()


def posterior_draws(theta: np.ndarray, data: dict, seed: int = 0,
                    effects: bool = False) -> dict:
    """Scales and Gaussian draws at each (chain, draw) of log scales `theta` (numpy).

    Returns ``tau``, ``sigma``, ``omega``, ``mu_bar`` (one draw from its conditional
    Normal per scale draw) and, with `effects`, ``attribute_effect`` (joint draws of
    ``(mu_bar, v)`` instead).
    """
    theta = np.asarray(theta, float)
    lead = theta.shape[:-1]
    flat = theta.reshape(-1, theta.shape[-1])
    rng = np.random.default_rng(seed)
    ns, nk = data["ns"], data["nk"]
    mu = np.empty((flat.shape[0], _NC))
    v = np.empty((flat.shape[0], data["na"])) if effects else None
    for i, t in enumerate(flat):
        if effects:
            x = draw_gaussian(t, data, rng)
            mu[i], v[i] = x[:_NC], x[_NC:]
        else:
            m, c = conditional_mu_bar(t, data)
            mu[i] = m + np.linalg.cholesky(c) @ rng.standard_normal(_NC)
    out = {"tau": np.exp(flat[:, :_NC]), "sigma": np.exp(flat[:, _NC:_NC + ns]),
           "omega": np.exp(flat[:, _NC + ns:_NC + ns + nk]), "mu_bar": mu}
    if effects:
        out["attribute_effect"] = v
    return {k: a.reshape(lead + a.shape[1:]) for k, a in out.items()}


def _schur(theta, data):
    """Factorise P at `theta` as :func:`log_marginal_schur` describes (rank G, Cholesky)."""
    s = _system(theta, data)
    gc, gn, gw, kd = data["gc"], data["gn"], data["gw"], data["kd"]
    tau, u, w2 = s["tau"], s["u"], s["w2"]
    ug, t2 = u[gc], tau[gc] ** 2
    x = t2 * ug
    c = gw * ug * x / (1.0 + gn * x)
    dv = s["dg"][_NC:]
    dinv = 1.0 / dv
    gm = kd.T @ (dinv[:, None] * kd)
    rc = np.sqrt(c)
    chol = np.linalg.cholesky(np.eye(gc.size) - rc[:, None] * gm * rc[None, :])
    logdet = float(np.log(dv).sum() + 2 * np.log(np.diag(chol)).sum())
    sinv = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(gc.size)))
    rg = rc[:, None] * sinv * rc[None, :]  # P_vv^-1 = Dv^-1 + Dv^-1 K rg K' Dv^-1

    def pvv_solve(v):  # P_vv^-1 v, v (attributes, k)
        y = dinv[:, None] * v
        return y + dinv[:, None] * (kd @ (rg @ (kd.T @ y)))

    f = np.zeros((gc.size, _NC))
    f[np.arange(gc.size), gc] = gw * w2 / gn
    bmat = kd @ f
    a4 = np.full(_NC, 1.0 / data["s0"] ** 2)
    np.add.at(a4, gc, gw * w2)
    bv, bmu = s["b"][_NC:], s["b"][:_NC]
    tv = pvv_solve(bv[:, None])[:, 0]
    tb = pvv_solve(bmat)
    schur = np.diag(a4) - bmat.T @ tb
    cs = np.linalg.cholesky(schur)
    logdet += float(2 * np.log(np.diag(cs)).sum())
    tinv = np.linalg.inv(schur)
    m_mu = tinv @ (bmu - bmat.T @ tv)
    m_v = tv - tb @ m_mu
    s.update(x=x, c=c, dinv=dinv, gm=gm, rg=rg, tb=tb, tinv=tinv, logdet=logdet, m_mu=m_mu,
             m_v=m_v, quad=float(bmu @ m_mu + bv @ m_v))
    return s


def log_marginal_schur(theta, data: dict) -> float:
    """:func:`log_marginal` through a rank-G positive-definite factorisation.

    The attribute-effect block of P is ``Dv - K diag(c) K'`` with one column ``k_g`` per
    group, ``c_g = cells u^2 tau^2 / (1 + n tau^2 u) > 0`` (the within-cell and between-cell
    terms of a group combine into one rank-1 term), and its coupling to ``mu_bar`` is
    ``K F`` (``F[g, c_g] = cells w2 / n``). So ``S = I - C^1/2 K'Dv^-1 K C^1/2`` (groups x
    groups, positive definite when P is) is factorised by Cholesky, then the 4 x 4 Schur
    complement of ``mu_bar``: half the Woodbury size of :func:`log_marginal` and no
    indefinite solve (which loses ~1e-7 relative far in the tails).
    """
    s = _schur(theta, data)
    lp, _ = _scale_priors(theta, data)
    return _explicit(s, data) - 0.5 * s["logdet"] - 0.5 * (s["cc"] - s["quad"]) + lp


def log_marginal_schur_grad(theta, data: dict) -> tuple[float, np.ndarray]:
    """:func:`log_marginal_schur` and its analytic gradient (the sketch of a C kernel).

    ``dF = -tr(P^-1 dP)/2 - m'dP m/2 - dcc/2 + m.db`` on the blocks: ``diag(Dv)``,
    ``diag(A4)``, ``-K dC K'`` and the coupling ``K dF``; every term needs only rows of
    ``K`` against groups x groups and 4 x 4 matrices.
    """
    theta = np.asarray(theta, float)
    s = _schur(theta, data)
    nk = data["nk"]
    gc, gn, gw, kd = data["gc"], data["gn"], data["gw"], data["kd"]
    lp, grad = _scale_priors(theta, data)
    value = _explicit(s, data) - 0.5 * s["logdet"] - 0.5 * (s["cc"] - s["quad"]) + lp
    dinv, rg, tb, tinv = s["dinv"], s["rg"], s["tb"], s["tinv"]
    m_mu, m_v = s["m_mu"], s["m_v"]
    # diag of Sigma_vv = P_vv^-1 + tb T^-1 tb'
    kr = kd * dinv[:, None]
    diag_vv = dinv + np.einsum("ag,gh,ah->a", kr, rg, kr) + np.einsum("ac,cd,ad->a", tb,
                                                                       tinv, tb)
    h = -0.5 * (diag_vv + m_v**2)
    h4 = -0.5 * (np.diag(tinv) + m_mu**2)
    gm = s["gm"]
    ktb = kd.T @ tb  # G x 4
    kvk = np.diag(gm + gm @ rg @ gm) + np.einsum("gc,cd,gd->g", ktb, tinv, ktb)
    km = kd.T @ m_v
    ksvm = -(ktb @ tinv)  # K' Sigma_vm, G x 4
    g_idx = np.arange(gc.size)
    d_c = 0.5 * (kvk + km**2)
    d_f = -(ksvm[g_idx, gc] + m_mu[gc] * km)
    w2 = s["w2"]
    d_w2 = (gw * h4[gc] + d_f * gw / gn + data["ysum"] * (m_mu[gc] + km / gn)
            - 0.5 * data["ysq"] + 0.5 * gw / w2)
    d_u = data["ksum"] @ h + data["dsum"] @ m_v - 0.5 * data["ss"]
    d_p = np.bincount(data["kind"], weights=h, minlength=nk)
    return value, grad + _log_scale_gradient(
        data, s["tau"], s["sig"][data["smap"]], s["u"], s["p"], w2, s["x"], d_w2, d_c, d_u,
        d_p, np.bincount(data["kind"], minlength=nk))


def _log_scale_gradient(data, tau, sig_c, u, p, w2, x, d_w2, d_c, d_u, d_p, per_kind):
    """Return the gradient in (log tau, log sigma, log omega).

    From the derivatives in each group's ``w2`` and ``c``, each connection's ``u =
    1/sigma^2`` and each kind's ``p = 1/omega^2`` (`per_kind`: attributes per kind, from
    the ``-sum log omega`` term).
    """
    gc, gn, gw, smap = data["gc"], data["gn"], data["gw"], data["smap"]
    ns = data["ns"]
    ug = u[gc]
    dc_dlt = gw * ug * 2 * x / (1 + gn * x) ** 2
    dc_dls = -2 * gw * ug * x / (1 + gn * x) - 2 * gw * ug * x / (1 + gn * x) ** 2
    g_tau = np.bincount(gc, weights=d_w2 * (-2 * tau[gc] ** 2 * w2**2) + d_c * dc_dlt,
                        minlength=_NC)
    g_sig = np.bincount(smap[gc], weights=d_w2 * (-2 * sig_c[gc] ** 2 * w2**2 / gn)
                        + d_c * dc_dls - gw * (gn - 1), minlength=ns)
    g_sig += np.bincount(smap, weights=d_u * (-2 * u), minlength=ns)
    return np.concatenate([g_tau, g_sig, d_p * (-2 * p) - per_kind])


def attribute_types(data: dict) -> dict:
    """Attributes sharing (kind, rows per connection, counts per group), and their moments.

    Returns per type: ``count``, ``kind``, ``ksum`` (4), ``k`` (groups), and the first two
    moments of the attributes' summed deviations ``dsum`` (``d1`` (4), ``d2`` (4 x 4)). On
    the shipped lists 4-5 types cover ~330 attributes.
    """
    key = np.column_stack([data["kind"], data["ksum"].T, data["kd"]])
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    nt = first.size
    d = data["dsum"].T  # attributes x 4
    d1 = np.zeros((nt, _NC))
    np.add.at(d1, inv, d)
    d2 = np.zeros((nt, _NC, _NC))
    np.add.at(d2, inv, d[:, :, None] * d[:, None, :])
    return {"count": np.bincount(inv, minlength=nt).astype(float), "kind": data["kind"][first],
            "ksum": data["ksum"][:, first].T, "k": data["kd"][first], "d1": d1, "d2": d2}


def log_marginal_types(theta, data: dict, types: dict | None = None) -> float:
    """:func:`log_marginal_schur` with every attribute sum collapsed onto types (value only)."""
    return log_marginal_types_grad(theta, data, types)[0]


def log_marginal_types_grad(theta, data: dict,
                            types: dict | None = None) -> tuple[float, np.ndarray]:
    """:func:`log_marginal_schur_grad` with every attribute sum collapsed onto types.

    Within an :func:`attribute_types` type every attribute has the same diagonal precision
    and counts, and its linear term is ``u.dsum[:, a] + beta_type``, so the sums over
    attributes need only each type's count and first two moments of ``dsum``:
    O(types x groups^2 + groups^3) per evaluation, independent of the number of attributes
    (the sketch of the fast kernel).
    """
    theta = np.asarray(theta, float)
    ty = attribute_types(data) if types is None else types
    nk = data["nk"]
    tau, sig, om = _split(theta, data)
    gc, gn, gw = data["gc"], data["gn"], data["gw"]
    ng = gc.size
    smap = data["smap"]
    sig_c = sig[smap]
    u = 1.0 / sig_c**2
    p = 1.0 / om**2
    w2 = 1.0 / (tau[gc] ** 2 + sig_c[gc] ** 2 / gn)
    x = tau[gc] ** 2 * u[gc]
    c = gw * u[gc] * x / (1.0 + gn * x)
    s0, m0 = data["s0"], data["m0"]
    kt, nt, tkind = ty["k"], ty["count"], ty["kind"]
    dv = p[tkind] + ty["ksum"] @ u
    dinv = 1.0 / dv
    beta = kt @ (w2 * data["ysum"] / gn)
    du = ty["d1"] @ u
    b1 = du + nt * beta  # sum of b_v over the type
    b2 = np.einsum("i,tij,j->t", u, ty["d2"], u) + 2 * beta * du + nt * beta**2
    gm = kt.T @ ((nt * dinv)[:, None] * kt)
    kb = kt.T @ (dinv * b1)
    rc = np.sqrt(c)
    chol = np.linalg.cholesky(np.eye(ng) - rc[:, None] * gm * rc[None, :])
    sinv = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(ng)))
    rg = rc[:, None] * sinv * rc[None, :]
    f = np.zeros((ng, _NC))
    f[np.arange(ng), gc] = gw * w2 / gn
    wm = f + rg @ gm @ f
    a4 = np.full(_NC, 1.0 / s0**2)
    np.add.at(a4, gc, gw * w2)
    bmu = np.full(_NC, m0 / s0**2)
    np.add.at(bmu, gc, w2 * data["ysum"])
    rkb = rg @ kb
    ktb = gm @ wm
    schur = np.diag(a4) - f.T @ ktb
    tinv = np.linalg.inv(schur)
    m_mu = tinv @ (bmu - f.T @ (kb + gm @ rkb))
    z = rkb - wm @ m_mu
    kz = kt @ z
    quad = float(bmu @ m_mu + np.sum(dinv * (b2 + kz * b1)))
    logdet = float(nt @ np.log(dv) + 2 * np.log(np.diag(chol)).sum()
                   + np.linalg.slogdet(schur)[1])
    cc = _NC * m0**2 / s0**2 + u @ data["ss"] + w2 @ data["ysq"]
    explicit = float(-0.5 * data["n_rows"] * _LOG2PI - _NC * np.log(s0)
                     - nt @ np.log(om[tkind])
                     + gw @ (-(gn - 1) * np.log(sig_c[gc]) + 0.5 * np.log(w2 / gn)))
    lp, grad = _scale_priors(theta, data)
    value = explicit - 0.5 * logdet - 0.5 * (cc - quad) + lp
    # per type: sums of m_v, m_v^2, dsum m_v (m_v[a] = dinv (b_v[a] + k.z))
    sm = dinv * (b1 + nt * kz)
    sm2 = dinv**2 * (b2 + 2 * kz * b1 + nt * kz**2)
    sdm = dinv[:, None] * (np.einsum("tij,j->ti", ty["d2"], u) + beta[:, None] * ty["d1"]
                           + kz[:, None] * ty["d1"])  # types x 4
    q = rg + wm @ tinv @ wm.T
    diag_vv = dinv + dinv**2 * np.einsum("tg,gh,th->t", kt, q, kt)
    hsum = -0.5 * (nt * diag_vv + sm2)  # sum of h over the type
    km = kt.T @ sm
    d_u = ty["ksum"].T @ hsum + sdm.sum(axis=0) - 0.5 * data["ss"]
    d_p = np.bincount(tkind, weights=hsum, minlength=nk)
    h4 = -0.5 * (np.diag(tinv) + m_mu**2)
    kvk = np.diag(gm + gm @ rg @ gm) + np.einsum("gc,cd,gd->g", ktb, tinv, ktb)
    ksvm = -(ktb @ tinv)
    d_c = 0.5 * (kvk + km**2)
    d_f = -(ksvm[np.arange(ng), gc] + m_mu[gc] * km)
    d_w2 = (gw * h4[gc] + d_f * gw / gn + data["ysum"] * (m_mu[gc] + km / gn)
            - 0.5 * data["ysq"] + 0.5 * gw / w2)
    return value, grad + _log_scale_gradient(data, tau, sig_c, u, p, w2, x, d_w2, d_c, d_u,
                                             d_p, np.bincount(tkind, weights=nt, minlength=nk))


# -- the compiled kernel (C, :mod:`._native`: cxi_logp, cxi_expand, cxi_moments, cxi_draw) --

#: Header of :func:`pack_types_c`'s block: length, groups, types, ns, nk, attributes,
#: (attribute, group) entries, whether the per-attribute part of :func:`pack_draws_c` follows,
#: (type, group) entries.
_HEAD = 9


def pack_types_c(data: dict, types: dict | None = None) -> np.ndarray:
    """One flat float64 block: what the C density ``cxi_logp`` and ``cxi_moments`` read.

    `data`: :func:`integrated_data`; `types`: :func:`attribute_types` (computed if None).
    Header ``[length, ng, nt, ns, nk, na, nnz, 0, nnzt]``, then per group connection, n,
    cells, sum and sum of squares of the cell means; ``ss`` (4), ``smap`` (4),
    ``(s0, m0, rows)``, the priors of tau, sigma, omega (:func:`.priors.kernel_row`,
    3 x 5); per type count, kind, ``ksum`` (types x 4), its counts per group ``k`` sparse
    by type (CSR: row pointer (types + 1), group, count; nnzt entries), ``d1`` (types x 4),
    ``d2`` (types x 16).
    """
    return _pack_c(data, types, full=False)


def pack_draws_c(data: dict, types: dict | None = None) -> np.ndarray:
    """:func:`pack_types_c`'s block and the per-attribute part ``cxi_draw`` needs.

    Header flag 1, then per attribute kind, ``ksum`` (attributes x 4), ``dsum``
    (attributes x 4), and the nonzero counts of ``kd`` by attribute (CSR: row pointer
    (attributes + 1), group, count), attribute-major as ``np.nonzero``
    orders them. Also a valid block for ``cxi_logp`` / ``cxi_moments``.
    """
    return _pack_c(data, types, full=True)


def _pack_c(data, types, full):
    ty = attribute_types(data) if types is None else types
    ng, nt, na = int(data["ng"]), int(ty["count"].size), int(data["na"])
    ai, gi = np.nonzero(data["kd"])
    ti, tg = np.nonzero(ty["k"])
    tptr = np.zeros(nt + 1)
    np.cumsum(np.bincount(ti, minlength=nt), out=tptr[1:])
    rows = np.array([_priors.kernel_row(p) for p in data["priors"]], dtype=float)
    body = [data["gc"], data["gn"], data["gw"], data["ysum"], data["ysq"], data["ss"],
            data["smap"], [data["s0"], data["m0"], data["n_rows"]], rows.ravel(),
            ty["count"], ty["kind"], ty["ksum"].ravel(), tptr, tg, ty["k"][ti, tg],
            ty["d1"].ravel(), ty["d2"].reshape(nt, 16).ravel()]
    if full:
        ptr = np.zeros(na + 1)
        np.cumsum(np.bincount(ai, minlength=na), out=ptr[1:])
        body += [data["kind"], data["ksum"].T.ravel(), data["dsum"].T.ravel(), ptr, gi,
                 data["kd"][ai, gi]]
    body = np.concatenate([np.asarray(b, dtype=np.float64).ravel() for b in body])
    head = [_HEAD + body.size, ng, nt, data["ns"], data["nk"], na, ai.size, float(full),
            ti.size]
    return np.ascontiguousarray(np.concatenate([np.asarray(head, float), body]))


def n_normals(packed: np.ndarray) -> int:
    """Return how many standard normals ``cxi_draw`` takes per draw: ``4 + na + ng``."""
    return int(4 + packed[5] + packed[1])


def entry_points():
    """``(logp, expand)`` of the C kernel as :class:`._native.CFunc` (None without a compiler).

    ``cxi_logp(dim, x, grad, logp, data)``: log density and gradient at log scales x on
    :func:`pack_types_c`'s block; ``cxi_expand(dim, expanded, x, out, data)``:
    ``(tau[4], sigma[ns], omega[nk]) = exp(x)``.
    """
    return _native.entry_points("crossed_integrated")


def _c_fn(name: str):
    lib = _native.library()
    if lib is None:
        raise RuntimeError("no compiled kernels (no working C compiler)")
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int64
    dp = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ctypes.c_int64] + [dp] * (4 if name == "cxi_moments" else 5)
    return fn


def _ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def _rows(thetas, packed):
    k = _NC + int(packed[3]) + int(packed[4])
    thetas = np.asarray(thetas, dtype=np.float64)
    if thetas.shape[-1] != k:
        raise ValueError(f"thetas: last axis must have {k} log scales, got {thetas.shape}")
    return thetas.shape[:-1], np.ascontiguousarray(thetas.reshape(-1, k))


def _check(rc: int, name: str):
    if rc == -1:
        raise ValueError(f"{name}: the packed block does not match (pack_types_c / "
                         "pack_draws_c)")
    if rc == -2:
        raise MemoryError(name)
    if rc != 0:
        raise FloatingPointError(f"{name}: the conditional precision is not positive "
                                 f"definite at row {(rc - 4) // 10}")


def conditional_moments_c(thetas, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean (..., 4) and covariance (..., 4, 4) of ``mu_bar`` at each row of `thetas` (C).

    `thetas` (..., k) log scales; `packed`: :func:`pack_types_c` or :func:`pack_draws_c`.
    The C port of :func:`conditional_mu_bar`.
    """
    lead, flat = _rows(thetas, packed)
    mean = np.empty((flat.shape[0], _NC))
    cov = np.empty((flat.shape[0], _NC, _NC))
    packed = np.ascontiguousarray(packed, dtype=np.float64)
    rc = _c_fn("cxi_moments")(flat.shape[0], _ptr(flat), _ptr(packed), _ptr(mean), _ptr(cov))
    _check(int(rc), "cxi_moments")
    return mean.reshape(lead + (_NC,)), cov.reshape(lead + (_NC, _NC))


def draw_c(thetas, packed: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """One joint draw of ``(mu_bar (..., 4), v (..., na))`` per row of `thetas` (C).

    `packed`: :func:`pack_draws_c`; the standard normals are
    ``rng.standard_normal((rows, n_normals(packed)))``, laid out as ``cxi_draw`` documents:
    per row 4 (mu_bar), na (one per attribute), ng (one per group). mu_bar from its
    conditional Normal, then v given it; the same distribution as :func:`draw_gaussian`,
    drawn otherwise.
    """
    if packed[7] < 0.5:
        raise ValueError("draw_c needs pack_draws_c's block (with the per-attribute part)")
    lead, flat = _rows(thetas, packed)
    n, na = flat.shape[0], int(packed[5])
    normals = np.ascontiguousarray(rng.standard_normal((n, n_normals(packed))))
    mu = np.empty((n, _NC))
    v = np.empty((n, na))
    packed = np.ascontiguousarray(packed, dtype=np.float64)
    rc = _c_fn("cxi_draw")(n, _ptr(flat), _ptr(normals), _ptr(packed), _ptr(mu), _ptr(v))
    _check(int(rc), "cxi_draw")
    return mu.reshape(lead + (_NC,)), v.reshape(lead + (na,))
