"""Default-settings convergence of ``embedding_level`` on three tables (issue 50).

    python benchmarks/bench_embedding_level_convergence.py [--readme runs/distances.csv]
        [--tables readme,planted,null] [--seed S] [--target-accept P] [--draws N] [--tune N]

The tables: the README's (6 bootstrap models of the synthetic corpus, ``runs/distances.csv``
after the README's ``bayesbias train``), and ``simulate_ensemble_table(kind="bootstrap",
n_embeddings=6, seed=7)`` planted (default means) and null (every connection mean 0.86).
Prints one JSON line per table: its fit's wall and CPU seconds, max r-hat, min bulk and tail
ESS (and the parameter with the smallest bulk ESS), divergences, and the control-aware
verdict. Target: r-hat <= 1.01 and bulk ESS >= 400 for every parameter at the default
settings (no option given).
``EL_INTEGRATED=1`` in the environment integrates the attribute x sample deviations out of the
kernel (``embedding_level.ATTRIBUTE_SAMPLE_INTEGRATED``), ``0`` samples them (the default).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings


def _cpu() -> float:
    """Return the process's CPU seconds so far (user + system, every thread)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def tables(readme, names):
    from bayesbias.distances import read_distance_table
    from bayesbias.ensemble import simulate_ensemble_table

    out = {}
    if "readme" in names:
        out["readme"] = read_distance_table(readme)
    for name, mb in (("planted", (0.80, 0.86, 0.85, 0.86)), ("null", (0.86, 0.86, 0.86, 0.86))):
        if name in names:
            out[name], _ = simulate_ensemble_table(kind="bootstrap", n_embeddings=6, mu_bar=mb,
                                                   seed=7)
    return out


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", default="runs/distances.csv")
    ap.add_argument("--tables", default="readme,planted,null")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--target-accept", type=float, default=None)
    ap.add_argument("--draws", type=int, default=None)
    ap.add_argument("--tune", type=int, default=None)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import os

    import bayesbias.models.embedding_level as el
    from bayesbias.models import fit_model

    # EL_INTEGRATED=1 (0): the attribute x sample deviations integrated out (sampled)
    if "EL_INTEGRATED" in os.environ:
        el.ATTRIBUTE_SAMPLE_INTEGRATED = os.environ["EL_INTEGRATED"] == "1"
    from bayesbias.verdicts import verdict_from_fit

    rows = []
    for name, t in tables(a.readme, a.tables.split(",")).items():
        t0, c0 = time.perf_counter(), _cpu()
        f = fit_model(t, "embedding_level", checked=False, seed=a.seed, draws=a.draws,
                      tune=a.tune, target_accept=a.target_accept)
        d = f.diagnostics()
        dd = d.to_dict()
        worst = d.table.sort_values("ess_bulk").iloc[0]
        row = {"table": name, "rows": len(t), "seed": a.seed, "target_accept": a.target_accept,
               "draws": a.draws, "tune": a.tune,
               "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(_cpu() - c0, 1),
               "sampling_s": round(float(f.idata.attrs["sampling_time_s"]), 1),
               "max_rhat": round(dd["max_rhat"], 4), "min_ess_bulk": round(dd["min_ess_bulk"]),
               "min_ess_tail": round(dd["min_ess_tail"]), "worst": str(worst["parameter"]),
               "divergences": dd["divergences"],
               "ok": bool(dd["max_rhat"] <= 1.01 and dd["min_ess_bulk"] >= 400),
               "verdict": verdict_from_fit(f, name).code}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
