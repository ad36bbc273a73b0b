"""Relative Norm Distance (RND; Garg, Schiebinger, Jurafsky & Zou 2018, PNAS).

With the mean vectors x̄, ȳ of the two target sets, RND sums over the attribute words a
``||a - x̄|| - ||a - ȳ||``. Garg et al. use the Euclidean norm (``distance="euclidean"``);
``distance="cosine"`` replaces the norm by the cosine distance (a labelled variant, the
one WEFE also offers). Negative: the attributes sit nearer X than Y.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputDataError, InvalidArgumentError

__all__ = ["DISTANCES", "rnd", "rnd_per_attribute"]

#: Distances of RND: the paper's Euclidean norm, or the cosine distance (variant).
DISTANCES = ("euclidean", "cosine")


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def rnd_per_attribute(x, y, a, distance: str = "euclidean") -> np.ndarray:
    """Per attribute word: distance to the mean of X minus distance to the mean of Y.

    Parameters
    ----------
    x, y, a : array_like, shape (..., n_X, dim), (..., n_Y, dim), (..., n_A, dim)
        Vectors of the two target sets and of the attribute words.
    distance : {"euclidean", "cosine"}

    Returns
    -------
    ndarray, shape (..., n_A)
    """
    if distance not in DISTANCES:
        raise InvalidArgumentError(f"RND distance must be one of {', '.join(DISTANCES)}, "
                                   f"got {distance!r}")
    x, y, a = (np.asarray(v, dtype=np.float64) for v in (x, y, a))
    for name, v in (("X", x), ("Y", y), ("A", a)):
        if v.shape[-2] == 0:
            raise InputDataError(f"RND: set {name} is empty")
    mx = x.mean(axis=-2, keepdims=True)
    my = y.mean(axis=-2, keepdims=True)
    if distance == "euclidean":
        return np.linalg.norm(a - mx, axis=-1) - np.linalg.norm(a - my, axis=-1)
    ua = _unit(a)
    return (1.0 - (ua * _unit(mx)).sum(-1)) - (1.0 - (ua * _unit(my)).sum(-1))


def rnd(x, y, a, distance: str = "euclidean") -> np.ndarray:
    """RND = sum over attribute words of ``d(a, mean X) - d(a, mean Y)`` (last axes)."""
    return rnd_per_attribute(x, y, a, distance).sum(axis=-1)
