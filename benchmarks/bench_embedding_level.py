"""The embedding-level fit against a single crossed fit of one of its embeddings (paired).

    python benchmarks/bench_embedding_level.py [--table distances.csv] [--reps 3]
    python benchmarks/bench_embedding_level.py --large [--embeddings 32 --words 1000]

``--integrated`` adds the native kernel with the attribute x sample deviations integrated out
instead of sampled (``embedding_level.ATTRIBUTE_SAMPLE_INTEGRATED``; cold and warm), at
``--integrated-draws`` draws per chain (default: the family's).
``--before`` adds the PyMC model this family was sampled with until now
(``BAYESBIAS_KERNEL=pymc``, compiled by nutpie through numba; timed warm only).

Each timing is a fresh process (``python -c``) that reads the table and runs ``fit_model``
at the default settings: ``embedding_level`` on the whole table, ``crossed`` on its first
embedding. *Cold*: a new, empty ``BAYESBIAS_CACHE`` (the compiled kernels are built in that
process); *warm*: the cache of the previous cold run. The four runs of a repetition
alternate (crossed cold, embedding level cold, crossed warm, embedding level warm) so that
the load of a shared machine falls on both; the ratios are per repetition, then their
median. ``cpu_s`` is the process's user + system CPU time (all its threads, the imports
included): on a loaded machine the steadier measure. Without ``--table`` the table is
simulated at the issue's size: 6 embeddings x 2,352 rows (14 protected words, 30
stereotypes per class, 48 human and 60 neutral attributes).

``--large`` times ``fit_model`` on 32 embeddings x 1,000 protected words (960,000 rows) in
this process, at the default settings: without per-cell draws (32,000 x 4 cell means x
4,000 draws would be 4 GB; the model checks, the predictive check and the per-word
summaries come from the cell means' conditional moments, ``embedding_level.cell_moments``).
Prints the wall and CPU seconds (all threads) of the cells, the fit (sampling, posterior
completion, diagnostics and model checks, each also apart), the predictive check and the
summary, the peak RSS, and the diagnostics of every parameter and of the main ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
from bayesbias.distances import read_distance_table
from bayesbias.models import fit_model
import os
import bayesbias.models.embedding_level as el
if "EL_INTEGRATED" in os.environ:
    el.ATTRIBUTE_SAMPLE_INTEGRATED = os.environ["EL_INTEGRATED"] == "1"
table = read_distance_table(sys.argv[1])
model = sys.argv[2]
if model == "crossed":
    first = table["embedding"].iloc[0]
    table = table[table["embedding"] == first].drop(columns=["embedding", "corpus_sample"])
    table = table.reset_index(drop=True)
t1 = time.perf_counter()
kw = {"draws": int(os.environ["EL_DRAWS"])} if "EL_DRAWS" in os.environ else {}
fit = fit_model(table, model, seed=1, **kw)
t2 = time.perf_counter()
d = fit.diagnostics().to_dict()
import resource
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"fit_s": t2 - t1, "process_s": t2 - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "max_rhat": d["max_rhat"],
                  "min_ess_bulk": d["min_ess_bulk"], "divergences": d["divergences"],
                  "sampling_s": float(fit.idata.attrs["sampling_time_s"])}))
"""


def issue_table(path: Path) -> Path:
    """Write the simulated 6 x 2,352-row table to `path`."""
    from bayesbias.ensemble import simulate_ensemble_table

    t, _ = simulate_ensemble_table(kind="bootstrap", n_embeddings=6, words_per_class=7,
                                   stereotypes_per_class=30, n_human=48, n_none=60, seed=1)
    t.to_csv(path, index=False)
    return path


def child(table: Path, model: str, cache: str, draws: int | None = None) -> dict:
    env = dict(os.environ, BAYESBIAS_CACHE=cache)
    if model == "embedding_level_integrated":  # attribute x sample deviations integrated out
        env["EL_INTEGRATED"] = "1"
        model = "embedding_level"
        if draws is not None:
            env["EL_DRAWS"] = str(draws)
    if model == "embedding_level_pymc":  # before: the PyMC model compiled by nutpie (numba)
        env["BAYESBIAS_KERNEL"] = "pymc"
        model = "embedding_level"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(table), model], env=env,
                         capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0
    return res


