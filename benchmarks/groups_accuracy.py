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
  beside it (a cell with no sampled rows has no bootstrap interval: counted as a miss), and
  for the 4 zero-truth cells the posterior probability that the rate is below 1/n.

Every (rate, trial) is one line of a JSON-lines file (``--out``, default
``benchmarks/results/groups_accuracy.jsonl``) holding the subsample's cell counts, the
posterior mean and 90% interval of every cell, fairlearn's interval and the sampler's
diagnostics; a rerun skips the lines already written (resumable), and comparators that need
only the counts (``benchmarks/groups_structured_regression.py``) read them from this file.
``--summary`` prints the table from the file without fitting.

    python benchmarks/groups_accuracy.py --trials 100 --rates low
    python benchmarks/groups_accuracy.py --trials 100 --rates high --n-boot 0
    python benchmarks/groups_accuracy.py --summary
    python benchmarks/groups_accuracy.py --mc-check 8    # Monte Carlo error of the ends

The fits use 2 chains x 500 draws after 500 tuning steps (``--draws``, ``--chains``; the
library default is 4 x 1000): the Monte Carlo error this adds to an interval end is reported in
the summary (see docs/groups.md).
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
C = 30


def subsample(N: int, rate: float, trial: int) -> np.ndarray:
    """Row indices of trial `trial` at `rate` (SureMap's single-task protocol)."""
    np.random.seed(trial)  # noqa: NPY002  (the protocol is SureMap's legacy seeding)
    x = rate * N
    size = int(np.floor(x)) + int(np.random.rand() < x - np.floor(x))  # noqa: NPY002
    return np.random.choice(N, size)  # noqa: NPY002


def fairlearn_ci(y, p, cell_labels, n_boot, seed):
    """Return fairlearn's percentile-bootstrap 90% interval of every sampled cell's 0-1 error."""
    from fairlearn.metrics import MetricFrame

    mf = MetricFrame(metrics=lambda a, b: float(np.mean(a != b)), y_true=y, y_pred=p,
                     sensitive_features=pd.Series(cell_labels, name="cell"), n_boot=n_boot,
                     ci_quantiles=[0.05, 0.95], random_state=seed)
    lo, hi = mf.by_group_ci
    return lo, hi


def fixture():
    """Rows in the repository's cell order: (y, pred, cell) and the full-data counts."""
    t = adult_llama()
    cell, _, _ = prepare_groups(t[["race", "sex", "age"]], len(t), {"age": [25, 65]})
    order = np.argsort(cell, kind="stable")
    cell = cell[order]
    y = (t["label"].to_numpy()[order] == POS)
    p = (t["pred"].to_numpy()[order] == POS)
    k, n = cell_counts(y, p, cell, C, ["error_rate"])
    return y, p, cell, k[0], n[0]


def cell_sets(k, n):
    """Truth, and the masks of cells scored (n >= 40), covered (0 < truth < 1), zero-truth."""
    truth = k / n
    big = n >= 40
    inner = big & (truth > 0) & (truth < 1)
    zero = big & (truth == 0)
    assert big.sum() == 23 and inner.sum() == 19 and zero.sum() == 4
    return truth, big, inner, zero


def _r(a):
    return [round(float(v), 7) for v in np.asarray(a, dtype=float)]


