"""How far half-samples of a synthetic corpus move word2vec's raw contrasts (issue 27).

For each replication (the corpora of ``embedding_level_corpus_coverage.py``: 800 documents,
planted 0.5, seed 10,000 + rep), draws 8 half-samples of the documents without replacement
and trains 2 seeds on each (24 dimensions, 20 epochs). Prints the training sd (two seeds of
one half-sample) and the spread of a half-sample's contrast around its corpus (the variance
of the half-sample means less the training part). For a smooth statistic, a half-sample
moves around the full sample as much as the full sample moves around the population
(1/(n/2) - 1/n = 1/n), so this is the half-sampling estimate of the corpus-to-corpus sd that
``summary`` of the coverage study measures directly.

Usage::

    python benchmarks/corpus_halfsample_spread.py run OUT.jsonl 0 1 2 3 4 5
    python benchmarks/corpus_halfsample_spread.py summary OUT.jsonl
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from embedding_level_corpus_coverage import CONTRASTS, DOCS, raw_contrasts

HALVES, SEEDS = 8, 2


def run(out: Path, reps) -> None:
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table
    from bayesbias.training import TrainSettings, train_models

    settings = TrainSettings(vector_size=24, min_count=2, epochs=20)
    for rep in reps:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            corpus = write_synthetic_corpus(work / "c.txt.gz", n_docs=DOCS, planted=0.5,
                                            seed=10_000 + rep)
            synthetic_wordlist_toml(work / "s.toml")
            docs = gzip.open(corpus, "rt", encoding="utf-8").read().splitlines()
            rng = np.random.default_rng([rep, 7])
            res = {}
            for h in range(HALVES):
                keep = np.sort(rng.choice(len(docs), len(docs) // 2, replace=False))
                path = work / f"h{h}.txt"
                path.write_text("\n".join(docs[i] for i in keep) + "\n", encoding="utf-8")
                train_models(path, work / f"h{h}", seeds=SEEDS, settings=settings)
                res[h] = raw_contrasts(manifest_table(work / f"h{h}", work / "s.toml"))
        with out.open("a") as fh:
            fh.write(json.dumps({"rep": rep, "half": res}) + "\n")
        print(rep, flush=True)


def summary(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    print(f"{path}: {len(rows)} corpora x {HALVES} half-samples x {SEEDS} seeds")
    for name in CONTRASTS:
        x = np.array([[r["half"][str(h)][name] for h in range(HALVES)] for r in rows])
        train = x.var(axis=2, ddof=1).mean()
        half = x.mean(axis=2).var(axis=1, ddof=1).mean() - train / SEEDS
        print(f"  {name:24s} training sd at half size {np.sqrt(train):.4f}; half-sample "
              f"around its corpus {np.sqrt(max(half, 0.0)):.4f}; mean contrast {x.mean():+.4f}")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(Path(sys.argv[2]), [int(x) for x in sys.argv[3:]])
    else:
        summary(Path(sys.argv[2]))
