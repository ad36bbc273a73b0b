"""Relative Negative Sentiment Bias (RNSB; Sweeney & Najafian 2019, ACL).

A logistic regression is trained to tell the vectors of a *negative* attribute set from
those of a *positive* one. For the target words t_1..t_n it gives p_i = P(negative | t_i);
normalised, P_i = p_i / sum p, and RNSB is the Kullback-Leibler divergence of P from the
uniform distribution, ``sum_i P_i log(n P_i)``. 0: every target gets the same share of
negative probability (no bias); larger: some targets carry more of it. Not signed.

The classifier is L2-regularised logistic regression (penalty ``||w||^2 / 2 + C * log loss``,
intercept not penalised; scikit-learn's ``LogisticRegression`` objective), solved here by
Newton's method to machine precision. Which attribute words train it depends on a random
split (the paper holds out a test set); :func:`rnsb_splits` gives the value over many
seeded splits so that the split's effect is visible.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputDataError, InvalidArgumentError

__all__ = ["fit_logistic", "negative_probability", "rnsb_from_probabilities", "rnsb",
           "train_split", "rnsb_splits"]


def fit_logistic(features, labels, C: float = 1.0, max_iter: int = 100,
                 tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray | float]:
    """L2-regularised logistic regression by Newton's method (batch over leading axes).

    Minimises ``||w||^2 / 2 + C * sum_i log(1 + exp(-s_i (x_i.w + b)))`` with s_i = ±1,
    separately for every leading index (each with its own line search and stopping).

    Parameters
    ----------
    features : array_like, shape (..., n, dim)
    labels : array_like of {0, 1}, shape (..., n) (broadcast against `features`)
    C : float
        Inverse regularisation strength (scikit-learn's default 1).

    Returns
    -------
    (w, b)
        Shapes (..., dim) and (...) (a float for one problem).
    """
    x = np.asarray(features, dtype=np.float64)
    batch = x.shape[:-2]
    n, d = x.shape[-2:]
    y = np.broadcast_to(np.asarray(labels, dtype=np.float64), batch + (n,))
    x = x.reshape((-1, n, d))
    y = y.reshape((-1, n))
    if not (np.isin(y, (0.0, 1.0)).all() and (y == 0).any(-1).all() and (y == 1).any(-1).all()):
        raise InputDataError("RNSB: the classifier's training words must include both the "
                             "positive and the negative attribute set (degenerate split)")
    basis = None
    if d > n:
        # At the optimum w = -C X^T (p - y) lies in the span of the training vectors, so
        # Newton runs in that n-dimensional span: the same solution at (n/d)^3 of the cost.
        _, _, basis = np.linalg.svd(x, full_matrices=False)
        x = x @ np.swapaxes(basis, -1, -2)
        d = x.shape[-1]
    xb = np.concatenate([x, np.ones(x.shape[:-1] + (1,))], axis=-1)
    reg = np.ones(d + 1)
    reg[-1] = 0.0  # intercept not penalised
    beta = np.zeros((len(xb), d + 1))

    def objective(xb, y, beta):
        z = (xb @ beta[..., None])[..., 0]
        return C * np.sum(np.logaddexp(0.0, z) - y * z, axis=-1) + 0.5 * np.sum(
            reg * beta * beta, axis=-1)

    f = objective(xb, y, beta)
    active = np.arange(len(xb))  # problems not yet converged
    for _ in range(max_iter):
        if not active.size:
            break
        xa, ya, ba = xb[active], y[active], beta[active]
        z = (xa @ ba[..., None])[..., 0]
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # stable sigmoid
        xt = np.swapaxes(xa, -1, -2)
        grad = C * (xt @ (p - ya)[..., None])[..., 0] + reg * ba
        hess = C * (xt * (p * (1 - p))[..., None, :]) @ xa + np.diag(reg)
        hess[:, -1, -1] += 1e-12  # keeps the system solvable when every p is 0 or 1
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        slope = (grad[:, None, :] @ step[..., None])[:, 0, 0]
        t = np.ones(len(active))
        new, f_new = np.empty_like(ba), np.empty(len(active))
        todo = np.arange(len(active))
        while todo.size:  # backtracking line search, per problem
            cand = ba[todo] - t[todo, None] * step[todo]
            fc = objective(xa[todo], ya[todo], cand)
            ok = (fc <= f[active[todo]] - 1e-4 * t[todo] * slope[todo]) | (t[todo] < 1e-10)
            new[todo[ok]], f_new[todo[ok]] = cand[ok], fc[ok]
            t[todo[~ok]] *= 0.5
            todo = todo[~ok]
        f_old = f[active]
        beta[active], f[active] = new, f_new
        done = ((np.max(np.abs(t[:, None] * step), axis=-1) < tol)
                | (np.abs(f_old - f_new) <= tol * np.maximum(1.0, np.abs(f_new))))
        active = active[~done]
    w = beta[:, :-1] if basis is None else (beta[:, None, :-1] @ basis)[:, 0]
    w, b = w.reshape(batch + w.shape[-1:]), beta[:, -1].reshape(batch)
    return w, (float(b) if not batch else b)


def negative_probability(w, b, targets) -> np.ndarray:
    """P(negative | t) of the fitted classifier for each target vector (batch over leading axes).

    `w` (..., dim), `b` (...), `targets` (..., n, dim); returns shape (..., n).
    """
    w = np.asarray(w, dtype=np.float64)
    z = (np.asarray(targets, dtype=np.float64) @ w[..., None])[..., 0] + np.asarray(b)[..., None]
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def rnsb_from_probabilities(p) -> np.ndarray:
    """KL divergence of the normalised probabilities from uniform (last axis)."""
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[-1]
    if n < 2:
        raise InputDataError("RNSB needs at least two target words")
    share = p / p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(share > 0, share * np.log(share * n), 0.0)
    return terms.sum(axis=-1)


def train_split(n_pos: int, n_neg: int, test_size: float, rng) -> np.ndarray:
    """Boolean mask of the training words among positive then negative attribute words.

    `test_size` of the words (rounded up, as scikit-learn's ``train_test_split``) are held
    out at random; ``test_size=0`` trains on all of them. The split is drawn again until
    both sets keep at least one training word.
    """
    n = n_pos + n_neg
    if not 0 <= test_size < 1:
        raise InvalidArgumentError(f"RNSB test_size must be in [0, 1), got {test_size}")
    n_test = int(np.ceil(test_size * n))
    if n - n_test < 2:
        raise InputDataError(f"RNSB: {n} attribute words leave fewer than two for training "
                             f"with test_size {test_size}")
    if n_test == 0:
        return np.ones(n, dtype=bool)
    rng = np.random.default_rng(rng)
    for _ in range(1000):
        mask = np.ones(n, dtype=bool)
        mask[rng.permutation(n)[:n_test]] = False
        if mask[:n_pos].any() and mask[n_pos:].any():
            return mask
    raise InputDataError("RNSB: no training split keeps words of both attribute sets "
                         "(degenerate split; lower test_size)")


def rnsb(positive, negative, targets, *, test_size: float = 0.0, C: float = 1.0,
         rng=None) -> tuple[np.ndarray | float, np.ndarray]:
    """RNSB of `targets`, training on `positive` (label 0) vs `negative` (label 1).

    Batch over leading axes: every leading index is its own problem, with its own training
    split drawn from `rng` in C order (as a loop over the problems would draw them).

    Parameters
    ----------
    positive, negative, targets : array_like, shape (..., n, dim)

    Returns
    -------
    (kl, p)
        The divergence (shape (...), a float for one problem) and P(negative | t) per target
        word (shape (..., n_targets)).
    """
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    tgt = np.asarray(targets, dtype=np.float64)
    if pos.shape[-2] < 1 or neg.shape[-2] < 1:
        raise InputDataError("RNSB needs at least one positive and one negative attribute word")
    batch = np.broadcast_shapes(pos.shape[:-2], neg.shape[:-2], tgt.shape[:-2])
    n_pos, n_neg, dim = pos.shape[-2], neg.shape[-2], pos.shape[-1]
    feats = np.concatenate([np.broadcast_to(pos, batch + pos.shape[-2:]),
                            np.broadcast_to(neg, batch + neg.shape[-2:])], axis=-2)
    labels = np.r_[np.zeros(n_pos), np.ones(n_neg)]
    masks = np.stack([train_split(n_pos, n_neg, test_size, rng)
                      for _ in range(int(np.prod(batch)))]).reshape(batch + (n_pos + n_neg,))
    k = int(masks.reshape(-1, n_pos + n_neg)[0].sum())
    w, b = fit_logistic(feats[masks].reshape(batch + (k, dim)),
                        np.broadcast_to(labels, masks.shape)[masks].reshape(batch + (k,)), C=C)
    p = negative_probability(w, b, tgt)
    kl = rnsb_from_probabilities(p)
    return (float(kl) if not batch else kl), p


def rnsb_splits(positive, negative, targets, *, n_splits: int, test_size: float,
                C: float = 1.0, seed=None) -> np.ndarray:
    """RNSB over `n_splits` seeded random training splits (shape (n_splits,))."""
    rng = np.random.default_rng(seed)
    pos = np.asarray(positive, dtype=np.float64)
    return rnsb(np.broadcast_to(pos, (int(n_splits),) + pos.shape), negative, targets,
                test_size=test_size, C=C, rng=rng)[0]
