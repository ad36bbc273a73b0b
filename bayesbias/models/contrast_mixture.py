"""Group-level contrasts as Gaussian mixtures: Rao-Blackwellised intervals and their error.

The verdict reads interval ends of contrasts of the group-level means ``mu_bar``. Sample
quantiles of the ``mu_bar`` draws carry Monte Carlo error of order ``1/sqrt(ESS)`` times
the posterior sd, and an HDI end of draws converges more slowly still. In the
``hierarchical`` and ``crossed`` families with a Normal prior on ``mu_bar`` the group means
are *exactly* Gaussian given the scale parameters, so their posterior is a Gaussian mixture
over the scale draws, whose quantiles and HDI can be computed to any precision from the
conditional means and covariances (Rao-Blackwellisation). What remains is the Monte Carlo
error of averaging over the scale draws, usually far smaller than that of the sample
quantiles.

Derivation (crossed; the hierarchical family is the case without attribute effects).
Write ``theta = (mu_bar[c] for the 4 connections, v[a] for every attribute)`` and fix the
scales ``phi = (tau[c], sigma[c], omega[kind])``. The model is

    y_i = mu[w, c] + v[a_i] + e_i,   e_i ~ N(0, sigma[c]^2)
    mu[w, c] ~ N(mu_bar[c], tau[c]^2),   v[a] ~ N(0, omega[kind(a)]^2),
    mu_bar[c] ~ N(m0, s0^2)   (the spec's prior; Normal is required).

Every term is linear-Gaussian in (mu, theta) given phi. Integrating out the cell mean
``mu[w, c]`` of a cell q with n rows, data mean ``ybar_q`` and attribute counts ``k_q``
(``k_q[a]``: its rows with attribute a) leaves, with ``r_i = y_i - v[a_i]``,

    -1/(2 sigma^2) sum_i (r_i - rbar)^2  -  (rbar - mu_bar[c])^2 / (2 (tau^2 + sigma^2/n)),

and ``rbar = ybar_q - k_q.v / n``. The first term is the quadratic form
``v'(diag(k_q) - k_q k_q'/n) v - 2 v.d_q`` (``d_q[a]``: the summed deviations
``y_i - ybar_q`` of its rows with attribute a) over ``sigma^2``; the second is
``w_q (ybar_q - x_q.theta)^2`` with ``x_q = e_c + k_q/n`` (on the v block) and
``w_q = 1 / (tau^2 + sigma^2/n)``. So ``log p(theta | phi, y) = -theta'P theta/2 + b.theta
+ const`` with

    P = diag(1/s0^2 (mu_bar), 1/omega^2 (v)) + sum_q [ (0 + A_q)/sigma^2 + w_q x_q x_q' ],
    b = (m0/s0^2, 0) + sum_q [ (0, d_q)/sigma^2 + w_q ybar_q x_q ],

(A_q = diag(k_q) - k_q k_q'/n), i.e. ``theta | phi, y ~ N(P^-1 b, P^-1)`` exactly. Cells
sharing (connection, n) share their weights, so P and b are sums of per-class constant
matrices times per-draw weights (:func:`conditional_moments`). A contrast ``l.mu_bar`` is
then ``N(l.m, l'S l)`` given phi, and its posterior is the equal-weight mixture of these
Normals over the posterior draws of phi. (Conditioning on phi rather than on (phi, v)
matters in the crossed family: given v the group means are nearly fixed, and the mixture
spread, i.e. the Monte Carlo error, would be almost that of the raw draws.)

Interval of the mixture: equal-tailed quantiles, or the HDI (the (l, u) with F(u) - F(l) =
p and f(l) = f(u), for a unimodal mixture; :func:`~.word_summaries.mixture_interval`).

Monte Carlo error (delta method): an estimated quantile x solves ``mean_s h_s(x) = q`` with
``h_s(x) = Phi((x - m_s)/sd_s)``, so its error is ``(mean_s h_s(x) - q) / f(x)``: a mean of
the per-draw series ``psi_s = (h_s(x) - q)/f(x)`` whose MCSE is ``sd(psi)/sqrt(ESS(psi))``
with ArviZ's (rank-free, split-chain) ESS. For the HDI the two estimating equations give
``(dl, du) = -J^-1 (eps_1, eps_2)`` with ``J = [[-f(l), f(u)], [-f'(l), f'(u)]]``,
``eps_1 = mean_s (h_s(u) - h_s(l)) - p``, ``eps_2 = mean_s (g_s(u) - g_s(l))``, ``g_s`` the
component densities; the per-draw series of ``-J^-1 (...)`` give each end's MCSE the same
way.
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from . import crossed_integrated as _ci
from ._rank_diagnostics import _ess as ess
from ._rank_diagnostics import _split_chains
from .crossed import integrated as _integrated
from .crossed import integrated_data
from .families import family

__all__ = ["supports", "conditional_moments", "contrast_mixture", "mixture_end_mcse",
           "MAX_MATRIX_BYTES", "MAX_DRAWS"]

_NC = len(CONNECTIONS)

#: Largest (4 + attributes) x cells float64 matrix the crossed conditional builds (its
#: low-rank factor); above it the verdict reads sample quantiles instead.
MAX_MATRIX_BYTES = 200_000_000

#: Draws per chain of the scale parameters used by the mixture (evenly thinned above it;
#: :data:`bayesbias.verdicts.MAX_VERDICT_DRAWS`, so that a refit's extra draws all count);
#: the MCSE is that of the draws used.
MAX_DRAWS = 4000


def supports(fit) -> bool:
    """Whether `fit`'s group means are conditionally Gaussian given its scale parameters.

    The ``hierarchical`` and ``crossed`` families with a Normal ``mu_bar`` prior, on one
    embedding's table.
    """
    spec = fit.spec
    if not family(spec.family).GAUSSIAN_GROUP_MEANS:
        return False
    prior = spec.priors.get("mu_bar")
    if prior is None or prior.dist != "Normal":
        return False
    post = fit.idata.posterior
    if not {"mu_bar", "tau", "sigma"} <= set(post.data_vars):
        return False
    if _attribute_effects(spec):
        if "omega" not in post.data_vars or fit.cells.attr_idx is None:
            return False
        if 8 * (4 + fit.cells.attributes.size) * fit.cells.n.size > MAX_MATRIX_BYTES:
            return False
    return True


def _attribute_effects(spec) -> bool:
    return family(spec.family).ATTRIBUTE_EFFECTS


def _cell_classes(cells):
    """Non-empty cells as (unit, conn, n, class index) and the classes' (conn, n)."""
    ui, ci = np.nonzero(cells.n > 0)
    n = cells.n[ui, ci].astype(np.int64)
    key = ci.astype(np.int64) * (int(n.max(initial=0)) + 1) + n
    uniq, cls = np.unique(key, return_inverse=True)
    span = int(n.max(initial=0)) + 1
    return ui, ci, n, cls.ravel(), uniq // span, uniq % span


