"""Benchmark (run by hand): the main job's wall time, today's code against a baseline commit.

Measured in the same run, in fresh processes, for this tree's HEAD and a baseline commit
(default ``7f4b1cd``, the code before issue 11), each checked out in a temporary worktree:

- ``bayesbias report`` on the built-in data (default embedding, word lists religion, race
  and gender: three fits, comparators and metrics), cold and warm;
- ``bayesbias report --distances published:...`` for religion, race and gender (the report's
  three word lists, on the shipped published tables): cold (empty PyTensor and numba
  compile caches, new process) and warm (same caches, new process);
- ``bayesbias fit --distances published:religion:reddit`` cold and warm;
- hierarchical and additive fits on 5k to 5M simulated rows (sufficient statistics, in one
  process, so the first size includes compiling), the additive model on another 5k-row table
  (per-connection and single residual sd) and saving one fit to netCDF;
- quality of today's code: min bulk/tail ESS of group means, contrasts and per-word means,
  max r-hat and divergences on the shipped reddit tables, and the largest difference of its
  group means from the baseline's.

Run ``nice python benchmarks/bench_report.py`` (about 10 minutes on 2 loaded cores);
``--quick`` skips the 500k and 5M sizes; ``--report-only`` times only the default report
(plus ``--jobs 1``), wall and CPU (the process and its children); ``--json out.json`` keeps
the figures. Both trees run with this interpreter; the baseline is put first on
``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOPICS = ("religion", "race", "gender")
SIZES = (5_000, 50_000, 500_000, 5_000_000)

_SIZES_CODE = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
from bayesbias.testing import simulate_table
from bayesbias.models import fit_model
sizes = json.loads(sys.argv[1])
out = []
for rows in sizes:
    k = rows / 4950
    table, _ = simulate_table(seed=3, n_classes=3, words_per_class=5,
                              stereotypes_per_class=round(5 * k), n_human=round(85 * k),
                              n_none=round(230 * k))
    t0 = time.perf_counter()
    fit = fit_model(table, "hierarchical", seed=1)
    out.append({"what": f"hierarchical {len(table):,} rows", "s": time.perf_counter() - t0,
                "min_ess_bulk": float(fit.diagnostics().table["ess_bulk"].min())})
    t0 = time.perf_counter()
    fit = fit_model(table, "additive", seed=1)
    out.append({"what": f"additive {len(table):,} rows", "s": time.perf_counter() - t0,
                "min_ess_bulk": float(fit.diagnostics().table["ess_bulk"].min())})
for sd in ("single", "per_connection"):
    table, _ = simulate_table("additive", seed=4, words_per_class=5, n_human=40, n_none=120,
                              residual_sd=sd)
    t0 = time.perf_counter()
    fit = fit_model(table, "additive", seed=1, residual_sd=sd)
    d = fit.diagnostics()
    out.append({"what": f"additive ({sd} sd) {len(table):,} rows",
                "s": time.perf_counter() - t0,
                "min_ess_bulk": float(d.table["ess_bulk"].min())})
import tempfile, pathlib
with tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    fit.save(pathlib.Path(tmp) / "fit.nc")
    out.append({"what": "save one fit (netCDF)", "s": time.perf_counter() - t0,
                "min_ess_bulk": float("nan")})
print("RESULT" + json.dumps(out))
"""

_QUALITY_CODE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import arviz as az
from bayesbias.datasets import published_table
from bayesbias.models import fit_model
out = {}
for topic in sys.argv[1].split(","):
    fit = fit_model(published_table(topic, "reddit"), "hierarchical", seed=1)
    q = {"group_means": fit.group_mean_draws().mean(("chain", "draw")).values.tolist()}
    if sys.argv[2] == "full":
        ess = []
        for da in (fit.group_mean_draws(), fit.contrast_draws(), fit.word_mean_draws()):
            if da.name == "mean":  # per-word means of cells with rows
                da = da.where(fit._n() > 0)
            ds = da.to_dataset(name="x")
            for method in ("bulk", "tail"):
                ess.append(float(az.ess(ds, method=method)["x"].min()))
        d = fit.diagnostics()
        q.update(min_ess=min(ess), max_rhat=float(d.table["rhat"].max()),
                 divergences=d.divergences)
    out[topic] = q
