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
# # Classifier bias with uncertainty: the toxicity madlibs
#
# Two versions of a toxicity classifier (`TOXICITY@1`, `TOXICITY@6`) scored 30,240 templated
# sentences, half toxic and half not, each filled with identity terms. We ask three questions,
# each with an interval rather than a bare number:
#
# 1. Does the classifier rank toxic above non-toxic sentences equally well when a sentence
#    mentions an identity? (nuanced AUC metrics, Borkan et al. 2019; DeLong intervals)
# 2. How large is the gap in predictions between a group and the rest, and how much data would
#    we need to claim it? (Bernstein-bounded unfairness, Ethayarajh 2020, next to a Bayesian
#    and a bootstrap interval)
# 3. What do the metrics of the literature say, per group? (generalized metrics, Czarnowska
#    et al. 2021; bootstrap intervals)
#
# `BAYESBIAS_NOTEBOOK_SMALL=1` uses fewer bootstrap and simulation replicates.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesbias.classifier import (
    AUC_METRICS,
    MADLIBS_REFERENCE_TERMS,
    bbu_by_group,
    bernstein_half_width,
    bernstein_min_n,
    compute_metric,
    counterfactual_frames,
    identity_groups,
    identity_terms,
    nuanced_auc_metrics,
    smallest_claimable_delta,
)
from bayesbias.classifier.bernstein import interval_coverage
from bayesbias.datasets import madlibs

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
N_BOOT = 50 if SMALL else 200
REPS = 100 if SMALL else 500
CONFIDENCE = 0.95
MODELS = ["TOXICITY@1", "TOXICITY@6"]
pd.set_option("display.width", 120)

# %% [markdown]
# ## Identity groups from the templates
#
# The identity terms are not listed in the data; they are recovered by comparing the phrases
# of each template (what remains after the shared start and end is the filler) and keeping
# the filler sets that recur across templates and are not pairs of other fillers
# (see `bayesbias.classifier.data`).

# %%
ml = madlibs()
terms = identity_terms(ml)
print(len(terms), "identity terms:", ", ".join(terms))
y = (ml["toxicity"] == "toxic").to_numpy()
groups = identity_groups(ml, list(MADLIBS_REFERENCE_TERMS))
groups.sum().to_frame("rows").T

# %% [markdown]
# ## 1. Nuanced AUC metrics, with DeLong intervals
#
# The values reproduce the published tables of the original analysis to ~1e-12 (checked in
# `tests/test_auc.py`). BPSN AUC is low when the group's non-toxic sentences score above
# toxic sentences elsewhere (false positives); a positive Negative AEG means the group's
# non-toxic sentences are shifted towards toxic.

# %%
auc = {m: nuanced_auc_metrics(y, ml[m], groups, ci_prob=CONFIDENCE) for m in MODELS}
pd.concat({m: r[list(AUC_METRICS)] for m, r in auc.items()}, axis=1).round(3)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, metric in zip(axes, ["bpsn_auc", "negative_aeg"], strict=True):
    for k, m in enumerate(MODELS):
        r = auc[m]
        pos = np.arange(len(r)) + (k - 0.5) * 0.3
        ax.errorbar(r[metric], pos, xerr=[r[metric] - r[f"{metric}_lower"],
                                           r[f"{metric}_upper"] - r[metric]],
                    fmt="o", ms=4, capsize=2, label=m)
    ax.set_yticks(np.arange(len(r)), r.index)
    ax.set_title(f"{metric} ({CONFIDENCE:.0%} DeLong)")
axes[0].legend()
fig.tight_layout()

# %% [markdown]
# For the sexual-orientation terms that the second version was trained to de-bias
# (gay, homosexual, lesbian), BPSN AUC rises from 0.53-0.74 to 0.94-0.98 and the intervals
# do not overlap; the Negative AEG falls but stays clearly positive.

# %% [markdown]
# ## 2. Bernstein-bounded unfairness
#
# First the paper's planning numbers: to claim a 5-point difference with 95% confidence when
# the two groups are balanced and the variance is at its worst, one needs more than 11,903
# annotated examples; with WinoBias's 3,160 only a difference above ~0.0975 can be claimed.

# %%
print(bernstein_min_n(0.05, confidence=0.95, gamma=0.5, variance=4))
print("smallest claimable delta, n = 3160:",
      round(smallest_claimable_delta(3160, 0.95, 0.5, 4), 4))
n_grid = np.array([500, 1000, 3160, 11903, 30000])
pd.Series([bernstein_half_width(n, 0.95, 0.5, 4) for n in n_grid], index=n_grid,
          name="half-width t")

# %% [markdown]
# On the madlibs, each identity group against all other sentences, thresholding the score at
# 0.5. Equal opportunity uses the cost 1 - prediction on the toxic sentences only, so the
# disparity is FNR(group) - FNR(rest): negative means the group's toxic sentences are missed
# less often. Three 95% intervals per group: the Bernstein bound (distribution-free, estimated
# variance), a Beta-Binomial posterior HDI and a bootstrap.

