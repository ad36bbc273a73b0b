"""The distance table of many embeddings: one block of rows per embedding.

The table is the usual distance table (:mod:`bayesbias.distances`) with two more columns:
``embedding`` (a label per embedding file) and ``corpus_sample`` (the corpus sample it was
trained on: ``original``, ``bootstrap-<b>``, or a corpus name). The ``embedding_level``
model reads both.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from .errors import DistanceTableError, InputDataError
from .wordlists import load_wordlist

__all__ = ["ensemble_table", "manifest_table", "ENSEMBLE_COLUMNS"]

log = logging.getLogger(__name__)

#: The columns a multi-embedding table adds to a distance table.
ENSEMBLE_COLUMNS = ("embedding", "corpus_sample")


def ensemble_table(paths, wordlist, labels=None, corpus_samples=None,
                   format: str = "auto") -> pd.DataFrame:
    """Distance table of `wordlist` on every embedding in `paths`, stacked.

    Parameters
    ----------
    paths : list of path-like
        Embedding files (any format :func:`~bayesbias.embeddings.load_embedding` reads), all
        of one dimension.
    wordlist : WordList or str
    labels : list of str, optional
        The ``embedding`` label of each file (default: the file names without suffix).
    corpus_samples : list of str, optional
        The corpus sample of each file (default: ``"original"`` for all: seeds of one corpus).

    Notes
    -----
    A protected word or attribute missing from some embeddings is dropped from all of them
    (one warning names the word and the embeddings that lack it), so that every embedding
    has the same rows.
    """
    from .distances import distance_table
    from .embeddings import load_embedding

    paths = [Path(p) for p in paths]
    if not paths:
        raise InputDataError("no embedding files given")
    labels = list(labels) if labels is not None else [p.name.split(".")[0] for p in paths]
    if len(set(labels)) != len(labels):
        raise InputDataError(f"embedding labels repeat: {labels}")
    samples = list(corpus_samples) if corpus_samples is not None else ["original"] * len(paths)
    wl = load_wordlist(wordlist)
    embs = [load_embedding(p, wl.all_words, format=format) for p in paths]
    dims = {lab: e.dim for lab, e in zip(labels, embs, strict=True) if e.words}
    if len(set(dims.values())) > 1:
        raise InputDataError("embeddings of different dimensions: " + ", ".join(
            f"{lab} {d}" for lab, d in dims.items()))
    words = list(dict.fromkeys(wl.all_words))
    lacking = {w: [lab for lab, e in zip(labels, embs, strict=True) if w not in e]
               for w in words}
    partial = {w: labs for w, labs in lacking.items() if 0 < len(labs) < len(embs)}
    if partial:
        msg = "; ".join(f"{w} (missing from {', '.join(labs)})" for w, labs in partial.items())
        log.warning("dropped from every embedding, since some lack them: %s", msg)
    keep = {w for w, labs in lacking.items() if not labs}
    wl_kept = wl.restrict(keep) if len(keep) < len(words) else wl
    parts = []
    for lab, sample, emb in zip(labels, samples, embs, strict=True):
        t = distance_table(emb, wl_kept, on_missing="drop")
        t.insert(0, "corpus_sample", sample)
        t.insert(0, "embedding", lab)
        parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    if table.empty:
        raise DistanceTableError(f"no rows: no word of {wl.name!r} is in every embedding")
    table.attrs.update(wordlist=wl.name, embeddings=labels,
                       missing={w: labs for w, labs in lacking.items() if labs})
    return table


def manifest_table(manifest, wordlist) -> pd.DataFrame:
    """:func:`ensemble_table` of the models of a training manifest (file or folder)."""
    from .training import read_manifest

    m = read_manifest(manifest)
    models = m["models"]
    table = ensemble_table([x["path"] for x in models], wordlist,
                           labels=[x["name"] for x in models],
                           corpus_samples=[x["corpus_sample"] for x in models])
    table.attrs["manifest"] = str(manifest)
    return table


def simulate_ensemble_table(*, n_embeddings: int = 8, kind: str = "bootstrap",
                            runs_per_sample: int = 1, mu_bar=(0.80, 0.86, 0.85, 0.86),
                            tau=0.04, sigma=0.08, omega=0.04, eta=0.02, kappa0=0.02,
                            kappa=0.015, lambda0=0.01, lam=0.01, n_classes: int = 2,
                            words_per_class: int = 4, stereotypes_per_class: int = 5,
                            n_human: int = 8, n_none: int = 12, seed: int = 0):
    """Draw a multi-embedding distance table from the embedding-level model, with the truth.

    ``kind``: ``"bootstrap"`` (the observed corpus is one draw around the language and the
    embeddings are resamples around the corpus), ``"seeds"`` (runs of one corpus: the
    target is that corpus's mean over runs) or ``"corpora"`` (independent corpora). The
    truth ``mu_bar`` is the population mean per connection (over words, attributes and, for
    bootstrap and corpora, corpora). Returns ``(table, truth)``; ``truth`` also holds the
    observed corpus's own means (``corpus_mean``).
    """
    import numpy as np

    from .config import CONNECTIONS
    from .testing import design

    rng = np.random.default_rng(seed)
    base = design(n_classes, words_per_class, stereotypes_per_class, n_human, n_none)
    nc = len(CONNECTIONS)
    mu_bar = np.asarray(mu_bar, dtype=float)
    k = np.broadcast_to(np.asarray(kappa, float), (nc - 1,))
    lm = np.broadcast_to(np.asarray(lam, float), (nc - 1,))

    def level_effect(scale0, scale):  # shared + vs-none deviations, as in the model
        return scale0 * rng.standard_normal() + np.r_[scale * rng.standard_normal(nc - 1), 0.0]

    words = base["protected_word"].cat.categories
    attrs = base["attribute"].cat.categories
    wi = base["protected_word"].cat.codes.to_numpy()
    ai = base["attribute"].cat.codes.to_numpy()
    ci = base["connection"].cat.codes.to_numpy()
    word = mu_bar[None, :] + np.broadcast_to(np.asarray(tau, float), (nc,)) \
        * rng.standard_normal((words.size, nc))
    v = omega * rng.standard_normal(attrs.size)
    if kind == "seeds":
        n_samples, corpus = 1, np.zeros(nc)
    elif kind == "bootstrap":
        n_samples, corpus = n_embeddings // runs_per_sample, level_effect(kappa0, k)
    elif kind == "corpora":
        n_samples, corpus = n_embeddings // runs_per_sample, np.zeros(nc)
    else:
        raise ValueError(f"kind must be bootstrap, seeds or corpora, got {kind!r}")
    per = n_embeddings if kind == "seeds" else runs_per_sample
    parts = []
    for r in range(n_samples):
        label = {"bootstrap": f"bootstrap-{r + 1}", "corpora": f"corpus-{r + 1}",
                 "seeds": "original"}[kind]
        b = corpus + (level_effect(kappa0, k) if kind != "seeds" else 0.0)
        for j in range(per):
            s = level_effect(lambda0, lm) if per > 1 else 0.0
            cell = word + b + s + eta * rng.standard_normal(word.shape)
            y = cell[wi, ci] + v[ai] + sigma * rng.standard_normal(wi.size)
            t = base.copy()
            t["cosine_distance"] = y
            t["cosine_similarity"] = 1.0 - y
            t.insert(0, "corpus_sample", label)
            t.insert(0, "embedding", f"{label}-run{j + 1}")
            parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    for col in ("protected_word", "protected_class", "attribute", "attribute_class"):
        table[col] = table[col].astype(str)
    truth = {"mu_bar": dict(zip(CONNECTIONS, mu_bar.tolist(), strict=True)),
             "corpus_mean": dict(zip(CONNECTIONS, (mu_bar + corpus).tolist(), strict=True)),
             "kind": kind}
    return table, truth


def per_embedding_verdicts(table: pd.DataFrame, model: str = "crossed", ci_prob=None,
                           ci_kind=None, **fit_kwargs) -> pd.DataFrame:
    """Return the verdict each embedding of a multi-embedding table would give on its own.

    Fits `model` (default ``crossed``) to each embedding's rows; returns one row per
    embedding with ``corpus_sample``, the verdict ``code`` and the ``associated - none``
    and ``associated - different`` contrasts (mean, lower, upper). Set beside the
    embedding-level verdict, it says how many single embeddings would have said otherwise.
    """
    import warnings

    from .models import fit_model
    from .verdicts import verdict_from_fit

    if "embedding" not in table.columns:
        raise InputDataError("the table has no embedding column")
    rows = []
    for label, part in table.groupby("embedding", sort=False):
        one = part.drop(columns=[c for c in ENSEMBLE_COLUMNS if c in part.columns])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_model(one.reset_index(drop=True), model, **fit_kwargs)
        v = verdict_from_fit(fit, str(label), ci_prob, ci_kind)
        c = fit.contrasts(ci_prob, ci_kind).set_index("contrast")
        row = {"embedding": label, "corpus_sample": part["corpus_sample"].iloc[0]
               if "corpus_sample" in part else "original", "verdict": v.code}
        for name in ("associated - none", "associated - different"):
            for k in ("mean", "lower", "upper"):
                row[f"{name} {k}"] = float(c.loc[name, k])
        rows.append(row)
    return pd.DataFrame(rows)
