"""Benchmark (run by hand): the default ``bayesbias report`` against the paper's model alone.

Times, in alternating runs in fresh processes of this tree's code,

- ``bayesbias report`` (the default: crossed model, the paper's hierarchical model beside it,
  robustness line), and
- ``bayesbias report --model hierarchical --no-robustness`` (the baseline: one model),

both on the embedded default data (built-in GloVe subset; religion, race, gender), each with
``--quiet`` into a temporary folder. For every run: wall time, CPU seconds (user + system of
the process and of the worker processes it waited for) and peak RSS (the largest process), as
``farm-bench`` reports them. The target of issue 49: default wall at most 1.0x the baseline's.

The machine is shared: runs alternate (A B A B ...) so that both see the same load, and the
summary gives medians and the median of the per-round ratios, with the load average before and
after. One warm-up run of each is made first and not counted (compile caches, page cache);
``--cold`` instead gives every run an empty kernel cache (``BAYESBIAS_CACHE``): the first run
after installing.

Run ``python benchmarks/bench_report_default.py`` (``--rounds 5`` for more pairs); the
summary is printed and appended to ``benchmarks/results/bench_report_default.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "bench_report_default.txt"

COMMANDS = {
    "default": ["report"],
    "hierarchical --no-robustness": ["report", "--model", "hierarchical", "--no-robustness"],
}


def run_once(args: list[str], out: Path, cache: Path | None, tree: Path = REPO) -> dict:
    """Run ``python -m bayesbias ARGS --quiet -o OUT``; wall, CPU-s and peak RSS of the run."""
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if cache is not None:
        env["BAYESBIAS_CACHE"] = str(cache)
    cmd = [sys.executable, "-m", "bayesbias", *args, "--quiet", "-o", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=out.parent, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # wait4: the child's rusage, its own and that of the workers it waited for
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="pairs of runs (default 3)")
    ap.add_argument("--cold", action="store_true",
                    help="an empty kernel cache for every run (default: warm, after a "
                         "warm-up run of each)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no warm-up runs (the caches are known to be warm)")
    ap.add_argument("--tree", type=Path, default=REPO,
                    help="the source tree whose bayesbias runs, first on PYTHONPATH (default: "
                         "this one; e.g. an export of an earlier commit)")
    ap.add_argument("--against-tree", type=Path, default=None,
                    help="also time the default report of this source tree (e.g. an export "
                         "of an earlier commit) in the same rotation: the change's own effect")
    ap.add_argument("--no-save", action="store_true", help="do not append to the results file")
    args = ap.parse_args(argv)
    commands = dict(COMMANDS)
    trees = dict.fromkeys(commands, args.tree)
    if args.against_tree is not None:
        commands["default (earlier tree)"] = COMMANDS["default"]
        trees["default (earlier tree)"] = args.against_tree
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "bayesbias"],
                           capture_output=True, text=True).stdout.strip()
    load0 = os.getloadavg()
    runs = {name: [] for name in commands}
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench_report_default_") as tmp:
        tmp = Path(tmp)

        def one(name: str, tag: str):
            cache = Path(tempfile.mkdtemp(dir=tmp)) if args.cold else None
            return run_once(commands[name], tmp / f"{tag}_{len(os.listdir(tmp))}", cache,
                            trees[name])

        if not (args.cold or args.no_warmup):
            for name in commands:
                one(name, "warmup")
        for r in range(args.rounds):
            order = list(commands) if r % 2 == 0 else list(commands)[::-1]
            for name in order:
                res = one(name, "run")
                runs[name].append(res)
                line = (f"round {r + 1} {name:30s} {res['wall']:6.1f} s wall "
                        f"{res['cpu']:6.1f} CPU-s {res['rss_mb']:7.0f} MB peak RSS")
                print(line, flush=True)
                lines.append(line)
    load1 = os.getloadavg()
    d, h = runs["default"], runs["hierarchical --no-robustness"]
    med = {name: {k: statistics.median(x[k] for x in rs) for k in ("wall", "cpu", "rss_mb")}
           for name, rs in runs.items()}
    ratios = [a["wall"] / b["wall"] for a, b in zip(d, h, strict=True)]
    cpu_ratios = [a["cpu"] / b["cpu"] for a, b in zip(d, h, strict=True)]
    summary = [
        f"medians: default {med['default']['wall']:.1f} s wall, {med['default']['cpu']:.1f} "
        f"CPU-s, {med['default']['rss_mb']:.0f} MB; hierarchical --no-robustness "
        f"{med['hierarchical --no-robustness']['wall']:.1f} s wall, "
        f"{med['hierarchical --no-robustness']['cpu']:.1f} CPU-s, "
        f"{med['hierarchical --no-robustness']['rss_mb']:.0f} MB",
        f"wall ratio default / baseline: median of rounds {statistics.median(ratios):.2f}x "
        f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}); CPU ratio "
        f"{statistics.median(cpu_ratios):.2f}x (target: wall <= 1.00x)",
    ]
    if args.against_tree is not None:
        e = runs["default (earlier tree)"]
        summary.append(
            f"default, this tree / earlier tree ({args.against_tree}): wall median of rounds "
            f"{statistics.median(a['wall'] / b['wall'] for a, b in zip(d, e, strict=True)):.2f}x,"
            f" CPU {statistics.median(a['cpu'] / b['cpu'] for a, b in zip(d, e, strict=True)):.2f}x"
            f"; earlier tree's default / baseline: wall "
            f"{statistics.median(a['wall'] / b['wall'] for a, b in zip(e, h, strict=True)):.2f}x")
    commit = f"commit {commit}"
    if args.tree.resolve() != REPO:
        commit, dirty = f"tree {args.tree}", ""
    head = (f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {commit}"
            f"{' + uncommitted changes' if dirty else ''}, {os.cpu_count()} cores, "
            f"{'cold (empty kernel cache per run)' if args.cold else 'warm caches'}, "
            f"{args.rounds} alternating rounds, load average {load0[0]:.1f} -> {load1[0]:.1f}\n"
            f"#   python benchmarks/bench_report_default.py {' '.join(argv or sys.argv[1:])}")
    text = "\n".join([head, *lines, *summary]) + "\n"
    print("\n".join(summary))
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with open(RESULTS, "a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
