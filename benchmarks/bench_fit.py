"""Benchmark: hierarchical fits on 5k to 5M simulated rows, sufficient statistics vs rows.

Every size uses the same synthetic word list (3 classes x 5 protected words) with more
attributes, so the number of cells is fixed and only the rows per cell grow. For each size the
sufficient-statistic fit and (up to ``--rows-max`` rows) the row-level fit run on the same data
in the same process. Reported: wall time (including compilation, which the sufficient fit
reuses across calls of the same structure), nutpie's sampling time, the smallest bulk ESS of
the group-level parameters (mu_bar, tau, sigma) and bulk ESS per second of sampling.

Run with ``nice python benchmarks/bench_fit.py`` (about 5 minutes on 2 cores);
``--sizes 5000 50000`` for a quick run; ``--json out.json`` to keep the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import warnings

import pandas as pd

from bayesbias.io import atomic_path
from bayesbias.models import fit_model
from bayesbias.testing import simulate_table

SIZES = (5_000, 50_000, 500_000, 5_000_000)


def _design(rows: int) -> dict:
    """Word-list sizes giving about `rows` rows with 15 protected words."""
    k = rows / 4950
    return {"n_classes": 3, "words_per_class": 5, "stereotypes_per_class": round(5 * k),
            "n_human": round(85 * k), "n_none": round(230 * k)}


def _measure(table, likelihood: str, draws: int, tune: int, chains: int, seed: int) -> dict:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "hierarchical", draws=draws, tune=tune, chains=chains,
                        seed=seed, likelihood=likelihood)
    wall = time.perf_counter() - t0
    diag = fit.diagnostics()
    top = diag.table[diag.table["parameter"].str.match(r"(mu_bar|tau|sigma)\[")]
    sampling = float(fit.idata.attrs["sampling_time_s"])
    ess = float(top["ess_bulk"].min())
    return {"likelihood": likelihood, "rows": len(table), "wall_s": round(wall, 2),
            "sampling_s": round(sampling, 2), "min_bulk_ess": round(ess),
            "ess_per_s": round(ess / sampling, 1), "max_rhat": round(float(top["rhat"].max()), 3),
            "divergences": diag.divergences,
            "group_means": fit.group_means()["mean"].round(4).tolist()}


def main(argv=None) -> int:
    """Run the benchmark and print a table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--rows-max", type=int, default=500_000,
                   help="largest size for the row-level fit (default 500000)")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)
    results = []
    for size in args.sizes:
        t0 = time.perf_counter()
        table, _ = simulate_table(seed=args.seed, **_design(size))
        made = time.perf_counter() - t0
        for likelihood in ("sufficient", "rows"):
            if likelihood == "rows" and size > args.rows_max:
                continue
            r = _measure(table, likelihood, args.draws, args.tune, args.chains, args.seed)
            r["simulate_s"] = round(made, 2)
            results.append(r)
            print(json.dumps(r), flush=True)
    frame = pd.DataFrame(results)
    print()
    print(frame.drop(columns="group_means").to_string(index=False))
    if args.json:
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
