"""Encoder throughput: sentences per second, contexts per second, and the cache.

Run by hand (needs the [contextual] extra):

    python benchmarks/bench_encoders.py [--model all-MiniLM-L6-v2] [--n 2000] [--batch 64]

Wall-clock rates depend on the machine's load (printed); CPU-second rates much less.
Encodes `n` madlibs sentences (sentence embeddings) and the token vectors of an identity term
in `n` of them, without the cache; then the same sentences again through a fresh cache
(cold, then warm). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import torch

from bayesbias.datasets import madlibs
from bayesbias.encoders import find_contexts, load_encoder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    sentences = list(dict.fromkeys(madlibs()["phrase"].astype(str)))[: args.n]
    t0 = time.perf_counter()
    enc = load_encoder(args.model, cache=False, batch_size=args.batch)
    enc.encode(["warm up"])
    load_s = time.perf_counter() - t0

    t0, c0 = time.perf_counter(), time.process_time()
    enc.encode(sentences)
    sent_s, sent_cpu = time.perf_counter() - t0, time.process_time() - c0

    words = ["gay", "straight", "woman", "man", "muslim", "christian", "asian", "white"]
    ctx = find_contexts(sentences, words, n=args.n, seed=1)
    pairs = [(s, sp) for w in words for s, sp in ctx[w]][: args.n]
    t0 = time.perf_counter()
    enc.token_vectors([s for s, _ in pairs], [sp for _, sp in pairs])
    tok_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as cache:
        cold = load_encoder(args.model, cache_dir=cache, batch_size=args.batch)
        t0 = time.perf_counter()
        cold.encode(sentences)
        cold_s = time.perf_counter() - t0
        warm = load_encoder(args.model, cache_dir=cache, batch_size=args.batch)
        t0 = time.perf_counter()
        warm.encode(sentences)
        warm_s = time.perf_counter() - t0
        assert warm.n_encoded == 0

    print(json.dumps({
        "model": args.model, "torch_threads": torch.get_num_threads(), "batch": args.batch,
        "load_s": round(load_s, 2),
        "sentences": len(sentences), "sentences_per_s": round(len(sentences) / sent_s, 1),
        "sentences_per_cpu_s": round(len(sentences) / sent_cpu, 1),
        "load_average": os.getloadavg()[0],
        "contexts": len(pairs), "contexts_per_s": round(len(pairs) / tok_s, 1),
        "cache_cold_s": round(cold_s, 2), "cache_warm_s": round(warm_s, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
