"""Intervals, in one place: posterior (ArviZ HDI / ETI), percentile and normal.

Every interval of the package is one of these, named by its ``ci_kind`` code
(:data:`bayesbias.validation.CI_KINDS`) and computed over the last axis (NumPy layer):

- :func:`posterior_interval`: ArviZ's highest-density (``hdi``) or equal-tailed (``eti``)
  interval of posterior draws (the same numbers, from :mod:`bayesbias._stats`);
- :func:`percentile_interval`: the equal-tailed percentile interval of bootstrap or
  simulation draws (``bootstrap``), NaN draws left out;
- :func:`normal_interval`: ``estimate -+ z se`` (``delong``, the random-effects ``t``...).

:func:`tail_probabilities` and :func:`normal_quantile` are the two numbers they share.
"""

from __future__ import annotations

import numpy as np

from ._stats import eti, hdi, normal_ppf
from .validation import validate_ci_kind

__all__ = ["tail_probabilities", "normal_quantile", "posterior_interval",
           "percentile_interval", "normal_interval"]


def tail_probabilities(ci_prob: float) -> tuple[float, float]:
    """Return ``((1 - ci_prob) / 2, (1 + ci_prob) / 2)``, an equal-tailed interval's quantiles."""
    return (1 - ci_prob) / 2, (1 + ci_prob) / 2


def normal_quantile(ci_prob: float) -> float:
    """Return z of a two-sided normal interval of probability `ci_prob` (1.96 for 0.95)."""
    return float(normal_ppf(tail_probabilities(ci_prob)[1]))


def posterior_interval(draws, ci_prob: float, ci_kind: str = "hdi") -> np.ndarray:
    """ArviZ's HDI or ETI of `draws` over the last axis; returns shape ``(..., 2)``."""
    fn = hdi if validate_ci_kind(ci_kind) == "hdi" else eti
    return np.asarray(fn(np.asarray(draws, dtype=float), ci_prob), dtype=float)


def percentile_interval(draws, ci_prob: float) -> tuple[float, float] | None:
    """Equal-tailed percentile interval of the finite `draws` (None when there are none)."""
    d = np.asarray(draws, dtype=np.float64)
    d = d[np.isfinite(d)]
    if not d.size:
        return None
    lo, hi = np.quantile(d, list(tail_probabilities(ci_prob)))
    return float(lo), float(hi)


def normal_interval(estimate, se, ci_prob: float):
    """``(estimate - z se, estimate + z se)`` with z of :func:`normal_quantile`."""
    z = normal_quantile(ci_prob)
    return estimate - z * se, estimate + z * se
