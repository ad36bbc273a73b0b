"""Pareto smoothed importance sampling (PSIS) for many observations at once, in numpy.

The same algorithm and constants as ``arviz_stats``' ``psislw`` (Vehtari, Simpson, Gelman, Yao
& Gabry 2024, arXiv:1507.02646): the largest ``M`` importance ratios of each observation
(``M = floor(3 sqrt(S / r_eff))`` when ``S r_eff > 225``, else ``floor(S / 5)``; ``S`` draws)
are replaced by the expected order statistics of a generalized Pareto distribution fitted to
them (Zhang & Stephens 2009, with a Normal(0.5) prior on the shape worth 10 observations),
capped at the largest raw ratio; ``khat`` is the fitted shape. ``arviz_stats`` loops over the
observations in Python; here every step is one array operation over all of them (the
Zhang-Stephens grid in row chunks, to bound memory), so a table of thousands of rows costs
a few array passes. Equal to ``arviz_stats`` to about 1e-13 (``tests/test_psis.py``: real
log-likelihoods of crossed and hierarchical fits, constant rows, small draw counts, r_eff).

Where ``arviz_stats`` raises because all of a row's tail ratios are equal, this leaves that
row's weights unsmoothed (normalised) with ``khat = nan``; with fewer than 5 tail draws it
raises ``ValueError`` as ``arviz_stats`` does.
"""

from __future__ import annotations

import numpy as np

__all__ = ["psislw", "tail_draws"]

#: Prior of the Zhang-Stephens grid (``prior_bs``) and weight of the shape prior (``prior_k``).
_PRIOR_BS = 3.0
_PRIOR_K = 10.0
#: Grid points x tail draws x rows held at once by the shape fit.
_CHUNK_ELEMENTS = 4_000_000


def tail_draws(n_draws: int, r_eff: float = 1.0) -> int:
    """Return the number of tail draws smoothed out of `n_draws` (relative efficiency `r_eff`)."""
    if n_draws * r_eff > 225:
        return int(np.floor(3 * (n_draws / r_eff) ** 0.5))
    return int(np.floor(n_draws / 5))


