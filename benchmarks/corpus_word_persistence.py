"""Whether a word's and an attribute's deviations are shared within a corpus or across corpora.

Trains 4 independent synthetic corpora (the coverage study's ``--corpora`` replication
``rep``, 800 documents, planted 0.5) with 2 seeds each and prints the mean correlation,
over pairs of embeddings, of each protected word's ``associated - none`` contrast and of
each attribute's mean distance: for two seeds of one corpus, and for two corpora.

Usage: ``python benchmarks/corpus_word_persistence.py [rep]``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np


def main(rep: int = 0) -> None:
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table
    from bayesbias.training import TrainSettings, train_models

    settings = TrainSettings(vector_size=24, min_count=2, epochs=20)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        synthetic_wordlist_toml(work / "s.toml")
        for j in range(4):
            c = write_synthetic_corpus(work / f"c{j}.txt.gz", n_docs=800, planted=0.5,
                                       seed=1_000_000 + 100 * rep + j)
            train_models(c, work / "corpora" / f"c{j}", seeds=2, settings=settings)
        t = manifest_table(work / "corpora", work / "s.toml")
    g = t.groupby(["embedding", "protected_word", "connection"])["cosine_distance"].mean()
    g = g.unstack()
    words = (g["associated"] - g["none"]).unstack(0)  # words x embeddings
    attrs = t.groupby(["embedding", "attribute"])["cosine_distance"].mean().unstack(0)
    emb = [str(e) for e in words.columns]
    corpus = [e.split("/")[0] for e in emb]
    for name, x in (("protected word's associated - none", words),
                    ("attribute's mean distance", attrs)):
        c = np.corrcoef(x.T.to_numpy())
        pairs = [(i, j) for i in range(len(emb)) for j in range(i + 1, len(emb))]
        within = np.mean([c[i, j] for i, j in pairs if corpus[i] == corpus[j]])
        across = np.mean([c[i, j] for i, j in pairs if corpus[i] != corpus[j]])
        print(f"{name}: correlation between two seeds of one corpus {within:.2f}; between "
              f"two corpora {across:.2f} ({x.shape[0]} items)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
