"""Simulation-based calibration of ``bayesbias groups``' ``full`` structure (a longer run).

The slow test ``tests/test_groups.py::test_sbc_full_structure_is_uniform`` runs 60 replications
with one seed; this script runs the same protocol (2 x 2 x 2 cells, 30 rows per cell, truth
drawn from the priors of ``models/groups/group_rates.toml``, one chain of 199 draws after 300
tuning steps) with ``--reps`` replications and another seed, and reports the rank histograms
(5 bins) with their chi-square p-values for the intercept and the rates of cells 0 and 7.

    python benchmarks/groups_sbc.py --reps 150 --seed 12 --out benchmarks/results/groups_sbc.json
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
from scipy import stats

from bayesbias.models.group_rates import Kernel, fit_counts, load_group_spec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--draws", type=int, default=199)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default="benchmarks/results/groups_sbc.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    shape, draws = (2, 2, 2), args.draws
    spec = load_group_spec(structure="full")
    dummy = np.ones((1, 8), dtype=int)
    kern = Kernel(dummy, dummy, shape, spec)
    rng = np.random.default_rng(args.seed)
    ranks = {"intercept": [], "p0": [], "p7": []}
    divergent = 0
    started = time.perf_counter()
    for rep in range(args.reps):
        if args.budget and time.perf_counter() - started > args.budget:
            break
        _, eta = kern.prior_draw(rng)  # the spec's priors, the model's structure
        eta = eta[0]
        p = 1 / (1 + np.exp(-eta))
        n = np.full((1, 8), 30)
        k = rng.binomial(n, p)
        fit = fit_counts(k, n, shape, spec, draws=draws, tune=args.tune, chains=1,
                         seed=args.seed * 10_000 + rep)
        divergent += fit["divergences"] > 0
        dr = fit["p"].reshape(-1, 8)
        ranks["p0"].append(int((dr[:, 0] < p[0]).sum()))
        ranks["p7"].append(int((dr[:, 7] < p[7]).sum()))
        ranks["intercept"].append(int((np.log(dr / (1 - dr)).mean(1) < eta.mean()).sum()))
    summary = {}
    for name, r in ranks.items():
        counts = np.bincount(np.asarray(r) * 5 // (draws + 1), minlength=5)
        summary[name] = {"counts": counts.tolist(),
                         "chisq_p": float(stats.chisquare(counts).pvalue)}
        print(name, counts.tolist(), f"p = {summary[name]['chisq_p']:.3f}")
    out = {"settings": vars(args), "reps_done": len(ranks["p0"]),
           "fits_with_divergences": int(divergent), "summary": summary, "ranks": ranks,
           "seconds": time.perf_counter() - started}
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"{out['reps_done']} reps, {divergent} fits with divergences, {out['seconds']:.0f} s")


if __name__ == "__main__":
    main()
