"""Benchmark: reading, validating and grouping distance tables of 5k to 10M rows.

What ``bayesbias fit --distances TABLE`` does before sampling: read the table
(:func:`~bayesbias.distances.read_distance_table`: validation and de-duplication) and group
it into cells (:func:`~bayesbias.models.cells.cells_from_table`). Each size runs in a fresh
subprocess per code version, so the peak resident memory (``VmHWM`` of
``/proc/self/status``; ``resource.getrusage`` ``ru_maxrss`` elsewhere) is that of one size;
the baseline is the same functions of an earlier commit
(default ``48085b0``, the code before the vectorised checks), extracted with ``git archive``
and imported through ``PYTHONPATH`` in the same run. Reported per size and version: seconds
to read + validate, to build the cells, their sum, peak RSS, the table's in-memory size, and
the ratios baseline / new.

The tables repeat the shipped ``published:religion:reddit`` table (4,830 rows) with the
attribute words renamed per copy (so every (word, attribute) pair stays unique and the cells,
15 words x 4 connections, stay fixed) and distances jittered by N(0, 0.01), as Parquet.

Run with ``nice python benchmarks/bench_scale.py`` (about 4 minutes on 2 cores);
``--sizes 5000 50000`` for a quick run; ``--json out.json`` to keep the figures;
``--no-baseline`` to time this checkout only.

``--fit``: instead, the whole ``bayesbias fit --distances TABLE --json`` (the default model)
on tables of the same sizes whose protected words, not attributes, are renamed per copy
(15 words x 322 attributes per 4,830 rows: 15,528 words at 5M rows, 31,056 at 10M; the
first shape has 333,592 attribute words at 5M rows, more attribute effects than the default
model's memory guard allows). One fresh process per size and version; reported: the wall
seconds of the command and of its steps (read + check, cells, sampling, the rest of the fit,
summary, predictive check, WEAT, diagnostics, text and JSON) and the peak RSS.

``--words 1000 10000 100000``: instead, the paper's hierarchical model (``--model crossed``
for the default, results in ``bench_scale_words_crossed.txt``: grouped kernel from 50,000
rows, per-word summaries above 2,000 words; ``fit_model(table, model)``, 4 chains x 1,000
draws) on simulated tables
of that many protected words with 60 rows each (2 classes, 10 stereotypes per class, 20
human and 20 none attributes; :func:`bayesbias.testing.simulate_table`, seed 0), then the
per-word means (``Fit.word_means``), the diagnostics and the saved fit file. ``--missing
0.1`` removes that share of the rows at random first (``default_rng(1)``): cells that meet
different attributes.
Reported per size and version: seconds to fit (sampling, per-word draws or summaries,
diagnostics and model checks), seconds for the per-word table, the fit file's size and the
peak RSS. ``--baseline-words`` limits the sizes the baseline runs at (its per-word draws take
about 1.9 GB per 1,000 words; at the default settings today's memory guard refuses more
than about 2,080 words). Results: ``benchmarks/results/bench_scale_words.txt``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = (5_000, 50_000, 500_000, 5_000_000, 10_000_000)
ROOT = Path(__file__).resolve().parents[1]

#: Source of the children's peak-memory helper (each child is a fresh interpreter).
PEAK_MB = r"""
import resource

def peak_mb():
    # VmHWM: the peak of this process image; ru_maxrss would carry over the parent's
    # resident size at fork (Linux), here the parent that built the table
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
"""

CHILD = r"""
import json, resource, sys, time
""" + PEAK_MB + r"""
t0 = time.perf_counter()
from bayesbias.distances import read_distance_table
from bayesbias.models.cells import cells_from_table
t1 = time.perf_counter()
table = read_distance_table(sys.argv[1])
t2 = time.perf_counter()
cells = cells_from_table(table, "word")
t3 = time.perf_counter()
import bayesbias
print(json.dumps({"file": bayesbias.__file__, "import_s": t1 - t0, "read_s": t2 - t1,
                  "cells_s": t3 - t2,
                  "rows": int(len(table)), "cells": int(cells.n.size),
                  "table_mb": float(table.memory_usage(deep=True).sum()) / 1e6,
                  "peak_mb": peak_mb(),
                  "n_sum": float(cells.n.sum()), "mean": cells.mean.tolist()}))
"""


FIT_CHILD = r"""
import contextlib, io, json, sys, time

""" + PEAK_MB + r"""
t_start = time.perf_counter()
import bayesbias, bayesbias.cli as cli, bayesbias.cli.fit as cf, bayesbias.datasets as ds
import bayesbias.models.result as res, bayesbias.models.sampling as smp, bayesbias.verdicts as vd
steps, fits = {}, []

