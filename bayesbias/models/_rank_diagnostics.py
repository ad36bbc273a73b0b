"""Rank-normalised r-hat and bulk/tail ESS of many parameters at once.

The same definitions (Vehtari et al. 2021) and the same arithmetic as ``arviz_stats``' array
functions, which compute one parameter at a time. Here every step takes all parameters in
one call: one sort of the split chains gives the ranks (for r-hat and bulk ESS), the median
and the tail quantiles; the normal scores are one vector put in place, transformed anew only
at ties (a rejected transition repeats its draw); the folded draws' ranks come from a linear
merge of the sorted draws; the autocovariance FFT and Geyer's sequences (pair sums and their
running minimum) are vectorised over parameters. Hand-written because a fit's diagnostics
are on the report's critical path, and most for the default (crossed) model, which has a
parameter per attribute word. On the default report's fits, in one process (best of 3,
2026-11-28): 396 parameters x 4 x 1000 draws 0.39 s against 0.53 s for the previous version
(per-parameter Geyer loops, ranks through argsort and accumulations), 380-406 x 4 x 4000
draws 2.1-2.2 s against 2.4-2.5 s (the FFT is most of it); ``arviz_stats`` takes about 3.4
times as long (``benchmarks/bench_diagnostics.py``). The numbers are ``arviz_stats``' (equal
to 1e-12; ``tests/test_models_fit.py``); arrays this does not cover (NaN, not float64, fewer
than 2 chains or 4 draws) go to ``arviz_stats`` itself.
"""

from __future__ import annotations

import numpy as np

from .._stats import (
    _ess,
    _geyer_tau,
    _split_chains,  # noqa: F401 (contrast_mixture imports it from here)
    normal_ppf,
    tied_ranks,
)
from ..parallel import thread_map

__all__ = ["covered", "rank_diagnostics", "sorted_quantile"]

_C = 3 / 8  # Blom's offset of the rank back-transform (as arviz_stats)


def covered(ary: np.ndarray) -> bool:
    """Whether :func:`rank_diagnostics` takes `ary` (chain, draw, n)."""
    return (ary.ndim == 3 and ary.shape[0] >= 2 and ary.shape[1] >= 4 and ary.shape[2] > 0
            and ary.dtype == np.float64 and not np.isnan(ary).any())


#: Elements (chains x draws x parameters) from which the columns are split over threads.
THREAD_ELEMENTS = 1_000_000


#: Elements (chains x draws x parameters) of one block of columns: each step's temporaries
#: stay in the processor's cache (a block of 32 columns at 4 x 2000 draws: 2 MB). The
#: whole array of the embedding-level fit of 6 x 2,352 rows (2,052 columns), one pass per
#: step through 130 MB temporaries, took 9.0 s on one core (under a profiler) against 2.7 s
#: in blocks, at a load of about 2; the numbers are the same (each column's own).
BLOCK_ELEMENTS = 256_000


