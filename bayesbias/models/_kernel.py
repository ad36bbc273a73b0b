"""Numba kernel: log-density and gradient of the cell-marginal Gaussian models.

Hand-written on purpose (issue 11, ``benchmarks/bench_report.py``): with the per-word means
integrated out, the models have at most a dozen parameters, and a cached function compiles
once per machine while a PyTensor/numba graph compiles again in every process and for every
table shape (10-30 s each). The sampler runs the same operations as C (:mod:`._native`, bit
for bit equal); this numba version is the fallback without a C compiler and the reference of
the tests. Checked against PyMC's own log density in ``tests/test_models_likelihood.py``.

Parameters are packed as ``x`` (unconstrained), one prior per entry:
``priors[j] = (code, positive, p1, p2, p3)``. The per-connection mean, between-unit sd and
residual sd are linear in the constrained values ``v``: ``M = A v + a0``, ``T = B v + b0``,
``S = C v`` (``maps = (A, B, C)``, ``offsets = (a0, b0)``). Cells are columns
``(connection, n, mean, ss)`` of ``cells``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._native import pack_cells as pack
from ._priors import CODES, LOG_2PI, _prior

__all__ = ["CODES", "logp_grad", "pack", "logp_cfunc", "expand_cfunc"]


@numba.njit(cache=True, fastmath=False)
def logp_grad(x, priors, maps, offsets, cells):
    """Log posterior density (up to nothing: exact) and its gradient at ``x``."""
    k = x.shape[0]
    v = np.empty(k)
    grad = np.zeros(k)
    lp = 0.0
    for j in range(k):
        if priors[j, 1] > 0.5:
            v[j] = math.exp(x[j])
        else:
            v[j] = x[j]
    nc = maps.shape[1]
    m = np.empty(nc)
    t = np.empty(nc)
    s = np.empty(nc)
    for c in range(nc):
        m[c] = offsets[0, c]
        t[c] = offsets[1, c]
        s[c] = 0.0
        for j in range(k):
            m[c] += maps[0, c, j] * v[j]
            t[c] += maps[1, c, j] * v[j]
            s[c] += maps[2, c, j] * v[j]
    gm = np.zeros(nc)
    gt = np.zeros(nc)
    gs = np.zeros(nc)
    for i in range(cells.shape[1]):
        c = int(cells[0, i])
        n = cells[1, i]
        ybar = cells[2, i]
        ss = cells[3, i]
        sc = s[c]
        tc = t[c]
        var = tc * tc + sc * sc / n
        r = ybar - m[c]
        lp += (-0.5 * n * LOG_2PI - (n - 1.0) * math.log(sc) - ss / (2.0 * sc * sc)
               - 0.5 * math.log(n) - 0.5 * math.log(var) - r * r / (2.0 * var))
        dv = -0.5 / var + 0.5 * r * r / (var * var)
        gm[c] += r / var
        gt[c] += dv * 2.0 * tc
        gs[c] += -(n - 1.0) / sc + ss / (sc * sc * sc) + dv * 2.0 * sc / n
    for j in range(k):
        gv = 0.0
        for c in range(nc):
            gv += maps[0, c, j] * gm[c] + maps[1, c, j] * gt[c] + maps[2, c, j] * gs[c]
        pl, pg = _prior(int(priors[j, 0]), priors[j, 2], priors[j, 3], priors[j, 4], v[j])
        lp += pl
        gv += pg
        if priors[j, 1] > 0.5:
            lp += x[j]  # log-Jacobian of v = exp(x)
            grad[j] = gv * v[j] + 1.0
        else:
            grad[j] = gv
    return lp, grad


@numba.njit(cache=True)
def _unpack(data_):
    k = int(data_[0])
    nc = int(data_[1])
    size = 2 + 5 * k + 12 * k + 8 + 4 * nc
    data = numba.carray(data_, (size,))
    i = 2
    priors = data[i:i + 5 * k].reshape((k, 5))
    i += 5 * k
    maps = data[i:i + 12 * k].reshape((3, 4, k))
    i += 12 * k
    offsets = data[i:i + 8].reshape((2, 4))
    i += 8
    cells = data[i:i + 4 * nc].reshape((4, nc))
    return k, priors, maps, offsets, cells


_dp = numba.types.CPointer(numba.types.double)
_LOGP_SIG = numba.types.int64(numba.types.uint64, _dp, _dp, _dp, _dp)
_EXPAND_SIG = numba.types.int64(numba.types.uint64, numba.types.uint64, _dp, _dp, _dp)


@numba.cfunc(_LOGP_SIG, cache=True)
def logp_cfunc(dim, x_, out_, logp_, data_):
    """C entry point for nutpie: logp and gradient; data is :func:`pack`'s array."""
    k, priors, maps, offsets, cells = _unpack(data_)
    if dim != k:
        return -1
    x = numba.carray(x_, (k,))
    out = numba.carray(out_, (k,))
    lp, g = logp_grad(x, priors, maps, offsets, cells)
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
    """C entry point for nutpie: the constrained parameter values."""
    k, priors, maps, offsets, cells = _unpack(data_)
    if dim != k or expanded != k:
        return -1
    x = numba.carray(x_, (k,))
    out = numba.carray(out_, (k,))
    for j in range(k):
        out[j] = math.exp(x[j]) if priors[j, 1] > 0.5 else x[j]
    return 0