# %%
bbu = {}
for m in MODELS:
    pred = ml[m].to_numpy() >= 0.5
    bbu[m] = bbu_by_group(y, pred, groups, criterion_name="equal_opportunity",
                          confidence=CONFIDENCE, n_boot=N_BOOT, n_draws=2000)
cols = ["disparity", "lower", "upper", "bayes_lower", "bayes_upper", "bootstrap_lower",
        "bootstrap_upper", "claims_bias"]
pd.concat({m: r[cols] for m, r in bbu.items()}, axis=0).round(3)

# %%
fig, ax = plt.subplots(figsize=(7, 5))
r = bbu["TOXICITY@1"]
for k, (kind, lo, hi) in enumerate([("Bernstein", "lower", "upper"),
                                     ("Bayes HDI", "bayes_lower", "bayes_upper"),
                                     ("bootstrap", "bootstrap_lower", "bootstrap_upper")]):
    pos = np.arange(len(r)) + (k - 1) * 0.25
    ax.hlines(pos, r[lo], r[hi], lw=3, label=kind, color=f"C{k}")
ax.plot(r["disparity"], np.arange(len(r)), "k|", ms=12)
ax.axvline(0, color="grey", lw=0.8)
ax.set_yticks(np.arange(len(r)), r.index)
ax.set_xlabel("FNR(group) - FNR(rest), TOXICITY@1, threshold 0.5")
ax.legend()
fig.tight_layout()

# %% [markdown]
# The Bernstein interval is a worst-case bound; it is wider than the other two, and for some
# groups (e.g. "straight" with TOXICITY@1) it contains 0 where the other two do not. How do their
# coverages compare when the truth is known? A simulation with a true disparity of 0.05:

# %%
cov = pd.concat({n: interval_coverage(p_a=0.30, p_b=0.25, prop_a=0.3, n=n, reps=REPS,
                                      confidence=CONFIDENCE, seed=11)[["coverage", "mean_width"]]
                 for n in (200, 2000)})
cov

# %% [markdown]
# The Bernstein bound covers (nearly) always, at the price of intervals about 1.7-1.9 times
# wider; the Bayesian and bootstrap intervals are close to the nominal 95%.

# %% [markdown]
# ## 3. Generalized metrics, per group
#
# FPED sums |FPR(all) - FPR(group)| over the groups, so it grows with the number of groups;
# the corrected FPED* averages. Per-group values come with every metric.

# %%
rows = []
for m in MODELS:
    pred = ml[m].to_numpy() >= 0.5
    prob = ml[m].to_numpy()
    for name in ("fped", "fped*", "fned*", "tpr_gap", "avggf"):
        r = compute_metric(name, y, groups, pred=pred, prob=prob, ci_prob=CONFIDENCE,
                           n_boot=N_BOOT if name != "avggf" else min(N_BOOT, 50), seed=1)
        rows.append({"model": m, "metric": name, "value": r.value, "lower": r.lower,
                     "upper": r.upper})
pd.DataFrame(rows).pivot(index="metric", columns="model", values=["value", "lower", "upper"]
                         ).round(3)

# %%
fpr = {m: compute_metric("fpr_ratio", y, groups, pred=ml[m].to_numpy() >= 0.5,
                         ci_prob=CONFIDENCE, n_boot=N_BOOT, seed=1) for m in MODELS}
pd.concat({m: r.by_group[["comparison", "comparison_lower", "comparison_upper"]]
           for m, r in fpr.items()}, axis=1).round(2)

# %% [markdown]
# Counterfactual metrics compare the variations of one source sentence that differ only in the
# identity term: here the single-slot templates ("Being {identity} is ...", "I am
# {identity}", ...), 66 source sentences with one variation per group.

# %%
source = counterfactual_frames(ml, groups)
cf = []
for m in MODELS:
    for name in ("cfgap", "pertsd", "pertsr"):
        r = compute_metric(name, y, groups, prob=ml[m].to_numpy(), source=source,
                           ci_prob=CONFIDENCE, n_boot=N_BOOT, seed=1)
        cf.append({"model": m, "metric": name, "value": r.value, "lower": r.lower,
                   "upper": r.upper, "sources": r.info["sources"]})
pd.DataFrame(cf).round(3)

# %% [markdown]
# ## Summary
#
# - The newer classifier ranks non-toxic identity sentences much better against toxic ones
#   (BPSN AUC), with intervals far apart for gay / homosexual / lesbian; the upward shift of
#   non-toxic identity sentences (Negative AEG) shrinks but does not vanish.
# - The Bernstein bound answers "could this gap be chance?" without distributional
#   assumptions, but it is roughly twice as wide as intervals with close to nominal coverage;
#   it is best used for planning sample sizes.
# - Aggregated metrics hide which groups drive them and, uncorrected, depend on how many groups
#   are compared (FPED vs FPED*); the per-group results carry the information.
