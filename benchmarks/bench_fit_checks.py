"""The default report's per-fit checks before and after issue 49's speed-up, in one process.

Fits the race word list with the default (crossed) model at 1000 and 4000 draws per chain
(seed 1, 4 chains: the report's fit and a verdict refit's), then times per call (CPU and
wall seconds, best of :data:`REPS`, before and after interleaved, the fit's cache cleared
between calls):

- ``fit.diagnostics()`` with the rank diagnostics of commit ``BEFORE`` (loaded from git with
  the ``bayesbias/_stats.py`` of that commit: FFT autocovariances, argsort gathers) and with
  this tree's (:mod:`bayesbias.models._rank_diagnostics`); the largest relative difference of
  r-hat and ESS between the two, and against ``arviz_stats`` (1000 draws);
- ``fit.ppc(seed=1)`` with the replicates made as before (all at once, then a transposed
  copy) and as now (:func:`bayesbias.models.result._replicates_by_row`); the two tables
  must be equal (the same normals, the same numbers).

Then the rank diagnostics alone (one thread) on 380 columns of AR(1) chains, 4 x 1000 draws,
from well mixed to badly (Geyer's sequence running past the directly summed lags: the FFT
after them), before and after.

Usage::

    python benchmarks/bench_fit_checks.py
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np

#: The commit before the speed-up (main at the start of branch fast-checks).
BEFORE = "1b68928"
ROOT = Path(__file__).resolve().parents[1]
#: Timed runs of each variant (best of).
REPS = 5


def _module_at(commit: str, path: str, name: str, replace: dict[str, str]) -> types.ModuleType:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], check=True,
                         capture_output=True, text=True).stdout
    for a, b in replace.items():
        src = src.replace(a, b)
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    exec(compile(src, f"{commit}:{path}", "exec"), mod.__dict__)
    return mod


def _rank_diagnostics_before():
    _module_at(BEFORE, "bayesbias/_stats.py", "bayesbias_stats_before", {})
    return _module_at(BEFORE, "bayesbias/models/_rank_diagnostics.py",
                      "bayesbias_rank_diagnostics_before",
                      {"from .._stats import": "from bayesbias_stats_before import",
                       "from ..parallel import": "from bayesbias.parallel import"})


def _replicates_before(rng, mean, sig, conn):
    """Make the replicates as ``Fit._ppc`` did before: all at once, then a transposed copy."""
    rep = rng.standard_normal(mean.shape)
    rep *= sig[:, conn]
    rep += mean
    return np.ascontiguousarray(rep.T)


def _interleaved(call, variants: dict, reps: int = REPS) -> dict:
    """Best CPU and wall seconds of ``call()`` under each variant, runs interleaved.

    `variants` maps a name to a function that installs it and returns one that undoes it;
    the variants take turns (before, after, before, ...), so a change of the machine's load
    touches both alike. Returns name -> (cpu, wall, last result).
    """
    cpu = {k: [] for k in variants}
    wall = {k: [] for k in variants}
    out = {}
    for rep in range(reps + 1):  # the first round warms up
        for name, install in variants.items():
            undo = install()
            try:
                t, w = time.process_time(), time.perf_counter()
                out[name] = call()
                if rep:
                    cpu[name].append(time.process_time() - t)
                    wall[name].append(time.perf_counter() - w)
            finally:
                undo()
    return {k: (min(cpu[k]), min(wall[k]), out[k]) for k in variants}


def _patch(module, attr: str, value):
    """Return a variant for :func:`_interleaved`: ``module.attr = value`` while it runs."""
    def install():
        old = getattr(module, attr)
        setattr(module, attr, value)
        return lambda: setattr(module, attr, old)
    return install


def _bench(fit, draws: int, before) -> None:
    import pandas as pd

    from bayesbias.models import diagnostics as diag
    from bayesbias.models import result

    post = fit.posterior
    names, blocks = diag._stacked(post[[v for v in post.data_vars if v not in diag.HELPERS]])
    label = f"crossed race, {len(names)} parameters x {post.sizes['chain']} x {draws}"

    def diagnostics():
        fit.__dict__.pop("_cache", None)
        return fit.diagnostics().table

    times = _interleaved(diagnostics, {
        "before": _patch(diag, "rank_diagnostics", before.rank_diagnostics),
        "after": _patch(diag, "rank_diagnostics", diag.rank_diagnostics)})
    a, b = times["before"][2], times["after"][2]
    rel = max(float(np.nanmax(np.abs(b[k] / a[k] - 1))) for k in ("rhat", "ess_bulk",
                                                                      "ess_tail"))
    line = (f"{label}: diagnostics() before {times['before'][0]:.3f} / "
            f"{times['before'][1]:.3f} s, after {times['after'][0]:.3f} / "
            f"{times['after'][1]:.3f} s (CPU ratio "
            f"{times['before'][0] / times['after'][0]:.2f}); max rel. difference {rel:.2g}")
    if draws == 1000:
        from arviz_base import rcParams
        from arviz_stats.base import array_stats

        ary = np.concatenate(blocks, axis=2)
        want = {"rhat": array_stats.rhat(ary, chain_axis=0, draw_axis=1, method="rank"),
                "ess_bulk": array_stats.ess(ary, chain_axis=0, draw_axis=1, method="bulk"),
                "ess_tail": array_stats.ess(ary, chain_axis=0, draw_axis=1, method="tail",
                                            prob=rcParams["stats.ci_prob"])}
        ref = max(float(np.nanmax(np.abs(b[k].to_numpy() / want[k] - 1))) for k in want)
        line += f", against arviz_stats {ref:.2g}"
    print(line, flush=True)

    def ppc():
        fit.__dict__.pop("_cache", None)
        return fit.ppc(seed=1)

    times = _interleaved(ppc, {
        "before": _patch(result, "_replicates_by_row", _replicates_before),
        "after": _patch(result, "_replicates_by_row", result._replicates_by_row)})
    pd.testing.assert_frame_equal(times["before"][2], times["after"][2], check_exact=True)
    print(f"{label}: ppc(seed=1) on {fit.cells.n_rows} rows x 1000 thinned draws: before "
          f"{times['before'][0]:.3f} / {times['before'][1]:.3f} s, after "
          f"{times['after'][0]:.3f} / {times['after'][1]:.3f} s (CPU ratio "
          f"{times['before'][0] / times['after'][0]:.2f}); tables equal", flush=True)


def _ar1(rng, phi: float, n: int = 380) -> np.ndarray:
    x = np.empty((4, 1000, n))
    x[:, 0] = rng.normal(size=(4, n))
    e = rng.normal(size=(4, 1000, n)) * np.sqrt(1 - phi ** 2)
    for t in range(1, 1000):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def _bench_mixing(before) -> None:
    from bayesbias.models import _rank_diagnostics as rd

    rng = np.random.default_rng(0)
    use = types.SimpleNamespace(fn=None)
    for phi in (0.0, 0.9, 0.99):
        times = _interleaved(functools.partial(_call_one_thread, use, _ar1(rng, phi)), {
            "before": _patch(use, "fn", before.rank_diagnostics),
            "after": _patch(use, "fn", rd.rank_diagnostics)})
        print(f"380 AR(1) columns, phi {phi}, 4 x 1000 draws, rank diagnostics on one thread: "
              f"before {times['before'][0]:.3f} s, after {times['after'][0]:.3f} s (CPU ratio "
              f"{times['before'][0] / times['after'][0]:.2f})", flush=True)


def _call_one_thread(use, ary):
    return use.fn(ary, 0.89, threads=1)


def main() -> None:
    from bayesbias.inputs.distances import distance_table
    from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
    from bayesbias.inputs.wordlists import load_wordlist
    from bayesbias.models import fit_model

    warnings.simplefilter("ignore")
    before = _rank_diagnostics_before()
    table = distance_table(load_embedding(default_embedding_path()), load_wordlist("race"))
    print(f"bench_fit_checks: before = commit {BEFORE}; CPU / wall seconds per call, best of "
          f"{REPS} (interleaved)")
    for draws in (1000, 4000):
        _bench(fit_model(table, "crossed", seed=1, draws=draws, checked=False), draws, before)
    _bench_mixing(before)


if __name__ == "__main__":
    main()
