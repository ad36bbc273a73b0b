"""Interaction share of ``bayesbias groups`` on simulated counts with a known truth.

A 4 x 3 x 2 grid of cells (24 cells, ``--n`` rows per cell). Planted additive data:
``logit p = -1.5 + a[race] + b[sex] + c[age]`` with main effects Normal(0, 0.5), no interaction;
the share's 90% interval "excludes 0" when its lower end exceeds the floor 0.01 (1% of the
between-cell variance; a share of a positive variance is never exactly 0, so a floor is how the
interval can exclude it). Planted interactions: the same plus every two- and three-way
interaction with sd ``--inter-sd``; the detection rate is how often the interval excludes 0.

    python benchmarks/groups_interaction_sim.py --reps 100 \
        --out benchmarks/results/groups_interaction_sim.json
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
    ap.add_argument("--inter-sd", type=float, default=0.5)
    ap.add_argument("--floor", type=float, default=0.01)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default="benchmarks/results/groups_interaction_sim.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    spec = load_group_spec(structure="full")
    started = time.perf_counter()
    res = {"additive": [], "interactions": []}
    for rep in range(args.reps):
        if args.budget and time.perf_counter() - started > args.budget:
            break
        for kind, isd in (("additive", 0.0), ("interactions", args.inter_sd)):
            rng = np.random.default_rng([rep, int(isd * 1000)])
            k, n = simulate(rng, args.n, isd)
            fit = fit_counts(k, n, SHAPE, spec, draws=args.draws, tune=args.tune,
                             chains=args.chains, seed=rep)
            osd = fit["order_sd"].reshape(-1, len(fit["orders"]))[:, :] ** 2
            share = osd[:, 1:].sum(1) / osd.sum(1)
            lo, hi = np.quantile(share, [0.05, 0.95])
            res[kind].append({"lower": float(lo), "upper": float(hi),
                              "mean": float(share.mean()), "excludes_0": bool(lo > args.floor),
                              "divergences": fit["divergences"]})
        out = {"settings": vars(args), "shape": SHAPE,
               "reps_done": len(res["interactions"]),
               "additive_excludes_0_rate": float(np.mean([r["excludes_0"]
                                                          for r in res["additive"]])),
               "interactions_detection_rate": float(np.mean([r["excludes_0"]
                                                             for r in res["interactions"]])),
               "fits_with_divergences": int(sum(r["divergences"] > 0 for v in res.values()
                                                for r in v)),
               "seconds": time.perf_counter() - started, "replications": res}
        Path(args.out).write_text(json.dumps(out, indent=2))
        print(f"rep {rep}: additive excl {out['additive_excludes_0_rate']:.3f}, "
              f"interactions det {out['interactions_detection_rate']:.3f}", flush=True)


if __name__ == "__main__":
    main()
