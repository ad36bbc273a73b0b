"""Paired, alternating: NUTS target_accept 0.9 vs 0.95 for ``groups`` on adult_llama subsamples.

Trials 100-102 of the SureMap subsampling protocol (``benchmarks/groups_accuracy.py``) at rates
0.01 and 0.1; each subsample is fitted at both settings in one process, the order alternating
by trial; divergences, seconds and the smallest ESS of every fit are written.

    python benchmarks/groups_target_accept.py
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import numpy as np

from bayesbias.datasets import adult_llama
from bayesbias.groups import prepare_groups
from bayesbias.models.group_rates import cell_counts, fit_counts, load_group_spec

OUT = Path("benchmarks/results/groups_target_accept.json")


def main():
    logging.basicConfig(level=logging.ERROR)
    spec = importlib.util.spec_from_file_location(
        "groups_accuracy", Path(__file__).with_name("groups_accuracy.py"))
    acc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(acc)
    t = adult_llama()
    cell, _, _ = prepare_groups(t[["race", "sex", "age"]], len(t), {"age": [25, 65]})
    o = np.argsort(cell, kind="stable")
    cell = cell[o]
    y = t["label"].to_numpy()[o] == acc.POS
    p = t["pred"].to_numpy()[o] == acc.POS
    full = load_group_spec(structure="full")
    rows = []
    for trial in (100, 101, 102):
        for rate in (0.01, 0.1):
            idx = acc.subsample(len(t), rate, trial)
            ks, ns = cell_counts(y[idx], p[idx], cell[idx], 30, ["error_rate"])
            for ta in (0.9, 0.95) if trial % 2 == 0 else (0.95, 0.9):
                f = fit_counts(ks, ns, (5, 2, 3), full, draws=500, tune=500, chains=2,
                               seed=trial, target_accept=ta)
                rows.append({"trial": trial, "rate": rate, "target_accept": ta,
                             "divergences": int(f["divergences"]), "seconds": f["seconds"],
                             "ess_min": None if f["ess_min"] is None else float(f["ess_min"])})
                print(rows[-1], flush=True)
    out = {"rows": rows}
    for ta in (0.9, 0.95):
        r = [x for x in rows if x["target_accept"] == ta]
        out[str(ta)] = {"fits": len(r),
                        "fits_with_divergences": sum(x["divergences"] > 0 for x in r),
                        "total_divergences": sum(x["divergences"] for x in r),
                        "seconds_total": sum(x["seconds"] for x in r)}
    out["seconds_ratio_095_over_09"] = out["0.95"]["seconds_total"] / out["0.9"]["seconds_total"]
    OUT.write_text(json.dumps(out, indent=2))
    print({k: v for k, v in out.items() if k != "rows"})


if __name__ == "__main__":
    main()
