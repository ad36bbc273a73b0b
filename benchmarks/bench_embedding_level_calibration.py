"""Calibration of embedding_level on simulated bootstrap ensembles, planted or null (reduced).

    python benchmarks/bench_embedding_level_calibration.py planted|null REPS START > out.jsonl

Each replication draws a 6-embedding bootstrap ensemble from
:func:`bayesbias.ensemble.simulate_ensemble_table` (6 protected words, 4 stereotypes per
class, 6 human and 8 neutral attributes; ``planted``: the package's default means, 0.80 /
0.86 / 0.85 / 0.86, ``null``: all 0.86), fits ``embedding_level`` (2 chains x 400 draws
after 400 tuning steps, the settings of ``embedding_level_coverage.py``) and prints one JSON
line: the verdict code, divergences, and whether each 90% equal-tailed interval covers the
true contrast of the population means (``truth["mu_bar"]``).
"""
import json
import sys
import time
import warnings

from bayesbias.ensemble import simulate_ensemble_table
from bayesbias.models import fit_model
from bayesbias.verdicts import verdict_from_fit

warnings.simplefilter("ignore")
kind, reps, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mb = (0.80, 0.86, 0.85, 0.86) if kind == "planted" else (0.86, 0.86, 0.86, 0.86)
for rep in range(start, start + reps):
    t0 = time.time()
    t, truth = simulate_ensemble_table(kind="bootstrap", n_embeddings=6, mu_bar=mb, seed=rep,
                                       words_per_class=3, stereotypes_per_class=4, n_human=6,
                                       n_none=8)
    f = fit_model(t, "embedding_level", draws=400, tune=400, chains=2, cores=1, seed=rep,
                  checked=False)
    c = f.contrasts(ci_prob=0.9, ci_kind="eti").set_index("contrast")
    row = {"rep": rep, "kind": kind, "verdict": verdict_from_fit(f, "").code,
           "div": f.diagnostics().to_dict()["divergences"], "seconds": round(time.time() - t0, 1)}
    for name in ("associated - none", "associated - different", "associated - human"):
        a, b = name.split(" - ")
        tv = truth["mu_bar"][a] - truth["mu_bar"][b]
        row[name] = bool(c.loc[name, "lower"] <= tv <= c.loc[name, "upper"])
    print(json.dumps(row), flush=True)
