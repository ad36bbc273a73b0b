"""Accuracy and coverage of group rates on the real adult_llama fixture (SureMap protocol).

Subsample the fixture at rates ``10 ** linspace(-2, 0, 9)``; trial t seeds ``np.random.seed(t)``,
draws one ``np.random.rand()`` to round ``rate * N`` randomly, then ``np.random.choice(N,
size)`` (with replacement) over the rows sorted in the repository's cell order (race, sex,
age band, each sorted; rows within a cell in file order). The truth is the full-data 0-1 error
of each cell. Reported per rate:

- RMSE over the 23 cells with n >= 40 of: the pooled posterior mean (``full``), the
  ``independent`` Beta(1, 1) posterior mean, and the naive cell mean (a cell with no sampled
  rows gets the subsample's overall error, as an estimate must say something);
- coverage of the 90% intervals over the 19 cells with 0 < truth < 1 (cell x trial cases),
  with fairlearn's percentile bootstrap (``MetricFrame(n_boot=..., ci_quantiles=...)``)
  beside it, and for the 4 zero-truth cells the posterior probability that the rate is
  below 1/n.

Not included: Herlihy et al.'s structured regression and SureMap (see the closing note).

    python benchmarks/groups_accuracy.py --trials 100 --out benchmarks/results/groups_accuracy.json

``--target-accept`` sets NUTS' target acceptance (library default 0.9); ``--first-trial``
starts the trial seeds later (to extend an earlier run with new subsamples).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayesbias.datasets import adult_llama
from bayesbias.groups import prepare_groups
from bayesbias.models.group_rates import cell_counts, fit_counts, load_group_spec

POS = "greater than 50K"
RATES = 10 ** np.linspace(-2, 0, 9)


def subsample(N: int, rate: float, trial: int) -> np.ndarray:
    """Row indices of trial `trial` at `rate` (SureMap's single-task protocol)."""
    np.random.seed(trial)  # noqa: NPY002  (the protocol is SureMap's legacy seeding)
    x = rate * N
    size = int(np.floor(x)) + int(np.random.rand() < x - np.floor(x))  # noqa: NPY002
    return np.random.choice(N, size)  # noqa: NPY002


def fairlearn_ci(y, p, cell_labels, n_boot, seed):
    from fairlearn.metrics import MetricFrame

    mf = MetricFrame(metrics=lambda a, b: float(np.mean(a != b)), y_true=y, y_pred=p,
                     sensitive_features=pd.Series(cell_labels, name="cell"), n_boot=n_boot,
                     ci_quantiles=[0.05, 0.95], random_state=seed)
    lo, hi = mf.by_group_ci
    return lo, hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--rates", default="all", help="'all' or 'low' (rates <= 0.1 only)")
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--target-accept", type=float, default=0.9)
    ap.add_argument("--first-trial", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default="benchmarks/results/groups_accuracy.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    t = adult_llama()
    cell, levels, _ = prepare_groups(t[["race", "sex", "age"]], len(t), {"age": [25, 65]})
    order = np.argsort(cell, kind="stable")  # the repository's cell order
    cell = cell[order]
    y = (t["label"].to_numpy()[order] == POS)
    p = (t["pred"].to_numpy()[order] == POS)
    N, C = len(t), 30
    k, n = cell_counts(y, p, cell, C, ["error_rate"])
    truth = k[0] / n[0]
    big = n[0] >= 40
    inner = big & (truth > 0) & (truth < 1)
    zero = big & (truth == 0)
    assert big.sum() == 23 and inner.sum() == 19 and zero.sum() == 4
    full = load_group_spec(structure="full")
    rates = RATES if args.rates == "all" else RATES[RATES <= 0.1 + 1e-12]
    started = time.perf_counter()
    out = {"protocol": __doc__.split("\n\n")[1], "trials_requested": args.trials,
           "draws": args.draws, "tune": args.tune, "chains": args.chains,
           "target_accept": args.target_accept, "first_trial": args.first_trial,
           "n_boot": args.n_boot, "rates": {}}
    recs = {rate: {"sq_full": [], "sq_indep": [], "sq_naive": [], "cover_full": [],
                   "cover_indep": [], "cover_fairlearn": [], "zero_below_1_over_n": [],
                   "divergences": [], "seconds_fit": []} for rate in rates}
    # trial-major: with a time budget every rate gets the same trials
    for trial in range(args.first_trial, args.first_trial + args.trials):
        if args.budget and time.perf_counter() - started > args.budget:
            break
        for rate in rates:
            rec = recs[rate]
            idx = subsample(N, rate, trial)
            ks, ns = cell_counts(y[idx], p[idx], cell[idx], C, ["error_rate"])
            ks, ns = ks[0], ns[0]
            overall = ks.sum() / max(ns.sum(), 1)
            naive = np.where(ns > 0, ks / np.maximum(ns, 1), overall)
            a, b = 1 + ks, 1 + ns - ks
            fit = fit_counts(ks[None], ns[None], (5, 2, 3), full, draws=args.draws,
                             tune=args.tune, chains=args.chains, seed=trial,
                             target_accept=args.target_accept)
            dr = fit["p"].reshape(-1, C)
            post = dr.mean(axis=0)
            lo, hi = np.quantile(dr, [0.05, 0.95], axis=0)
            from scipy import stats

            ilo, ihi = stats.beta.ppf(0.05, a, b), stats.beta.ppf(0.95, a, b)
            rec["sq_full"].append(float(np.mean((post - truth)[big] ** 2)))
            rec["sq_indep"].append(float(np.mean((a / (a + b) - truth)[big] ** 2)))
            rec["sq_naive"].append(float(np.mean((naive - truth)[big] ** 2)))
            rec["cover_full"] += ((lo <= truth) & (truth <= hi))[inner].tolist()
            rec["cover_indep"] += ((ilo <= truth) & (truth <= ihi))[inner].tolist()
            rec["zero_below_1_over_n"] += (dr[:, zero] < 1 / n[0][zero]).mean(0).tolist()
            rec["divergences"].append(fit["divergences"])
            rec["seconds_fit"].append(fit["seconds"])
            if args.n_boot:
                labels = np.asarray(cell[idx])
                flo, fhi = fairlearn_ci(y[idx], p[idx], labels, args.n_boot, trial)
                flo = flo.reindex(range(C)).to_numpy(float)
                fhi = fhi.reindex(range(C)).to_numpy(float)
                ok = inner & np.isfinite(flo)
                # a cell with no sampled rows has no bootstrap interval: counted as a miss
                rec["cover_fairlearn"] += [bool(flo[c] <= truth[c] <= fhi[c]) if ok[c]
                                           else False for c in np.flatnonzero(inner)]
        for rate in rates:
            rec = recs[rate]
            summary = {
                "trials": len(rec["sq_full"]),
                "rmse_full": float(np.sqrt(np.mean(rec["sq_full"]))) if rec["sq_full"] else None,
                "rmse_independent": float(np.sqrt(np.mean(rec["sq_indep"]))) if rec["sq_full"]
                else None,
                "rmse_naive": float(np.sqrt(np.mean(rec["sq_naive"]))) if rec["sq_full"] else None,
                "coverage90_full": float(np.mean(rec["cover_full"])) if rec["cover_full"] else None,
                "coverage90_independent": float(np.mean(rec["cover_indep"]))
                if rec["cover_indep"] else None,
                "coverage90_fairlearn_bootstrap": float(np.mean(rec["cover_fairlearn"]))
                if rec["cover_fairlearn"] else None,
                "cases": len(rec["cover_full"]),
                "zero_cells_mean_P(rate<1/n)": float(np.mean(rec["zero_below_1_over_n"]))
                if rec["zero_below_1_over_n"] else None,
                "divergent_fits": int(np.sum(np.asarray(rec["divergences"]) > 0)),
                "divergences_per_fit": [int(d) for d in rec["divergences"]],
                "sq_err_full_per_trial": rec["sq_full"],
                "covered_full": int(np.sum(rec["cover_full"])),
                "median_fit_seconds": float(np.median(rec["seconds_fit"])) if rec["seconds_fit"]
                else None,
            }
            out["rates"][f"{rate:.4f}"] = summary
            print(f"rate {rate:.4f}: {json.dumps(summary)}", flush=True)
            Path(args.out).write_text(json.dumps(out, indent=2))
    out["seconds"] = time.perf_counter() - started
    Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
