"""Time and memory of ``GroupRates`` at 10**6 rows x 1,000 cells (10 x 10 x 10).

Alternates, in one process, the baseline (fairlearn's ``MetricFrame(...).by_group``, point
estimates only) and our steps on the same rows: counting the cells (sufficient statistics),
the exact ``independent`` fit, and the pooled ``full`` fit (its compile is excluded: numba
caches it on disk; its gradient cost is measured too). Memory: the peak of Python allocations
(tracemalloc) while counting and fitting, at 10**5 and 10**6 rows.

    python benchmarks/bench_groups_scale.py --out benchmarks/results/bench_groups_scale.json
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from bayesbias.groups import prepare_groups
from bayesbias.models.group_rates import (
    Kernel,
    _numba_logp,
    cell_counts,
    fit_counts,
    load_group_spec,
)

SHAPE = (10, 10, 10)


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b, c = (rng.integers(0, s, rows) for s in SHAPE)
    eta = -1 + 0.3 * (a - 5) / 5 - 0.2 * (b % 3) + 0.1 * c / 10
    y = rng.random(rows) < 1 / (1 + np.exp(-eta))
    p = np.where(rng.random(rows) < 0.8, y, ~y)
    return pd.DataFrame({"a": a, "b": b, "c": c, "y": y.astype(int), "p": p.astype(int)})


def count(t: pd.DataFrame):
    cell, levels, _ = prepare_groups(t[["a", "b", "c"]], len(t))
    return cell_counts(t.y.to_numpy(bool), t.p.to_numpy(bool), cell, 1000,
                       ["tpr", "fpr", "selection_rate"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--skip-baseline", action="store_true",
                    help="skip fairlearn, the counting and the independent fit (only the "
                         "full fit and its gradient)")
    ap.add_argument("--out", default="benchmarks/results/bench_groups_scale.json")
    args = ap.parse_args()
    from fairlearn.metrics import (
        MetricFrame,
        false_positive_rate,
        selection_rate,
        true_positive_rate,
    )

    t = table(args.rows)
    res = {"rows": args.rows, "cells": 1000, "metrics": 3, "baseline": [], "count": [],
           "independent": []}
    for _ in range(0 if args.skip_baseline else args.repeats):  # alternate baseline and ours
        t0 = time.perf_counter()
        _ = MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate,
                             "sel": selection_rate}, y_true=t.y, y_pred=t.p,
                        sensitive_features=t[["a", "b", "c"]]).by_group
        res["baseline"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        k, n = count(t)
        res["count"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fit_counts(k, n, SHAPE, load_group_spec(structure="independent"), draws=1000, chains=4)
        res["independent"].append(time.perf_counter() - t0)
    k, n = count(t)
    for rows in (10**5, args.rows):
        sub = t.iloc[:rows]
        tracemalloc.start()
        k, n = count(sub)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        res[f"peak_MB_counting_{rows}"] = peak / 2**20
    spec = load_group_spec(structure="full")
    kern = Kernel(k, n, SHAPE, spec)
    fast = _numba_logp()
    x = np.zeros(kern.ndim)
    g = np.empty(kern.ndim)
    args_ = kern.numba_args()
    fast(x, *args_, g)
    t0 = time.perf_counter()
    for _ in range(20):
        fast(x, *args_, g)
    res["full_dims"] = kern.ndim
    res["full_gradient_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    if not args.skip_full:
        tracemalloc.start()
        fit = fit_counts(k, n, SHAPE, spec, draws=args.draws, tune=args.tune,
                         chains=args.chains, seed=0)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        res["full_fit_seconds"] = fit["seconds"]
        res["full_fit_settings"] = {"draws": args.draws, "tune": args.tune,
                                    "chains": args.chains}
        res["full_peak_MB"] = peak / 2**20
        res["full_divergences"] = fit["divergences"]
    res["median"] = {k_: float(np.median(v)) for k_, v in res.items()
                     if isinstance(v, list)}
    if res["baseline"]:
        res["ratio_count_plus_independent_to_fairlearn"] = float(
            np.median(np.add(res["count"], res["independent"])) / np.median(res["baseline"]))
    res["load_average"] = list(__import__("os").getloadavg())
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