def run_one(y, p, cell, n_full, rate, trial, spec, args) -> dict:
    idx = subsample(len(y), rate, trial)
    ks, ns = cell_counts(y[idx], p[idx], cell[idx], C, ["error_rate"])
    fit = fit_counts(ks, ns, (5, 2, 3), spec, draws=args.draws, tune=args.tune,
                     chains=args.chains, seed=trial, cores=args.cores,
                     target_accept=args.target_accept)
    dr = fit["p"].reshape(-1, C)
    lo, hi = np.quantile(dr, [0.05, 0.95], axis=0)
    rec = {"rate": round(float(rate), 6), "trial": trial, "rows": int(len(idx)),
           "k": ks[0].tolist(), "n": ns[0].tolist(), "mean": _r(dr.mean(0)), "lo": _r(lo),
           "hi": _r(hi), "p_below_1_over_n": _r((dr < 1 / n_full).mean(0)),
           "divergences": fit["divergences"], "rhat_max": fit["rhat_max"],
           "ess_min": fit["ess_min"], "seconds_fit": fit["seconds"]}
    if args.n_boot:
        t0 = time.perf_counter()
        flo, fhi = fairlearn_ci(y[idx], p[idx], np.asarray(cell[idx]), args.n_boot, trial)
        rec["fl_lo"] = [None if not np.isfinite(v) else round(float(v), 7)
                        for v in flo.reindex(range(C)).to_numpy(float)]
        rec["fl_hi"] = [None if not np.isfinite(v) else round(float(v), 7)
                        for v in fhi.reindex(range(C)).to_numpy(float)]
        rec["seconds_fairlearn"] = time.perf_counter() - t0
    return rec


def summarize(records: list[dict], k_full, n_full) -> dict:
    """Per-rate RMSE and coverage from the JSON-lines records."""
    from scipy import stats

    truth, big, inner, zero = cell_sets(k_full, n_full)
    out = {}
    for rate in sorted({r["rate"] for r in records}):
        rs = sorted((r for r in records if r["rate"] == rate), key=lambda r: r["trial"])
        sq = {"full": [], "independent": [], "naive": []}
        cov = {"full": [], "independent": [], "fairlearn": []}
        zero_p, div, ess = [], [], []
        for r in rs:
            ks, ns = np.asarray(r["k"], float), np.asarray(r["n"], float)
            a, b = 1 + ks, 1 + ns - ks
            overall = ks.sum() / max(ns.sum(), 1)
            naive = np.where(ns > 0, ks / np.maximum(ns, 1), overall)
            mean, lo, hi = (np.asarray(r[x]) for x in ("mean", "lo", "hi"))
            sq["full"].append(np.mean((mean - truth)[big] ** 2))
            sq["independent"].append(np.mean((a / (a + b) - truth)[big] ** 2))
            sq["naive"].append(np.mean((naive - truth)[big] ** 2))
            cov["full"] += ((lo <= truth) & (truth <= hi))[inner].tolist()
            ilo, ihi = stats.beta.ppf(0.05, a, b), stats.beta.ppf(0.95, a, b)
            cov["independent"] += ((ilo <= truth) & (truth <= ihi))[inner].tolist()
            if "fl_lo" in r:
                cov["fairlearn"] += [r["fl_lo"][c] is not None
                                     and r["fl_lo"][c] <= truth[c] <= r["fl_hi"][c]
                                     for c in np.flatnonzero(inner)]
            zero_p += np.asarray(r["p_below_1_over_n"])[zero].tolist()
            div.append(r["divergences"])
            if r["ess_min"] is not None:
                ess.append(r["ess_min"])
        row = {"trials": len(rs), "cases": len(cov["full"])}
        for m in sq:
            row[f"rmse_{m}"] = float(np.sqrt(np.mean(sq[m])))
        # the trial-to-trial spread of the RMSE difference (paired by trial)
        d = np.asarray(sq["naive"]) - np.asarray(sq["full"])
        row["mse_naive_minus_full_se"] = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 \
            else None
        for m in cov:
            row[f"coverage90_{m}"] = float(np.mean(cov[m])) if cov[m] else None
        c = row["coverage90_full"]
        row["coverage90_full_binomial_se"] = float(np.sqrt(c * (1 - c) / len(cov["full"])))
        row["zero_cells_mean_P(rate<1/n)"] = float(np.mean(zero_p))
        row["fits_with_divergences"] = int(np.sum(np.asarray(div) > 0))
        row["divergences_total"] = int(np.sum(div))
        row["ess_min_median"] = float(np.median(ess)) if ess else None
        out[f"{rate:.4f}"] = row
    return out