def _logsumexp(a: np.ndarray) -> np.ndarray:
    """``log(sum(exp(a)))`` over the last axis, shifted by the row maximum."""
    m = np.max(a, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = a - m
    np.exp(e, out=e)  # in place: one temporary of a's size, not two
    with np.errstate(divide="ignore"):
        return np.log(np.sum(e, axis=-1)) + m[..., 0]


def _gpdfit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shape and scale of a generalized Pareto fit to each row of `x` (rows sorted ascending).

    Zhang & Stephens' empirical Bayes estimate on a grid of ``30 + floor(sqrt(n))`` points,
    then the shape shrunk towards 0.5 (weight 10 observations). A row whose first quartile
    is not above its minimum gives ``(nan, nan)``; a row whose fit is nan, ``(inf, nan)``.
    """
    rows, n = x.shape
    m = 30 + int(n ** 0.5)
    xstar = x[:, int((n / 4 + 0.5) - 1)]
    bad = ~(xstar > x[:, 0])
    grid = 1 - np.sqrt(m / (np.arange(1, m + 1, dtype=float) - 0.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        b = grid[None, :] / (_PRIOR_BS * xstar[:, None]) + 1 / x[:, -1:]
        k = np.empty((rows, m))
        step = max(1, _CHUNK_ELEMENTS // (m * n))
        for lo in range(0, rows, step):
            sl = slice(lo, lo + step)
            t = -b[sl, :, None] * x[sl, None, :]
            k[sl] = np.mean(np.log1p(t, out=t), axis=-1)
        len_scale = n * (np.log(-b / k) - k - 1)
        w = np.exp(len_scale - _logsumexp(len_scale)[:, None])
        w = np.where(w >= 10 * np.finfo(float).eps, w, 0.0)
        w = w / w.sum(axis=1, keepdims=True)
        b_post = np.sum(b * w, axis=1)
        kappa = np.mean(np.log1p(-b_post[:, None] * x), axis=1)
        sigma = -kappa / b_post
    kappa = (n * kappa + _PRIOR_K * 0.5) / (n + _PRIOR_K)
    failed = np.isnan(kappa)
    kappa = np.where(failed, np.inf, kappa)
    sigma = np.where(failed, np.nan, sigma)
    return np.where(bad, np.nan, kappa), np.where(bad, np.nan, sigma)


def _gpinv(p: np.ndarray, kappa: np.ndarray, sigma: np.ndarray,
           mu: np.ndarray) -> np.ndarray:
    """Generalized Pareto quantiles at `p` for each row's ``(kappa, sigma, mu)``, (rows, p)."""
    kappa, sigma, mu = kappa[:, None], sigma[:, None], mu[:, None]
    lp = np.log1p(-p)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(kappa == 0, 1.0, kappa)
        q = np.where(kappa == 0, mu - sigma * lp, mu + sigma * np.expm1(-safe * lp) / safe)
    return np.where(sigma > 0, q, np.nan)


def _top_order(a: np.ndarray, k: int) -> np.ndarray:
    """Return the indices of the `k` largest values of each row, in ascending order of value.

    What ``np.argsort(a, axis=1)[:, -k:]`` gives, from a partition and a sort of `k` values
    per row; rows with tied values among them (or tied with the next value) are sorted in full,
    so that tied draws are ordered exactly as a full ``argsort`` orders them.
    """
    n = a.shape[1]
    if k >= n:
        return np.argsort(a, axis=1)[:, n - k:]
    part = np.argpartition(a, n - k - 1, axis=1)[:, n - k - 1:]
    vals = np.take_along_axis(a, part, axis=1)
    inner = np.argsort(vals[:, 1:], axis=1)
    order = np.take_along_axis(part[:, 1:], inner, axis=1)
    svals = np.take_along_axis(vals[:, 1:], inner, axis=1)
    # part[:, 0] is the (k+1)-th largest value: a tie with it makes the choice ambiguous too
    ties = (np.diff(svals, axis=1) == 0).any(axis=1) | (svals[:, 0] == vals[:, 0])
    ties |= ~np.isfinite(svals).all(axis=1)
    if ties.any():
        order[ties] = np.argsort(a[ties], axis=1)[:, n - k:]
    return order


def psislw(log_lik: np.ndarray, r_eff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """PSIS log weights of leave-one-out importance sampling, for every row at once.

    Parameters
    ----------
    log_lik : ndarray, shape (..., draws)
        Log-likelihood of each observation (leading axes) at each posterior draw.
    r_eff : float, default 1
        Relative efficiency of the draws (sets the number of tail draws).

    Returns
    -------
    log_weights : ndarray, shape (..., draws)
        Smoothed log weights, normalised over draws (``logsumexp = 0``).
    khat : ndarray, shape (...)
        Pareto shape of each observation's ratios (nan where not fitted).
    """
    log_lik = np.asarray(log_lik, dtype=float)
    shape = log_lik.shape
    n = shape[-1]
    lw = -log_lik.reshape(-1, n)
    m = tail_draws(n, r_eff)
    if m < 5:
        raise ValueError(f"psislw: {n} draws give {m} tail draws (r_eff {r_eff}); "
                         "at least 5 are needed")
    lw -= np.max(lw, axis=1, keepdims=True)  # (lw is a new array: in place)
    order = _top_order(lw, m + 1)
    tail_idx = order[:, 1:]
    tail = np.take_along_axis(lw, tail_idx, axis=1)
    cutoff = np.take_along_axis(lw, order[:, :1], axis=1)[:, 0]
    max_tail, min_tail = tail.max(axis=1), tail.min(axis=1)
    flat = ~(np.abs(max_tail - min_tail) >= np.finfo(float).tiny)
    exp_cut = np.exp(cutoff)
    khat, sigma = _gpdfit(np.exp(tail) - exp_cut[:, None])
    khat = np.where(flat, np.nan, khat)
    smooth = np.isfinite(khat)
    if smooth.any():
        p = np.arange(0.5, m) / m
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.log(_gpinv(p, khat[smooth], sigma[smooth], exp_cut[smooth]))
        cap = max_tail[smooth][:, None]
        new = np.where(new > cap, cap, new)
        sub = lw[smooth]
        np.put_along_axis(sub, tail_idx[smooth], new, axis=1)
        lw[smooth] = sub
    lw -= _logsumexp(lw)[:, None]
    return lw.reshape(shape), khat.reshape(shape[:-1])
