"""Resampling shared by the comparators and classifier metrics: one home for the bootstraps.

Random subsets without replacement (permutation tests, the resampled-neutral null),
bootstrap indices and means. The percentile interval of the draws is
:func:`bayesbias.intervals.percentile_interval` (importable from here too).
Every function takes a :class:`numpy.random.Generator` (or a seed) so results are seeded.
"""

from __future__ import annotations

import numpy as np

from .errors import InputDataError
from .intervals import percentile_interval

__all__ = ["ordered_subsets", "bootstrap_indices", "bootstrap_weights", "bootstrap_means",
           "percentile_interval"]


def ordered_subsets(rng, n_rows: int, population, k):
    """Return indices (n_rows, k), each row a uniformly random ordered draw without replacement.

    Row i is the first `k` entries of a random permutation of ``range(population)``; the set
    of a row is therefore a uniformly random k-subset and its order uniformly random too.
    With sequences `population` and `k`, a list of such arrays, one per (population, k),
    drawn row by row in turn (row i of every array before row i + 1 of any).
    """
    single = np.ndim(population) == 0
    pops, ks = np.atleast_1d(population).astype(int), np.atleast_1d(k).astype(int)
    for p_, k_ in zip(pops, ks, strict=True):
        if k_ > p_:
            raise InputDataError(f"cannot draw {k_} distinct items from {p_}")
    rng = np.random.default_rng(rng)
    u = rng.random((n_rows, int(pops.sum())))
    edges = np.r_[0, np.cumsum(pops)]
    out = [np.argsort(u[:, lo:hi], axis=1)[:, :k_]
           for lo, hi, k_ in zip(edges[:-1], edges[1:], ks, strict=True)]
    return out[0] if single else out


def bootstrap_indices(rng, n: int, size=None) -> np.ndarray:
    """Return bootstrap indices of n items, shape ``size + (n,)`` (with replacement)."""
    if n < 1:
        raise InputDataError("cannot resample an empty set")
    rng = np.random.default_rng(rng)
    shape = (n,) if size is None else tuple(np.atleast_1d(size)) + (n,)
    return rng.integers(0, n, shape)


def bootstrap_weights(rng, n: int, size: int) -> np.ndarray:
    """Return resampling weights (size, n): counts of a bootstrap resample over n."""
    rng = np.random.default_rng(rng)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=size) / n


def bootstrap_means(x, n_boot: int, rng, max_cells: int = 2_000_000) -> np.ndarray:
    """Means of `n_boot` resamples of `x` with replacement (0/1 data by a binomial draw)."""
    x = np.asarray(x, dtype=np.float64)
    rng = np.random.default_rng(rng)
    if np.isin(x, (0.0, 1.0)).all():
        return rng.binomial(len(x), x.mean(), n_boot) / len(x)
    out = np.empty(n_boot)
    step = max(1, max_cells // max(len(x), 1))
    for i in range(0, n_boot, step):
        k = min(step, n_boot - i)
        out[i:i + k] = x[bootstrap_indices(rng, len(x), k)].mean(axis=1)
    return out
