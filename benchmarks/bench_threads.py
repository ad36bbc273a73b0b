"""Benchmark (run by hand): the numeric passes split over threads, against one thread.

``bayesbias.parallel.thread_map`` runs the rank diagnostics' columns and the coverage
check's blocks of rows in threads (NumPy releases the GIL in sorts, FFTs and ufuncs). Here
both are timed in one process with threads on and off, alternating (best of 3), and the
results must be equal bit for bit:

- rank diagnostics (r-hat, bulk and tail ESS) of the crossed fit of the shipped religion /
  Reddit table at 1000 and 4000 draws per chain (the report's fit and its refit);
- the leave-one-out coverage check of the same fit, and with ``--table PATH`` of a fit of
  that table (e.g. the 5M-row table of ``bench_scale.py --fit``: 20,000 rows x 1,000 draws).

Usage::

    python benchmarks/bench_threads.py [--table big.parquet]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def _alternate(f):
    import bayesbias.parallel as parallel

    real = parallel.usable_cores
    best, results = {}, {}
    try:
        for mode in ("one", "threads") * 3:
            parallel.usable_cores = (lambda: 1) if mode == "one" else real
            t = time.perf_counter()
            results[mode] = f()
            best[mode] = min(best.get(mode, np.inf), time.perf_counter() - t)
    finally:
        parallel.usable_cores = real
    return best["one"], best["threads"], results["one"], results["threads"]


def _line(what, one, threads, same):
    print(f"{what}: 1 thread {one:.2f} s, {threads:.2f} s with threads (ratio "
          f"{one / threads:.2f}); same numbers: {same}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="also the coverage check of a fit of this table")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from bayesbias.datasets import published_table, read_table
    from bayesbias.models import checks, fit_model
    from bayesbias.models import diagnostics as diag
    from bayesbias.models._rank_diagnostics import rank_diagnostics
    from bayesbias.models.result import _row_view
    from bayesbias.parallel import usable_cores

    print(f"usable cores: {usable_cores()}")
    table = published_table("religion", "reddit")
    for draws in (1000, 4000):
        fit = fit_model(table, "crossed", draws=draws, seed=1, checked=False)
        post = fit.posterior
        _, blocks = diag._stacked(post[[v for v in post.data_vars if v not in diag.HELPERS]])
        ary = np.concatenate(blocks, axis=2)
        one, threads, a, b = _alternate(lambda ary=ary: rank_diagnostics(ary, 0.89))
        _line(f"rank diagnostics {ary.shape}", one, threads,
              all(np.array_equal(a[k], b[k], equal_nan=True) for k in a))
        if draws == 1000:
            rows = _row_view(fit)
            one, threads, a, b = _alternate(lambda rows=rows: checks.loo_coverage(rows))
            _line(f"coverage check, {fit.cells.n_rows} rows", one, threads, a == b)
    if args.table:
        fit = _row_view(fit_model(read_table(args.table), "crossed", checked=False))
        one, threads, a, b = _alternate(lambda: checks.loo_coverage(fit))
        _line(f"coverage check of {args.table} ({checks.LOO_ROWS} rows)", one, threads, a == b)


if __name__ == "__main__":
    main()
