"""Numba log-densities of the priors a spec may use (shared by the cell-marginal kernels)."""

from __future__ import annotations

import math

import numba

__all__ = ["CODES", "LOG_2PI"]

from ._native import CODES  # noqa: F401 (re-exported)

LOG_2PI = math.log(2.0 * math.pi)


@numba.njit(cache=True, fastmath=False)
def _prior(code, p1, p2, p3, v):
    """Log-density of one prior at v and its derivative in v."""
    if code == 0:  # Normal(mu, sigma)
        z = (v - p1) / p2
        return -0.5 * LOG_2PI - math.log(p2) - 0.5 * z * z, -z / p2
    if code == 1:  # StudentT(nu, mu, sigma)
        z = (v - p2) / p3
        c = (math.lgamma(0.5 * (p1 + 1.0)) - math.lgamma(0.5 * p1)
             - 0.5 * math.log(p1 * math.pi) - math.log(p3))
        return (c - 0.5 * (p1 + 1.0) * math.log1p(z * z / p1),
                -(p1 + 1.0) * z / (p3 * (p1 + z * z)))
    if code == 2:  # Exponential(lam)
        return math.log(p1) - p1 * v, -p1
    if code == 3:  # HalfNormal(sigma)
        z = v / p1
        return math.log(2.0) - 0.5 * LOG_2PI - math.log(p1) - 0.5 * z * z, -z / p1
    if code == 4:  # HalfCauchy(beta)
        return (math.log(2.0) - math.log(math.pi) - math.log(p1) - math.log1p((v / p1) ** 2),
                -2.0 * v / (p1 * p1 + v * v))
    if code == 5:  # HalfStudentT(nu, sigma)
        z = v / p2
        c = (math.log(2.0) + math.lgamma(0.5 * (p1 + 1.0)) - math.lgamma(0.5 * p1)
             - 0.5 * math.log(p1 * math.pi) - math.log(p2))
        return (c - 0.5 * (p1 + 1.0) * math.log1p(z * z / p1),
                -(p1 + 1.0) * z / (p2 * (p1 + z * z)))
    if code == 6:  # LogNormal(mu, sigma)
        lv = math.log(v)
        z = (lv - p1) / p2
        return -lv - 0.5 * LOG_2PI - math.log(p2) - 0.5 * z * z, -1.0 / v - z / (p2 * v)
    # Gamma(alpha, beta), beta a rate
    return (p1 * math.log(p2) - math.lgamma(p1) + (p1 - 1.0) * math.log(v) - p2 * v,
            (p1 - 1.0) / v - p2)
