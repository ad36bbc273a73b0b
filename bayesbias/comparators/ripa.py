"""Relational Inner Product Association (RIPA; Ethayarajh, Duvenaud & Hirst 2019, ACL).

A relation (e.g. gender) is given by word pairs (x_i, y_i). Its relation vector b is the
unit first principal direction of the pair differences x_i - y_i (for one pair, the
normalised difference), oriented so that the differences project positively on it. RIPA of
a word w is the inner product ``<w, b>`` with the word's *raw* vector (the paper's scalar
projection; no normalisation of w). Positive: w leans towards the X side of the pairs.
:func:`ripa_pairwise` is the variant that averages ``<w, (x_i - y_i)/||x_i - y_i||>`` over
the pairs (a labelled variant: the definition WEFE 1.0.1 implements).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputDataError

__all__ = ["identical_pairs", "relation_vector", "ripa", "ripa_pairwise"]


def identical_pairs(x, y) -> np.ndarray:
    """Flag each leading index whose pairs include one with identical vectors.

    RIPA is undefined there (a pair without a difference has no direction).
    """
    diff = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    return (np.linalg.norm(diff, axis=-1) == 0).any(axis=-1)


def _pairs(x, y):
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise InputDataError(f"RIPA needs target pairs: X and Y differ in shape "
                             f"({x.shape[-2]} vs {y.shape[-2]} words)")
    if x.shape[-2] == 0:
        raise InputDataError("RIPA needs at least one target pair")
    if identical_pairs(x, y).any():
        raise InputDataError("RIPA: a target pair has identical vectors (degenerate pair)")
    diff = x - y
    return diff, np.linalg.norm(diff, axis=-1, keepdims=True)


def relation_vector(x, y) -> np.ndarray:
    """Return the unit relation vector: first principal direction of the x_i - y_i.

    The direction is that of the largest singular value of the (uncentred) difference
    matrix, signed so that the mean difference projects positively.

    Returns
    -------
    ndarray, shape (..., dim)
    """
    diff, norm = _pairs(x, y)
    if diff.shape[-2] == 1:
        return (diff / norm)[..., 0, :]
    _, _, vt = np.linalg.svd(diff, full_matrices=False)
    b = vt[..., 0, :]
    sign = np.sign((diff.mean(axis=-2) * b).sum(-1, keepdims=True))
    return b * np.where(sign == 0, 1.0, sign)


def ripa(x, y, w) -> np.ndarray:
    """RIPA of every word of `w` with the relation of the pairs (x_i, y_i).

    Parameters
    ----------
    x, y : array_like, shape (..., n_pairs, dim)
        Vectors of the pairs, X side and Y side, row i of each forming a pair.
    w : array_like, shape (..., n_words, dim)

    Returns
    -------
    ndarray, shape (..., n_words)
    """
    b = relation_vector(x, y)
    w = np.asarray(w, dtype=np.float64)
    if w.shape[-2] == 0:
        raise InputDataError("RIPA: no attribute words")
    return (w * b[..., None, :]).sum(-1)


def ripa_pairwise(x, y, w) -> np.ndarray:
    """Variant: mean over pairs of ``<w, (x_i - y_i) / ||x_i - y_i||>`` (shape (..., n_words))."""
    diff, norm = _pairs(x, y)
    w = np.asarray(w, dtype=np.float64)
    if w.shape[-2] == 0:
        raise InputDataError("RIPA: no attribute words")
    return (w @ np.swapaxes(diff / norm, -1, -2)).mean(axis=-1)
