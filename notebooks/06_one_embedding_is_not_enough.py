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
# # One embedding is not enough
#
# An embedding is one training run on one sample of text. Antoniak & Mimno (2018) showed
# that similarities move with both; Du, Fang & Nguyen (2021) that bias scores move with the
# random seed. This notebook asks what that does to a bias claim, on a synthetic corpus with
# **no** association planted (`bayesbias.corpora`, `planted=0`: every stereotype word is
# as likely next to either class):
#
# 1. how often WEAT on a single embedding says p < 0.05;
# 2. what an ensemble of **seeds** (runs on the same corpus) says with the embedding-level
#    model;
# 3. what an ensemble of **document-bootstrap resamples** of the corpus says.
#
# A seed-only ensemble averages out training noise, but every seed sees the same documents:
# an accident of this corpus is in all of them, so the ensemble describes *this corpus*.
# Resampling documents is what shows how much the corpus itself could have differed
# (the embedding-level model then counts the observed corpus as one more draw).
#
# Set `BAYESBIAS_NOTEBOOK_SMALL=1` for a quick run (smaller corpus and vectors, fewer
# models and draws, as in CI).

# %%
import os
import tempfile
import warnings
from pathlib import Path

import pandas as pd

from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
from bayesbias.ensemble import manifest_table, summarize_ensemble, weat_per_embedding
from bayesbias.models import SamplerWarning
from bayesbias.training import TrainSettings, train_models
from bayesbias.verdicts import fit_for_verdict

SMALL = os.environ.get("BAYESBIAS_NOTEBOOK_SMALL") == "1"
DOCS = 800 if SMALL else 1250
K = 4 if SMALL else 8  # models per ensemble
SETTINGS = (TrainSettings(vector_size=24, min_count=2, epochs=5) if SMALL
            else TrainSettings(vector_size=50, min_count=2, epochs=10))
SAMPLER = dict(draws=300, tune=300, chains=2) if SMALL else dict(draws=1000, tune=1000,
                                                                  chains=4)
SEED = 7
pd.set_option("display.precision", 3)
work = Path(tempfile.mkdtemp(prefix="bayesbias-one-embedding-"))
corpus = write_synthetic_corpus(work / "null.txt.gz", n_docs=DOCS, planted=0.0, seed=SEED)
wordlist = work / "synthetic.toml"
synthetic_wordlist_toml(wordlist)
print(f"null corpus: {DOCS} documents in {corpus}; {K} models per ensemble")

# %% [markdown]
# ## Train the two ensembles
#
# `train_models` is what `bayesbias train` runs: gensim skip-gram, one thread per model (a
# seed gives the same vectors every time), a manifest per folder.

# %%
seeds = train_models(corpus, work / "seeds", seeds=K, settings=SETTINGS, first_seed=1)
boot = train_models(corpus, work / "boot", seeds=0, bootstrap=K, settings=SETTINGS,
                    bootstrap_seed=SEED)
tables = {"seeds": manifest_table(work / "seeds", wordlist),
          "bootstrap": manifest_table(work / "boot", wordlist)}
print({k: f"{len(t)} rows, {t['embedding'].nunique()} embeddings" for k, t in tables.items()})

# %% [markdown]
# ## 1. WEAT on single embeddings
#
# Each row is what a study with that one embedding would have reported. Nothing is planted,
# so a correct test at the 5% level should say p < 0.05 about once in twenty embeddings
# *if* each embedding were an independent look at the language. It is not: the seeds share
# one corpus, so their effect sizes share its accidents (look at their signs).

# %%
weat = pd.concat([weat_per_embedding(t, seed=SEED, n_permutations=20_000).assign(ensemble=k)
                  for k, t in tables.items()], ignore_index=True)
display(weat[["ensemble", "embedding", "effect_size", "p_value"]])  # noqa: F821
share = weat.groupby("ensemble").agg(
    models=("p_value", "size"), p_below_005=("p_value", lambda p: int((p < 0.05).sum())),
    positive_d=("effect_size", lambda d: int((d > 0).sum())),
    sd_of_d=("effect_size", "std"))
share

# %% [markdown]
# ## 2 and 3. The embedding-level model on each ensemble
#
# One model of all embeddings (`bayesbias fit --model embedding_level`): word effects shared
# across embeddings, a shift per corpus sample and per training run. Beside its
# corpus-level verdict: what each embedding alone (the `crossed` model) would have said,
# the share of variation that comes from training and corpus sampling, and Du et al.'s
# reliability.

# %%
summaries = {}
for kind, table in tables.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        fit = fit_for_verdict(table, "embedding_level", seed=SEED, **SAMPLER)
        summaries[kind] = summarize_ensemble(table, fit, seed=SEED, n_permutations=20_000,
                                             **SAMPLER)
    print(f"== {kind} ==")
    print(summaries[kind], "\n")

# %%
for s in summaries.values():
    display(s.plot())  # noqa: F821 - the notebook's display

# %% [markdown]
# ## What to read
#
# - **Single embeddings**: the `p_below_005` column is how often one embedding would have
#   "found" an association in a corpus that has none. With seeds, the effect sizes lean the
#   same way (`positive_d` near 0 or near all): the corpus's accidents, repeated.
# - **Seed-only ensemble**: the corpus-level intervals describe this corpus averaged over
#   runs. They can exclude 0 for an artefact of these documents: seeds cannot tell it from
#   an association of the language.
# - **Bootstrap ensemble**: the resamples scatter around the corpus as the corpus scatters
#   around the language, so the interval keeps the corpus's own uncertainty and does not
#   shrink with more resamples. This is the one to read when the claim is about the
#   language the corpus was drawn from.
#
# Two cautions (the docs, guide/ensembles.md): word2vec puts words of similar frequency
# closer, so controls of another frequency than the stereotypes move `associated - none` even
# here (the synthetic corpora match frequencies); and models of resamples have larger
# distances than models of the corpus itself, so do not mix the two in one ensemble
# unknowingly.
