"""The group-rates sampler's wall and CPU time, this tree against another, same draws.

Alternates fresh processes of this tree and of ``--against-tree DIR`` (an export of an
earlier commit, e.g. ``git archive ae8c3e5 | tar -x -C /tmp/base``) on two fits:

- ``readme``: the shipped adult_llama table as ``bayesbias groups --example adult_llama
  --metric tpr,fpr,error_rate`` fits it (30 cells, 165 dimensions; 4 chains x 1000 draws
  after 1000 tuning steps);
- ``scale``: ``benchmarks/bench_groups_scale.py``'s 10**6 rows x 1,000 cells (3,822
  dimensions; 2 chains x 300 draws after 300 tuning steps).

Each process first compiles / loads the kernel on a tiny fit (not timed), then times
``fit_counts`` alone: wall seconds and the process's CPU seconds (all threads). The cell
rates of both trees are compared (the same draws give differences at rounding level only;
otherwise the gap of the posterior means in posterior sds).

    python benchmarks/bench_groups_driver.py --against-tree /tmp/base --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r"""
import json, resource, sys, time
import numpy as np
case, out = sys.argv[1], sys.argv[2]
from bayesbias.models.group_rates import fit_counts, load_group_spec
spec = load_group_spec(structure="full")
if case == "readme":
    from bayesbias.datasets import adult_llama
    from bayesbias.groups import GroupRates
    t = adult_llama()
    g = GroupRates(t["label"], t["pred"], sensitive_features=t[["race", "sex", "age"]],
                   metrics=["tpr", "fpr", "error_rate"], pos_label="greater than 50K",
                   bins={"age": [25, 65]}, structure="independent", draws=2, chains=1)
    k, n, shape, kw = g.k, g.n, g.shape, dict(draws=1000, tune=1000, chains=4, seed=g.seed)
else:
    sys.path.insert(0, "benchmarks")
    from bench_groups_scale import SHAPE, count, table
    k, n = count(table(10**6))
    shape, kw = SHAPE, dict(draws=300, tune=300, chains=2, seed=0)
fit_counts(k[:, :], n[:, :], shape, spec, draws=5, tune=5, chains=1, seed=0)  # compile
cpu0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
fit = fit_counts(k, n, shape, spec, **kw)
wall = time.perf_counter() - t0
cpu1 = resource.getrusage(resource.RUSAGE_SELF)
np.save(out, fit["p"])
print(json.dumps({"wall": wall, "cpu": (cpu1.ru_utime - cpu0.ru_utime)
                  + (cpu1.ru_stime - cpu0.ru_stime), "sys": cpu1.ru_stime - cpu0.ru_stime,
                  "divergences": fit["divergences"]}))
"""


def run(tree: str, case: str, tmp: str, tag: str) -> tuple[dict, np.ndarray]:
    out = str(Path(tmp) / f"{tag}.npy")
    env = {**os.environ, "PYTHONPATH": tree}
    res = subprocess.run([sys.executable, "-c", CHILD, case, out], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1]), np.load(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against-tree", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cases", nargs="+", default=["readme", "scale"])
    ap.add_argument("--out", default="benchmarks/results/bench_groups_driver.json")
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1])
    res = {"against_tree": a.against_tree, "rounds": a.rounds, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for case in a.cases:
            rows = {"this": [], "against": []}
            draws = {}
            for r in range(a.rounds):
                for who, tree in (("against", a.against_tree), ("this", here)):
                    load = os.getloadavg()[0]
                    stat, p = run(tree, case, tmp, f"{case}_{who}")
                    rows[who].append({**stat, "load_before": load})
                    draws[who] = p
                    print(case, r, who, stat, f"load {load:.1f}", flush=True)
            med = {w: {k: float(np.median([x[k] for x in v])) for k in ("wall", "cpu")}
                   for w, v in rows.items()}
            res["cases"][case] = {
                "runs": rows, "median": med,
                "ratio_wall": med["this"]["wall"] / med["against"]["wall"],
                "ratio_cpu": med["this"]["cpu"] / med["against"]["cpu"],
                "max_abs_difference_of_cell_rates": float(np.abs(
                    draws["this"] - draws["against"]).max()),
                # when the draws are not the same: the largest gap between the two
                # posterior means in units of the posterior sd (Monte Carlo noise only:
                # about 0.1 at a few hundred effective draws)
                "max_mean_gap_in_sds": float(np.max(np.abs(
                    draws["this"].mean((0, 1)) - draws["against"].mean((0, 1)))
                    / draws["against"].std((0, 1))))}
    res["load_average_end"] = list(os.getloadavg())
    Path(a.out).write_text(json.dumps(res, indent=2))
    print(json.dumps({c: {k: v for k, v in d.items() if k != "runs"}
                      for c, d in res["cases"].items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
