"""Benchmark (run by hand, issue 49): NUTS on the crossed model's log scales only.

For each shipped list on the default embedding, in one process:

- the default crossed fit, ``fit_model(t, "crossed", checked=False)`` (4 chains x (500 tune
  + 1000 draws)): CPU seconds, leapfrog steps per draw, split-chain ESS of mu_bar, tau,
  sigma, omega;
- :func:`bayesbias.models.crossed_integrated.sample_scales` (same chains, tune, draws; the
  numba prototype of the type-collapsed density, ``kernel="cfunc_types"``, a C-callable
  ``cfunc`` run by bayesbias' nutpie driver as the default kernels are: no Python per step),
  then mu_bar drawn from its conditional Normal per scale
  draw: the same numbers, plus the density's cost per call (numpy; numba called from
  Python) and the CPU per evaluation a compiled kernel would need to cost as much as the
  default fit and as the hierarchical fit.

``--compare`` (race and gender by default): posterior means of mu_bar, tau, sigma, omega from
the current sampler's long run (``draws=10000, seed=1``) against the integrated sampler's
(``--long-draws`` per chain), as z = difference / sqrt(MCSE_1^2 + MCSE_2^2) (MCSE: sd /
sqrt(ESS)), and the ratio of posterior sds.

Run ``python benchmarks/bench_crossed_integrated.py [--lists religion race gender]
[--compare race gender] [--long-draws 10000]``; appends to
``benchmarks/results/bench_crossed_integrated.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import time
import timeit
from pathlib import Path

import numpy as np

from bayesbias.inputs.distances import distance_table
from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
from bayesbias.inputs.wordlists import load_wordlist
from bayesbias.models import _crossed_integrated_numba as nb
from bayesbias.models import crossed_integrated as ci
from bayesbias.models import fit_model
from bayesbias.models.cells import cells_from_table
from bayesbias.models.contrast_mixture import _ess
from bayesbias.models.spec import load_spec

NAMES = ("mu_bar", "tau", "sigma", "omega")
OUT = Path(__file__).parent / "results" / "bench_crossed_integrated.txt"


def _series(arr):
    """(chain, draw, k) -> list of (chain, draw) series."""
    a = np.asarray(arr)
    return [a[..., j] for j in range(a.shape[-1])]


def _current(t, draws=1000, seed=1):
    c0 = time.process_time()
    fit = fit_model(t, "crossed", checked=False, draws=draws, seed=seed)
    cpu = time.process_time() - c0
    post = fit.idata.posterior
    out = {n: np.asarray(post[n].transpose("chain", "draw", ...).values) for n in NAMES}
    steps = float(fit.idata.sample_stats["n_steps"].mean())
    return out, cpu, steps


def _integrated(data, draws=1000, seed=1, kernel="cfunc_types"):
    c0 = time.process_time()
    theta, stats = ci.sample_scales(data, draws=draws, seed=seed, kernel=kernel)
    cpu = time.process_time() - c0
    c1 = time.process_time()
    out = ci.posterior_draws(theta, data, seed=seed, compiled=True)
    cpu_gauss = time.process_time() - c1
    steps = float(stats["n_steps"].mean())
    div = int(stats["diverging"].sum())
    return out, cpu, cpu_gauss, steps, div


def _min_ess(out):
    return {n: min(_ess(s) for s in _series(out[n])) for n in NAMES}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--lists", nargs="*", default=["religion", "race", "gender"])
    ap.add_argument("--compare", nargs="*", default=["race", "gender"])
    ap.add_argument("--long-draws", type=int, default=10000)
    args = ap.parse_args(argv)
    emb = load_embedding(default_embedding_path())
    spec = load_spec("crossed")
    lines = [f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
             "bench_crossed_integrated"]
    hier_cpu = {}
    for name in args.lists:
        t = distance_table(emb, load_wordlist(name))
        data = ci.integrated_data(spec, cells_from_table(t))
        _current(t)  # warm-up (kernel compile caches)
        cur, cpu_c, steps_c = _current(t)
        c0 = time.process_time()
        hfit = fit_model(t, "hierarchical", checked=False)
        hier_cpu[name] = time.process_time() - c0
        hsteps = float(hfit.idata.sample_stats["n_steps"].mean())
        _integrated(data, draws=10)  # warm-up (numba compile)
        integ, cpu_i, cpu_g, steps_i, div = _integrated(data)
        th = ci.initial_point(data, np.random.default_rng(0))
        per_eval = min(timeit.repeat(lambda: ci.log_marginal_grad(th, data),  # noqa: B023
                                     number=200, repeat=3)) / 200
        packed = nb.pack_sparse(data)
        per_nb = min(timeit.repeat(lambda: nb.log_marginal_grad_sparse(th, packed),  # noqa: B023
                                   number=2000, repeat=5)) / 2000
        ty = ci.attribute_types(data)
        per_ty = min(timeit.repeat(lambda: ci.log_marginal_types_grad(th, data, ty),  # noqa: B023
                                   number=200, repeat=3)) / 200
        ess_c, ess_i = _min_ess(cur), _min_ess(integ)
        evals = 4 * 1500 * steps_i
        lines.append(
            f"{name}: rows {len(t)}, attributes {data['na']}, groups {data['ng']}\n"
            f"  current   : CPU {cpu_c:.2f} s, steps/draw {steps_c:.1f}, min ESS "
            + ", ".join(f"{n} {ess_c[n]:.0f}" for n in NAMES)
            + f", ESS(min)/CPU-s {min(ess_c.values()) / cpu_c:.0f}\n"
            f"  integrated: CPU {cpu_i:.2f} s cfunc_types, core driver (+{cpu_g:.2f} s "
            "mu_bar draws, compiled), "
            f"ESS(min)/CPU-s {min(ess_i.values()) / cpu_i:.0f}, steps/draw "
            f"{steps_i:.1f}, divergences {div}, min ESS "
            + ", ".join(f"{n} {ess_i[n]:.0f}" for n in NAMES)
            + f"\n  density+gradient per call from Python: numpy Woodbury {per_eval * 1e6:.0f} "
            f"us, numpy types ({ty['count'].size}) {per_ty * 1e6:.0f} us, numba sparse Woodbury "
            f"{per_nb * 1e6:.1f} us; a compiled kernel "
            f"matches the current CPU at {cpu_c / evals * 1e6:.1f} us/eval, the hierarchical "
            f"fit's ({hier_cpu[name]:.2f} s, {hsteps:.1f} steps/draw) at "
            f"{hier_cpu[name] / evals * 1e6:.1f} us/eval")
        print(lines[-1], flush=True)
    for name in args.compare:
        t = distance_table(emb, load_wordlist(name))
        data = ci.integrated_data(spec, cells_from_table(t))
        cur, _, _ = _current(t, draws=10000)
        integ, cpu_i, _, steps_i, div = _integrated(data, draws=args.long_draws, seed=2)
        zs, ratios = [], []
        for n in NAMES:
            for a, b in zip(_series(cur[n]), _series(integ[n]), strict=True):
                se = np.hypot(a.std() / np.sqrt(_ess(a)), b.std() / np.sqrt(_ess(b)))
                zs.append((a.mean() - b.mean()) / se)
                ratios.append(b.std() / a.std())
        zs = np.array(zs)
        lines.append(
            f"{name} posterior (current draws=10000 vs integrated draws={args.long_draws}, "
            f"{div} divergences): |z| max {np.abs(zs).max():.2f}, mean of z^2 "
            f"{np.mean(zs**2):.2f} over {zs.size} means; sd ratio integrated/current "
            f"{min(ratios):.3f}..{max(ratios):.3f}\n  z: " + " ".join(f"{z:+.1f}" for z in zs))
        print(lines[-1], flush=True)
    OUT.parent.mkdir(exist_ok=True)
    with OUT.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
