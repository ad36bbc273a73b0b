"""Benchmark: hierarchical fits on 5k to 5M simulated rows, sufficient statistics vs rows.

Every size uses the same synthetic word list (3 classes x 5 protected words) with more
attributes, so the number of cells is fixed and only the rows per cell grow. For each size the
sufficient-statistic fit and (up to ``--rows-max`` rows) the row-level fit run on the same data
in the same process. Reported: wall time (including compilation, which the sufficient fit
reuses across calls of the same structure), nutpie's sampling time, the smallest bulk ESS of
the group-level parameters (mu_bar, tau, sigma), bulk ESS per second of sampling, the CPU time
of the fit's diagnostics (r-hat, ESS, sampler checks) and the wall time of ``Fit.save``.

Run with ``nice python benchmarks/bench_fit.py`` (about 5 minutes on 2 cores);
``--sizes 5000 50000`` for a quick run; ``--json out.json`` to keep the figures;
``--stan-python ENV/bin/python`` to add the same model in Stan (PyStan 3 in another
environment; its first build compiles for about 30 s and is cached by httpstan).
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

SIZES = (5_000, 50_000, 500_000, 5_000_000)

#: The hierarchical model in Stan, on the same sufficient statistics, all cells non-centred.
STAN_CODE = """
data { int U; int K; array[K] int u; array[K] int c; vector[K] n; vector[K] ybar;
       vector[K] ss; }
parameters { vector[4] mu_bar; vector<lower=0>[4] tau; vector<lower=0>[4] sigma;
             matrix[U, 4] z; }
