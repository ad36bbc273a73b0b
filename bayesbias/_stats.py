"""Light, exact equivalents of the few ``scipy.stats`` / ``arviz_stats`` functions the report uses.

Importing ``scipy.stats`` and ``arviz_stats`` costs about 1.1 s and 1.9 s of CPU; the report
needs only ranks, normal quantiles, intervals of draws, E-BFMI and a quantile's MCSE. These
functions give the same numbers (equal to 1e-12 or exactly, ``tests/test_light_stats.py``)
with numpy and ``scipy.special`` only:

- :func:`rankdata`: ``scipy.stats.rankdata`` (ties ``"average"``; NaN in a slice gives NaN);
- :func:`normal_ppf`: ``scipy.stats.norm.ppf`` (it is ``scipy.special.ndtri``);
- :func:`next_fast_len`: ``scipy.fft.next_fast_len`` (smallest 11-smooth length);
- :func:`hdi` (:func:`hdi_sorted` on sorted draws), :func:`eti`: ``arviz_stats``' ``hdi``
  (method ``"nearest"``) and ``eti``;
- :func:`bfmi`: ``arviz_stats``' E-BFMI per chain;
- :func:`mcse_quantile`: ``arviz_stats``' quantile MCSE.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rankdata", "normal_ppf", "next_fast_len", "hdi", "hdi_sorted", "eti", "bfmi",
           "mcse_quantile", "sorted_counts"]


def rankdata(a, axis: int = -1) -> np.ndarray:
    """Ranks 1..n along `axis`, ties get their average rank (float64); NaN slices give NaN."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    shape = a.shape
    x = a.reshape(int(np.prod(shape[:-1])), shape[-1])
    n = x.shape[1]
    out = np.empty(x.shape, dtype=np.float64)
    if n:
        order = np.argsort(x, axis=1)  # any order within ties gives the same average ranks
        np.put_along_axis(out, order, sorted_ranks(np.take_along_axis(x, order, axis=1)),
                          axis=1)
        if x.dtype.kind in "fc":
            out[np.isnan(x).any(axis=1)] = np.nan
    return np.moveaxis(out.reshape(shape), -1, axis)


def tied_ranks(s: np.ndarray, eq: np.ndarray | None = None) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of tied values in the sorted rows of `s` (m, n) and their average ranks.

    Returns ``(rows, cols, ranks)``: every other position's rank is its column + 1. Cost
    grows with the ties, beyond one comparison of neighbours (into `eq`, shape (m, n - 1)
    bool, if given).
    """
    eq = np.equal(s[:, 1:], s[:, :-1], out=eq)  # position c ties with c + 1
    width = eq.shape[1]
    tie = np.flatnonzero(eq)
    row, col = np.divmod(tie, max(width, 1))
    # runs of ties: consecutive positions of one row, columns first .. last + 1
    new = np.ones(tie.size, dtype=bool)
    new[1:] = (tie[1:] != tie[:-1] + 1) | (row[1:] != row[:-1])
    start = np.flatnonzero(new)
    rows, first = row[start], col[start]
    last = col[np.append(start[1:], tie.size) - 1] if tie.size else col
    size = last - first + 2
    rank = 0.5 * (first + last + 3)  # mean of the 1-based ranks first + 1 .. last + 2
    start = np.cumsum(size) - size
    cols = np.repeat(first, size) + (np.arange(int(size.sum())) - np.repeat(start, size))
    return np.repeat(rows, size), cols, np.repeat(rank, size)


def sorted_counts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort `key` in place; return ``np.unique(key, return_counts=True)``.

    Without np.unique's copy of the key and its temporaries (700 MB for a key of 10M rows).
    """
    key.sort()
    edge = np.empty(key.size, dtype=bool)
    edge[:1] = True
    np.not_equal(key[1:], key[:-1], out=edge[1:])
    start = np.flatnonzero(edge)
    del edge
    return key[start], np.diff(start, append=key.size)


def sorted_ranks(s: np.ndarray) -> np.ndarray:
    """Average ranks (1..n, float64) of the positions of each sorted row of `s` (m, n)."""
    out = np.broadcast_to(np.arange(1, s.shape[1] + 1, dtype=np.float64), s.shape).copy()
    rows, cols, ranks = tied_ranks(s)
    out[rows, cols] = ranks
    return out


def normal_ppf(q):
    """Return the standard normal quantile of `q` (``scipy.special.ndtri``)."""
    from scipy.special import ndtri

    return ndtri(q)


def next_fast_len(target: int) -> int:
    """Smallest length >= `target` with no prime factor above 11 (``scipy.fft.next_fast_len``)."""
    n = max(int(target), 1)
    while True:
        m = n
        for p in (2, 3, 5, 7, 11):
            while m % p == 0:
                m //= p
        if m == 1:
            return n
        n += 1


def hdi(draws, prob: float) -> np.ndarray:
    """Highest-density interval over the last axis, shape ``(..., 2)``.

    ``arviz_stats``' method ``"nearest"``: among the intervals spanning
    ``min(floor(prob * n), n - 1) + 1`` consecutive sorted draws, the first narrowest.
    """
    if not 1 >= prob > 0:
        raise ValueError("The value of `prob` must be in the (0, 1] interval.")
    return hdi_sorted(np.sort(np.asarray(draws), axis=-1), prob)


