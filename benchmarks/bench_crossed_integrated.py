"""Benchmark (run by hand, issue 49): the crossed model's two samplers and the hierarchical fit.

For each shipped list on the default embedding, in one process, ``fit_model(t, model,
checked=False)`` (4 chains x (500 tune + 1000 draws)) with

- ``crossed`` on the scales alone (the default for few groups of cells: mu_bar, the attribute
  effects and the cell means integrated out, then drawn exactly; :mod:`.crossed_integrated`),
- ``crossed`` on every parameter (the route above :data:`.crossed.MAX_INTEGRATED_GROUPS`
  groups, forced here by setting it to 0),
- ``hierarchical`` (the paper's model),

reporting CPU seconds, leapfrog steps per draw and the smallest split-chain ESS of mu_bar,
tau, sigma, omega; ``--kernel-costs`` adds the compiled density's cost per call (ctypes,
net of the call itself) against the numpy reference's.

``--compare`` (race and gender by default): posterior means of mu_bar, tau, sigma, omega of a
long run of each crossed route (``--long-draws`` per chain, different seeds), as z =
difference / sqrt(MCSE_1^2 + MCSE_2^2) (MCSE: sd / sqrt(ESS)), and the ratio of their sds.

Run ``python benchmarks/bench_crossed_integrated.py [--lists religion race gender]
[--compare race gender] [--long-draws 10000] [--kernel-costs]``; appends to
``benchmarks/results/bench_crossed_integrated.txt``.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import time
import timeit
import warnings
from pathlib import Path

import numpy as np

from bayesbias.inputs.distances import distance_table
from bayesbias.inputs.embeddings import default_embedding_path, load_embedding
from bayesbias.inputs.wordlists import load_wordlist
from bayesbias.models import crossed, fit_model
from bayesbias.models import crossed_integrated as ci
from bayesbias.models.cells import cells_from_table
from bayesbias.models.contrast_mixture import _ess
from bayesbias.models.crossed import integrated_data
from bayesbias.models.spec import load_spec

NAMES = ("mu_bar", "tau", "sigma", "omega")
OUT = Path(__file__).parent / "results" / "bench_crossed_integrated.txt"


def _series(arr):
    """(chain, draw, k) -> list of (chain, draw) series."""
    a = np.asarray(arr)
    if a.ndim == 2:
        a = a[..., None]
    return [a[..., j] for j in range(a.shape[-1])]


def _fit(t, model="crossed", route="scales", draws=1000, seed=1):
    """CPU seconds, steps per draw and the posterior draws of one fit."""
    saved = crossed.MAX_INTEGRATED_GROUPS
    if route == "every parameter":
        crossed.MAX_INTEGRATED_GROUPS = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0 = time.process_time()
            fit = fit_model(t, model, checked=False, draws=draws, seed=seed)
            cpu = time.process_time() - c0
    finally:
        crossed.MAX_INTEGRATED_GROUPS = saved
    post = fit.idata.posterior
    out = {n: np.asarray(post[n].transpose("chain", "draw", ...).values) for n in NAMES
           if n in post}
    return out, cpu, float(fit.idata.sample_stats["n_steps"].mean())


def _min_ess(out):
    return min(_ess(s) for n in out for s in _series(out[n]))


def _kernel_costs(data):
    """Seconds per call through ctypes: the C density net of the call, and numpy's."""
    packed = ci.pack_types_c(data)
    logp, expand = ci.entry_points()
    k = 4 + data["ns"] + data["nk"]
    th = ci.initial_point(data, np.random.default_rng(0))
    x, g, lp, out = (np.ascontiguousarray(a, dtype=float) for a in (th, np.zeros(k),
                                                                     np.zeros(1), np.zeros(k)))
    dp = ctypes.POINTER(ctypes.c_double)
    ptr = [a.ctypes.data_as(dp) for a in (x, g, lp, packed, out)]
    t_c = min(timeit.repeat(lambda: logp.ctypes(k, ptr[0], ptr[1], ptr[2], ptr[3]),
                            number=20000, repeat=5)) / 20000
    t_0 = min(timeit.repeat(lambda: expand.ctypes(k, k, ptr[0], ptr[4], ptr[3]),
                            number=20000, repeat=5)) / 20000
    t_np = min(timeit.repeat(lambda: ci.log_marginal_types_grad(th, data),
                             number=200, repeat=3)) / 200
    return (f"  density + gradient per call: C {(t_c - t_0) * 1e6:.2f} us net of the ctypes "
            f"call ({t_0 * 1e6:.2f} us), numpy reference {t_np * 1e6:.0f} us")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--lists", nargs="*", default=["religion", "race", "gender"])
    ap.add_argument("--compare", nargs="*", default=["race", "gender"])
    ap.add_argument("--long-draws", type=int, default=10000)
    ap.add_argument("--kernel-costs", action="store_true")
    args = ap.parse_args(argv)
    emb = load_embedding(default_embedding_path())
    spec = load_spec("crossed")
    lines = [f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC "
             "bench_crossed_integrated (fit_model routes)"]
    for name in args.lists:
        t = distance_table(emb, load_wordlist(name))
        data = integrated_data(spec, cells_from_table(t))
        _fit(t)  # warm-up (kernel compile caches)
        _fit(t, route="every parameter")
        row = [f"{name}: rows {len(t)}, attributes {data['na']}, groups {data['ng']}, "
               f"types {ci.attribute_types(data)['count'].size}"]
        for label, model, route in (("crossed, scales", "crossed", "scales"),
                                    ("crossed, every parameter", "crossed", "every parameter"),
                                    ("hierarchical", "hierarchical", "scales")):
            out, cpu, steps = _fit(t, model, route)
            row.append(f"  {label:25s} CPU {cpu:.2f} s, steps/draw {steps:.1f}, min ESS "
                       f"{_min_ess(out):.0f}")
        if args.kernel_costs:
            row.append(_kernel_costs(data))
        lines.append("\n".join(row))
        print(lines[-1], flush=True)
    for name in args.compare:
        t = distance_table(emb, load_wordlist(name))
        full, _, _ = _fit(t, route="every parameter", draws=args.long_draws, seed=1)
        integ, _, _ = _fit(t, draws=args.long_draws, seed=2)
        zs, ratios = [], []
        for n in NAMES:
            for a, b in zip(_series(full[n]), _series(integ[n]), strict=True):
                se = np.hypot(a.std() / np.sqrt(_ess(a)), b.std() / np.sqrt(_ess(b)))
                zs.append((a.mean() - b.mean()) / se)
                ratios.append(b.std() / a.std())
        zs = np.array(zs)
        lines.append(
            f"{name} posterior (every parameter vs scales, {args.long_draws} draws per chain "
            f"each): |z| max {np.abs(zs).max():.2f}, mean of z^2 {np.mean(zs**2):.2f} over "
            f"{zs.size} means; sd ratio scales/every parameter "
            f"{min(ratios):.3f}..{max(ratios):.3f}\n  z: " + " ".join(f"{z:+.1f}" for z in zs))
        print(lines[-1], flush=True)
    OUT.parent.mkdir(exist_ok=True)
    with OUT.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
