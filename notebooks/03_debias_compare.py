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
# # Debiasing an embedding and comparing it with the original
#
# Hard debiasing (Bolukbasi et al. 2016), generalised to several protected classes by
# Manzini et al. (2019), takes the *definite sets* of a word list (e.g. `jew / christian /
# muslim`), finds the bias subspace as the first `k` principal directions of the sets
# centred on their means, **neutralises** the stereotype attributes (removes their
# component in the subspace) and **equalises** each definite set (its words end up
# symmetric around the subspace).
#
# This notebook
#
# 1. debiases the shipped GloVe 6B 50-d subset for religion, race and gender and shows
#    how the raw mean cosine distance of each connection (`associated`, `different`,
#    `human`, `none`) moves;
# 2. compares the published Reddit tables with the published tables of Manzini et al.'s
#    debiased Reddit embedding (Dobrzeniecka & Urbaniak's data), per connection;
# 3. (when the Bayesian layer is installed) compares them with the hierarchical model.
#
# Set `BAYESBIAS_NOTEBOOK_SMALL=1` for a quick run (fewer draws in the Bayesian part).

# %%
import os
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bayesbias.config import CONNECTIONS
from bayesbias.datasets import published_table
from bayesbias.debias import hard_debias, project
from bayesbias.distances import distance_table
from bayesbias.embeddings import load_embedding, save_embedding

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
TOPICS = ("religion", "race", "gender")
pd.set_option("display.precision", 4)

# %% [markdown]
# ## 1. Debias the built-in GloVe for religion
#
# Debiasing rewrites the whole embedding, so we load all of it (20,162 words).
# By default the words that change are exactly the stereotype attributes of the word list
# (neutralised) and the words of its definite sets (equalised); every other row is left
# bit-for-bit unchanged.

# %%
glove = load_embedding("default")
debiased, report = hard_debias(glove, "religion")  # default k keeps the set words distinct
print(report.summary())

# %% [markdown]
# The report's checks: every neutralised word now has zero projection on the bias
# direction (up to float32 rounding), and each definite set shares one off-subspace
# component. Let us verify the first claim directly, and that untouched words are
# unchanged.

# %%
basis = debiased.meta["basis"]
changed = set(report.changed_words)
print("max |projection| of neutralised words:",
      np.abs(project(debiased.matrix(report.neutralized), basis)).max())
untouched = [i for i, w in enumerate(glove.words) if w not in changed]
print("untouched rows identical:",
      np.array_equal(glove.vectors[untouched], debiased.vectors[untouched]))

# %% [markdown]
# The debiased embedding is an ordinary word2vec file, readable by bayesbias and gensim.

# %%
with tempfile.TemporaryDirectory() as tmp:
    path = save_embedding(debiased, Path(tmp) / "glove-religion-debiased.bin", binary=True)
    reread = load_embedding(path)
    print(path.name, len(reread), "words;",
          "same vectors:", np.array_equal(reread.vectors, debiased.vectors))

# %% [markdown]
# ### Raw connection means before and after
#
# The signature of hard debiasing in the published debiased tables is that the mean
# distance of `associated` rows (a protected word and a stereotype of its own class) and
# of `different` rows (a stereotype of another class) become equal. Both sets of rows use
# the same neutralised stereotypes, and every word of an equalised set has the same cosine
# with every neutralised word, so when every protected word is in exactly one definite set
# (religion, gender) the two means are equal exactly.


# %%
def connection_means(table):
    """Mean cosine distance per connection."""
    return table.groupby("connection", observed=True)["cosine_distance"].mean()


rows = []
for topic in TOPICS:
    deb, rep = hard_debias(glove, topic)
    before = connection_means(distance_table(glove, topic, on_missing="drop"))
    after = connection_means(distance_table(deb, topic, on_missing="drop"))
    for conn in CONNECTIONS:
        rows.append({"topic": topic, "connection": conn, "before": before[conn],
                     "after": after[conn]})
glove_means = pd.DataFrame(rows).set_index(["topic", "connection"])
glove_means["change"] = glove_means["after"] - glove_means["before"]
glove_means

# %% [markdown]
# Associated minus different, before and after: religion and gender go to zero (float32
# rounding); race does not quite, because race's definite sets share words
# (`caucasian`, `asian`, `africa` recur) and are equalised one after another, as in
# Manzini et al.'s code, so a word is symmetric only within the last set containing it.
# The published debiased race table keeps a gap too (below).

# %%
gap = (glove_means.xs("associated", level="connection")
       - glove_means.xs("different", level="connection"))[["before", "after"]]
gap

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), sharey=True)
for ax, topic in zip(axes, TOPICS, strict=True):
    m = glove_means.loc[topic, ["before", "after"]]
    x = np.arange(len(m))
    ax.bar(x - 0.2, m["before"], 0.4, label="GloVe")
    ax.bar(x + 0.2, m["after"], 0.4, label="GloVe, hard-debiased")
    ax.set_xticks(x, m.index)
    ax.set_title(topic)