def mc_check(y, p, cell, k_full, n_full, args, seeds: int = 8) -> dict:
    """Measure the Monte Carlo error of the 90% interval ends.

    Trials 0-2 at rates 0.01 and 0.1 are refitted with `seeds` sampler seeds (same
    subsample); the ends' spread is compared with the interval's width.
    """
    truth, _, inner, _ = cell_sets(k_full, n_full)
    spec = load_group_spec(structure="full")
    out = {}
    for rate in (RATES[0], RATES[4]):
        rel, flips, cases = [], 0, 0
        for trial in range(3):
            idx = subsample(len(y), rate, trial)
            ks, ns = cell_counts(y[idx], p[idx], cell[idx], C, ["error_rate"])
            ends = []
            for s in range(seeds):
                fit = fit_counts(ks, ns, (5, 2, 3), spec, draws=args.draws, tune=args.tune,
                                 chains=args.chains, seed=10_000 + 100 * trial + s,
                                 cores=args.cores, target_accept=args.target_accept)
                ends.append(np.quantile(fit["p"].reshape(-1, C), [0.05, 0.95], axis=0))
            ends = np.asarray(ends)  # (seeds, 2, cells)
            width = ends[:, 1].mean(0) - ends[:, 0].mean(0)
            rel += (ends.std(0, ddof=1) / width).ravel()[np.tile(inner, 2)].tolist()
            cov = (ends[:, 0] <= truth) & (truth <= ends[:, 1])  # (seeds, cells)
            maj = cov.mean(0) >= 0.5
            flips += int((cov != maj)[:, inner].sum())
            cases += int(cov[:, inner].size)
        out[f"{rate:.4f}"] = {"seeds": seeds, "trials": 3,
                              "median_mc_sd_of_end_over_width": float(np.median(rel)),
                              "max_mc_sd_of_end_over_width": float(np.max(rel)),
                              "coverage_flips": flips, "cases": cases}
        print(f"{rate:.4f}", json.dumps(out[f"{rate:.4f}"]), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--first-trial", type=int, default=0)
    ap.add_argument("--rates", default="all", help="'all', 'low' (<= 0.1) or 'high' (> 0.1)")
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--target-accept", type=float, default=0.9,
                    help="0.9: the family's default when the 2026-12-07 study ran")
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default="benchmarks/results/groups_accuracy.jsonl")
    ap.add_argument("--summary", action="store_true", help="summarize --out; no fits")
    ap.add_argument("--mc-check", type=int, default=0, metavar="SEEDS",
                    help="only measure the Monte Carlo error of the interval ends")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    y, p, cell, k_full, n_full = fixture()
    path = Path(args.out)
    if args.mc_check:
        res = mc_check(y, p, cell, k_full, n_full, args, args.mc_check)
        path.with_suffix(".mc_check.json").write_text(json.dumps(res, indent=2))
        return
    records = ([json.loads(line) for line in path.read_text().splitlines() if line.strip()]
               if path.exists() else [])
    if not args.summary:
        low = RATES <= 0.1 + 1e-12
        rates = {"all": RATES, "low": RATES[low], "high": RATES[~low]}[args.rates]
        done = {(r["rate"], r["trial"]) for r in records}
        spec = load_group_spec(structure="full")
        started = time.perf_counter()
        with path.open("a") as fh:
            # trial-major: stopped early, every rate has the same trials
            for trial in range(args.first_trial, args.first_trial + args.trials):
                if args.budget and time.perf_counter() - started > args.budget:
                    break
                for rate in rates:
                    if (round(float(rate), 6), trial) in done:
                        continue
                    rec = run_one(y, p, cell, n_full, rate, trial, spec, args)
                    rec["settings"] = {"draws": args.draws, "tune": args.tune,
                                       "chains": args.chains,
                                       "target_accept": args.target_accept,
                                       "n_boot": args.n_boot}
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    records.append(rec)
                print(f"trial {trial} done, {time.perf_counter() - started:.0f} s", flush=True)
    summary = summarize(records, k_full, n_full)
    for rate, row in summary.items():
        print(rate, json.dumps(row), flush=True)
    path.with_suffix(".summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
