"""Herlihy et al.'s structured regression (FAccT 2024) as a comparator in the accuracy study.

Re-implemented (no code copied) from the paper's own summary of the method: a cell's metric is
linear in features of its groups, ``mu_a = theta_0 + theta . phi_a``, fitted to the cells' raw
rates by an inverse-variance weighted lasso, the variance of cell a's rate being
``sigma^2 / n_a`` with one pooled ``sigma^2`` (here the Bernoulli variance of the overall
rate). The paper's full text was not available to this session (abstract and summary only), so
three choices are ours and stated here:

- features ``phi_a``: one-hot indicators of every level of each attribute (main effects) and
  of every level pair of each two attributes (race x sex, race x age, sex x age); the
  three-way term is left out (with it, an unpenalised fit is the raw cell mean);
- the lasso penalty: chosen from 16 log-spaced values (1e-6 to 0.1) by 5-fold cross-validation
  over rows, done on the counts (each cell's k successes and n - k failures dealt at random
  into folds, as splitting the rows at random does), minimising the held-out weighted
  squared error of the cell rates;
- estimates are clipped to [0, 1].

Intervals (the paper's residual bootstrap, Lasso + partial ridge) are not re-implemented: this
script reports point estimates (RMSE) only. It reads the cell counts that
``benchmarks/groups_accuracy.py`` wrote, so it scores the same subsamples:

    python benchmarks/groups_structured_regression.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
from groups_accuracy import cell_sets, fixture
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

SHAPE = (5, 2, 3)
ALPHAS = np.geomspace(1e-6, 1e-1, 16)


def design() -> np.ndarray:
    """Features (cells x columns): one-hot main effects and two-way level pairs."""
    cells = list(itertools.product(*(range(s) for s in SHAPE)))
    cols = []
    for a in range(3):
        for lev in range(SHAPE[a]):
            cols.append([c[a] == lev for c in cells])
    for a, b in itertools.combinations(range(3), 2):
        for la in range(SHAPE[a]):
            for lb in range(SHAPE[b]):
                cols.append([c[a] == la and c[b] == lb for c in cells])
    return np.asarray(cols, dtype=float).T


X = design()


def _fit(k, n, alpha, sigma2):
    """Weighted lasso on the cell rates; cells with n = 0 carry no weight."""
    keep = n > 0
    w = n[keep] / sigma2
    m = Lasso(alpha=alpha, fit_intercept=True, max_iter=20000, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X[keep], k[keep] / n[keep], sample_weight=w)
    return m.predict(X)


def structured_regression(k, n, seed: int = 0, folds: int = 5) -> np.ndarray:
    """Point estimates of every cell's rate from its counts (see the module docstring)."""
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    pbar = k.sum() / max(n.sum(), 1)
    sigma2 = max(pbar * (1 - pbar), 1e-6)
    rng = np.random.default_rng(seed)
    # split each cell's rows (k successes, n - k failures) at random into folds
    ks = np.zeros((len(k), folds), dtype=np.int64)
    ns = np.zeros_like(ks)
    for c in range(len(k)):
        fold_of_row = rng.permutation(np.arange(n[c]) % folds)
        success = np.zeros(n[c], dtype=bool)
        success[:k[c]] = True
        rng.shuffle(success)
        ns[c] = np.bincount(fold_of_row, minlength=folds)
        ks[c] = np.bincount(fold_of_row, weights=success, minlength=folds).astype(np.int64)
    err = np.zeros(len(ALPHAS))
    for f in range(folds):
        ktr, ntr = k - ks[:, f], n - ns[:, f]
        kte, nte = ks[:, f], ns[:, f]
        te = nte > 0
        for i, alpha in enumerate(ALPHAS):
            pred = _fit(ktr, ntr, alpha, sigma2)
            err[i] += np.sum(nte[te] * (pred[te] - kte[te] / nte[te]) ** 2)
    best = ALPHAS[int(np.argmin(err))]
    return np.clip(_fit(k, n, best, sigma2), 0.0, 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="benchmarks/results/groups_accuracy.jsonl")
    ap.add_argument("--out", default="benchmarks/results/groups_structured_regression.json")
    args = ap.parse_args()
    _, _, _, k_full, n_full = fixture()
    truth, big, _, _ = cell_sets(k_full, n_full)
    recs = [json.loads(x) for x in Path(args.records).read_text().splitlines() if x.strip()]
    out = {}
    for rate in sorted({r["rate"] for r in recs}):
        rs = [r for r in recs if r["rate"] == rate]
        sq_sr, sq_full, sq_naive = [], [], []
        for r in rs:
            k, n = np.asarray(r["k"]), np.asarray(r["n"])
            est = structured_regression(k, n, seed=r["trial"])
            overall = k.sum() / max(n.sum(), 1)
            naive = np.where(n > 0, k / np.maximum(n, 1), overall)
            sq_sr.append(np.mean((est - truth)[big] ** 2))
            sq_full.append(np.mean((np.asarray(r["mean"]) - truth)[big] ** 2))
            sq_naive.append(np.mean((naive - truth)[big] ** 2))
        d = np.asarray(sq_sr) - np.asarray(sq_full)
        row = {"trials": len(rs), "rmse_structured_regression": float(np.sqrt(np.mean(sq_sr))),
               "rmse_full": float(np.sqrt(np.mean(sq_full))),
               "rmse_naive": float(np.sqrt(np.mean(sq_naive))),
               "mse_sr_minus_full_mean": float(d.mean()),
               "mse_sr_minus_full_se": float(d.std(ddof=1) / np.sqrt(len(d)))
               if len(d) > 1 else None}
        out[f"{rate:.4f}"] = row
        print(f"{rate:.4f}", json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