def _thin(fit):
    post = fit.idata.posterior
    nd = post.sizes["draw"]
    keep = np.unique(np.linspace(0, nd - 1, min(nd, MAX_DRAWS)).astype(int))
    return keep


def _draws(fit, name, keep):
    """(chain, kept draw, ...) values of posterior variable `name`."""
    da = fit.idata.posterior[name]
    da = da.transpose("chain", "draw", ...)
    return np.asarray(da.values)[:, keep]


def conditional_moments(fit, low_rank: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of ``mu_bar`` given each draw's scale parameters.

    Returns ``mean`` (chain, draw, connection) and ``cov`` (chain, draw, connection,
    connection) at the draws kept (every draw up to :data:`MAX_DRAWS` per chain, else
    evenly thinned). See the module docstring for the derivation. `low_rank` (crossed):
    force the Woodbury solve (True) or the dense one (False); None chooses the smaller.
    Computed once per fit (the verdict of ``fit_for_verdict`` and the report's read them);
    the arrays returned are shared: do not modify them.
    """
    cache = fit.__dict__.setdefault("_cache", {}) if hasattr(fit, "__dict__") else {}
    key = ("conditional_moments", low_rank)
    if key not in cache:
        moments = _conditional_moments(fit, low_rank)
        for a in moments:
            a.setflags(write=False)
        cache[key] = moments
    return cache[key]


def _conditional_moments(fit, low_rank):
    cells = fit.cells
    spec = fit.spec
    keep = _thin(fit)
    if low_rank is None and _attribute_effects(spec) and _integrated(spec, cells):
        try:
            return _integrated_moments(fit, keep)
        except FloatingPointError:  # not factorised at some draw: the solves below
            pass
    tau = _draws(fit, "tau", keep)
    sig = fit._cell_sigma()[:, keep]
    lead = tau.shape[:2]
    tau = tau.reshape(-1, _NC)
    sig = sig.reshape(-1, _NC)
    p = dict(spec.priors["mu_bar"].params)
    m0, s0 = float(p["mu"]), float(p["sigma"])
    ui, ci, n, cls, ccon, cn = _cell_classes(cells)
    ybar = cells.mean[ui, ci]
    ncl = ccon.size
    # per draw and class: 1/sigma^2 and 1/(tau^2 + sigma^2/n)
    w1 = 1.0 / sig[:, ccon] ** 2
    w2 = 1.0 / (tau[:, ccon] ** 2 + sig[:, ccon] ** 2 / cn)
    if not _attribute_effects(spec):
        cnt = np.bincount(cls, minlength=ncl).astype(float)
        ysum = np.bincount(cls, weights=ybar, minlength=ncl)
        onehot = np.zeros((ncl, _NC))
        onehot[np.arange(ncl), ccon] = 1.0
        prec = 1 / s0**2 + (w2 * cnt) @ onehot
        lin = m0 / s0**2 + (w2 * ysum) @ onehot
        mean = lin / prec
        cov = np.zeros(prec.shape + (_NC,))
        idx = np.arange(_NC)
        cov[:, idx, idx] = 1.0 / prec
        return mean.reshape(lead + (_NC,)), cov.reshape(lead + (_NC, _NC))
    return _crossed_moments(fit, keep, w1, w2, m0, s0, ui, ci, n, cls, ccon, cn, ybar, lead,
                            low_rank)


def _integrated_moments(fit, keep):
    """Conditional moments of mu_bar by the compiled scales-only form (C, the same maths)."""
    parts = [_draws(fit, name, keep) for name in ("tau", "sigma", "omega")]
    parts = [a.reshape(a.shape[:2] + (-1,)) for a in parts]
    packed = _ci.pack_types_c(integrated_data(fit.spec, fit.cells))
    return _ci.conditional_moments_c(np.log(np.concatenate(parts, axis=-1)), packed)


def _groups(k, cls, ccon, cn):
    """Cells sharing (class, attribute counts): their class, count, counts row and members.

    Returns ``gcls`` (groups,), ``gcnt`` (cells per group), ``kg`` (groups x attributes,
    sparse) and ``member`` (each cell's group).
    """
    k = k.tocsr()
    keys = {}
    member = np.empty(k.shape[0], dtype=np.int64)
    for q in range(k.shape[0]):
        sl = slice(k.indptr[q], k.indptr[q + 1])
        key = (int(cls[q]), k.indices[sl].tobytes(), k.data[sl].tobytes())
        member[q] = keys.setdefault(key, len(keys))
    first = np.zeros(len(keys), dtype=np.int64)
    first[member[::-1]] = np.arange(k.shape[0])[::-1]
    gcnt = np.bincount(member, minlength=len(keys)).astype(float)
    return cls[first], gcnt, k[first], member


def _crossed_moments(fit, keep, w1, w2, m0, s0, ui, ci, n, cls, ccon, cn, ybar, lead,
                     low_rank: bool | None = None):
    """Conditional moments of mu_bar in the crossed family (module docstring).

    ``P = Dg + Y diag(lam) Y'`` with ``Dg`` diagonal and one pair of columns of ``Y`` per
    group of cells sharing (connection, n, attribute counts): ``x_g = e_c + k_g/n`` (weight
    cells x w2) and ``(0, k_g)`` (weight -cells x w1 / n). With fewer such columns than
    parameters the Woodbury identity solves a system of their size per draw
    (`low_rank`; None: when it is smaller), else the dense precision is solved.
    """
    import scipy.sparse as sp

    from .crossed import _kinds

    cells = fit.cells
    na = int(cells.attributes.size)
    d = _NC + na
    ncl = ccon.size
    cell_of = -np.ones(cells.n.shape, dtype=np.int64)
    cell_of[ui, ci] = np.arange(ui.size)
    row_cell = cell_of[cells.unit_idx, cells.conn_idx]
    k = sp.csr_matrix((np.ones(row_cell.size), (row_cell, cells.attr_idx)),
                      shape=(ui.size, na))
    dev = np.asarray(cells.y, float) - ybar[row_cell]
    dq = sp.csr_matrix((dev, (row_cell, cells.attr_idx)), shape=(ui.size, na))
    # linear terms per class: within (v block, x w1) and between (x w2)
    onehot = sp.csr_matrix((np.ones(ui.size), (cls, np.arange(ui.size))),
                           shape=(ncl, ui.size))
    lin1 = np.zeros((ncl, d))
    lin1[:, _NC:] = (onehot @ dq).toarray()
    lin2 = np.zeros((ncl, d))
    lin2[np.arange(ncl), ccon] = onehot @ ybar
    lin2[:, _NC:] = (onehot @ sp.diags(ybar) @ k).toarray() / cn[:, None]
    ksum = (onehot @ k).toarray()  # per class: rows per attribute (diagonal, x w1)
    kind, labels = _kinds(fit.spec, cells)
    omega = _draws(fit, "omega", keep)
    omega = omega.reshape(omega.shape[0] * omega.shape[1], -1)
    s_tot = w1.shape[0]
    dg = np.empty((s_tot, d))
    dg[:, :_NC] = 1.0 / s0**2
    dg[:, _NC:] = 1.0 / omega[:, kind] ** 2 + w1 @ ksum
    b = w1 @ lin1 + w2 @ lin2
    b[:, :_NC] += m0 / s0**2
    gcls, gcnt, kg, _ = _groups(k, cls, ccon, cn)
    ng = gcls.size
    if low_rank is None:
        low_rank = 2 * ng < d
    gn = cn[gcls].astype(float)
    y = np.zeros((d, 2 * ng))
    y[ccon[gcls], np.arange(ng)] = 1.0
    kd = kg.toarray().T  # attributes x groups
    y[_NC:, :ng] = kd / gn
    y[_NC:, ng:] = kd
    lam = np.concatenate([gcnt * w2[:, gcls], -gcnt * w1[:, gcls] / gn], axis=1)
    mean = np.empty((s_tot, _NC))
    cov = np.empty((s_tot, _NC, _NC))
    if low_rank:
        # Y' Dg^-1 Y from G = K_g' Dg_v^-1 K_g (groups x groups): the columns are
        # x_g = e_c + k_g/n and z_g = k_g
        gc = ccon[gcls]
        same = (gc[:, None] == gc[None, :]).astype(float)
        scale = np.concatenate([1.0 / gn, np.ones(ng)])
        step = max(1, int(40_000_000 // (8 * (4 * ng * ng + na))))
        r = 2 * ng
        # G[s] = sum_a kd[a, g] kd[a, h] / dg[s, a]: one product of the draws' inverse
        # diagonals with the attributes' count products (attributes x groups^2)
        pairs = (kd[:, :, None] * kd[:, None, :]).reshape(na, ng * ng)
        for lo in range(0, s_tot, step):
            sl = slice(lo, min(lo + step, s_tot))
            inv = 1.0 / dg[sl]  # (S, d)
            g = (inv[:, _NC:] @ pairs).reshape(-1, ng, ng)  # (S, groups, groups)
            m = np.tile(g, (1, 2, 2)) * scale[None, :, None] * scale[None, None, :]
            m[:, :ng, :ng] += same[None] * inv[:, gc][:, :, None]
            m[:, np.arange(r), np.arange(r)] += 1.0 / lam[sl]
            kb = (inv[:, _NC:] * b[sl][:, _NC:]) @ kd  # (S, groups)
            u = np.concatenate([kb / gn + inv[:, gc] * b[sl][:, gc], kb], axis=1)
            yi4 = np.zeros((kb.shape[0], r, _NC))  # (Y' Dg^-1)[:, :4]
            yi4[:, np.arange(ng), gc] = inv[:, gc]
            rhs = np.concatenate([u[:, :, None], yi4], axis=2)
            sol = np.linalg.solve(m, rhs)
            top = np.swapaxes(yi4, 1, 2)
            mean[sl] = (inv * b[sl])[:, :_NC] - (top @ sol[:, :, :1])[:, :, 0]
            cov[sl] = -(top @ sol[:, :, 1:])
            cov[sl, np.arange(_NC), np.arange(_NC)] += inv[:, :_NC]
        return mean.reshape(lead + (_NC,)), cov.reshape(lead + (_NC, _NC))
    rhs_e = np.zeros((d, _NC))
    rhs_e[np.arange(_NC), np.arange(_NC)] = 1.0
    step = max(1, int(40_000_000 // (8 * d * (d + 2 * ng))))
    for lo in range(0, s_tot, step):
        sl = slice(lo, min(lo + step, s_tot))
        pm_ = np.einsum("dr,sr,er->sde", y, lam[sl], y)
        pm_[:, np.arange(d), np.arange(d)] += dg[sl]
        rhs = np.concatenate([b[sl][:, :, None],
                              np.broadcast_to(rhs_e, (b[sl].shape[0], d, _NC))], axis=2)
        sol = np.linalg.solve(pm_, rhs)
        mean[sl] = sol[:, :_NC, 0]
        cov[sl] = sol[:, :_NC, 1:]
    return mean.reshape(lead + (_NC,)), cov.reshape(lead + (_NC, _NC))


def contrast_mixture(fit, contrasts) -> tuple[np.ndarray, np.ndarray]:
    """Conditional means and sds of contrasts of ``mu_bar``, each (chain, draw, contrast).

    `contrasts`: (minuend, subtrahend) connection pairs.
    """
    mean, cov = conditional_moments(fit)
    lmat = np.zeros((len(contrasts), _NC))
    for i, (a, b) in enumerate(contrasts):
        lmat[i, CONNECTIONS.index(a)] += 1.0
        lmat[i, CONNECTIONS.index(b)] -= 1.0
    m = mean @ lmat.T
    v = np.einsum("ij,...jk,ik->...i", lmat, cov, lmat)
    return m, np.sqrt(np.maximum(v, 0.0))


def _ess(series: np.ndarray) -> float:
    """ArviZ-style split-chain ESS of a (chain, draw) series (its size if constant)."""
    s = np.asarray(series, float)
    if s.shape[1] < 4 or np.ptp(s) == 0:
        return float(s.size)
    return float(ess(_split_chains(s[None]))[0])


def _mcse(psi: np.ndarray) -> float:
    sd = float(np.std(psi))
    if sd == 0:
        return 0.0
    return sd / np.sqrt(max(_ess(psi), 1.0))


def mixture_end_mcse(mean: np.ndarray, sd: np.ndarray, ends, prob: float,
                     kind: str) -> tuple[float, float]:
    """Monte Carlo standard errors of a mixture interval's ends (delta method, module doc).

    `mean`, `sd`: (chain, draw) conditional moments of one contrast; `ends`: its interval
    (lower, upper) of probability `prob`, ``"hdi"`` or ``"eti"``.
    """
    from scipy.special import ndtr

    lo, hi = (float(e) for e in ends)
    z_l, z_u = (lo - mean) / sd, (hi - mean) / sd
    h_l, h_u = ndtr(z_l), ndtr(z_u)
    c = 1 / np.sqrt(2 * np.pi)
    g_l, g_u = c * np.exp(-0.5 * z_l**2) / sd, c * np.exp(-0.5 * z_u**2) / sd
    f_l, f_u = float(g_l.mean()), float(g_u.mean())
    if kind != "hdi":
        a = (1 - prob) / 2
        return (_mcse((h_l - a) / f_l), _mcse((h_u - (1 - a)) / f_u))
    fp_l = float((-z_l * g_l / sd).mean())
    fp_u = float((-z_u * g_u / sd).mean())
    jac = np.array([[-f_l, f_u], [-fp_l, fp_u]])
    e1 = (h_u - h_l) - prob
    e2 = g_u - g_l
    try:
        inv = np.linalg.inv(jac)
    except np.linalg.LinAlgError:
        return (np.nan, np.nan)
    psi_l = -(inv[0, 0] * e1 + inv[0, 1] * e2)
    psi_u = -(inv[1, 0] * e1 + inv[1, 1] * e2)
    return (_mcse(psi_l), _mcse(psi_u))
