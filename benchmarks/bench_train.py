"""Benchmark: 16 word2vec models of a 1M-token corpus trained and fitted, 1 vs 2 workers.

Writes a synthetic corpus (:func:`bayesbias.corpora.write_synthetic_corpus`, 25,000
documents of 40 tokens = 1M tokens, planted 0.5), trains ``--models`` bootstrap models
(gensim defaults of ``bayesbias train``: skip-gram, 100 dimensions, 5 epochs, one gensim
thread per model) once with ``--jobs 1`` and once with ``--jobs 2`` into separate folders
(the vectors must be byte-identical), then fits ``embedding_level`` on the 16 embeddings
(package defaults, with the 16 single-embedding ``crossed`` fits of the ensemble summary).
Prints the time of each step, seconds per model, and what K models on N workers would take
at the measured rate.

    python benchmarks/bench_train.py [--models 16] [--docs 25000] [--work DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
import warnings
from pathlib import Path


def digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.bin"))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=16)
    ap.add_argument("--docs", type=int, default=25_000)
    ap.add_argument("--work", default=None)
    a = ap.parse_args(argv)
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
    from bayesbias.ensemble import manifest_table, summarize_ensemble
    from bayesbias.models import fit_model
    from bayesbias.training import train_models

    work = Path(a.work or tempfile.mkdtemp(prefix="bb-train-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder {work}; load average {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.time()
    corpus = write_synthetic_corpus(work / "corpus.txt.gz", n_docs=a.docs, planted=0.5, seed=1)
    synthetic_wordlist_toml(work / "synthetic.toml")
    print(f"corpus: {a.docs} documents x 40 tokens in {time.time() - t0:.1f} s", flush=True)
    times = {}
    for jobs in (1, 2):
        t0 = time.time()
        train_models(corpus, work / f"jobs{jobs}", seeds=0, bootstrap=a.models, jobs=jobs)
        times[jobs] = time.time() - t0
        print(f"train {a.models} models, --jobs {jobs}: {times[jobs]:.1f} s "
              f"({times[jobs] / a.models:.1f} s per model); load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    same = digests(work / "jobs1") == digests(work / "jobs2")
    print(f"same vectors with 1 and 2 jobs: {same}; speed-up {times[1] / times[2]:.2f}x")
    t0 = time.time()
    table = manifest_table(work / "jobs2", work / "synthetic.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "embedding_level")
        t_fit = time.time() - t0
        summary = summarize_ensemble(table, fit)
    t_all = time.time() - t0
    d = fit.diagnostics()
    print(f"fit embedding_level ({len(table)} rows): {t_fit:.1f} s (sampling "
          f"{fit.posterior.attrs.get('sampling_time', float('nan')):.1f} s); with the "
          f"{a.models} single fits and the summary {t_all:.1f} s; {d}")
    print(summary.headline())
    total = times[2] + t_all
    print(f"train (2 jobs) + fit + summary: {total:.0f} s ({total / 60:.1f} min)")
    per = times[1] / a.models
    for k, n in ((100, 2), (100, 8), (100, 32)):
        print(f"K = {k} models on {n} workers: about {k * per / n / 60:.1f} min of training "
              f"at {per:.1f} s per model per worker")


if __name__ == "__main__":
    main()
