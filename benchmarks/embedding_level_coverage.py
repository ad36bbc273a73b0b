"""Coverage of the embedding-level model on simulated ensembles with known truth.

Each replication draws a multi-embedding table from the embedding-level model
(:func:`bayesbias.ensemble.simulate_ensemble_table`, bootstrap resamples of one corpus that
is itself one draw around the language), fits

- ``embedding_level`` with the resamples labelled as such (the corpus-level target),
- ``embedding_level`` with the same embeddings labelled as seeds of one corpus (what a
  seed-only ensemble claims: its interval describes the corpus, not the language),
- ``crossed`` on the first embedding alone (a single-embedding fit),

and records whether each 90% interval of ``associated - none`` and ``associated -
different`` covers the true population contrast.

Usage: [KAPPA=0.015 KAPPA0=0.02] python benchmarks/embedding_level_coverage.py REPS [OUT.json]
[START]  (KAPPA, KAPPA0: the corpus-sample sds of the simulation)
"""

import json
import os
import sys
import time
import warnings

import numpy as np

from bayesbias.ensemble import simulate_ensemble_table
from bayesbias.models import fit_model

CONTRASTS = {"associated - none": ("associated", "none"),
             "associated - different": ("associated", "different")}


def covers(fit, truth, ci=0.9):
    c = fit.contrasts(ci_prob=ci, ci_kind="eti").set_index("contrast")
    out = {}
    for name, (a, b) in CONTRASTS.items():
        t = truth["mu_bar"][a] - truth["mu_bar"][b]
        out[name] = {"truth": t, "lower": float(c.loc[name, "lower"]),
                     "upper": float(c.loc[name, "upper"]),
                     "covered": bool(c.loc[name, "lower"] <= t <= c.loc[name, "upper"])}
    return out


def main(reps, out, start=0):
    results = []
    for rep in range(start, start + reps):
        t0 = time.time()
        table, truth = simulate_ensemble_table(kind="bootstrap", n_embeddings=6, seed=rep,
                                               words_per_class=3, stereotypes_per_class=4,
                                               n_human=6, n_none=8,
                                               kappa=float(os.environ.get("KAPPA", 0.015)),
                                               kappa0=float(os.environ.get("KAPPA0", 0.02)))
        row = {"rep": rep}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = dict(draws=400, tune=400, chains=2, cores=1, seed=rep)
            f = fit_model(table, "embedding_level", **kw)
            row["embedding_level"] = covers(f, truth)
            row["diagnostics_ok"] = f.diagnostics().ok
            seeds = table.assign(corpus_sample="original")
            row["seed_only"] = covers(fit_model(seeds, "embedding_level", **kw), truth)
            one = table[table["embedding"] == table["embedding"].iloc[0]]
            one = one.drop(columns=["embedding", "corpus_sample"])
            row["single"] = covers(fit_model(one, "crossed", **kw), truth)
        row["seconds"] = round(time.time() - t0, 1)
        results.append(row)
        print(json.dumps(row), flush=True)
        with open(out, "w") as fh:
            json.dump(results, fh, indent=1)
    for key in ("embedding_level", "seed_only", "single"):
        for name in CONTRASTS:
            share = np.mean([r[key][name]["covered"] for r in results])
            print(f"{key:16s} {name:24s} 90% coverage {share:.2f} ({len(results)} reps)")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "coverage.json",
         int(sys.argv[3]) if len(sys.argv) > 3 else 0)
