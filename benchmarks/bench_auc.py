"""Benchmark: the five nuanced AUC metrics for 24 overlapping subgroups on 2 million rows.

Compares, in the same run and on the same data,

- ``nuanced_auc_metrics`` (sort once, per-group sums over tie-block counts), without and
  with DeLong intervals, and
- the straightforward way: one rank-based Mann-Whitney U / AUC call per subgroup and metric
  (``scipy.stats.mannwhitneyu``; scikit-learn's ``roc_auc_score`` too when it is installed),

and checks that they agree. Run with ``nice python benchmarks/bench_auc.py`` (add
``--rows 200000`` for a quick run, ``--json out.json`` to save the figures).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from bayesbias._atomic import atomic_path
from bayesbias.classifier.auc import AUC_METRICS, nuanced_auc_baseline, nuanced_auc_metrics


def make_data(rows: int, n_groups: int, seed: int = 0, ties: bool = True):
    """Seeded synthetic scores with ties, 24 overlapping groups of 1 % to 20 % of the rows."""
    rng = np.random.default_rng(seed)
    y = rng.random(rows) < 0.3
    rates = np.linspace(0.01, 0.20, n_groups)
    groups = rng.random((rows, n_groups)) < rates
    shift = groups @ rng.normal(0, 0.3, n_groups)
    score = 1 / (1 + np.exp(-(rng.normal(size=rows) + 2.0 * y + shift)))
    return y, (np.round(score, 4) if ties else score), groups  # rounding: many ties


def sklearn_baseline(y, s, m):
    """Per subgroup and metric, scikit-learn's roc_auc_score (None when not installed)."""
    try:
        from sklearn.metrics import roc_auc_score
    except ImportError:
        return None
    out = []
    for j in range(m.shape[1]):
        g = m[:, j]

        def auc(high, low):
            lab = np.r_[np.ones(high.sum()), np.zeros(low.sum())]
            return roc_auc_score(lab, np.r_[s[high], s[low]])

        out.append([auc(g & y, g & ~y), auc(~g & y, g & ~y), auc(g & y, ~g & ~y),
                    0.5 - auc(~g & ~y, g & ~y), 0.5 - auc(~g & y, g & y)])
    return np.array(out)


def timed(fn, *args, repeat=1, **kw):
    """Best wall time of `repeat` calls, and the result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args, **kw)
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> dict:
    """Run the comparison; print and return the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--groups", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ties", action="store_true",
                    help="continuous scores (all distinct) instead of scores rounded to 1e-4")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    y, s, m = make_data(args.rows, args.groups, ties=not args.no_ties)
    print(f"{args.rows:,} rows, {args.groups} overlapping subgroups "
          f"({m.sum(axis=0).min():,} to {m.sum(axis=0).max():,} rows each), "
          f"{len(np.unique(s)):,} distinct scores")
    t_fast, fast = timed(nuanced_auc_metrics, y, s, m, repeat=args.repeat)
    print(f"fast, 5 metrics x {args.groups} groups:             {t_fast:7.2f} s")
    t_ci, fast_ci = timed(nuanced_auc_metrics, y, s, m, ci_prob=0.95, repeat=args.repeat)
    print(f"fast with DeLong intervals:                  {t_ci:7.2f} s")
    t_base, base = timed(nuanced_auc_baseline, y, s, m)
    print(f"per subgroup and metric, scipy mannwhitneyu: {t_base:7.2f} s "
          f"({t_base / t_fast:.0f}x slower)")
    diff = float(np.abs(fast[list(AUC_METRICS)].to_numpy() - base.to_numpy()).max())
    print(f"max |fast - baseline| = {diff:.2e}")
    result = {"rows": args.rows, "groups": args.groups, "ties": not args.no_ties,
              "fast_s": t_fast,
              "fast_with_delong_s": t_ci, "baseline_scipy_s": t_base,
              "max_abs_diff_scipy": diff, "machine": platform.processor() or platform.machine(),
              "python": platform.python_version()}
    t_sk, sk = timed(sklearn_baseline, y, s, m)
    if sk is not None:
        d2 = float(np.abs(fast[list(AUC_METRICS)].to_numpy() - sk).max())
        print(f"per subgroup and metric, sklearn roc_auc_score: {t_sk:7.2f} s "
              f"({t_sk / t_fast:.0f}x slower), max |diff| = {d2:.2e}")
        result.update(baseline_sklearn_s=t_sk, max_abs_diff_sklearn=d2)
    else:
        print("scikit-learn not installed: roc_auc_score baseline skipped")
    assert diff < 1e-9, "fast and baseline disagree"
    if args.json:
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
