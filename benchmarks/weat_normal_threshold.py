"""How large must WEAT's sets be for the Normal permutation p-value (run by hand).

Issue 50: the ensemble summary runs WEAT on every embedding; at 500 + 500 target words the
100,000 Monte Carlo splits take about 3 s per embedding (97 s for 32). Above
``defaults.normal_permutation_min`` words per set, :func:`bayesbias.comparators.weat.
normal_permutation_p` replaces them by the Normal with the re-partition distribution's exact
mean and variance. This measures how close that Normal tail is to the permutation tail at
smaller sets, on real association values.

For `--sizes` n words per set: `--samples` times, 2n distinct words drawn at random from the
shipped GloVe subset (20,162 words) get WEAT's association s(w) = mean cos(w, A) - mean
cos(w, B) with A, B the attribute sets of the shipped ``weat6`` list; `--splits` random
re-partitions give the permutation distribution of the mean difference. At the distances d
where the Normal two-sided p is 0.2, 0.1, 0.05, 0.01 and 0.001, the permutation p
(fraction of splits with |D| >= d) is compared with the Normal's. Reported per n and p:
the largest |error| over the samples, and that error in units of the Monte Carlo standard
error of the 100,000-split route the Normal replaces (sqrt(p (1 - p) / 100,000)).

    python benchmarks/weat_normal_threshold.py [--sizes 100 250 500 1000] [--samples 10]
        [--splits 200000] [--out benchmarks/results/weat_normal_threshold.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy.special import ndtr, ndtri

P_GRID = (0.2, 0.1, 0.05, 0.01, 0.001)


def s_values(emb, a_words, b_words) -> np.ndarray:
    m = emb.vectors / np.linalg.norm(emb.vectors, axis=1, keepdims=True)
    a = m[[emb.index(w) for w in a_words]]
    b = m[[emb.index(w) for w in b_words]]
    return (m @ a.T).mean(axis=1) - (m @ b.T).mean(axis=1)


def tail_errors(s: np.ndarray, n: int, splits: int, rng) -> dict:
    """Permutation vs Normal two-sided p at the Normal's P_GRID distances, one pooled sample."""
    total = s.sum()
    sums = np.empty(splits)
    for lo in range(0, splits, 10_000):
        k = min(10_000, splits - lo)
        u = rng.random((k, 2 * n))
        pick = np.argpartition(u, n - 1, axis=1)[:, :n]
        sums[lo:lo + k] = s[pick].sum(axis=1)
    d = sums / n - (total - sums) / n
    sd = np.sqrt(2 * n * s.var(ddof=1) / (n * n))
    out = {}
    for p in P_GRID:
        thr = -ndtri(p / 2) * sd
        out[p] = float((np.abs(d) >= thr).mean()) - float(2 * ndtr(-thr / sd))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500, 1000])
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--splits", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    args = ap.parse_args()
    from bayesbias.embeddings import load_embedding

    emb = load_embedding("default")
    a_words, b_words = attribute_sets()
    s_all = s_values(emb, a_words, b_words)
    rng = np.random.default_rng(args.seed)
    rows = []
    for n in args.sizes:
        t = time.perf_counter()
        errs = {p: [] for p in P_GRID}
        for _ in range(args.samples):
            s = s_all[rng.choice(len(s_all), 2 * n, replace=False)]
            for p, e in tail_errors(s, n, args.splits, rng).items():
                errs[p].append(e)
        for p in P_GRID:
            worst = float(np.max(np.abs(errs[p])))
            rows.append({"n_per_set": n, "p_normal": p, "max_abs_error": worst,
                         "mean_error": float(np.mean(errs[p])),
                         "in_mc_se_100k": worst / np.sqrt(p * (1 - p) / 100_000),
                         "reference_se": float(np.sqrt(p * (1 - p) / args.splits))})
            print(json.dumps(rows[-1]), flush=True)
        print(f"# n={n}: {time.perf_counter() - t:.1f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"settings": vars(args), "rows": rows}, f, indent=1)
    return 0


def attribute_sets():
    """Return the two attribute sets of the shipped weat6 list (career, family)."""
    from bayesbias.wordlists import load_wordlist

    sets = load_wordlist("weat6").weat_sets()
    return sets.A, sets.B


if __name__ == "__main__":
    raise SystemExit(main())