def hdi_sorted(s: np.ndarray, prob: float) -> np.ndarray:
    """:func:`hdi` of draws `s` already sorted over the last axis (one sort, many `prob`)."""
    if not 1 >= prob > 0:
        raise ValueError("The value of `prob` must be in the (0, 1] interval.")
    n = s.shape[-1]
    k = min(int(np.floor(prob * n)), n - 1)
    if n - k <= 0:
        raise ValueError("Too few elements for interval calculation. ")
    width = np.subtract(s[..., k:], s[..., :n - k], dtype=np.float64)
    lo = np.argmin(width, axis=-1)[..., None]
    return np.concatenate([np.take_along_axis(s, lo, -1), np.take_along_axis(s, lo + k, -1)],
                          axis=-1)


def eti(draws, prob: float) -> np.ndarray:
    """Equal-tailed interval over the last axis (linear quantiles), shape ``(..., 2)``."""
    edge = (1 - prob) / 2
    return np.moveaxis(np.quantile(draws, [edge, 1 - edge], axis=-1), 0, -1)


def bfmi(energy) -> np.ndarray:
    """E-BFMI of each chain of `energy` shaped (chain, draw)."""
    e = np.atleast_2d(np.asarray(energy))
    return np.square(np.diff(e, axis=1)).mean(axis=1) / np.var(e, axis=1, ddof=1)


def mcse_quantile(draws, prob: float) -> float:
    """Monte Carlo standard error of the `prob` quantile of `draws` shaped (chain, draw).

    The ESS of the indicator ``draw <= quantile`` (split chains) and the sorted draws at
    the beta quantiles 0.1586553 and 0.8413447 of that ESS, halved (as ``arviz_stats``).
    NaN with NaN draws or fewer than 4 draws.
    """
    from scipy.special import betaincinv

    d = np.asarray(draws, dtype=float)
    if d.ndim != 2 or d.shape[1] < 4 or np.isnan(d).any():
        return np.nan
    ind = (d <= np.quantile(d, prob)).astype(float)
    ess = _ess(_split_chains(ind[None]))[0]
    with np.errstate(invalid="ignore"):
        ppf = betaincinv(ess * prob + 1, ess * (1 - prob) + 1,
                         np.array([0.1586553, 0.8413447]))
    s = np.sort(d.ravel())
    size = s.size
    ppf_size = ppf * size - 1
    th1 = s[int(np.floor(np.nanmax((ppf_size[0], 0))))]
    th2 = s[int(np.ceil(np.nanmin((ppf_size[1], size - 1))))]
    return float((th2 - th1) / 2)


# -- effective sample size (split chains, Geyer), shared with models._rank_diagnostics --


def _split_chains(x: np.ndarray) -> np.ndarray:
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, -half:]], axis=1)


def _ess(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    n_par, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    m = next_fast_len(2 * n_draw)
    centred = x - x.mean(axis=2, keepdims=True)
    spec = np.fft.rfft(centred, n=m, axis=2)
    spec *= np.conjugate(spec)
    acov = np.fft.irfft(spec, n=m, axis=2)[:, :, :n_draw]
    acov /= n_draw
    mean_var = np.mean(acov[:, :, 0], axis=1) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=2), axis=1, ddof=1)
    flat = x.reshape(n_par, -1)
    constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution
    rho = 1.0 - (mean_var[:, None] - np.mean(acov, axis=1)) / var_plus[:, None]
    out = size / _geyer_tau(rho, size)
    out[constant] = size
    return out


def _geyer_tau(rho: np.ndarray, size: int, n_draw: int | None = None) -> np.ndarray:
    """Integrated autocorrelation time of each row of `rho` (n, lag): Geyer's sequences.

    Geyer's initial positive and initial monotone sequences as ``arviz_stats`` runs them,
    one lag at a time, here for every parameter at once: the sums of consecutive pairs of
    autocorrelations are kept up to the first that is not positive, and replaced by their
    running minimum. `rho` may hold only the first lags of series of `n_draw` draws (by
    default all of them): the numbers are right for the rows whose first non-positive pair,
    or last pair, is among them.
    """
    n_par = rho.shape[0]
    n_draw = rho.shape[1] if n_draw is None else n_draw
    k_max = max((n_draw - 3) // 2, 0)  # pairs the lag loop reaches: 2k - 1 < n_draw - 3
    rho = rho.copy()
    rho[:, 0] = 1.0
    pairs = rho[:, 0: 2 * k_max + 1: 2] + rho[:, 1: 2 * k_max + 2: 2]  # (n, k_max + 1)
    positive = pairs > 0
    # K: pairs kept, the first non-positive pair's index (all of them if none)
    stop = np.where(positive.all(axis=1), k_max, np.argmin(positive, axis=1))
    keep = np.arange(pairs.shape[1]) < stop[:, None]
    monotone = np.minimum.accumulate(np.where(keep, pairs, np.inf), axis=1)
    total = np.where(keep, monotone, 0.0).sum(axis=1)
    rows = np.arange(n_par)
    rho_even = rho[rows, 2 * stop]
    stored = (stop >= 1) & (pairs[rows, stop] >= 0)
    last = np.where((rho_even > 0) | stored, rho_even, 0.0)
    tau = -1.0 + 2.0 * total + last
    tau = np.maximum(tau, 1 / np.log10(size))
    return np.where(np.isnan(rho[:, 1]), np.nan, tau)