def timed(owner, name, label, keep=None):
    f = getattr(owner, name)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            out = f(*a, **k)
            if keep is not None:
                keep.append(out)
            return out
        finally:
            steps[label] = steps.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)

timed(ds, "read_table", "read+check")
timed(smp, "cells_from_table", "cells")
timed(vd, "fit_for_verdict", "fit", fits)
for name in ("summary", "ppc", "diagnostics", "to_text"):
    timed(res.Fit, name, name)
timed(cf, "weat_reconciliation", "weat")
timed(cf, "emit", "emit")
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()) as out:
    rc = cli.main(["fit", "--distances", sys.argv[1], "--json"])
total = time.perf_counter() - t0
fit = fits[-1]
print(json.dumps({"file": bayesbias.__file__, "rc": rc, "import_s": t0 - t_start,
                  "command_s": total, "steps": steps, "peak_mb": peak_mb(),
                  "sampling_s": float(fit.idata.attrs.get("wall_time_s", float("nan"))),
                  "draws": int(fit.idata.attrs.get("draws", 0)),
                  "words": int(fit.cells.units.size),
                  "attributes": int(fit.cells.attributes.size)
                  if fit.cells.attributes is not None else 0,
                  "json_chars": len(out.getvalue())}))
"""


def make_words_table(rows: int, path: Path) -> None:
    """Write `rows` rows of the religion table with the protected words renamed per copy."""
    import numpy as np
    import pandas as pd

    from bayesbias.datasets import read_table

    base = read_table("published:religion:reddit")
    copies = -(-rows // len(base))
    big = pd.concat([base] * copies, ignore_index=True).iloc[:rows]
    k = (np.arange(rows) // len(base)).astype(str)
    d = np.clip(big["cosine_distance"].to_numpy()
                + np.random.default_rng(0).normal(0, 0.01, rows), 0.0, 2.0)
    pd.DataFrame({
        "protected_word": np.char.add(np.char.add(
            big["protected_word"].to_numpy().astype(str), "_"), k),
        "protected_class": big["protected_class"].astype(str).to_numpy(),
        "attribute": big["attribute"].astype(str).to_numpy(),
        "attribute_class": big["attribute_class"].astype(str).to_numpy(),
        "connection": big["connection"].astype(str).to_numpy(),
        "cosine_distance": d, "cosine_similarity": 1.0 - d}).to_parquet(path, index=False)


def run_fit(versions: dict, sizes, tmp: Path) -> list:
    """Time ``bayesbias fit`` at each size with each version (fresh processes)."""
    out = []
    names = ("read+check", "cells", "sampling", "fit", "summary", "ppc", "weat",
             "diagnostics", "to_text", "emit")
    print(f"{'rows':>10} {'version':>8} {'words':>6} {'total s':>8} "
          + " ".join(f"{n:>11}" for n in names) + f" {'peak MB':>8}")
    for rows in sizes:
        path = tmp / f"w{rows}.parquet"
        make_words_table(rows, path)
        got = {}
        for name, root in versions.items():
            res = subprocess.run([sys.executable, "-c", FIT_CHILD, str(path)],
                                 capture_output=True, text=True, cwd=tmp,
                                 env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
            if res.returncode:
                got[name] = {"error": res.stderr.strip().splitlines()[-1] if res.stderr
                             else f"exit {res.returncode}"}
                print(f"{rows:>10} {name:>8} error: {got[name]['error']}", flush=True)
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            if not Path(r["file"]).resolve().is_relative_to(Path(root).resolve()):
                raise RuntimeError(f"{root}: the child imported {r['file']}")
            st = dict(r["steps"], sampling=r["sampling_s"])
            # "fit": fit_for_verdict less its cells and sampling (model checks, summaries)
            st["fit"] = st.get("fit", 0.0) - st.get("cells", 0.0) - r["sampling_s"]
            r["steps"] = st
            got[name] = r
            print(f"{rows:>10} {name:>8} {r['words']:>6} {r['command_s']:>8.1f} "
                  + " ".join(f"{st.get(n, 0.0):>11.2f}" for n in names)
                  + f" {r['peak_mb']:>8.0f}", flush=True)
        path.unlink()
        new, old = got.get("new", {}), got.get("baseline", {})
        if "command_s" in new and "command_s" in old:
            print(f"{rows:>10} {'ratio':>8} {'':>6} {old['command_s'] / new['command_s']:>8.2f}"
                  + " ".join(f" {old['steps'].get(n, 0) / max(new['steps'].get(n, 0), 1e-9):>10.2f}"
                             for n in names)
                  + f" {old['peak_mb'] / new['peak_mb']:>8.2f}   (baseline / new)", flush=True)
        out.append({"rows": rows, **got})
    return out


WORDS_CHILD = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path

""" + PEAK_MB + r"""
words, model, missing = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
import numpy as np
from bayesbias.testing import simulate_table
from bayesbias.models import fit_model
table, _ = simulate_table("hierarchical", seed=0, n_classes=2, words_per_class=words // 2,
                          stereotypes_per_class=10, n_human=20, n_none=20)
if missing > 0:  # rows missing at random: cells meet different attributes
    table = table[np.random.default_rng(1).random(len(table)) >= missing]
    table = table.reset_index(drop=True)
table_mb = float(table.memory_usage(deep=True).sum()) / 1e6
peak0 = peak_mb()
t0 = time.perf_counter()
fit = fit_model(table, model)
t1 = time.perf_counter()
wm = fit.word_means()
t2 = time.perf_counter()
diag = fit.diagnostics()
with tempfile.TemporaryDirectory() as tmp:
    path = fit.save(Path(tmp) / "fit.nc")
    size = path.stat().st_size / 1e6
t3 = time.perf_counter()
import bayesbias
print(json.dumps({"file": bayesbias.__file__, "words": words, "rows": int(len(table)),
                  "fit_s": t1 - t0, "word_means_s": t2 - t1, "save_s": t3 - t2,
                  "table_mb": table_mb, "peak_before_fit_mb": peak0, "peak_mb": peak_mb(),
                  "file_mb": size, "max_rhat": diag.to_dict()["max_rhat"],
                  "word_draws_kept": "mu" in fit.posterior,
                  "mean_of_means": float(wm["mean"].mean()),
                  "mean_sd": float(wm["sd"].mean()),
                  "first": wm.iloc[:4][["mean", "sd", "lower", "upper"]].values.tolist()}))
"""


