"""Benchmark (run by hand): what Dask workers buy for fits of 100,000 protected words.

A fit is one task: its chains sample in one process (on its cores), so one fit does not
split over workers. Many fits do: the tables of several word lists, embeddings or corpus
bootstraps, one task each (:func:`bayesbias.parallel.run_tasks`). Each task here simulates
a table of ``--words`` protected words with 60 rows each (as ``bench_scale.py --words``:
:func:`bayesbias.testing.simulate_table`, 2 classes, 10 stereotypes per class, 20 human and
20 none attributes, a seed per task), fits the default model (``crossed``, 4 chains x 1,000
draws) and its per-word table, and returns a few numbers of it. Timed for ``--fits`` tasks:
in this process, then on a local cluster of 1 and of 2 workers (``--workers``); a cluster of
many machines (``--scheduler``) divides the same tasks over its workers. Reported per run:
wall seconds (the cluster's start included, and apart), the tasks' own seconds, the speedup
over in-process, and that every run gave the same numbers (the fits are seeded by their
task, so the numbers cannot depend on the workers).

Run ``nice python benchmarks/bench_cluster_fits.py`` (about 3 minutes on 2 cores, 1.1 GB per
worker); ``--words 10000 --fits 8`` for smaller fits. Results:
``benchmarks/results/bench_cluster_fits.txt``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def fit_task(words: int, rng=None) -> dict:
    """Simulate a table of `words` words (seeded by `rng`), fit it; return a few numbers."""
    import warnings

    from bayesbias.models import fit_model
    from bayesbias.testing import simulate_table

    seed = int(rng.integers(2**31))
    t0 = time.perf_counter()
    table, _ = simulate_table("hierarchical", seed=seed, n_classes=2,
                              words_per_class=words // 2, stereotypes_per_class=10,
                              n_human=20, n_none=20)
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "crossed", seed=seed)
        means = fit.word_means()
    t2 = time.perf_counter()
    return {"seed": seed, "rows": int(len(table)), "simulate_s": t1 - t0, "fit_s": t2 - t1,
            "mean_of_means": float(means["mean"].mean()),
            "mean_sd": float(means["sd"].mean()),
            "contrasts": fit.contrasts()["mean"].round(12).tolist()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=100_000)
    ap.add_argument("--fits", type=int, default=4)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--scheduler", help="address of a running Dask scheduler, timed too")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)

    from bayesbias.parallel import run_tasks

    tasks = [((k,), (args.words,)) for k in range(args.fits)]
    runs = [("in process", {})] + [(f"{w} worker(s)", {"workers": w}) for w in args.workers]
    if args.scheduler:
        runs.append((args.scheduler, {"scheduler": args.scheduler}))
    print(f"# {args.fits} fits of {args.words:,} protected words (60 rows each), one task per "
          "fit; seconds")
    print(f"{'run':>16} {'wall':>7} {'start':>6} {'tasks':>7} {'per fit':>8} {'speedup':>8}"
          "  same numbers")
    out, first, base = [], None, None
    for name, kw in runs:
        res = run_tasks(fit_task, tasks, seed=args.seed, label="fits", **kw)
        got = [res.results[k] for k, _ in tasks]
        numbers = [(g["mean_of_means"], g["mean_sd"], g["contrasts"]) for g in got]
        first = numbers if first is None else first
        base = res.wall_time_s if base is None else base
        startup = getattr(res, "startup_s", 0.0) or 0.0
        per_fit = sum(g["simulate_s"] + g["fit_s"] for g in got) / len(got)
        print(f"{name:>16} {res.wall_time_s:>7.1f} {startup:>6.1f} {res.task_time_s:>7.1f} "
              f"{per_fit:>8.1f} {base / res.wall_time_s:>8.2f}  {numbers == first}",
              flush=True)
        out.append({"run": name, "wall_s": res.wall_time_s, "startup_s": startup,
                    "task_s": res.task_time_s, "per_fit_s": per_fit, "fits": got})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
