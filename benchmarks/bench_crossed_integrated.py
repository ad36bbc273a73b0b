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

``--kernel`` (default ``c``): the integrated sampler's kernel, ``c`` (the C port in
:mod:`bayesbias.models._native`, ``cxi_logp``; mu_bar and the attribute effects then drawn
jointly by ``cxi_draw``) or ``cfunc_types`` (the numba prototype). ``--kernel-costs``: per
list, the C kernel against the numba ``cfunc`` on the same density: seconds per call through
``ctypes`` (both; a call of ``cxi_expand`` is the call overhead) and the CPU of
``sample_scales`` with each (same seed: the same chains to rounding, so the same number of
evaluations). ``--no-current`` skips the default and hierarchical fits.

``--compare`` (race and gender by default): posterior means of mu_bar, tau, sigma, omega from
the current sampler's long run (``draws=10000, seed=1``) against the integrated sampler's
(``--long-draws`` per chain), as z = difference / sqrt(MCSE_1^2 + MCSE_2^2) (MCSE: sd /
sqrt(ESS)), and the ratio of posterior sds.

Run ``python benchmarks/bench_crossed_integrated.py [--lists religion race gender]
[--compare race gender] [--long-draws 10000] [--kernel c] [--kernel-costs]
[--no-current]``; appends to ``benchmarks/results/bench_crossed_integrated.txt``.
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
from bayesbias.models.crossed import integrated_data
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
    if kernel == "c":
        mu, _ = ci.draw_c(theta, ci.pack_draws_c(data), np.random.default_rng(seed))
        out = {"tau": np.exp(theta[..., :4]), "sigma": np.exp(theta[..., 4:4 + data["ns"]]),
               "omega": np.exp(theta[..., 4 + data["ns"]:]), "mu_bar": mu}
    else:
        out = ci.posterior_draws(theta, data, seed=seed, compiled=True)
    cpu_gauss = time.process_time() - c1
    steps = float(stats["n_steps"].mean())
    div = int(stats["diverging"].sum())
    return out, cpu, cpu_gauss, steps, div


def _kernel_costs(data):
    """Per call through ctypes: C, numba cfunc, overhead; sample_scales CPU with each."""
    import ctypes

    dp = ctypes.POINTER(ctypes.c_double)
    k = 4 + data["ns"] + data["nk"]
    th = np.ascontiguousarray(ci.initial_point(data, np.random.default_rng(0)))
    grad, lp, out = np.empty(k), np.zeros(1), np.empty(k)
    c_logp, c_expand = ci.entry_points()
    c_block = ci.pack_types_c(data)
    nb_logp, _ = nb.c_entry_points_types()
    nb_block = nb.pack_types_flat(nb.pack_types(data, ci.attribute_types(data)))
    args = [th.ctypes.data_as(dp), grad.ctypes.data_as(dp), lp.ctypes.data_as(dp)]

    def per_call(fn, *a):
        return min(timeit.repeat(lambda: fn(*a), number=20000, repeat=5)) / 20000

    t_c = per_call(c_logp.ctypes, k, *args, c_block.ctypes.data_as(dp))
    t_nb = per_call(nb_logp.ctypes, k, *args, nb_block.ctypes.data_as(dp))
    t_0 = per_call(c_expand.ctypes, k, k, th.ctypes.data_as(dp), out.ctypes.data_as(dp),
                   c_block.ctypes.data_as(dp))
    cpu = {}
    for kern in ("c", "cfunc_types"):
        ci.sample_scales(data, draws=10, tune=10, kernel=kern)  # warm-up (compiles)
        best = []
        for _ in range(3):
            c0 = time.process_time()
            _, stats = ci.sample_scales(data, draws=1000, tune=500, seed=1, kernel=kern)
            best.append(time.process_time() - c0)
        cpu[kern] = (min(best), float(stats["n_steps"].mean()))
    evals = 4 * 1500 * cpu["c"][1]
    return (f"  kernel per call via ctypes: C {t_c * 1e6:.2f} us, numba cfunc "
            f"{t_nb * 1e6:.2f} us, call overhead (cxi_expand) {t_0 * 1e6:.2f} us; "
            f"net C {(t_c - t_0) * 1e6:.2f} us vs numba {(t_nb - t_0) * 1e6:.2f} us "
            f"(ratio {(t_nb - t_0) / (t_c - t_0):.1f})\n"
            f"  sample_scales 4 x (500 + 1000), 1 core, best of 3: C {cpu['c'][0]:.3f} CPU-s "
            f"({cpu['c'][1]:.2f} steps/draw, {cpu['c'][0] / evals * 1e6:.2f} us/eval incl. "
            f"driver), numba cfunc {cpu['cfunc_types'][0]:.3f} CPU-s "
            f"({cpu['cfunc_types'][1]:.2f} steps/draw)")


def _min_ess(out):
    return {n: min(_ess(s) for s in _series(out[n])) for n in NAMES}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--lists", nargs="*", default=["religion", "race", "gender"])
    ap.add_argument("--compare", nargs="*", default=["race", "gender"])
    ap.add_argument("--long-draws", type=int, default=10000)
    ap.add_argument("--kernel", default="c", choices=["c", "cfunc_types"])
    ap.add_argument("--kernel-costs", action="store_true")
    ap.add_argument("--no-current", action="store_true")
    args = ap.parse_args(argv)
    emb = load_embedding(default_embedding_path())
    spec = load_spec("crossed")
    lines = [f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
             "bench_crossed_integrated"]
    hier_cpu = {}
    for name in args.lists:
        t = distance_table(emb, load_wordlist(name))
        data = integrated_data(spec, cells_from_table(t))
        if args.kernel_costs:
            lines.append(f"{name}: attributes {data['na']}, groups {data['ng']}, types "
                         f"{ci.attribute_types(data)['count'].size}\n" + _kernel_costs(data))
            print(lines[-1], flush=True)
        if args.no_current:
            continue
        _current(t)  # warm-up (kernel compile caches)
        cur, cpu_c, steps_c = _current(t)
        c0 = time.process_time()
        hfit = fit_model(t, "hierarchical", checked=False)
        hier_cpu[name] = time.process_time() - c0
        hsteps = float(hfit.idata.sample_stats["n_steps"].mean())
        _integrated(data, draws=10, kernel=args.kernel)  # warm-up (compile)
        integ, cpu_i, cpu_g, steps_i, div = _integrated(data, kernel=args.kernel)
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
            f"  integrated: CPU {cpu_i:.2f} s {args.kernel}, core driver (+{cpu_g:.2f} s "
            + ("joint (mu_bar, v) draws, C), " if args.kernel == "c"
               else "mu_bar draws, compiled), ")
            + 
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
        data = integrated_data(spec, cells_from_table(t))
        cur, _, _ = _current(t, draws=10000)
        integ, cpu_i, _, steps_i, div = _integrated(data, draws=args.long_draws, seed=2,
                                                    kernel=args.kernel)
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
