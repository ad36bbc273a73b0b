"""Time WEAT permutation tests and the null simulation; optionally WEFE on the same test.

Run from the repository root (nice it on a shared machine)::

    nice /work/venv/bin/python benchmarks/bench_weat.py
    nice /work/venv/bin/python benchmarks/bench_weat.py --check   # exit 1 if slow
    nice /work/venv/bin/python benchmarks/bench_weat.py --wefe-python /tmp/wefe-venv/bin/python

The test is WEAT-1 sized: 25 + 25 targets, 25 + 25 attributes, random 50-d vectors
(seeded), written as a word2vec text file that both packages read. WEFE (PyPI ``wefe``)
pins an old numpy, so it runs in its own environment through `--wefe-python`; it is never
a dependency of bayesbias. Its p-value draws target orders with replacement and without a
seed, and its effect size uses the population sd, so its numbers are printed for
comparison only.

``--check`` replaces the wall-clock asserts the unit tests had: it measures, in the same
run, a baseline of one Python-level iteration per permutation / per null replication (the
way that would be too slow) on a small count, scales it to the full count, and exits 1
when the vectorised code is not at least :data:`MIN_SPEEDUP` times faster (a regression
to a per-iteration loop gives a ratio near 1). A ratio
measured on one machine in one run does not depend on how loaded the machine is.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bayesbias.comparators.null import NullStudy, run_null_study
from bayesbias.comparators.weat import weat
from bayesbias.embeddings import Embedding, load_embedding, save_embedding
from bayesbias.wordlists import load_wordlist

WEFE_SCRIPT = r"""
import json, sys, time
from gensim.models import KeyedVectors
from wefe.metrics import WEAT
from wefe.query import Query
from wefe.word_embedding_model import WordEmbeddingModel

path, sets, iterations = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
model = WordEmbeddingModel(KeyedVectors.load_word2vec_format(path), "bench")
query = Query([sets["X"], sets["Y"]], [sets["A"], sets["B"]], ["X", "Y"], ["A", "B"])
t0 = time.perf_counter()
res = WEAT().run_query(query, model, return_effect_size=True, calculate_p_value=True,
                       p_value_iterations=iterations)
elapsed = time.perf_counter() - t0
t1 = time.perf_counter()
es = WEAT().run_query(query, model, return_effect_size=True)
no_p = time.perf_counter() - t1
print(json.dumps({"seconds": elapsed, "seconds_without_p": no_p,
                  "effect_size": float(res["effect_size"]), "p_value": float(res["p_value"])}))
