"""Rank-normalised r-hat and bulk/tail ESS of many parameters at once.

The same definitions (Vehtari et al. 2021) and the same arithmetic as ``arviz_stats``' array
functions, which compute one parameter at a time. Here every step takes all parameters in
one call, in cache-sized blocks of columns whose buffers are reused block after block:

- one sort of each split-chain row gives the ranks (r-hat, bulk ESS), the median and the
  tail quantiles; the sort is of 64-bit keys (the value's bits made order-preserving, its
  lowest bits replaced by its column), 3-4x as fast as ``np.argsort``, exact (a row left
  out of order by two values that differ only in those bits is sorted again by argsort);
- the normal scores are one vector put in place, transformed anew only at ties (a rejected
  transition repeats its draw); the folded draws (|draw - median|) are sorted the same way;
- the autocovariances are summed directly, a few lags a round, only until Geyer's initial
  positive sequence stops (after a few lags on well-mixed chains); a column whose sequence
  runs past :data:`DIRECT_LAGS` lags takes the FFT over all lags, as before.

Hand-written because a fit's diagnostics are on the report's critical path, and most for
the default (crossed) model, which has a parameter per attribute word. On the race list's
crossed fit, in one process after the fit (CPU seconds per ``fit.diagnostics()``, best of 5,
interleaved with the previous version, 2026-12-08; ``benchmarks/bench_fit_checks.py``):
380 parameters x 4 x 1000 draws 0.056-0.067 s against 0.155-0.161 s for the previous
version (FFTs of all lags, argsort gathers), x 4000 draws 0.21-0.23 s against 0.59-0.63 s
(three runs, load 1-2.6); in a fresh process (no
fit before: fresh temporaries cost page faults there) 0.08 s against 0.29 s. Chains that
mix badly cost no more than before (380 AR(1) columns, 4 x 1000 draws, one thread: 0.05 /
0.11 / 0.14 s against 0.14 s at autocorrelation 0 / 0.9 / 0.99). The numbers
are ``arviz_stats``' (equal to 1e-12, here 3e-15; ``tests/test_models_fit.py``); arrays this
does not cover (NaN, not float64, fewer than 2 chains or 4 draws) go to ``arviz_stats``
itself.
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
from ..parallel import MAX_THREADS, thread_map, usable_cores

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
    :data:`THREAD_ELEMENTS` elements): NumPy's sorts release the GIL, and the numbers are
    the same. Each thread runs its blocks in one set of buffers (:class:`_Work`).
    """
    n = ary.shape[2]
    if threads is None:
        threads = 1 if ary.size < THREAD_ELEMENTS else min(usable_cores(), MAX_THREADS)
    width = max(1, BLOCK_ELEMENTS // max(ary.shape[0] * ary.shape[1], 1))
    blocks = max(1, -(-n // width))
    bounds = np.linspace(0, n, blocks + 1).astype(int)
    groups = [g for g in np.array_split(np.arange(blocks), max(1, int(threads))) if g.size]

    def run(group):
        size = ary.shape[0] * ary.shape[1] * int(np.max(np.diff(bounds)[group]))
        work = _Work(size)
        return [_rank_diagnostics(ary[..., bounds[b]:bounds[b + 1]], prob, work)
                for b in group]

    parts = [p for done in thread_map(run, groups, threads=len(groups)) for p in done]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


class _Work:
    """Buffers of one block's steps, reused block after block.

    Fresh temporaries cost page faults: the 380 x 4 x 1000 draws of a crossed fit in blocks
    of 64 columns took 29,000 of them and 45 ms of system time in 135 ms (a 2 MB array
    freed goes back to the system, and the next block's comes back page by page).
    """

    def __init__(self, size: int):
        self.f = [np.empty(size) for _ in range(4)]
        self.i = [np.empty(size, dtype=np.intp) for _ in range(3)]
        self.key = np.empty(size, dtype=np.uint64)
        self.eq = np.empty(size, dtype=bool)

    def float(self, k: int, shape: tuple[int, ...]) -> np.ndarray:
        """Float buffer `k` as an array of `shape` (its first elements)."""
        return self.f[k][:int(np.prod(shape))].reshape(shape)

    def int(self, k: int, shape: tuple[int, ...]) -> np.ndarray:
        """Index buffer `k` as an array of `shape` (its first elements)."""
        return self.i[k][:int(np.prod(shape))].reshape(shape)


def _rank_diagnostics(ary: np.ndarray, prob: float,
                      work: _Work | None = None) -> dict[str, np.ndarray]:
    c, d, n = ary.shape
    half = d // 2
    if work is None:
        work = _Work(2 * c * half * n)
    shape = (n, 2 * c, half)
    split = work.float(0, shape)  # the split chains, each column's draws contiguous
    split[:, :c] = np.moveaxis(ary[:, :half], 2, 0)
    split[:, c:] = np.moveaxis(ary[:, d - half:], 2, 0)
    flat = split.reshape(n, -1)
    m = flat.shape[1]
    # positions in the flattened block: one gather / scatter for all rows (take_along_axis
    # and put_along_axis build broadcast index arrays: 4x as long)
    base = np.arange(0, n * m, m)[:, None]
    pos, ranked = _sorted_rows(flat, base, work, 0, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = _z_scale(ranked, pos, work, work.float(2, shape))  # for r-hat and bulk ESS
        bulk = _rhat(z, work.float(3, shape))
        smallest, largest = ranked[:, 0].copy(), ranked[:, -1].copy()
        # the median of the split draws, as np.median: the mean of the two middle values
        median = ranked[:, (m - 1) // 2] if m % 2 else \
            np.mean(ranked[:, m // 2 - 1: m // 2 + 1], axis=1)
        low, high = sorted((prob, 1 - prob))
        # the split chains hold every draw when the draws are even: quantiles of sorted data
        if d % 2 == 0:
            qs = [sorted_quantile(ranked, p) for p in (low, high)]
        else:
            every = np.moveaxis(ary, 2, 0).reshape(n, -1)
            qs = [np.quantile(every, p, axis=1) for p in (low, high)]
        # |draw - median|, ordered by the sort of the folded values
        dev = np.subtract(ranked, median[:, None], out=work.float(3, (n, m)))
        np.abs(dev, out=dev)
        sub, folded = _sorted_rows(dev, base, work, 1, 1, nonnegative=True)  # (ranked:
        # no longer needed)
        where = np.take(pos, sub, out=work.int(2, (n, m)), mode="clip")  # (no bounds check)
        del sub, pos
        tail = _rhat(_z_scale(folded, where, work, work.float(3, shape)), work.float(1, shape))
        rhat = np.where(tail > bulk, tail, bulk)
        # constant normal scores: all draws tied (distinct ranks' scores differ by far more
        # than the resolution _ess tests)
        ess_bulk = _ess_direct(z, work.float(1, shape), smallest == largest)
        # the split chains' indicators: those of the draws' (the middle draw dropped)
        ess = []
        for q in qs:
            ind = np.less_equal(split, q[:, None, None], out=work.float(2, shape))
            ess.append(_ess_direct(ind, work.float(1, shape), (q >= largest) | (q < smallest)))
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


_SIGN = np.uint64(1 << 63)


def _sorted_rows(v: np.ndarray, base: np.ndarray, work: _Work, pos_k: int, out_k: int,
                 nonnegative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row of `v` (n, m), C-contiguous float64 without NaN.

    Returns the flattened positions of each row's values in order (``np.argsort(v, axis=1)
    + base``, up to the order of equal values; in index buffer `pos_k`) and the sorted rows
    (float buffer `out_k`). One sort of 64-bit keys: each value's bits made
    order-preserving (a negative's flipped, a positive's sign bit set; `nonnegative`: the
    bits of values >= +0.0 are that already), the lowest of them replaced by its column
    (as few as the columns need). NumPy's argsort of float64 rows took 3 to 4 times as long as
    its sort of these keys. Two values that differ only in those low bits may come out of
    order: a row whose sorted values are not non-decreasing is sorted again by np.argsort.
    """
    n, m = v.shape
    bits = max(int(m - 1).bit_length(), 1)
    low = np.uint64((1 << bits) - 1)
    u = v.view(np.uint64)
    key = work.key[:v.size].reshape(n, m)
    if nonnegative:
        np.bitwise_and(u, ~low, out=key)
    else:
        np.right_shift(v.view(np.int64), 63, out=key.view(np.int64))  # all bits set for a
        key |= _SIGN  # negative value (the sign bit, shifted arithmetically)
        key ^= u
        key &= ~low
    key |= np.arange(m, dtype=np.uint64)
    key.sort(axis=1)
    pos = np.bitwise_and(key, low, out=work.int(pos_k, (n, m)), casting="unsafe")
    pos += base
    out = np.take(v, pos, out=work.float(out_k, (n, m)), mode="clip")  # (no bounds check)
    unsorted = np.less(out[:, 1:], out[:, :-1], out=work.eq[:n * (m - 1)].reshape(n, m - 1))
    for r in np.flatnonzero(unsorted.any(axis=1)):
        order = np.argsort(v[r])
        pos[r] = order + base[r]
        out[r] = v[r, order]
    return pos, out


def _z_scale(ranked: np.ndarray, pos: np.ndarray, work: _Work,
             out: np.ndarray) -> np.ndarray:
    """Put the normal scores of the ranks of each row of `ranked` (n, m) in `out`; return it.

    `ranked` holds each row's values sorted, `pos` their positions in the flattened rows
    (and in `out`). The ranks are 1..m but at ties (repeated draws: a rejected transition
    repeats them), so the m normal scores are computed once and put in place for every
    row, then the tied positions' average ranks alone are transformed
    (``scipy.stats.rankdata``'s ranks).
    """
    m = ranked.shape[1]
    scale = m - 2 * _C + 1
    # np.put repeats the m scores over the rows' positions
    np.put(out, pos, normal_ppf((np.arange(1, m + 1) - _C) / scale))
    eq = work.eq[:ranked.shape[0] * (m - 1)].reshape(ranked.shape[0], m - 1)
    rows, cols, ranks = tied_ranks(ranked, eq)
    if rows.size:
        out.reshape(-1)[pos[rows, cols]] = normal_ppf((ranks - _C) / scale)
    return out


#: Lags of the autocovariance summed directly per round (:func:`_ess_direct`).
LAG_ROUND = 8
#: Lags summed directly at most; a column whose Geyer sequence runs on takes the FFT.
DIRECT_LAGS = 32


def _ess_direct(x: np.ndarray, buf: np.ndarray | None = None,
                constant: np.ndarray | None = None) -> np.ndarray:
    """``_ess`` of each row of `x` (n, chain, draw) float64, the first lags summed directly.

    Geyer's initial positive sequence stops at the first pair of autocorrelations whose sum
    is not positive: after a few lags on a well-mixed chain. So the autocovariance's lags
    are summed directly, :data:`LAG_ROUND` at a time, for the rows whose sequence has not
    stopped; a row still going after :data:`DIRECT_LAGS` lags takes ``_ess`` (the FFT).
    The same definition; sums in another order (equal to 1e-13 relative or so). `buf`
    (x's shape) takes the centred draws; `constant` flags the rows whose draws are all
    equal, if known (else as ``_ess``: max - min below the float resolution).
    """
    n_par, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    k_max = max((n_draw - 3) // 2, 0)
    lags = min(2 * k_max + 2, DIRECT_LAGS)  # rho[2 k_max + 1]: the last lag Geyer's reads
    if constant is None:
        flat = x.reshape(n_par, -1)
        constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution
    means = x.mean(axis=2)
    centred = np.subtract(x, means[..., None], out=buf)
    mean_var = np.vecdot(centred, centred)
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
        first = max(lo, 1)
        acov = np.empty((hi - first, active.size, n_chain))  # this round's lags
        for t in range(first, hi):
            np.vecdot(part[:, :, t:], part[:, :, :n_draw - t], out=acov[t - first])
        acov /= n_draw
        rho[active, first:hi] = (1.0 - (mean_var[active] - np.mean(acov, axis=2))
                                 / var_plus[active]).T
        r = rho[active, :hi]
        r[:, 0] = 1.0
        pairs = r[:, 0:hi:2] + r[:, 1:hi:2]
        # stopped: a pair not positive (NaN too, as Geyer's loop reads it), or all pairs read
        done = (~(pairs > 0)).any(axis=1) if hi < 2 * k_max + 2 else \
            np.ones(active.size, dtype=bool)
        if done.any():
            out[active[done]] = size / _geyer_tau(r[done], size, n_draw)
        active = active[~done]
        lo = hi
    if active.size:
        out[active] = _ess(x[active])
    out[constant] = size
    return out


def _rhat(x: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Split r-hat of each column of `x` (n, chain, draw); `buf` (x's shape) is scratch."""
    n = x.shape[2]
    means = np.mean(x, axis=2)
    between = n * np.var(means, axis=1, ddof=1)
    within = np.mean(_var_draws(x, means, buf), axis=1)
    return np.sqrt((between / within + n - 1) / n)


def _var_draws(x: np.ndarray, means: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """``np.var(x, axis=2, ddof=1)`` given ``np.mean(x, axis=2)``, its very arithmetic.

    The deviations go to `buf` (x's shape) instead of a fresh temporary.
    """
    dev = np.subtract(x, means[..., None], out=buf)
    np.multiply(dev, dev, out=dev)
    out = np.add.reduce(dev, axis=2)
    out /= x.shape[2] - 1
    return out
