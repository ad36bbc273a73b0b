"""Benchmark (run by hand): the report's robustness line, this tree against an earlier commit.

Times ``bayesbias.report.sections.robustness(table, "crossed", 0.89, seed, screen=True)`` (the
screened leave-one-out and resampled-list refits, ``n_draws=250``, mixture estimator: what
only the default ``bayesbias report`` pays, issue 49) on the three shipped lists of the
default data (religion, race, gender on the built-in GloVe subset), in CPU seconds of one
pass over the three lists after a warm-up pass, in fresh processes of

- this tree, and
- ``git archive REF`` (default ``main``) extracted to a temporary folder,

alternating (A B A B ...: both see the same load on a shared machine); best and median of the
rounds. Each process also pickles its ``Sensitivity`` results (the three lists at seeds 1 and
7 and four more shipped lists at seed 1); the two trees' frames are compared value by value
(every float bit for bit, every verdict and share), and the largest relative difference is
reported.

Run ``python benchmarks/bench_robustness.py`` (``--rounds 5``, ``--ref <commit>``); the
summary is printed and appended to ``benchmarks/results/bench_robustness.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "bench_robustness.txt"
LISTS = ("religion", "race", "gender")
CHECK_LISTS = ("weat1", "weat7", "madlibs_identity", "weat6")

CHILD = r"""
import logging, pickle, sys, time, warnings
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
from bayesbias.inputs.distances import distance_table
from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
from bayesbias.inputs.wordlists import load_wordlist
from bayesbias.report.sections import robustness

emb = load_embedding(default_embedding_path())
tabs = {n: distance_table(emb, load_wordlist(n), on_missing="drop")
        for n in LISTS + CHECK_LISTS}
main = [tabs[n] for n in LISTS]
for t in main:  # warm-up: imports, caches
    robustness(t, "crossed", 0.89, 1, screen=True)
c = time.process_time()
for t in main:
    robustness(t, "crossed", 0.89, 1, screen=True)
cpu = time.process_time() - c
out = {}
if sys.argv[1] != "-":
    for n in LISTS + CHECK_LISTS:
        for seed in ((1, 7) if n in LISTS else (1,)):
            s = robustness(tabs[n], "crossed", 0.89, seed, screen=True)
            out[(n, seed)] = {"baseline": s.baseline, "leave_one_out": s.leave_one_out,
                              "resampled": s.resampled, "settings": s.settings}
    with open(sys.argv[1], "wb") as f:
        pickle.dump(out, f)
print(cpu)
"""


def run_child(tree: Path, pickle_path: str) -> float:
    """CPU seconds of one timed pass in a fresh process of `tree`'s code."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(tree))
    code = f"LISTS = {LISTS!r}\nCHECK_LISTS = {CHECK_LISTS!r}\n" + CHILD
    res = subprocess.run([sys.executable, "-c", code, pickle_path], env=env, cwd=tree,
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{tree}: child failed:\n{res.stderr}")
    return float(res.stdout.strip().splitlines()[-1])


def compare(a: dict, b: dict) -> tuple[float, list[str]]:
    """Largest relative difference of the float columns, and every other mismatch."""
    import numpy as np

    worst, bad = 0.0, []
    for key in a:
        for part in ("baseline", "leave_one_out", "resampled"):
            x, y = a[key][part], b[key][part]
            if list(x.columns) != list(y.columns) or x.shape != y.shape:
                bad.append(f"{key} {part}: shape or columns")
                continue
            for col in x.columns:
                u, v = x[col].to_numpy(), y[col].to_numpy()
                if u.dtype.kind == "f":
                    same = (u == v) | (np.isnan(u) & np.isnan(v))
                    if not same.all():
                        d = np.abs(u - v)[~same] / np.maximum(np.abs(u[~same]), 1e-300)
                        worst = max(worst, float(np.nanmax(d)))
                elif not (u == v).all():
                    bad.append(f"{key} {part} {col}: {(u != v).sum()} differ")
        if a[key]["settings"] != b[key]["settings"]:
            bad.append(f"{key}: settings differ")
    return worst, bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="pairs of runs (default 5)")
    ap.add_argument("--ref", default="main", help="the commit to compare with (default main)")
    ap.add_argument("--no-save", action="store_true", help="do not append to the results file")
    args = ap.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=True).stdout.strip()
    ref = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.ref],
                         capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                            "bayesbias"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        arch = subprocess.run(["git", "-C", str(REPO), "archive", args.ref],
                              capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=arch, check=True)
        trees = {"this tree": REPO, f"{args.ref} ({ref})": old}
        times = {k: [] for k in trees}
        load0 = os.getloadavg()
        for r in range(args.rounds):
            for name, tree in trees.items():
                path = str(Path(tmp) / f"{r}-{len(times[name])}-{tree.name}.pkl") \
                    if r == 0 else "-"
                times[name].append(run_child(tree, path))
                print(f"round {r + 1} {name}: {times[name][-1]:.3f} CPU-s", flush=True)
        load1 = os.getloadavg()
        pk = sorted(Path(tmp).glob("0-*.pkl"))
        res = [pickle.loads(p.read_bytes()) for p in pk]
        worst, bad = compare(res[0], res[1])
    names = list(trees)
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{stamp}  HEAD {rev}{' + uncommitted changes' if dirty else ''} vs "
             f"{args.ref} {ref}; robustness line (crossed, screen, 250 draws) on "
             f"{', '.join(LISTS)}; {args.rounds} alternating rounds, load "
             f"{load0[0]:.2f} -> {load1[0]:.2f}"]
    for k in names:
        lines.append(f"  {k:22s} best {best[k]:.3f} CPU-s  median {med[k]:.3f}  "
                     f"({', '.join(f'{t:.3f}' for t in times[k])})")
    lines.append(f"  speed-up: {best[names[1]] / best[names[0]]:.2f}x best, "
                 f"{med[names[1]] / med[names[0]]:.2f}x median")
    lines.append(f"  results ({len(res[0])} list x seed runs): largest relative difference "
                 f"{worst:.3g}; {'no other difference' if not bad else '; '.join(bad[:5])}")
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a") as f:
            f.write(text + "\n\n")
    return 1 if bad or worst > 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
