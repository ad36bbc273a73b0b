"""Encoder cost: the light route (onnxruntime) against sentence-transformers, in one run.

Run by hand (needs the [contextual] extra and, for the baseline, [transformers]):

    python benchmarks/bench_encoders.py [--model all-MiniLM-L6-v2] [--n 2000] [--batch 64]
                                        [--tests seat7,weat1] [--reps 3]

Two parts, each for every backend installed, alternating backends so machine load hits both:

- whole processes: ``bayesbias seat --encoder MODEL --test TEST --permutations 1000`` for
  each test (seat7: May et al.'s 304 sentences; weat1: 1,165 template sentences) with an
  empty vector cache (import, load, encode, test) and again with every vector cached
  (nothing should be imported or loaded); wall and CPU seconds, median of ``--reps`` runs,
  and the ratio light / sentence-transformers;
- in process: model load, sentences per second on `n` madlibs sentences, contexts per
  second (token vectors of identity terms), the vector cache cold and warm.

Wall-clock figures depend on the machine's load (printed); CPU seconds much less. Prints one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bayesbias.datasets import madlibs
from bayesbias.encoders import find_contexts, load_encoder
from bayesbias.encoders.model import have_light, have_sentence_transformers


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _process(model: str, backend: str, test: str, cache: str) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "bayesbias", "seat", "--encoder", model, "--test", test,
           "--encoder-backend", backend, "--permutations", "1000", "--quiet", "--json"]
    env = {**os.environ, "BAYESBIAS_CACHE": cache}
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def whole_processes(model: str, backends, test: str, reps: int) -> dict:
    runs = {b: {"uncached": [], "cached": []} for b in backends}
    for rep in range(reps):
        for b in (backends if rep % 2 == 0 else backends[::-1]):
            with tempfile.TemporaryDirectory() as cache:
                runs[b]["uncached"].append(_process(model, b, test, cache))
                runs[b]["cached"].append(_process(model, b, test, cache))
    out = {}
    for b, kinds in runs.items():
        out[b] = {f"{kind}_{what}": round(statistics.median(r[i] for r in v), 2)
                  for kind, v in kinds.items() for i, what in ((0, "wall_s"), (1, "cpu_s"))}
    if len(backends) == 2:
        light, st = (out[b] for b in backends)
        out["ratio_light_to_st"] = {k: round(light[k] / st[k], 3) for k in light}
    return out


def in_process(model: str, backend: str, sentences, batch: int) -> dict:
    t0 = time.perf_counter()
    enc = load_encoder(model, cache=False, batch_size=batch, backend=backend)
    enc.encode(["warm up"])
    load_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    enc.encode(sentences)
    sent_s, sent_cpu = time.perf_counter() - t0, time.process_time() - c0
    words = ["gay", "straight", "woman", "man", "muslim", "christian", "asian", "white"]
    ctx = find_contexts(sentences, words, n=len(sentences), seed=1)
    pairs = [(s, sp) for w in words for s, sp in ctx[w]][: len(sentences)]
    t0 = time.perf_counter()
    enc.token_vectors([s for s, _ in pairs], [sp for _, sp in pairs])
    tok_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as cache:
        cold = load_encoder(model, cache_dir=cache, batch_size=batch, backend=backend,
                            lazy=True)
        t0 = time.perf_counter()
        cold.encode(sentences)
        cold_s = time.perf_counter() - t0
        warm = load_encoder(model, cache_dir=cache, batch_size=batch, backend=backend,
                            lazy=True)
        t0 = time.perf_counter()
        warm.encode(sentences)
        warm_s = time.perf_counter() - t0
        assert warm.n_encoded == 0 and not warm.loaded
    return {"load_s": round(load_s, 2), "sentences_per_s": round(len(sentences) / sent_s, 1),
            "sentences_per_cpu_s": round(len(sentences) / sent_cpu, 1),
            "contexts": len(pairs), "contexts_per_s": round(len(pairs) / tok_s, 1),
            "cache_cold_s": round(cold_s, 2), "cache_warm_s": round(warm_s, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tests", default="seat7,weat1",
                    help="SEAT tests of the whole-process runs (comma-separated)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    backends = [b for b, ok in (("onnxruntime", have_light()),
                                ("sentence-transformers", have_sentence_transformers())) if ok]
    load = [os.getloadavg()[0]]
    report = {"model": args.model, "backends": backends, "reps": args.reps,
              "cpus": os.cpu_count()}
    report["process"] = {t: whole_processes(args.model, backends, t, args.reps)
                         for t in args.tests.split(",")}
    load.append(os.getloadavg()[0])
    sentences = list(dict.fromkeys(madlibs()["phrase"].astype(str)))[: args.n]
    report["in_process"] = {b: in_process(args.model, b, sentences, args.batch)
                            for b in backends}
    load.append(os.getloadavg()[0])
    report["load_average"] = load
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
