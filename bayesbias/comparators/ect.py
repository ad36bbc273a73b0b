"""Embedding Coherence Test (ECT; Dev & Phillips 2019, AISTATS).

The mean vectors x̄, ȳ of the two target sets are compared with every attribute word by
cosine similarity, giving two vectors of similarities; ECT is their Spearman rank
correlation. 1: both groups rank the attributes alike (no bias); lower values: the
groups order the attributes differently (bias). Not signed by group.
"""

from __future__ import annotations

import numpy as np

from .._stats import rankdata
from ..errors import InputDataError

__all__ = ["ect", "ect_similarities"]


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def ect_similarities(x, y, a) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of every attribute word to the mean of X and to the mean of Y.

    Returns
    -------
    (ndarray, ndarray), each shape (..., n_A)
    """
    x, y, a = (np.asarray(v, dtype=np.float64) for v in (x, y, a))
    for name, v in (("X", x), ("Y", y), ("A", a)):
        if v.shape[-2] == 0:
            raise InputDataError(f"ECT: set {name} is empty")
    ua = _unit(a)
    sx = (ua * _unit(x.mean(axis=-2, keepdims=True))).sum(-1)
    sy = (ua * _unit(y.mean(axis=-2, keepdims=True))).sum(-1)
    return sx, sy


def ect(x, y, a) -> np.ndarray:
    """ECT: Spearman correlation of the two similarity vectors (batch over leading axes).

    NaN where either similarity vector is constant (the rank correlation is undefined).
    """
    sx, sy = ect_similarities(x, y, a)
    if sx.shape[-1] < 2:
        raise InputDataError("ECT needs at least two attribute words")
    rx = rankdata(sx, axis=-1)
    ry = rankdata(sy, axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(-1) / np.where(den > 0, den, 1.0), np.nan)