transformed parameters {
  matrix[U, 4] mu;
  for (j in 1:4) mu[:, j] = mu_bar[j] + tau[j] * z[:, j];
}
model {
  mu_bar ~ normal(1, 0.3); tau ~ exponential(2); sigma ~ exponential(2);
  to_vector(z) ~ std_normal();
  for (k in 1:K)
    target += -n[k] * log(sigma[c[k]])
              - (ss[k] + n[k] * square(ybar[k] - mu[u[k], c[k]])) / (2 * square(sigma[c[k]]));
}
"""


def stan_worker(data_json: str, out_npz: str, draws: int, tune: int, chains: int,
                seed: int) -> None:
    """Fit :data:`STAN_CODE` with PyStan 3 (run in an environment that has ``stan``)."""
    import stan

    data = json.loads(Path(data_json).read_text())
    t0 = time.perf_counter()
    model = stan.build(STAN_CODE, data=data, random_seed=seed)
    built = time.perf_counter()
    fit = model.sample(num_chains=chains, num_samples=draws, num_warmup=tune)
    done = time.perf_counter()
    # PyStan 3 returns (4, draws * chains) with the chains in consecutive blocks
    out = {k: np.moveaxis(fit[k].reshape(4, chains, draws), 0, -1)  # (chain, draw, 4)
           for k in ("mu_bar", "tau", "sigma")}
    np.savez(out_npz, build_s=built - t0, sampling_s=done - built,
             divergences=int(np.sum(fit["divergent__"])), **out)


def _stan(cells, python: str, draws: int, tune: int, chains: int, seed: int) -> dict:
    import arviz as az
    import xarray as xr

    ui, ci = np.nonzero(cells.n > 0)
    data = {"U": int(cells.units.size), "K": int(ui.size), "u": (ui + 1).tolist(),
            "c": (ci + 1).tolist(), "n": cells.n[ui, ci].astype(float).tolist(),
            "ybar": cells.mean[ui, ci].tolist(), "ss": cells.ss[ui, ci].tolist()}
    with tempfile.TemporaryDirectory() as tmp:
        dj, out = Path(tmp) / "data.json", Path(tmp) / "draws.npz"
        dj.write_text(json.dumps(data))
        t0 = time.perf_counter()
        subprocess.run([python, __file__, "--stan-worker", str(dj), str(out), str(draws),
                        str(tune), str(chains), str(seed)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        res = dict(np.load(out))
    post = xr.Dataset({k: (("chain", "draw", "connection"), res[k])
                       for k in ("mu_bar", "tau", "sigma")})
    ess = az.ess(post, method="bulk")
    min_ess = float(min(float(ess[k].min()) for k in ess.data_vars))
    sampling = float(res["sampling_s"])
    return {"likelihood": "stan-sufficient", "rows": int(cells.n.sum()),
            "wall_s": round(wall, 2), "sampling_s": round(sampling, 2),
            "min_bulk_ess": round(min_ess), "ess_per_s": round(min_ess / sampling, 1),
            "max_rhat": round(float(max(float(v.max()) for v in
                                        az.rhat(post).data_vars.values())), 3),
            "divergences": int(res["divergences"]),
            "group_means": post["mu_bar"].mean(("chain", "draw")).round(4).values.tolist(),
            "stan_build_s": round(float(res["build_s"]), 1)}


def _design(rows: int) -> dict:
    """Word-list sizes giving about `rows` rows with 15 protected words."""
    k = rows / 4950
    return {"n_classes": 3, "words_per_class": 5, "stereotypes_per_class": round(5 * k),
            "n_human": round(85 * k), "n_none": round(230 * k)}


def _measure(table, likelihood: str, draws: int, tune: int, chains: int, seed: int) -> dict:
    from bayesbias.models import fit_model

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "hierarchical", draws=draws, tune=tune, chains=chains,
                        seed=seed, likelihood=likelihood)
    wall = time.perf_counter() - t0
    fit.__dict__.pop("_cache", None)  # diagnostics again, timed (fit_model computed them)
    c0 = time.process_time()
    diag = fit.diagnostics()
    diag_cpu = time.process_time() - c0
    with tempfile.TemporaryDirectory() as tmp:
        t1 = time.perf_counter()
        fit.save(Path(tmp) / "fit.nc")
        save = time.perf_counter() - t1
    top = diag.table[diag.table["parameter"].str.match(r"(mu_bar|tau|sigma)\[")]
    sampling = float(fit.idata.attrs["sampling_time_s"])
    ess = float(top["ess_bulk"].min())
    return {"likelihood": likelihood, "rows": len(table), "wall_s": round(wall, 2),
            "sampling_s": round(sampling, 2), "min_bulk_ess": round(ess),
            "ess_per_s": round(ess / sampling, 1), "max_rhat": round(float(top["rhat"].max()), 3),
            "divergences": diag.divergences, "diagnostics_cpu_s": round(diag_cpu, 3),
            "save_s": round(save, 3),
            "group_means": fit.group_means()["mean"].round(4).tolist()}


def main(argv=None) -> int:
    """Run the benchmark and print a table."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--stan-worker"]:
        a = argv[1:]
        stan_worker(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]))
        return 0
    import pandas as pd

    from bayesbias._atomic import atomic_path
    from bayesbias.models import cells_from_table
    from bayesbias.testing import simulate_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--rows-max", type=int, default=500_000,
                   help="largest size for the row-level fit (default 500000)")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, help="also write the figures to this JSON file")
    p.add_argument("--stan-python", default=None,
                   help="python of an environment with PyStan 3 (pip install pystan): also fit "
                        "the same model in Stan on the same sufficient statistics")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)
    results = []
    for size in args.sizes:
        t0 = time.perf_counter()
        table, _ = simulate_table(seed=args.seed, **_design(size))
        made = time.perf_counter() - t0
        for likelihood in ("sufficient", "rows"):
            if likelihood == "rows" and size > args.rows_max:
                continue
            r = _measure(table, likelihood, args.draws, args.tune, args.chains, args.seed)
            r["simulate_s"] = round(made, 2)
            results.append(r)
            print(json.dumps(r), flush=True)
        if args.stan_python:
            r = _stan(cells_from_table(table), args.stan_python, args.draws, args.tune,
                      args.chains, args.seed)
            results.append(r)
            print(json.dumps(r), flush=True)
    frame = pd.DataFrame(results)
    print()
    print(frame.drop(columns=["group_means"]).to_string(index=False))
    if args.json:
        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