def paired(table: Path, reps: int, before: bool = False,
           integrated: bool = False, integrated_draws: int | None = None) -> dict:
    rows = []
    models = ("crossed", "embedding_level") + (("embedding_level_pymc",) if before else ()) \
        + (("embedding_level_integrated",) if integrated else ())
    for r in range(reps):
        with tempfile.TemporaryDirectory() as cache:
            one = {}
            for mode in ("cold", "warm"):
                for model in models:
                    if model == "embedding_level_pymc" and mode == "cold":
                        continue  # its numba cache is PyTensor's own: timed warm only
                    if mode == "cold" or f"{model}_cache" not in one:
                        c = Path(cache) / f"{model}-{r}"
                        c.mkdir()
                        one[f"{model}_cache"] = str(c)
                    one[f"{model} {mode}"] = child(table, model, one[f"{model}_cache"],
                                                   integrated_draws)
                    print(f"rep {r} {model} {mode}: " + json.dumps(one[f"{model} {mode}"]),
                          flush=True)
            rows.append(one)
    out = {}
    for mode in ("cold", "warm"):
        for key in ("fit_s", "wall_s", "cpu_s"):
            ratios = [x[f"embedding_level {mode}"][key] / x[f"crossed {mode}"][key] for x in rows]
            out[f"{mode} {key} ratio"] = {"median": statistics.median(ratios),
                                          "all": [round(v, 2) for v in ratios]}
    if integrated:
        for mode in ("cold", "warm"):
            for key in ("fit_s", "wall_s", "cpu_s"):
                ratios = [x[f"embedding_level_integrated {mode}"][key] / x[f"crossed {mode}"][key]
                          for x in rows]
                out[f"integrated-u {mode} {key} ratio"] = {"median": statistics.median(ratios),
                                                        "all": [round(v, 2) for v in ratios]}
    if before:
        for key in ("fit_s", "wall_s", "cpu_s"):
            ratios = [x["embedding_level_pymc warm"][key] / x["embedding_level warm"][key]
                      for x in rows]
            out[f"before/after warm {key}"] = {"median": statistics.median(ratios),
                                               "all": [round(v, 2) for v in ratios]}
    return out


def large(embeddings: int, words: int) -> dict:
    import resource
    import warnings

    import numpy as np

    import bayesbias.models.embedding_level as el
    import bayesbias.models.marginal as mg
    import bayesbias.models.result as res
    from bayesbias.ensemble import simulate_ensemble_table
    from bayesbias.models import fit_model

    warnings.simplefilter("ignore")

    def cpu():
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    phases = {}

    def timed(mod, name, label):  # wall and CPU seconds of one step inside fit_model
        f = getattr(mod, name)

        def g(*a, **k):
            t, c = time.perf_counter(), cpu()
            out = f(*a, **k)
            w0, c0 = phases.get(label, (0.0, 0.0))
            phases[label] = (w0 + time.perf_counter() - t, c0 + cpu() - c)
            return out
        setattr(mod, name, g)

    for mod, name, label in ((el, "cells", "cells"), (mg, "_run_nutpie", "sampling"),
                             (el, "_complete", "complete"), (res, "diagnose", "diagnostics"),
                             (res, "_model_checks", "model_checks")):
        timed(mod, name, label)
    t, _ = simulate_ensemble_table(kind="bootstrap", n_embeddings=embeddings,
                                   words_per_class=words // 2, seed=1)
    t0, c0 = time.perf_counter(), cpu()
    fit = fit_model(t, "embedding_level", seed=1)
    t1, c1 = time.perf_counter(), cpu()
    ppc = fit.ppc()
    t2, c2 = time.perf_counter(), cpu()
    fit.summary()
    t3, c3 = time.perf_counter(), cpu()
    diag = fit.diagnostics()
    main_vars = ("mu_bar", "tau", "sigma", "eta", "omega", "gamma", "kappa0", "kappa", "psi",
                 "phi")
    tab = diag.table
    main = tab[tab["parameter"].str.split("[").str[0].isin(main_vars)]
    worst = tab.loc[tab["rhat"].idxmax(), "parameter"]
    return {"rows": len(t), "embeddings": embeddings, "words": words,
            "word_draws": fit.word_draws,
            "fit_model_s": round(t1 - t0, 2), "fit_model_cpu_s": round(c1 - c0, 2),
            **{f"{k}_s": round(w, 2) for k, (w, _) in phases.items()},
            **{f"{k}_cpu_s": round(c, 2) for k, (_, c) in phases.items()},
            "ppc_s": round(t2 - t1, 2), "ppc_cpu_s": round(c2 - c1, 2),
            "summary_s": round(t3 - t2, 2), "summary_cpu_s": round(c3 - c2, 2),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
            "max_rhat": round(float(tab["rhat"].max()), 4), "worst": worst,
            "min_ess_bulk": round(float(tab["ess_bulk"].min())),
            "max_rhat_main": round(float(main["rhat"].max()), 4),
            "min_ess_bulk_main": round(float(main["ess_bulk"].min())),
            "divergences": diag.divergences,
            "checks": [c.code + (": ok" if c.ok else ": FAILED") for c in fit.checks],
            "ppc_inside_89": round(float(ppc["inside_0.89"].iloc[-1]), 4),
            "sampling_time_s": round(float(fit.idata.attrs["sampling_time_s"]), 2),
            "n_parameters": len(tab), "mean_tree_steps": round(float(np.mean(
                fit.idata.sample_stats["n_steps"].values)), 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--before", action="store_true",
                    help="also time the PyMC model the family sampled before (warm)")
    ap.add_argument("--integrated-draws", type=int, default=None,
                    help="draws per chain of the integrated form (default: the family's)")
    ap.add_argument("--integrated", action="store_true",
                    help="also time the kernel with the attribute x sample deviations "
                         "integrated out (embedding_level.ATTRIBUTE_SAMPLE_INTEGRATED), cold "
                         "and warm")
    ap.add_argument("--embeddings", type=int, default=32)
    ap.add_argument("--words", type=int, default=1000)
    a = ap.parse_args(argv)
    if a.large:
        print(json.dumps(large(a.embeddings, a.words)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        table = a.table or issue_table(Path(tmp) / "issue_table.csv")
        print(json.dumps(paired(table, a.reps, a.before, a.integrated, a.integrated_draws),
                         indent=1))


if __name__ == "__main__":
    main()