def rank_diagnostics(ary: np.ndarray, prob: float,
                     threads: int | None = None) -> dict[str, np.ndarray]:
    """r-hat (rank), bulk ESS and tail ESS at `prob` of every column of `ary` (chain, draw, n).

    `ary` must be :func:`covered`. Each column's numbers are its own, so the columns go in
    blocks of :data:`BLOCK_ELEMENTS` (cache-sized) and a big array's blocks are split over
    threads (:func:`bayesbias.parallel.thread_map`; `threads`, or one per usable core from
    :data:`THREAD_ELEMENTS` elements): NumPy's sorts and FFTs release the GIL, and the
    numbers are the same (a 4000-draw crossed fit: 2.1 -> 1.0 s on 2 cores).
    """
    n = ary.shape[2]
    if threads is None and ary.size < THREAD_ELEMENTS:
        threads = 1
    width = max(1, BLOCK_ELEMENTS // max(ary.shape[0] * ary.shape[1], 1))
    blocks = max(1, -(-n // width))
    bounds = np.linspace(0, n, blocks + 1).astype(int)
    parts = thread_map(lambda lo, hi: _rank_diagnostics(ary[..., lo:hi], prob), bounds[:-1],
                       bounds[1:], threads=threads)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _rank_diagnostics(ary: np.ndarray, prob: float) -> dict[str, np.ndarray]:
    c, d, n = ary.shape
    half = d // 2
    split = np.empty((n, 2 * c, half))  # the split chains, each column's draws contiguous
    split[:, :c] = np.moveaxis(ary[:, :half], 2, 0)
    split[:, c:] = np.moveaxis(ary[:, d - half:], 2, 0)
    flat = split.reshape(n, -1)
    m = flat.shape[1]
    # positions in the flattened block: one gather / scatter for all rows (take_along_axis
    # and put_along_axis build broadcast index arrays: 4x as long)
    pos = np.argsort(flat, axis=1)
    pos += np.arange(0, n * m, m)[:, None]
    ranked = np.take(flat, pos)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = _z_scale(ranked, pos).reshape(split.shape)  # for r-hat and bulk ESS
        bulk = _rhat(z)
        # the median of the split draws, as np.median: the mean of the two middle values
        median = ranked[:, (m - 1) // 2] if m % 2 else \
            np.mean(ranked[:, m // 2 - 1: m // 2 + 1], axis=1)
        # |draw - median| in the order of the sorted draws falls, then rises: two runs,
        # which a stable (merge) sort orders in one linear pass
        dev = np.abs(ranked - median[:, None])
        sub = np.argsort(dev, axis=1, kind="stable")
        sub += np.arange(0, n * m, m)[:, None]
        tail = _rhat(_z_scale(np.take(dev, sub), np.take(pos, sub)).reshape(split.shape))
        del dev, sub
        rhat = np.where(tail > bulk, tail, bulk)
        ess_bulk = _ess_direct(z)
        del z
        low, high = sorted((prob, 1 - prob))
        # the split chains hold every draw when the draws are even: quantiles of sorted data
        if d % 2 == 0:
            qs = [sorted_quantile(ranked, p) for p in (low, high)]
        else:
            every = np.moveaxis(ary, 2, 0).reshape(n, -1)
            qs = [np.quantile(every, p, axis=1) for p in (low, high)]
        # the split chains' indicators: those of the draws' (the middle draw dropped)
        ess = [_ess_direct((split <= q[:, None, None]).astype(float)) for q in qs]
        ess_tail = np.where(ess[1] < ess[0], ess[1], ess[0])
    return {"rhat": rhat, "ess_bulk": ess_bulk, "ess_tail": ess_tail}


def sorted_quantile(s: np.ndarray, p: float) -> np.ndarray:
    """``np.quantile(s, p, axis=1)`` (method ``"linear"``) of rows `s` already sorted.

    NumPy's arithmetic step for step (its virtual index ``(m - 1) p``, and its ``_lerp``:
    from the lower neighbour below a weight of 0.5, from the upper one from 0.5), so the
    same numbers, without its partition of every row.
    """
    m = s.shape[1]
    v = (m - 1) * np.float64(p)
    if v >= m - 1:
        return s[:, -1].copy()
    if v < 0:
        return s[:, 0].copy()
    lo = np.floor(v)
    g = v - lo
    a, b = s[:, int(lo)], s[:, int(lo) + 1]
    d = b - a
    return b - d * (1 - g) if g >= 0.5 else a + d * g


def _z_scale(ranked: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Return the normal scores of the ranks of each row (n, m), flattened.

    `ranked` holds each row's values sorted, `pos` their positions in the flattened rows.
    The ranks are 1..m but at ties (repeated draws: a rejected transition repeats them),
    so the m normal scores are computed once and put in place for every row, then the
    tied positions' average ranks alone are transformed (``scipy.stats.rankdata``'s ranks).
    """
    m = ranked.shape[1]
    scale = m - 2 * _C + 1
    out = np.empty(ranked.size)
    # np.put repeats the m scores over the rows' positions
    np.put(out, pos, normal_ppf((np.arange(1, m + 1) - _C) / scale))
    rows, cols, ranks = tied_ranks(ranked)
    if rows.size:
        out[pos[rows, cols]] = normal_ppf((ranks - _C) / scale)
    return out


#: Lags of the autocovariance summed directly per round (:func:`_ess_direct`).
LAG_ROUND = 8
#: Lags summed directly at most; a column whose Geyer sequence runs on takes the FFT.
DIRECT_LAGS = 32


def _ess_direct(x: np.ndarray) -> np.ndarray:
    """``_ess`` of each row of `x` (n, chain, draw) float64, the first lags summed directly.

    Geyer's initial positive sequence stops at the first pair of autocorrelations whose sum
    is not positive: after a few lags on a well-mixed chain. So the autocovariance's lags
    are summed directly, :data:`LAG_ROUND` at a time, for the rows whose sequence has not
    stopped; a row still going after :data:`DIRECT_LAGS` lags takes ``_ess`` (the FFT).
    The same definition; sums in another order (equal to 1e-13 relative or so).
    """
    n_par, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    k_max = max((n_draw - 3) // 2, 0)
    lags = min(2 * k_max + 2, DIRECT_LAGS)  # rho[2 k_max + 1]: the last lag Geyer's reads
    flat = x.reshape(n_par, -1)
    constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution
    means = x.mean(axis=2)
    centred = x - means[..., None]
    mean_var = np.einsum("pcd,pcd->pc", centred, centred)
    mean_var /= n_draw
    mean_var = np.mean(mean_var, axis=1) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(means, axis=1, ddof=1)
    rho = np.zeros((n_par, lags))
    out = np.empty(n_par)
    active = np.arange(n_par)
    lo = 0
    while active.size and lo < lags:
        hi = min(lo + LAG_ROUND, lags)
        part = centred if active.size == n_par else centred[active]
        for t in range(max(lo, 1), hi):
            a = np.einsum("pcd,pcd->pc", part[:, :, t:], part[:, :, :n_draw - t])
            a /= n_draw
            rho[active, t] = 1.0 - (mean_var[active] - np.mean(a, axis=1)) / var_plus[active]
        r = rho[active, :hi]
        r[:, 0] = 1.0
        pairs = r[:, 0:hi:2] + r[:, 1:hi:2]
        done = (pairs <= 0).any(axis=1) if hi < 2 * k_max + 2 else \
            np.ones(active.size, dtype=bool)
        if done.any():
            out[active[done]] = size / _geyer_tau(r[done], size, n_draw)
        active = active[~done]
        lo = hi
    if active.size:
        out[active] = _ess(x[active])
    out[constant] = size
    return out


def _rhat(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    between = n * np.var(np.mean(x, axis=2), axis=1, ddof=1)
    within = np.mean(np.var(x, axis=2, ddof=1), axis=1)
    return np.sqrt((between / within + n - 1) / n)
