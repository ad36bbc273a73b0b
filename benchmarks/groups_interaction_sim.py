"""Interaction share of ``bayesbias groups`` on simulated counts with a known truth.

A 4 x 3 x 2 grid of cells (24 cells, ``--n`` rows per cell). Planted additive data:
``logit p = -1.5 + a[race] + b[sex] + c[age]`` with main effects Normal(0, 0.5), no interaction.
Planted interactions: the same plus every two- and three-way interaction with sd ``--inter-sd``
(one or more values). The decision is the library's (``GroupRates.interaction_share``):
"intersectional" when P(share > ``--floor``) > 0.95, the floor 0.05 being a region of
practical equivalence fixed before this run (docs/groups.md); ``lower_above_floor`` records
the equivalent interval form (90% interval's lower end above the floor). The false
detection rate (planted additive) should be <= 0.10; the detection rate is reported per
``--inter-sd``. Seeds are ``[--seed-base + rep, 1000 * inter_sd]`` (the first run used base 0).

    python benchmarks/groups_interaction_sim.py --reps 100 --seed-base 5000 \
        --inter-sd 0.5 0.15 --out benchmarks/results/groups_interaction_sim.json
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

from bayesbias.models.group_rates import fit_counts, load_group_spec, model_terms

SHAPE = (4, 3, 2)


def simulate(rng, n: int, inter_sd: float):
    cells = int(np.prod(SHAPE))
    eta = np.full(cells, -1.5)
    for t in model_terms(SHAPE, "full"):
        sd = 0.5 if t.order == 1 else inter_sd
        if sd > 0:
            eta += rng.normal(0, sd, t.size)[t.index]
    p = 1 / (1 + np.exp(-eta))
    nn = np.full(cells, n)
    return rng.binomial(nn, p)[None], nn[None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--inter-sd", type=float, nargs="+", default=[0.5])
    ap.add_argument("--floor", type=float, default=0.05)
    ap.add_argument("--seed-base", type=int, default=5000)
    ap.add_argument("--first-rep", type=int, default=0)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default="benchmarks/results/groups_interaction_sim.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    spec = load_group_spec(structure="full")
    started = time.perf_counter()
    kinds = [("additive", 0.0)] + [(f"interactions_sd{isd:g}", isd) for isd in args.inter_sd]
    res = {kind: [] for kind, _ in kinds}
    for rep in range(args.first_rep, args.first_rep + args.reps):
        if args.budget and time.perf_counter() - started > args.budget:
            break
        for kind, isd in kinds:
            rng = np.random.default_rng([args.seed_base + rep, int(round(isd * 1000))])
            k, n = simulate(rng, args.n, isd)
            fit = fit_counts(k, n, SHAPE, spec, draws=args.draws, tune=args.tune,
                             chains=args.chains, seed=args.seed_base + rep)
            osd = fit["order_sd"].reshape(-1, len(fit["orders"]))[:, :] ** 2
            share = osd[:, 1:].sum(1) / osd.sum(1)
            lo, hi = np.quantile(share, [0.05, 0.95])
            res[kind].append({"rep": rep, "lower": float(lo), "upper": float(hi),
                              "mean": float(share.mean()),
                              "p_above_floor": float((share > args.floor).mean()),
                              "intersectional": bool((share > args.floor).mean() > 0.95),
                              "lower_above_floor": bool(lo > args.floor),
                              "divergences": fit["divergences"]})
        rates = {kind: float(np.mean([r["intersectional"] for r in v]))
                 for kind, v in res.items()}
        out = {"settings": vars(args), "shape": SHAPE,
               "reps_done": len(res["additive"]),
               "intersectional_rate": rates,
               "fits_with_divergences": int(sum(r["divergences"] > 0 for v in res.values()
                                                for r in v)),
               "seconds": time.perf_counter() - started, "replications": res}
        Path(args.out).write_text(json.dumps(out, indent=2))
        print(f"rep {rep}: " + ", ".join(f"{k} {v:.3f}" for k, v in rates.items()), flush=True)


if __name__ == "__main__":
    main()
