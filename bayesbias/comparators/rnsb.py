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

from ..errors import InputDataError

__all__ = ["fit_logistic", "negative_probability", "rnsb_from_probabilities", "rnsb",
           "train_split", "rnsb_splits"]


def fit_logistic(features, labels, C: float = 1.0, max_iter: int = 100,
                 tol: float = 1e-12) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method.

    Minimises ``||w||^2 / 2 + C * sum_i log(1 + exp(-s_i (x_i.w + b)))`` with s_i = ±1.

    Parameters
    ----------
    features : array_like, shape (n, dim)
    labels : array_like of {0, 1}, shape (n,)
    C : float
        Inverse regularisation strength (scikit-learn's default 1).

    Returns
    -------
    (w, b)
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if set(np.unique(y)) != {0.0, 1.0}:
        raise InputDataError("RNSB: the classifier's training words must include both the "
                             "positive and the negative attribute set (degenerate split)")
    n, d = x.shape
    basis = None
    if d > n:
        # At the optimum w = -C X^T (p - y) lies in the span of the training vectors, so
        # Newton runs in that n-dimensional span: the same solution at (n/d)^3 of the cost.
        _, _, basis = np.linalg.svd(x, full_matrices=False)
        x = x @ basis.T
        d = x.shape[1]
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    reg = np.ones(d + 1)
    reg[-1] = 0.0  # intercept not penalised

    def objective(beta):
        z = xb @ beta
        return C * np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(reg * beta * beta)

    f = objective(beta)
    for _ in range(max_iter):
        z = xb @ beta
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # stable sigmoid
        grad = C * xb.T @ (p - y) + reg * beta
        hess = C * (xb.T * (p * (1 - p))) @ xb + np.diag(reg)
        hess[-1, -1] += 1e-12  # keeps the system solvable when every p is 0 or 1
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:  # backtracking line search
            new = beta - t * step
            f_new = objective(new)
            if f_new <= f - 1e-4 * t * grad @ step or t < 1e-10:
                break
            t *= 0.5
        beta, f_old, f = new, f, f_new
        if np.max(np.abs(t * step)) < tol or abs(f_old - f) <= tol * max(1.0, abs(f)):
            break
    w = beta[:-1] if basis is None else basis.T @ beta[:-1]
    return w, float(beta[-1])


def negative_probability(w, b, targets) -> np.ndarray:
    """P(negative | t) of the fitted classifier for each target vector."""
    z = np.asarray(targets, dtype=np.float64) @ w + b
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
        raise InputDataError(f"RNSB test_size must be in [0, 1), got {test_size}")
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
         rng=None) -> tuple[float, np.ndarray]:
    """RNSB of `targets`, training on `positive` (label 0) vs `negative` (label 1).

    Returns
    -------
    (kl, p)
        The divergence and P(negative | t) per target word.
    """
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    if len(pos) < 1 or len(neg) < 1:
        raise InputDataError("RNSB needs at least one positive and one negative attribute word")
    feats = np.vstack([pos, neg])
    labels = np.r_[np.zeros(len(pos)), np.ones(len(neg))]
    mask = train_split(len(pos), len(neg), test_size, rng)
    w, b = fit_logistic(feats[mask], labels[mask], C=C)
    p = negative_probability(w, b, targets)
    return float(rnsb_from_probabilities(p)), p


def rnsb_splits(positive, negative, targets, *, n_splits: int, test_size: float,
                C: float = 1.0, seed=None) -> np.ndarray:
    """RNSB over `n_splits` seeded random training splits (shape (n_splits,))."""
    rng = np.random.default_rng(seed)
    return np.array([rnsb(positive, negative, targets, test_size=test_size, C=C, rng=rng)[0]
                     for _ in range(int(n_splits))])
