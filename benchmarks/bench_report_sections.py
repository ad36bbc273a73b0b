"""Benchmark (run by hand): where the default report's time goes, HEAD against a baseline.

The default ``bayesbias report`` (built-in embedding, word lists religion, race, gender) is
run in fresh processes, alternating this tree's HEAD and a baseline commit (default
``f0c5fcd``, before the batched embedding metrics), each checked out in a temporary
worktree. Every section builder of :data:`bayesbias.report.sections.SECTIONS` is timed (wall
and CPU, summed over the word lists), and so are figures, writing and the whole run. The
numbers of the two reports (``results.json`` and every table) must agree to 1e-12 (relative
to max(1, |value|)): the speed-ups may not change what the report says.

Run ``nice python benchmarks/bench_report_sections.py`` (a few minutes on 2 loaded cores);
``--rounds N`` alternates N times (default 2) and shows the best of them: the baseline's
worktree is new, so its first run also fills its numba cache (keyed by source path);
``--json out.json`` keeps the figures. Timings on a shared machine are inflated: compare
the ratios of one run.
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
import pandas as pd

REPO = Path(__file__).resolve().parents[1]

_TIMED = """
import json, sys, time
from collections import defaultdict
wall, cpu = defaultdict(float), defaultdict(float)
def timed(f, key):
    def g(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return f(*a, **k)
        finally:
            wall[key] += time.perf_counter() - t
            cpu[key] += time.process_time() - c
    return g
import bayesbias.report.pipeline as P
import bayesbias.report.sections as S
import bayesbias.report.document as D
import bayesbias.models.fit as F
import matplotlib.figure as MF
P.SECTIONS[:] = [timed(f, f.__name__) for f in S.SECTIONS]
D.Report.write = timed(D.Report.write, "write (tables, figures, fits, HTML)")
F.Fit.save = timed(F.Fit.save, "  of which Fit.save (netCDF)")
MF.Figure.savefig = timed(MF.Figure.savefig, "  of which Figure.savefig")
t, c = time.perf_counter(), time.process_time()
P.run_report(P.ReportSettings(output=sys.argv[1]))
wall["run_report"], cpu["run_report"] = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"wall": wall, "cpu": cpu}))
"""


def _worktree(commit: str, where: Path) -> Path:
    path = where / f"base-{commit}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), commit],
                   check=True, capture_output=True)
    return path


def _run(tree: Path, out: Path) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(tree))
    res = subprocess.run([sys.executable, "-c", _TIMED, str(out)], env=env, cwd=tree,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _numbers(x, path=""):
    """Yield (path, value) of every number in nested JSON data."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k not in ("elapsed_s", "output"):
                yield from _numbers(v, f"{path}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path, float(x)


def _largest_difference(a: Path, b: Path) -> float:
    ja = dict(_numbers(json.loads((a / "results.json").read_text())))
    jb = dict(_numbers(json.loads((b / "results.json").read_text())))
    if ja.keys() != jb.keys():
        raise SystemExit("results.json of the two reports differ in their fields")
    worst = max((abs(ja[k] - jb[k]) / max(1.0, abs(ja[k])) for k in ja
                 if np.isfinite(ja[k]) or np.isfinite(jb[k])), default=0.0)
    for f in sorted((a / "tables").glob("*.csv")):
        x, y = pd.read_csv(f), pd.read_csv(b / "tables" / f.name)
        num = x.select_dtypes("number").columns
        if not x.drop(columns=num).fillna("").equals(y.drop(columns=num).fillna("")):
            raise SystemExit(f"table {f.name} differs in a text column")
        xv, yv = x[num].to_numpy(float), y[num].to_numpy(float)
        with np.errstate(invalid="ignore"):
            d = np.abs(xv - yv) / np.maximum(1.0, np.abs(xv))
        if not np.array_equal(np.isnan(xv), np.isnan(yv)):
            raise SystemExit(f"table {f.name} differs in its missing values")
        worst = max(worst, float(np.nanmax(d)) if d.size else 0.0)
    return worst


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="f0c5fcd")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = _worktree(args.baseline, tmp)
        try:
            runs = {"baseline": [], "head": []}
            for _ in range(args.rounds):
                runs["baseline"].append(_run(base, tmp / "out_base"))
                runs["head"].append(_run(REPO, tmp / "out_head"))
            worst = _largest_difference(tmp / "out_base", tmp / "out_head")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                           capture_output=True)
    keys = list(runs["head"][-1]["wall"])
    print(f"{'(seconds, best of ' + str(args.rounds) + ')':44s} {'baseline':>9s} {'head':>9s} "
          f"{'ratio':>6s}   cpu: {'baseline':>8s} {'head':>8s}")
    out = {}
    for k in keys:
        b = min(r["wall"].get(k, np.nan) for r in runs["baseline"])
        h = min(r["wall"][k] for r in runs["head"])
        bc = min(r["cpu"].get(k, np.nan) for r in runs["baseline"])
        hc = min(r["cpu"][k] for r in runs["head"])
        out[k] = {"baseline_s": b, "head_s": h, "baseline_cpu_s": bc, "head_cpu_s": hc}
        print(f"{k:44s} {b:9.2f} {h:9.2f} {b / h if h else np.nan:6.1f}   cpu: {bc:8.2f} "
              f"{hc:8.2f}")
    print(f"largest relative difference of the reports' numbers: {worst:.2e}")
    if args.json:
        Path(args.json).write_text(json.dumps({"sections": out, "max_rel_diff": worst},
                                              indent=2))
    return 0 if worst <= 1e-12 else 1


if __name__ == "__main__":
    raise SystemExit(main())
