# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Group rates of a classifier: every small and intersectional group kept
#
# UCI Adult with a Llama 3 70B model's income predictions (CC BY 4.0, from Khodak et al.'s
# SureMap repository; `bayesbias/data/adult_llama/ATTRIBUTION.md`). Race x sex x age band gives
# 30 cells with 2 to 23,444 people. The usual answer drops the small cells; here every cell keeps
# a posterior rate, pooled through main effects and interactions, and every gap (equalized
# odds included) has an interval.
#
# `BAYESBIAS_NOTEBOOK_SMALL=1` uses short chains.

# %%
import os

import matplotlib.pyplot as plt
import pandas as pd

from bayesbias.datasets import adult_llama
from bayesbias.groups import GroupRates

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
SAMPLER = dict(draws=200, tune=200, chains=1) if SMALL else dict(draws=1000, tune=1000, chains=4)
pd.set_option("display.width", 140)
t = adult_llama()
t.head()

# %% [markdown]
# ## No pooling first: the exact Beta posterior per cell
#
# With `structure="independent"` each cell's rate is Beta(1 + k, 1 + n - k): exact, no
# sampling. Its mode is fairlearn's `MetricFrame.by_group` value; tiny cells get wide intervals.

# %%
args = dict(sensitive_features=t[["race", "sex", "age"]], pos_label="greater than 50K",
            bins={"age": [25, 65]}, metrics=["tpr", "fpr", "error_rate"], seed=1)
indep = GroupRates(t["label"], t["pred"], structure="independent", **args)
indep.by_group["error_rate"].head(8)

# %% [markdown]
# ## Pooled: main effects and interactions of every order

# %%
g = GroupRates(t["label"], t["pred"], **args, **SAMPLER)
cells = g.to_frame()
cells[cells.metric == "error_rate"].round(3)

# %% [markdown]
# The figure puts each cell's raw rate against its pooled posterior mean; marker area is n.
# Large cells stay on the diagonal, small ones move toward what their race, sex and age band
# predict.

# %%
fig = g.plot()
plt.show()

# %% [markdown]
# ## Gaps with intervals and verdicts
#
# Equalized odds is the larger of the TPR and FPR gaps on every draw, so it has an interval (the
# bootstrap cannot give one for a maximum of maxima). Cells with no positives have no TPR from
# data; they are kept, marked prior-driven, and left out of the comparisons.

# %%
g.equalized_odds(delta=0.05)

# %%
g.difference(feature="sex", delta=0.05)

# %%
g.differential_fairness()

# %% [markdown]
# ## Is the harm intersectional?
#
# The share of the between-cell variance (logit scale) that the interactions carry.

# %%
g.interaction_share()

# %% [markdown]
# ## How many labels would a tighter answer need?

# %%
plan = g.labelling_plan(width=0.1)
plan[plan.metric == "tpr"].sort_values("more_rows", ascending=False).head(8)

# %%
for note in g.notes:
    print("-", note)
