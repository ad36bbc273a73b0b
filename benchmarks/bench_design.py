"""Time a 5-design x 200-replication design study: in process, 1 and 2 Dask workers.

Run from the repository root (nice it on a shared machine)::

    nice .venv/bin/python benchmarks/bench_design.py
    nice .venv/bin/python benchmarks/bench_design.py --reps 200 --workers 1 2 --json

Pilot: the published religion/Reddit table (exact marginal posterior). Designs: 5, 10,
15, 20 and 30 protected words per class with the pilot's stereotypes and controls. The
numbers of every run are checked to be identical (the seed scheme does not depend on the
workers). Times include starting the local cluster. On a machine shared with other jobs,
compare the ratios measured in one run, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from bayesbias.datasets import published_table
from bayesbias.studies.design import Pilot, designs_grid, run_design


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    pilot = Pilot.from_table(published_table("religion", "reddit"), seed=args.seed)
    own = pilot.design
    designs = designs_grid(own.classes, [5, 10, 15, 20, 30], [own.stereotypes], [own.human],
                           [own.none])
    runs = {}
    ref = None
    for label, workers in [("in process", None)] + [(f"{w} worker(s)", w) for w in args.workers]:
        t0 = time.perf_counter()
        c0 = time.process_time()
        res = run_design(pilot, designs, reps=args.reps, seed=args.seed, workers=workers)
        wall = time.perf_counter() - t0
        runs[label] = {"wall_s": round(wall, 2),
                       "main_process_cpu_s": round(time.process_time() - c0, 2)}
        if ref is None:
            ref = res.raw
        else:
            for v in ref.data_vars:
                np.testing.assert_array_equal(ref[v].values, res.raw[v].values)
    base = runs.get("1 worker(s)", runs["in process"])["wall_s"]
    for r in runs.values():
        r["speedup_vs_1_worker"] = round(base / r["wall_s"], 2)
    out = {"study": f"{len(designs)} designs x {args.reps} replications (exact method)",
           "cpus": os.cpu_count(), "python": platform.python_version(),
           "identical_numbers": True, "runs": runs}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(out["study"], f"on {out['cpus']} CPUs; numbers identical in every run")
        for k, r in runs.items():
            print(f"  {k:12s} {r['wall_s']:7.1f} s wall  speed-up vs 1 worker "
                  f"{r['speedup_vs_1_worker']:.2f}")


if __name__ == "__main__":
    main()
