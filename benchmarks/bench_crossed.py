"""Benchmark (run by hand): the cost of the crossed default, against the paper's model.

Measured in the same run, in fresh processes with warm kernel caches:

- ``bayesbias report`` (default: crossed, plus the paper's model beside it) against
  ``bayesbias report --model hierarchical`` (the model of every verdict before issue 24);
- ``fit_model`` of both models on each shipped Reddit table: wall time and the smallest bulk
  ESS per second of sampling over the group means and contrasts.

Run ``nice python benchmarks/bench_crossed.py [--repeats 3] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_FIT_CODE = """
import json, time, warnings
warnings.simplefilter("ignore")
import arviz as az
from bayesbias.datasets import published_table
from bayesbias.models import fit_model
out = []
for topic in ("religion", "race", "gender"):
    table = published_table(topic, "reddit")
    for model in ("hierarchical", "crossed"):
        t0 = time.perf_counter()
        fit = fit_model(table, model, seed=1)
        wall = time.perf_counter() - t0
        ds = fit.group_mean_draws().to_dataset(name="g")
        ds["c"] = fit.contrast_draws()
        ess = min(float(az.ess(ds, method="bulk")[v].min()) for v in ("g", "c"))
        out.append({"table": topic, "model": model, "wall_s": wall,
                    "sampling_s": float(fit.idata.attrs["sampling_time_s"]),
                    "min_ess_bulk": ess,
                    "ess_per_s": ess / float(fit.idata.attrs["sampling_time_s"])})
print("RESULT" + json.dumps(out))
"""


def _run(args, cwd) -> tuple[float, str]:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return time.perf_counter() - t0, res.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    out = {"report": {}, "fits": None}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _run(["-m", "bayesbias", "--quiet", "report", "-o", str(work / "warmup")], work)
        for label, extra in (("default (crossed)", []),
                             ("--model hierarchical", ["--model", "hierarchical"])):
            times = []
            for r in range(args.repeats):
                wall, _ = _run(["-m", "bayesbias", "--quiet", "report", *extra, "-o",
                                str(work / f"r{r}")], work)
                times.append(wall)
            out["report"][label] = times
            print(f"report {label}: median {statistics.median(times):.1f} s "
                  f"({', '.join(f'{t:.1f}' for t in times)})", flush=True)
        _, stdout = _run(["-c", _FIT_CODE], work)
        out["fits"] = json.loads(stdout.split("RESULT", 1)[1])
    a = statistics.median(out["report"]["default (crossed)"])
    b = statistics.median(out["report"]["--model hierarchical"])
    print(f"report ratio default / --model hierarchical: {a / b:.2f}")
    for f in out["fits"]:
        print(f"fit {f['table']:8s} {f['model']:12s} wall {f['wall_s']:5.1f} s, sampling "
              f"{f['sampling_s']:5.1f} s, min bulk ESS {f['min_ess_bulk']:6.0f}, "
              f"{f['ess_per_s']:7.0f} ESS/s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
