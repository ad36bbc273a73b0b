"""Whether a fit's report needs the hand-written rank diagnostics (_rank_diagnostics.py).

Fits the shipped religion / Reddit table with the hierarchical and the crossed (default)
model at the default settings, then computes the r-hat and bulk / tail ESS of every
parameter both ways in the same process: the hand-written all-at-once version and
``arviz_stats``' array functions (what it replaces). Prints the CPU seconds of each (best
of 3), their ratio, the share of the fit's wall time saved and the largest difference of
the numbers (0: the same numbers).

Then the PSIS log weights of the coverage check (``checks.loo_pit``: 1000 thinned draws x
4,830 rows): the vectorised :func:`bayesbias.models._psis.psislw` against ``arviz_stats``'
``psislw`` (a Python loop over rows), CPU seconds (best of 3 / best of 2), ratio, largest
difference of log weights and khat.

Usage::

    nice python benchmarks/bench_diagnostics.py
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def main() -> None:
    from bayesbias.datasets import published_table
    from bayesbias.models import _rank_diagnostics, fit_model
    from bayesbias.models import diagnostics as diag

    warnings.simplefilter("ignore")
    table = published_table("religion", "reddit")
    for model in ("hierarchical", "crossed"):
        t0 = time.perf_counter()
        fit = fit_model(table, model, seed=1)
        wall = time.perf_counter() - t0
        post = fit.posterior
        names, blocks = diag._stacked(post[[v for v in post.data_vars
                                            if v not in diag.HELPERS]])
        ours, theirs = [], []
        covered = _rank_diagnostics.covered
        for _ in range(3):
            t = time.process_time()
            a = diag._chain_draw_stats(blocks)
            ours.append(time.process_time() - t)
            _rank_diagnostics.covered = lambda ary: False  # every block to arviz_stats
            try:
                t = time.process_time()
                b = diag._chain_draw_stats(blocks)
                theirs.append(time.process_time() - t)
            finally:
                _rank_diagnostics.covered = covered
        diff = max(float(np.nanmax(np.abs(a[k] - b[k]))) for k in a)
        print(f"{model}: {len(names)} parameters, fit {wall:.1f} s wall; diagnostics CPU: "
              f"hand-written {min(ours):.3f} s, arviz_stats {min(theirs):.3f} s (ratio "
              f"{min(theirs) / min(ours):.2f}, saves {min(theirs) - min(ours):.2f} s = "
              f"{(min(theirs) - min(ours)) / wall:.1%} of the fit); max difference {diff:.2g}")
        _bench_psis(fit, model, wall)


def _bench_psis(fit, model: str, wall: float) -> None:
    from arviz_stats.base import array_stats

    from bayesbias.models import _psis, checks

    mean, sd = checks._row_moments(fit)
    z = (fit.cells.y[None, :] - mean) / sd
    loglik = np.ascontiguousarray((-0.5 * z * z - np.log(sd)).T)
    ours, theirs = [], []
    for rep in range(3):
        t = time.process_time()
        a_lw, a_k = _psis.psislw(loglik)
        ours.append(time.process_time() - t)
        if rep < 2:
            t = time.process_time()
            b_lw, b_k = array_stats.psislw(loglik, axis=-1)
            theirs.append(time.process_time() - t)
    d_lw = float(np.nanmax(np.abs(a_lw - np.asarray(b_lw))))
    d_k = float(np.nanmax(np.abs(a_k - np.asarray(b_k))))
    print(f"{model}: PSIS of {loglik.shape[0]} rows x {loglik.shape[1]} draws, CPU: "
          f"vectorised {min(ours):.3f} s, arviz_stats {min(theirs):.3f} s (ratio "
          f"{min(theirs) / min(ours):.1f}, saves {(min(theirs) - min(ours)) / wall:.1%} of the "
          f"fit); max difference log weights {d_lw:.2g}, khat {d_k:.2g}")


if __name__ == "__main__":
    main()