"""


#: Speed-ups over a per-iteration Python loop that --check requires. Measured on a loaded
#: 2-core machine (2026-11-27, --repeat 3): permutations 6.4x, null replications 50x.
MIN_SPEEDUP = {"permutation_speedup": 3.0, "null_speedup": 10.0}


def _loop_permutations(sx, sy, n: int, seed: int = 1) -> float:
    """Baseline: one Python iteration per random split (what the vectorised test avoids)."""
    rng = np.random.default_rng(seed)
    s = np.concatenate([sx, sy])
    observed = sx.mean() - sy.mean()
    hits = 0
    for _ in range(n):
        perm = rng.permutation(s.size)
        hits += s[perm[:sx.size]].mean() - s[perm[sx.size:]].mean() >= observed
    return (hits + 1) / (n + 1)


def speed_checks(repeat: int = 3) -> dict:
    """Ratios of a per-iteration baseline to the vectorised code, measured in this run."""
    from bayesbias.comparators.weat import permutation_test

    rng = np.random.default_rng(0)
    sx, sy = rng.normal(size=25), rng.normal(size=25)
    fast, _ = _time(lambda: permutation_test(sx, sy, n_permutations=100_000, seed=1), repeat)
    slow, _ = _time(lambda: _loop_permutations(sx, sy, 2_000), repeat)
    out = {"permutations_100000_s": fast, "loop_baseline_100000_s_extrapolated": slow * 50}
    out["permutation_speedup"] = out["loop_baseline_100000_s_extrapolated"] / fast
    study = NullStudy(reps=10_000, seed=1, statistics=("weat_effect",))
    small = NullStudy(reps=100, seed=1, statistics=("weat_effect",), chunk_size=1)
    fast, _ = _time(lambda: run_null_study(study), repeat)
    slow, _ = _time(lambda: run_null_study(small), repeat)  # one replication per chunk
    out.update({"null_10000_reps_s": fast, "null_one_rep_per_chunk_10000_s_extrapolated":
                slow * 100})
    out["null_speedup"] = out["null_one_rep_per_chunk_10000_s_extrapolated"] / fast
    return out


def _sets(n: int = 25) -> dict[str, list[str]]:
    return {k: [f"{k.lower()}{i}" for i in range(n)] for k in "XYAB"}


def _embedding(sets, dim: int = 50, seed: int = 0) -> Embedding:
    words = [w for ws in sets.values() for w in ws]
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(words), dim))
    vectors[: len(sets["X"])] += 0.3 * vectors[2 * len(sets["X"])]  # a mild X-A association
    return Embedding(words, vectors.astype(np.float32), "bench")


def _time(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv=None) -> int:
    """Run the benchmark and print a JSON record."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--wefe-python", default=None,
                        help="python of a separate environment with wefe installed")
    parser.add_argument("--wefe-iterations", type=int, nargs="+", default=[10_000])
    parser.add_argument("--check", action="store_true",
                        help="only the speed ratios; exit 1 below MIN_SPEEDUP")
    args = parser.parse_args(argv)
    if args.check:
        ratios = speed_checks(args.repeat)
        print(json.dumps(ratios, indent=2))
        ok = all(ratios[k] >= v for k, v in MIN_SPEEDUP.items())
        return 0 if ok else 1

    sets = _sets()
    emb = _embedding(sets)
    record: dict = {"python": sys.version.split()[0], "machine": platform.machine(),
                    "test": "25+25 targets, 25+25 attributes, 50-d", "bayesbias": {}}
    for n in (10_000, 100_000):
        sec, res = _time(lambda n=n: weat(emb, sets, n_permutations=n, exact_limit=0,
                                          seed=1), args.repeat)
        record["bayesbias"][f"weat_{n}_permutations_s"] = sec
        record["bayesbias"][f"weat_{n}_effect_size"] = res.effect_size
        record["bayesbias"][f"weat_{n}_p_value"] = res.p_value
    sec, res = _time(lambda: weat(emb, sets, n_permutations=10_000, exact_limit=0, seed=1,
                                  sd="population"), 1)
    record["bayesbias"]["effect_size_population_sd"] = res.effect_size
    sec, _ = _time(lambda: weat(emb, sets, n_permutations=10_000, exact_limit=0, seed=1,
                                bootstrap=10_000), args.repeat)
    record["bayesbias"]["weat_1e4_permutations_plus_1e4_bootstrap_s"] = sec

    wl = load_wordlist("weat1")
    real = load_embedding("default", wl.all_words)
    sec, res = _time(lambda: weat(real, wl, on_missing="drop", n_permutations=100_000,
                                  seed=1), args.repeat)
    record["bayesbias"]["weat1_default_embedding"] = {
        "seconds_1e5_permutations": sec, "sizes": res.sizes, "effect_size": res.effect_size,
        "p_value": res.p_value, "dropped": res.dropped}

    for label, stats in (("weat_effect_only", ("weat_effect",)),
                         ("all_statistics", None)):
        kw = {} if stats is None else {"statistics": stats}
        study = NullStudy(reps=10_000, seed=1, targets=(8, 8), attributes=(8, 8), **kw)
        sec, _ = _time(lambda study=study: run_null_study(study), max(1, args.repeat // 2))
        record["bayesbias"][f"null_16x16_10000_reps_{label}_s"] = sec

    if args.wefe_python:
        record["wefe"] = {}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.txt"
            save_embedding(emb, path)
            for it in args.wefe_iterations:
                proc = subprocess.run(
                    [args.wefe_python, "-c", WEFE_SCRIPT, str(path), json.dumps(sets), str(it)],
                    capture_output=True, text=True, check=False)
                if proc.returncode:
                    record["wefe"][f"{it}_iterations"] = {"error": proc.stderr[-2000:]}
                else:
                    record["wefe"][f"{it}_iterations"] = json.loads(
                        proc.stdout.strip().splitlines()[-1])
            ver = subprocess.run([args.wefe_python, "-c",
                                  "import wefe, numpy; print(wefe.__version__, "
                                  "numpy.__version__)"], capture_output=True, text=True)
            record["wefe"]["versions (wefe, numpy)"] = ver.stdout.strip()
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
