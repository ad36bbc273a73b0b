"""Direct and indirect bias (Bolukbasi, Chang, Zou, Saligrama & Kalai 2016, NeurIPS).

The bias direction g is the first principal component of the definitional pairs after
centring each pair on its own mean (for pairs (x_i, y_i): the vectors ±(x_i - y_i)/2),
computed on unit-normalised vectors as in the paper. With N the gender-neutral words,

    DirectBias_c = mean over w in N of |cos(w, g)|^c

(c is the strictness: c = 0 counts every word with a non-zero projection, c = 1 is the mean
absolute cosine; 0 means no bias). For two words w, v (unit vectors) with w_g = (w.g) g,

    beta(w, v) = (w.v - w_perp.v_perp / (||w_perp|| ||v_perp||)) / w.v

is the share of their similarity due to the direction g (indirect bias; 0 means none).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputDataError, InvalidArgumentError

__all__ = ["bias_direction", "degenerate", "direct_bias", "indirect_bias",
           "indirect_bias_pairs"]


def _zero_rows(v: np.ndarray) -> np.ndarray:
    """Flag each leading index with a zero vector among its rows."""
    return (np.linalg.norm(v, axis=-1) == 0).any(axis=-1)


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    if (norm == 0).any():
        raise InputDataError("a word has a zero vector (no direction)")
    return v / norm


def _identical(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Flag each leading index whose unit pairs are all identical (no direction)."""
    return np.all(np.abs((x - y) / 2.0) == 0, axis=(-2, -1))


def degenerate(x, y, words=None) -> np.ndarray:
    """Flag each leading index where the bias direction (or a word's cosine) is undefined.

    That is: a zero vector among the pairs (or `words`), or every pair identical; where
    :func:`bias_direction`, :func:`direct_bias` and :func:`indirect_bias` raise.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    bad = _zero_rows(x) | _zero_rows(y)
    if words is not None:
        bad = bad | _zero_rows(np.asarray(words, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        ux = x / np.linalg.norm(x, axis=-1, keepdims=True)
        uy = y / np.linalg.norm(y, axis=-1, keepdims=True)
    return bad | _identical(ux, uy)


def bias_direction(x, y) -> np.ndarray:
    """Return the unit bias direction g from the definitional pairs (x_i, y_i) (rows of x and y).

    First principal component of the pair-centred unit vectors, signed so that the mean
    of x_i - y_i projects positively.

    Returns
    -------
    ndarray, shape (..., dim)
    """
    x, y = _unit(x), _unit(y)
    if x.shape != y.shape:
        raise InputDataError(f"definitional pairs: X and Y differ in shape "
                             f"({x.shape[-2]} vs {y.shape[-2]} words)")
    if x.shape[-2] < 1:
        raise InputDataError("the bias direction needs at least one definitional pair")
    half = (x - y) / 2.0
    if _identical(x, y).any():
        raise InputDataError("definitional pairs have identical vectors (no direction)")
    centred = np.concatenate([half, -half], axis=-2)  # pair-centred vectors, mean zero
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    g = vt[..., 0, :]
    sign = np.sign((half.mean(axis=-2) * g).sum(-1, keepdims=True))
    return g * np.where(sign == 0, 1.0, sign)


def direct_bias(g, words, c: float = 1.0) -> np.ndarray:
    """DirectBias_c: mean over `words` of |cos(w, g)|^c (last axes)."""
    c = float(c)
    if not np.isfinite(c) or c < 0:
        raise InvalidArgumentError(f"strictness c must be a finite number >= 0, got {c}")
    w = _unit(words)
    if w.shape[-2] == 0:
        raise InputDataError("direct bias needs at least one neutral word")
    proj = np.abs((w * _unit(g)[..., None, :]).sum(-1))
    return (proj ** c).mean(axis=-1)


def _orthogonal(g, w):
    """Return unit `w`, its parts orthogonal to the unit `g`, and their norms."""
    w = _unit(w)
    wp = w - (w * g).sum(-1, keepdims=True) * g
    return w, wp, np.linalg.norm(wp, axis=-1)


def _beta(w, wp, nw, v, vp, nv):
    wv = (w * v).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        perp = (wp * vp).sum(-1) / (nw * nv)
        return np.where(wv != 0, (wv - perp) / np.where(wv != 0, wv, 1.0), np.nan)


def indirect_bias(g, w, v) -> np.ndarray:
    """beta(w, v): share of the similarity of w and v due to the direction g.

    `w` and `v` may be single vectors (dim,) or aligned stacks (..., dim); NaN where the
    similarity w.v is zero.
    """
    g = _unit(g)
    return _beta(*_orthogonal(g, w), *_orthogonal(g, v))


def indirect_bias_pairs(g, words) -> np.ndarray:
    """beta(w_i, w_j) of every pair i < j of `words` (pairs in ``np.triu_indices`` order).

    Parameters
    ----------
    g : array_like, shape (..., dim)
    words : array_like, shape (..., n, dim)

    Returns
    -------
    ndarray, shape (..., n (n - 1) / 2)
    """
    g = _unit(g)[..., None, :]
    u, up, nu = _orthogonal(g, words)
    i, j = np.triu_indices(u.shape[-2], k=1)
    return _beta(u[..., i, :], up[..., i, :], nu[..., i], u[..., j, :], up[..., j, :],
                 nu[..., j])
