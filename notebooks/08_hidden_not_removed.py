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
# # Hidden, not removed: does debiasing take the bias out of the geometry?
#
# Gonen & Goldberg (2019) showed that hard-debiased embeddings still carry gender: k-means
# on the most gendered words still splits them by gender, a classifier still recovers it,
# and a word's neighbours still give it away. INLP (Ravfogel et al. 2020), LEACE (Belrose
# et al. 2023) and Double-Hard (Wang et al. 2020) were built against these tests. Their
# papers report single numbers; here every test has an interval and a null band.
#
# Embedding: the GloVe 6B 50-d subset shipped with bayesbias (`load_embedding("default")`,
# 20,162 words; the one the tests use), word list `gender`. The published numbers are on
# 300-d GloVe over its 50,000 most frequent words, so they need not fall in our intervals.
#
# Set `BAYESBIAS_NOTEBOOK_SMALL=1` for a quick run (fewer words, resamples and draws).

# %%
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesbias.comparators.weat import weat_class_pairs
from bayesbias.debias import biased_words, debias
from bayesbias.distances import distance_table
from bayesbias.embeddings import load_embedding
from bayesbias.recoverability import (
    cluster_alignment,
    debiasing_frame,
    hidden_or_removed,
    plot_debiasing,
    recoverability,
)
from bayesbias.verdicts import fit_for_verdict, verdict_from_fit

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
TOP = 100 if SMALL else 500  # most gendered words per class under test
BOOT = 30 if SMALL else 200
FIT = dict(draws=200, tune=200, chains=2) if SMALL else dict(draws=1000, tune=1000, chains=4)
pd.set_option("display.max_colwidth", 80)

# %% [markdown]
# ## 1. The words under test
#
# A word's gender lean is its cosine with `mean(he, his, son, ...) - mean(she, hers,
# daughter, ...)` (the protected words of the word list); the `TOP` most male-leaning and
# most female-leaning words, chosen on the original embedding, keep their labels after
# debiasing.

# %%
glove = load_embedding("default")
words, labels = biased_words(glove, "gender", TOP)
print(words[:10], words[TOP:TOP + 10])

# %% [markdown]
# ## 2. Five debiased embeddings
#
# `hard` neutralises every word but the protected words and equalises the definite sets
# (Bolukbasi et al.); `multiclass` neutralises only the stereotype attributes of the list
# (Manzini et al.'s use, bayesbias's default hard debiasing); `double-hard` first removes a
# frequency direction; INLP and LEACE are linear erasers trained on the protected words
# plus 1,000 gendered words per class, **leaving out the words under test** (an eraser
# fitted on the test words pushes cross-validated accuracy on them below chance).

# %%
methods = {
    "hard": dict(neutralize="all", on_missing="drop"),
    "multiclass": dict(on_missing="drop"),
    "double-hard": dict(n_components=10 if SMALL else 20),
    "inlp": dict(n_iterations=10, exclude=words),
    "leace": dict(exclude=words),
}
embeddings = {"glove": glove}
for name, kw in methods.items():
    embeddings[name], report = debias(glove, "gender", name, seed=0, **kw)
    print(report.summary().splitlines()[0])

# %% [markdown]
# ## 3. Recoverability, with intervals and null bands
#
# For each embedding: k-means alignment (bootstrap over words), linear and RBF-SVM
# cross-validated accuracy (Jeffreys interval, label-permutation chance), and the share of
# same-gender neighbours (bootstrap). The null band is where the statistic falls when the
# labels carry no information.

# %%
tables = {name: recoverability(emb, "gender", words=words, labels=labels, n_per_class=TOP,
                               n_boot=BOOT, n_null=200 if SMALL else 1000,
                               n_null_classifier=9 if SMALL else 20, seed=0)
          for name, emb in embeddings.items()}
for t in tables.values():
    print(t)

# %% [markdown]
# ## 4. What WEAT and the control-aware verdict say
#
# WEAT on the word list's stereotypes, and the Bayesian verdict (are stereotypes closer
# than neutral words *and* than ordinary human attributes?), on each embedding.

# %%
rows = []
verdicts = {}
for name, emb in embeddings.items():
    table = distance_table(emb, "gender", on_missing="drop")
    weat_p = min(r.p_value for _, r in weat_class_pairs(table, alternative="two-sided",
                                                         seed=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdicts[name] = verdict_from_fit(fit_for_verdict(table, seed=1, **FIT), name)
    rows.append({"name": name, "table": tables[name], "weat_min_p": weat_p,
                 "verdict_change": (verdicts[name].code if name == "glove" else
                                    f"{verdicts['glove'].code} -> {verdicts[name].code}"),
                 "answer": "" if name == "glove" else hidden_or_removed(
                     name, tables[name], weat_p < 0.05, verdicts["glove"].code,
                     verdicts[name].code)})
debiasing_frame(rows)

# %% [markdown]
# ## 5. Removed, or hidden from WEAT?

# %%
for row in rows[1:]:
    print(row["answer"])
plot_debiasing(tables)

# %% [markdown]
# ## 6. Wang et al.'s alignment at 100 / 500 / 1000 words
#
# Published on 300-d GloVe: original 1.0/1.0/1.0, Hard 0.765/0.803/0.8025, Double-Hard
# 0.665/0.741/0.704. Here on the 50-d subset, with a bootstrap interval over words.

# %%
sizes = (100,) if SMALL else (100, 500, 1000)
ranked, ranked_labels = biased_words(glove, "gender", max(sizes))
n_max = max(sizes)
out = []
for n in sizes:
    idx = np.r_[0:n, n_max:n_max + n]
    sel = [ranked[i] for i in idx]
    for name in ("glove", "hard", "double-hard"):
        r = cluster_alignment(embeddings[name].matrix(sel), ranked_labels[idx],
                              n_boot=BOOT, n_null=200, seed=0)
        out.append({"words per class": n, "embedding": name, "alignment": r.value,
                    "lower": r.lower, "upper": r.upper, "null upper": r.null_upper})
pd.DataFrame(out).round(3)

# %% [markdown]
# The original embedding aligns perfectly (its interval includes 1.0); Hard falls below it
# but stays above the null band at 100 words: the gender of the most gendered words is
# still in the geometry after hard debiasing, hidden from the one direction it removed.
# The published values need not fall inside these intervals: 50 instead of 300
# dimensions, a 20,162-word vocabulary instead of 50,000, and no list of gender-specific
# words kept out of the ranking (words such as *actress* are ranked and neutralised here).

# %%
plt.close("all")