print("RESULT" + json.dumps(out))
"""


def _env(root: Path | None, cache: Path) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", NUMBA_CACHE_DIR=str(cache / "numba"),
               PYTENSOR_FLAGS=f"compiledir={cache / 'pytensor'}",
               BAYESBIAS_CACHE=str(cache / "bayesbias"))
    if root is not None:
        env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return env


#: CPU seconds (user + system, the process and its children) of the last :func:`_run`.
_LAST_CPU = [float("nan")]


def _run(args: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                         text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    _LAST_CPU[0] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if res.returncode not in (0, 3):  # 3: a check failed (still a complete run)
        raise RuntimeError(f"{' '.join(args)} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return wall, res.stdout


def _result(stdout: str):
    return json.loads(stdout.split("RESULT", 1)[1])


def measure(root: Path, label: str, sizes, work: Path, reports: bool = True,
            reports_only: bool = False) -> dict:
    """Time the tree checked out at `root`."""
    out = {}
    cache = work / f"cache-{label}"
    env = _env(root, cache)
    env_default = _env(root, work / f"cache-{label}-default")
    for run in ("cold", "warm") if reports else ():
        wall, _ = _run(["-m", "bayesbias", "report", "-o",
                        str(work / f"default-{label}-{run}")], env_default, work)
        out[f"report built-in data {run}"] = wall
        out[f"report built-in data {run}, CPU"] = _LAST_CPU[0]
        print(f"  {label}: report (built-in data) {run} {wall:.1f} s, {_LAST_CPU[0]:.1f} s CPU",
              flush=True)
    if reports:  # one process, as before --jobs (same caches: warm)
        wall, _ = _run(["-m", "bayesbias", "report", "--jobs", "1", "-o",
                        str(work / f"default-{label}-jobs1")], env_default, work)
        out["report built-in data warm, --jobs 1"] = wall
        out["report built-in data warm, --jobs 1, CPU"] = _LAST_CPU[0]
        print(f"  {label}: report (built-in data) warm --jobs 1 {wall:.1f} s, "
              f"{_LAST_CPU[0]:.1f} s CPU", flush=True)
    if reports_only:
        return out
    report = ["-m", "bayesbias", "report"]
    for t in TOPICS:
        report += ["--distances", f"published:{t}:reddit"]
    for run in ("cold", "warm") if reports else ():
        wall, _ = _run(report + ["-o", str(work / f"report-{label}-{run}")], env, work)
        out[f"report {run}"] = wall
        print(f"  {label}: report {run} {wall:.1f} s", flush=True)
    env_fit = _env(root, work / f"cache-{label}-fit")
    for run in ("cold", "warm"):
        wall, _ = _run(["-m", "bayesbias", "fit", "--distances", "published:religion:reddit"],
                       env_fit, work)
        out[f"fit religion {run}"] = wall
        print(f"  {label}: fit {run} {wall:.1f} s", flush=True)
    _, stdout = _run(["-c", _SIZES_CODE, json.dumps(list(sizes))],
                     _env(root, work / f"cache-{label}-sizes"), work)
    for r in _result(stdout):
        out[r["what"]] = r["s"]
        print(f"  {label}: {r['what']} {r['s']:.1f} s (min bulk ESS {r['min_ess_bulk']:.0f})",
              flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="7f4b1cd", help="commit to compare with")
    ap.add_argument("--current", default="HEAD",
                    help="commit measured as 'this tree' (checked out too, so that edits made "
                         "while the benchmark runs do not leak in)")
    ap.add_argument("--quick", action="store_true", help="sizes 5k and 50k only")
    ap.add_argument("--fit-only", action="store_true",
                    help="only the `fit` command, cold and warm, and the fits by size (no "
                         "reports, no quality run)")
    ap.add_argument("--report-only", action="store_true",
                    help="only the default report, cold and warm, and --jobs 1 (wall and CPU)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        work = Path(tmp)
        base, cur = work / "baseline", work / "current"
        for path, commit in ((base, args.baseline), (cur, args.current)):
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q",
                            str(path), commit], check=True)
        try:
            print(f"baseline {args.baseline}:", flush=True)
            old = measure(base, "baseline", sizes, work, not args.fit_only, args.report_only)
            print("this tree:", flush=True)
            new = measure(cur, "current", sizes, work, not args.fit_only, args.report_only)
            if not (args.fit_only or args.report_only):
                _, q_new = _run(["-c", _QUALITY_CODE, ",".join(TOPICS), "full"],
                                _env(cur, work / "cache-current"), work)
                _, q_old = _run(["-c", _QUALITY_CODE, ",".join(TOPICS), "means"],
                                _env(base, work / "cache-baseline"), work)
        finally:
            for path in (base, cur):
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(path)], check=False)
    print(f"\n{'what':45s} {'baseline s':>11s} {'this s':>8s} {'ratio':>7s}")
    for k in new:
        print(f"{k:45s} {old.get(k, float('nan')):11.2f} {new[k]:8.2f} "
              f"{old.get(k, float('nan')) / new[k]:6.1f}x")
    if args.fit_only or args.report_only:
        if args.json:
            Path(args.json).write_text(json.dumps({"baseline": old, "current": new}, indent=1))
        return 0
    q_new, q_old = _result(q_new), _result(q_old)
    print("\nquality (this tree, shipped reddit tables, 4 chains x 1000 draws):")
    for t in TOPICS:
        q, o = q_new[t], q_old[t]
        gap = max(abs(a - b) for a, b in zip(q["group_means"], o["group_means"], strict=True))
        print(f"  {t:9s} min bulk/tail ESS (group means, contrasts, per-word means) "
              f"{q['min_ess']:.0f}; max r-hat {q['max_rhat']:.3f}; divergences "
              f"{q['divergences']}; group means vs baseline: max |diff| {gap:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"baseline": old, "current": new,
                                               "quality": q_new, "baseline_means": q_old},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
