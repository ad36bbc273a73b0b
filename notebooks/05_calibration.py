# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Are the models calibrated? Simulation-based calibration of every spec
#
# Simulation-based calibration (SBC; Talts, Betancourt, Simpson, Vehtari & Gelman 2018):
# draw every parameter from a spec's priors, simulate a distance table shaped like the
# shipped religion table (3 classes x 5 protected words, 4 stereotypes per class, 85 human
# and 226 neutral attributes), fit the same spec, and rank each true quantity among L = 99
# thinned posterior draws. If simulation and fitting agree, every rank is uniform on
# 0..99. We rank the group-level means per connection, the contrasts behind the report's
# verdicts, and the sds (tau, sigma).
#
# Replications: 500 NUTS replications per spec by default (each fit takes about a second:
# 7-10 minutes per spec on 2 cores; add workers with `BAYESBIAS_SBC_WORKERS=2`, fewer
# replications with `BAYESBIAS_SBC_REPS`). With `BAYESBIAS_NOTEBOOK_SMALL=1` (CI) only a
# handful on a small table, which checks that everything runs, not calibration.
#
# The full run is recorded in `notebooks/sbc/` (ranks, tests and histograms per spec, from
# `bayesbias calibrate --model NAME --reps 500 --seed 2018 --plot ... -o ...`, which uses
# the same seed scheme, chunks and NUTS settings as this notebook, so it gives the same
# ranks): every spec passes, 0 divergent fits in 2,000. The exact marginal posterior
# used by `bayesbias design` and `fit --sensitivity` is calibrated with 500 replications in
# full mode and 100 in CI (it costs a fraction of a second per replication).

# %%
import os

import pandas as pd
from IPython.display import display

from bayesbias.models import available_models
from bayesbias.studies.calibration import DEFAULT_MODELS, sbc

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
REPS = int(os.environ.get("BAYESBIAS_SBC_REPS", 2 if SMALL else 500))
WORKERS = int(os.environ["BAYESBIAS_SBC_WORKERS"]) if "BAYESBIAS_SBC_WORKERS" in os.environ \
    else None
SEED = 2018
NUTS = (dict(shape="small", draws=150, tune=200, chains=1, n_keep=49) if SMALL
        else dict(shape="religion", draws=500, tune=500, chains=2, n_keep=99))
MODELS = [m for m in DEFAULT_MODELS if m in available_models()]
print(f"{REPS} NUTS replications per spec; specs: {', '.join(MODELS)}")

# %% [markdown]
# ## The exact marginal posterior of the hierarchical model
#
# Design studies and sensitivity refits integrate the cell means and `mu_bar` out
# analytically and integrate `(tau, sigma)` by quadrature. SBC checks that this is the
# posterior of the model that generated the data.

# %%
exact = sbc("hierarchical", method="exact", reps=500 if not SMALL else 100, seed=SEED,
            chunk_size=50, workers=WORKERS)
print(exact)
exact.plot()

# %% [markdown]
# ## NUTS fits of every spec

# %%
results = {}
for name in MODELS:
    results[name] = sbc(name, reps=REPS, seed=SEED, chunk_size=max(1, min(10, REPS // 2)),
                        workers=WORKERS, **NUTS)
    print(results[name], "\n")

# %%
summary = pd.DataFrame([{
    "spec": name, "replications": int(r.ranks.sizes["replication"]),
    "fits with divergences": int((r.divergent > 0).sum()),
    "smallest p": r.uniformity().attrs["min_p"],
    "Bonferroni p": r.uniformity().attrs["bonferroni_p"]}
    for name, r in [("hierarchical (exact)", exact), *results.items()]])
summary

# %%
for r in results.values():
    display(r.plot())  # a returned Figure shows when displayed (or as a cell's last value)

# %% [markdown]
# Reading the histograms: a smile (too many extreme ranks) means posteriors that are too
# narrow; a frown, too wide; a slope, a biased posterior. The grey band is where 99% of
# the bars of a uniform histogram fall. With few replications the test has little power:
# use the full 500 replications before drawing conclusions. The additive spec's `m`
# and `co` are not identified separately, so only its group means and contrasts (which
# are) are ranked.