axes[0].set_ylabel("mean cosine distance")
axes[0].legend(loc="lower left", fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## 2. Published Reddit vs debiased Reddit
#
# The published tables hold the same (protected word, attribute) pairs for the original
# and Manzini et al.'s debiased Reddit embedding, so each row has a partner and we can take
# paired differences (debiased − original). The race tables repeat pairs (protected words
# recur across definite sets); `published_table` keeps each pair once.


# %%
def paired(topic):
    """Return the original and debiased Reddit tables of `topic`, joined by pair."""
    a = published_table(topic, "reddit")
    b = published_table(topic, "debiased_reddit")
    key = ["protected_word", "attribute"]
    joined = a.merge(b[key + ["cosine_distance", "connection"]], on=key,
                     suffixes=("_reddit", "_debiased"), validate="one_to_one")
    assert (joined["connection_reddit"].astype(str)
            == joined["connection_debiased"].astype(str)).all()
    joined["difference"] = joined["cosine_distance_debiased"] - joined["cosine_distance_reddit"]
    return joined.rename(columns={"connection_reddit": "connection"})


rows = []
for topic in TOPICS:
    j = paired(topic)
    g = j.groupby("connection", observed=True)
    for conn, part in g:
        rows.append({"topic": topic, "connection": conn, "rows": len(part),
                     "reddit": part["cosine_distance_reddit"].mean(),
                     "debiased_reddit": part["cosine_distance_debiased"].mean(),
                     "mean_difference": part["difference"].mean(),
                     "share_moved_away": (part["difference"] > 0).mean()})
reddit_means = pd.DataFrame(rows).set_index(["topic", "connection"])
reddit_means

# %% [markdown]
# `share_moved_away` is the share of pairs whose distance grew. The raw means cannot say
# how sure we should be: rows of one protected word are not independent, and the
# associated / different cells are small (religion: 55 and 110 rows). That is the job of
# the Bayesian model in section 3.
#
# Per protected word, the change of the associated − different gap:

# %%
per_word = []
for topic in TOPICS:
    j = paired(topic)
    j = j[j["connection"].astype(str).isin(["associated", "different"])]
    m = (j.groupby(["protected_word", "connection"], observed=True)
         [["cosine_distance_reddit", "cosine_distance_debiased"]].mean().unstack())
    per_word.append(pd.DataFrame({
        "topic": topic,
        "gap_reddit": m[("cosine_distance_reddit", "associated")]
        - m[("cosine_distance_reddit", "different")],
        "gap_debiased": m[("cosine_distance_debiased", "associated")]
        - m[("cosine_distance_debiased", "different")],
    }))
per_word = pd.concat(per_word)
per_word.groupby("topic")[["gap_reddit", "gap_debiased"]].describe().T.round(3)

# %% [markdown]
# Debiasing closes the gap only on average over rows: individual protected words keep
# gaps of either sign (up to ±0.2), because equalisation makes the words of a *set*
# equidistant from each stereotype, not the stereotypes of one class equidistant from a
# word. Averaged over words (rather than rows) the religion gap is 0.003, not 0, because
# the classes have different numbers of stereotypes.

# %% [markdown]
# ### MAC with Manzini et al.'s paired t-test
#
# Manzini et al. evaluated debiasing by the Mean Average Cosine distance (MAC: the mean,
# over protected words and stereotype classes, of the mean distance of the word to the
# class's stereotypes) and a paired t-test of those per-(word, class) values between the
# two embeddings. Targets are counted as often as they appear in the definite sets, as in
# their evaluation. MAC mixes a word's own stereotypes with the others', so it says how
# far stereotypes moved overall, not whether associated and different became alike.

# %%
from bayesbias.comparators.mac import mac, mac_from_table, mac_ttest

rows = []
for topic in TOPICS:
    deb, _ = hard_debias(glove, topic)
    pairs = {
        "GloVe vs debiased GloVe": (mac(glove, topic, targets="definite_sets"),
                                    mac(deb, topic, targets="definite_sets")),
        "Reddit vs debiased Reddit (published)": (
            mac_from_table(published_table(topic, "reddit"), targets="definite_sets",
                           wordlist=topic),
            mac_from_table(published_table(topic, "debiased_reddit"),
                           targets="definite_sets", wordlist=topic)),
    }
    for name, (a, b) in pairs.items():
        t = mac_ttest(a, b)
        rows.append({"topic": topic, "comparison": name, "MAC before": t.mac_a,
                     "MAC after": t.mac_b, "t": t.statistic, "df": t.df, "p": t.p_value})
pd.DataFrame(rows).set_index(["topic", "comparison"])

# %% [markdown]
# ## 3. Bayesian comparison (uses `bayesbias.models`)
#
# The hierarchical model of Dobrzeniecka & Urbaniak (partial pooling of each protected
# word's mean distance per connection towards a group-level mean), fitted to the original
# and to the debiased table, gives posterior draws of the group-level mean of every
# connection; `compare_fits` reports their difference (debiased − original) with an 89%
# HDI and a plain-language verdict. The two posteriors come from different data and are
# independent, so this interval is for "how sure are we that the connection moved".
#
# With `BAYESBIAS_NOTEBOOK_SMALL=1` only religion is fitted, with few draws (expect
# sampler warnings about ESS: the numbers are then only a smoke test). The section is
# skipped if the Bayesian layer is not installed in this build.

# %%
try:
    from bayesbias.models import SamplerWarning, compare_fits, fit_model

    # The diagnostics are printed below for every fit; do not repeat them as warnings.
    warnings.simplefilter("ignore", SamplerWarning)
except ImportError as exc:  # the Bayesian layer is optional in stripped-down builds
    fit_model = compare_fits = None
    print("Bayesian layer not available:", exc)

SAMPLING = (dict(draws=300, tune=300, chains=2) if SMALL
            else dict(draws=1000, tune=1000, chains=4))
BAYES_TOPICS = ("religion",) if SMALL else TOPICS


def bayes_compare(table_a, table_b, labels, seed):
    """Fit the hierarchical model to two tables and compare them (b - a)."""
    fit_a = fit_model(table_a, "hierarchical", seed=seed, **SAMPLING)
    fit_b = fit_model(table_b, "hierarchical", seed=seed + 1, **SAMPLING)
    for label, fit in zip(labels, (fit_a, fit_b), strict=True):
        print(f"{label}: {fit.diagnostics()}")
    return compare_fits(fit_a, fit_b, labels=labels)


comparisons = {}
if fit_model is not None:
    for n, topic in enumerate(BAYES_TOPICS):
        comparisons[topic, "reddit"] = bayes_compare(
            published_table(topic, "reddit"), published_table(topic, "debiased_reddit"),
            ("reddit", "debiased_reddit"), seed=100 + 10 * n)
        deb, _ = hard_debias(glove, topic)
        comparisons[topic, "glove"] = bayes_compare(
            distance_table(glove, topic, on_missing="drop"),
            distance_table(deb, topic, on_missing="drop"),
            ("glove", "glove_debiased"), seed=200 + 10 * n)

# %% [markdown]
# Posterior differences (debiased − original) of the group-level mean distance per
# connection, with 89% HDIs:

# %%
if comparisons:
    bayes_table = pd.concat(
        {key: c.group_means.set_index("connection")[["a_mean", "b_mean", "diff_mean",
                                                      "lower", "upper", "excludes_zero"]]
         for key, c in comparisons.items()},
        names=["topic", "embedding"])
    display_table = bayes_table
else:
    display_table = "skipped: no Bayesian layer"
display_table

# %%
for (topic, emb), c in comparisons.items():
    print(f"== {topic}, {emb}")
    print("\n".join(c.verdicts["changes"]))  # the control-group verdicts, a vs b
    print("\n".join(c.summary))

# %%
if comparisons:
    fig, axes = plt.subplots(1, len(comparisons), figsize=(3.2 * len(comparisons), 3),
                             sharey=True, squeeze=False)
    for ax, ((topic, emb), c) in zip(axes[0], comparisons.items(), strict=True):
        g = c.group_means.set_index("connection").loc[list(CONNECTIONS)]
        y = np.arange(len(g))
        ax.errorbar(g["diff_mean"], y, xerr=[g["diff_mean"] - g["lower"],
                                             g["upper"] - g["diff_mean"]], fmt="o")
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(y, g.index)
        ax.set_title(f"{topic}: {emb}", fontsize=9)
        ax.set_xlabel("debiased − original")
    fig.tight_layout()


# %% [markdown]
# ## Reading the results
#
# * The geometry does what it promises: stereotype attributes end with no component on
#   the bias direction, and on religion and gender the raw associated and different means
#   become equal, the signature of Manzini et al.'s published debiased Reddit tables.
# * Equal *means* are not the same as a credible change. In our full run (4 chains x 1000
#   draws, at the time of writing) the 89% HDI of the debiased − original difference
#   excluded zero for one connection only: religion's `associated` on Reddit, which moved
#   away from the protected words (about +0.10). The `associated − different` contrast
#   went to about zero everywhere, but its change was not credible on any table: the
#   associated and different cells have few rows per word, so their intervals are wide.
# * The verdict lines above say, in the report's words, which control-group verdicts
#   changed. For religion on Reddit (`bayesbias compare --a published:religion:reddit --b
#   published:religion:debiased_reddit --draws 500 --tune 500 --chains 2`), the verdict
#   goes from "stereotypes are closer than neutral words, but not credibly closer or
#   further than neutral human attributes (undecided)" to "stereotypes are not credibly
#   closer or further than neutral words (undecided)": the original table never showed
#   stereotype-specific association in the first place.
# * On the debiased religion Reddit table the human controls also moved away (+0.024 in
#   the raw mean and the posterior mean, HDI about −0.01 to +0.06, so not credibly): the
#   cost-of-debiasing pattern Dobrzeniecka & Urbaniak point to, where part of an apparent
#   change of bias comes from neutral words moving, is worth checking on every table.

