"""Numba kernel of the additive family with ``theta = (m, co)`` integrated out exactly.

Given the residual sd, ``mu[u, c] = m[u] + co[c]`` with Normal priors is linear-Gaussian: with
``r`` the cell means less their prior mean, ``W = n / s^2`` per cell, ``S0`` the prior
covariance of theta and ``P = S0^-1 + D' W D`` its posterior precision (D: the cell design),

    log p(rows | s) = sum_cells [-n/2 log(2 pi) - n log s - ss / (2 s^2)]
                      - 1/2 log|S0| - 1/2 log|P| - 1/2 (r' W r - b' P^-1 b),   b = D' W r.

P has a diagonal unit block, so everything reduces to a Schur complement over the four
connections (cost linear in the number of cells). The gradient in ``s[c]`` is
``sum_cells(c) [-n/s + ss/s^3 + W/s (V + e^2)]`` with ``e`` the cell mean's residual from the
posterior mean of ``mu`` and ``V`` its posterior variance. Checked against closed forms and
PyMC's log density of the full model in ``tests/test_models_likelihood.py``.

Data (:func:`pack`): ``k`` residual sds (all positive, sampled as log), ``smap[c]``: the sd
of connection c; prior mean and sd of ``theta`` and cells ``(unit, connection, n, mean, ss)``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._native import pack_additive as pack
from ._priors import LOG_2PI, _prior

__all__ = ["logp_grad", "pack", "logp_cfunc", "expand_cfunc"]


@numba.njit(cache=True, fastmath=False)
def logp_grad(x, priors, smap, mu0, s0, cells, n_u):
    """Log posterior density of the log residual sd(s) ``x`` (exact) and its gradient."""
    k = x.shape[0]
    nc = smap.shape[0]
    v = np.exp(x)
    s = np.empty(nc)
    for c in range(nc):
        s[c] = v[int(smap[c])]
    a = np.empty(n_u)
    bu = np.zeros(n_u)
    bmat = np.zeros((n_u, nc))
    e = np.empty(nc)
    bc = np.zeros(nc)
    lp = 0.0
    for u in range(n_u):
        a[u] = 1.0 / (s0[u] * s0[u])
        lp -= math.log(s0[u])
    for c in range(nc):
        e[c] = 1.0 / (s0[n_u + c] * s0[n_u + c])
        lp -= math.log(s0[n_u + c])
    rwr = 0.0
    ncell = cells.shape[1]
    for i in range(ncell):
        u = int(cells[0, i])
        c = int(cells[1, i])
        n = cells[2, i]
        sc = s[c]
        w = n / (sc * sc)
        r = cells[3, i] - mu0[u] - mu0[n_u + c]
        lp += -0.5 * n * LOG_2PI - n * math.log(sc) - cells[4, i] / (2.0 * sc * sc)
        a[u] += w
        e[c] += w
        bmat[u, c] = w
        bu[u] += w * r
        bc[c] += w * r
        rwr += w * r * r
    # Schur complement of the unit block: sc_ = diag(e) - B' diag(1/a) B; rhs likewise.
    schur = np.zeros((nc, nc))
    rhs = bc.copy()
    logdet = 0.0
    for u in range(n_u):
        logdet += math.log(a[u])
        for c in range(nc):
            g = bmat[u, c] / a[u]
            rhs[c] -= g * bu[u]
            for d in range(nc):
                schur[c, d] -= g * bmat[u, d]
    for c in range(nc):
        schur[c, c] += e[c]
    # Cholesky schur = L L' and its inverse G (4 x 4, by hand: no LAPACK to compile).
    low = np.zeros((nc, nc))
    for c in range(nc):
        for d in range(c + 1):
            t = schur[c, d]
            for j in range(d):
                t -= low[c, j] * low[d, j]
            if c == d:
                if t <= 0.0:
                    return -np.inf, np.zeros(k)
                low[c, c] = math.sqrt(t)
            else:
                low[c, d] = t / low[d, d]
        logdet += 2.0 * math.log(low[c, c])
    linv = np.zeros((nc, nc))
    for c in range(nc):
        linv[c, c] = 1.0 / low[c, c]
        for d in range(c):
            t = 0.0
            for j in range(d, c):
                t -= low[c, j] * linv[j, d]
            linv[c, d] = t / low[c, c]
    ginv = np.zeros((nc, nc))  # G = L^-T L^-1
    for c in range(nc):
        for d in range(nc):
            t = 0.0
            for j in range(max(c, d), nc):
                t += linv[j, c] * linv[j, d]
            ginv[c, d] = t
    dc = np.zeros(nc)
    for c in range(nc):
        for d in range(nc):
            dc[c] += ginv[c, d] * rhs[d]
    du = np.empty(n_u)
    quad = rwr
    for c in range(nc):
        quad -= bc[c] * dc[c]
    for u in range(n_u):
        t = bu[u]
        for c in range(nc):
            t -= bmat[u, c] * dc[c]
        du[u] = t / a[u]
        quad -= bu[u] * du[u]
    lp += -0.5 * logdet - 0.5 * quad
    gs = np.zeros(nc)
    gv = np.empty(nc)
    for i in range(ncell):
        u = int(cells[0, i])
        c = int(cells[1, i])
        n = cells[2, i]
        sc = s[c]
        w = n / (sc * sc)
        res = cells[3, i] - mu0[u] - mu0[n_u + c] - du[u] - dc[c]
        # posterior variance of mu[u, c]: 1/a + (g - e_c)' G (g - e_c), g = B[u, :] / a
        for d in range(nc):
            gv[d] = bmat[u, d] / a[u] - (1.0 if d == c else 0.0)
        var = 1.0 / a[u]
        for d in range(nc):
            for j in range(nc):
                var += gv[d] * ginv[d, j] * gv[j]
        gs[c] += -n / sc + cells[4, i] / (sc * sc * sc) + w / sc * (var + res * res)
    grad = np.zeros(k)
    for c in range(nc):
        grad[int(smap[c])] += gs[c]
    for j in range(k):
        pl, pg = _prior(int(priors[j, 0]), priors[j, 2], priors[j, 3], priors[j, 4], v[j])
        lp += pl + x[j]  # prior and the log-Jacobian of v = exp(x)
        grad[j] = (grad[j] + pg) * v[j] + 1.0
    return lp, grad


@numba.njit(cache=True)
def _unpack(data_):
    k = int(data_[0])
    ncell = int(data_[1])
    n_u = int(data_[2])
    nc = int(data_[3])
    size = 4 + 5 * k + nc + 2 * (n_u + nc) + 5 * ncell
    data = numba.carray(data_, (size,))
    i = 4
    priors = data[i:i + 5 * k].reshape((k, 5))
    i += 5 * k
    smap = data[i:i + nc]
    i += nc
    mu0 = data[i:i + n_u + nc]
    i += n_u + nc
    s0 = data[i:i + n_u + nc]
    i += n_u + nc
    cells = data[i:i + 5 * ncell].reshape((5, ncell))
    return k, priors, smap, mu0, s0, cells, n_u


_dp = numba.types.CPointer(numba.types.double)
_LOGP_SIG = numba.types.int64(numba.types.uint64, _dp, _dp, _dp, _dp)
_EXPAND_SIG = numba.types.int64(numba.types.uint64, numba.types.uint64, _dp, _dp, _dp)


@numba.cfunc(_LOGP_SIG, cache=True)
def logp_cfunc(dim, x_, out_, logp_, data_):
    """C entry point for nutpie: logp and gradient; data is :func:`pack`'s array."""
    k, priors, smap, mu0, s0, cells, n_u = _unpack(data_)
    if dim != k:
        return -1
    x = numba.carray(x_, (k,))
    out = numba.carray(out_, (k,))
    lp, g = logp_grad(x, priors, smap, mu0, s0, cells, n_u)
    logp_[0] = lp
    for j in range(k):
        if not np.isfinite(g[j]):
            return 3
        out[j] = g[j]
    if not np.isfinite(lp):
        return 4
    return 0


@numba.cfunc(_EXPAND_SIG, cache=True)
def expand_cfunc(dim, expanded, x_, out_, data_):
    """C entry point for nutpie: the residual sd(s), ``exp(x)``."""
    k = int(data_[0])
    if dim != k or expanded != k:
        return -1
    x = numba.carray(x_, (k,))
    out = numba.carray(out_, (k,))
    for j in range(k):
        out[j] = math.exp(x[j])
    return 0