def run_words(versions: dict, sizes, baseline_sizes, model: str = "hierarchical",
              missing: float = 0.0) -> list:
    """Fit `model` at each word count with each version (fresh processes).

    `missing`: the share of rows removed at random (``default_rng(1)``).
    """
    out = []
    print(f"{'words':>8} {'version':>8} {'fit s':>7} {'words s':>7} {'file MB':>8} "
          f"{'peak MB':>8} {'table MB':>8}")
    for words in sizes:
        got = {}
        for name, root in versions.items():
            if name == "baseline" and words not in baseline_sizes:
                continue
            res = subprocess.run([sys.executable, "-c", WORDS_CHILD, str(words), model,
                                  str(missing)],
                                 capture_output=True, text=True, cwd=root,
                                 env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
            if res.returncode:
                got[name] = {"error": res.stderr.strip().splitlines()[-1] if res.stderr
                             else f"exit {res.returncode}"}
                print(f"{words:>8} {name:>8} error: {got[name]['error']}")
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            if not Path(r["file"]).resolve().is_relative_to(Path(root).resolve()):
                raise RuntimeError(f"{root}: the child imported {r['file']}")
            got[name] = r
            print(f"{words:>8} {name:>8} {r['fit_s']:>7.1f} {r['word_means_s']:>7.1f} "
                  f"{r['file_mb']:>8.0f} {r['peak_mb']:>8.0f} {r['table_mb']:>8.0f}"
                  f"   (per-word draws kept: {r['word_draws_kept']})", flush=True)
        new, old = got.get("new", {}), got.get("baseline", {})
        if "fit_s" in new and "fit_s" in old:
            print(f"{words:>8} {'ratio':>8} {old['fit_s'] / new['fit_s']:>7.2f} "
                  f"{old['word_means_s'] / max(new['word_means_s'], 1e-9):>7.2f} "
                  f"{old['file_mb'] / new['file_mb']:>8.2f} {old['peak_mb'] / new['peak_mb']:>8.2f}"
                  f"   (baseline / new; mean of the per-word means {old['mean_of_means']:.5f} / "
                  f"{new['mean_of_means']:.5f}, mean sd {old['mean_sd']:.5f} / "
                  f"{new['mean_sd']:.5f})", flush=True)
        out.append({"words": words, "model": model, "missing": missing, **got})
    return out


def make_table(rows: int, path: Path) -> None:
    """Write `rows` rows built from the shipped religion table (see the module docstring)."""
    import numpy as np
    import pandas as pd

    from bayesbias.datasets import read_table

    base = read_table("published:religion:reddit")
    copies = -(-rows // len(base))
    big = pd.concat([base] * copies, ignore_index=True).iloc[:rows]
    k = (np.arange(rows) // len(base)).astype(str)
    jitter = np.random.default_rng(0).normal(0, 0.01, rows)
    d = np.clip(big["cosine_distance"].to_numpy() + jitter, 0.0, 2.0)
    out = pd.DataFrame({
        "protected_word": big["protected_word"].astype(str).to_numpy(),
        "protected_class": big["protected_class"].astype(str).to_numpy(),
        "attribute": np.char.add(np.char.add(big["attribute"].to_numpy().astype(str), "_"), k),
        "attribute_class": big["attribute_class"].astype(str).to_numpy(),
        "connection": big["connection"].astype(str).to_numpy(),
        "cosine_distance": d, "cosine_similarity": 1.0 - d})
    out.to_parquet(path, index=False)


def run_child(pythonpath: Path, table: Path) -> dict:
    """Time one version on one table in a fresh interpreter."""
    # cwd: ``python -c`` puts the working directory first on sys.path
    res = subprocess.run([sys.executable, "-c", CHILD, str(table)], capture_output=True,
                         text=True, cwd=table.parent,
                         env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})
    if res.returncode:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if not Path(out["file"]).resolve().is_relative_to(pythonpath.resolve()):
        raise RuntimeError(f"{pythonpath}: the child imported {out['file']}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--baseline", help="commit of the baseline (default 48085b0, before the "
                    "vectorised checks; with --words 77fe148, before the per-word summaries; "
                    "cb72790 for the runs of issue 26's row targets)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--words", type=int, nargs="+",
                    help="fit the hierarchical model at these protected-word counts instead")
    ap.add_argument("--baseline-words", type=int, nargs="*", default=[1000],
                    help="word counts the baseline runs at (default 1000)")
    ap.add_argument("--model", default="hierarchical",
                    help="with --words: the model fitted (default hierarchical)")
    ap.add_argument("--missing", type=float, default=0.0,
                    help="with --words: share of rows removed at random (default 0; 0.1: "
                         "cells that meet different attributes)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per size and version, alternating; the best is reported "
                         "(default 1)")
    ap.add_argument("--fit", action="store_true",
                    help="time the whole `bayesbias fit` on tables of many protected words")
    args = ap.parse_args(argv)

    out = []
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        tmp = Path(tmp)
        versions = {"new": ROOT}
        if not args.no_baseline:
            base = tmp / "baseline"
            base.mkdir()
            commit = args.baseline or ("77fe148" if args.words else "48085b0")
            # the shipped model specs (models/) sit next to the package
            paths = ["bayesbias", "models"] if args.words or args.fit else ["bayesbias"]
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, *paths],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            versions["baseline"] = base
        if args.fit:
            out = run_fit(versions, args.sizes, tmp)
            if args.json:
                args.json.write_text(json.dumps(out, indent=1))
            return 0
        if args.words:
            out = run_words(versions, args.words, set(args.baseline_words), args.model,
                            args.missing)
            if args.json:
                args.json.write_text(json.dumps(out, indent=1))
            return 0
        print(f"{'rows':>10} {'version':>8} {'read+check s':>12} {'cells s':>8} {'total s':>8} "
              f"{'peak MB':>8} {'table MB':>8}")
        for rows in args.sizes:
            path = tmp / f"t{rows}.parquet"
            make_table(rows, path)
            # versions alternate over the repeats (the first child of a size warms the file
            # and import caches); each figure is the best of the repeats
            got = {}
            for _ in range(args.repeat):
                for name, root in versions.items():
                    r = run_child(root, path)
                    best = got.get(name)
                    if best is None or "error" in r:
                        got[name] = best if best is not None and "error" in r else r
                    elif "error" not in best:
                        for k in ("read_s", "cells_s", "peak_mb"):
                            best[k] = min(best[k], r[k])
            path.unlink()
            for name, r in got.items():
                if "error" in r:
                    print(f"{rows:>10} {name:>8} error: {r['error']}")
                    continue
                r["total_s"] = r["read_s"] + r["cells_s"]
                print(f"{rows:>10} {name:>8} {r['read_s']:>12.2f} {r['cells_s']:>8.2f} "
                      f"{r['total_s']:>8.2f} {r['peak_mb']:>8.0f} {r['table_mb']:>8.0f}")
            new, old = got.get("new", {}), got.get("baseline", {})
            if "total_s" in new and "total_s" in old:
                same = new["n_sum"] == old["n_sum"] and new["mean"] == old["mean"]
                print(f"{rows:>10} {'ratio':>8} {old['read_s'] / new['read_s']:>12.2f} "
                      f"{old['cells_s'] / new['cells_s']:>8.2f} "
                      f"{old['total_s'] / new['total_s']:>8.2f} "
                      f"{old['peak_mb'] / new['peak_mb']:>8.2f}   (baseline / new; "
                      f"same cells: {same})")
            for r in got.values():
                r.pop("mean", None)
            out.append({"rows": rows, **{k: v for k, v in got.items()}})
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
