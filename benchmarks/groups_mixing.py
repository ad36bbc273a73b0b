r"""Sampler diagnostics of ``full`` on the shipped adult_llama table at the default settings.

Fits the 30 race x sex x age cells (metrics tpr, fpr, error_rate; 4 chains x 1000 draws after
1000 tuning steps, target_accept 0.9: ``GroupRates``' defaults) once per seed and per
``--centred-info`` threshold (cells whose Fisher information ``n p (1 - p)`` exceeds it are
sampled centred; ``inf``, the default of ``Kernel.CENTRED_INFO``, samples every cell
non-centred) and prints divergent transitions, the largest r-hat and the smallest bulk ESS
of the intercepts and sds, and the wall time.

    python benchmarks/groups_mixing.py --seeds 1 2 --centred-info inf 4 \
        --out benchmarks/results/groups_mixing.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

import numpy as np

import bayesbias.models.group_rates as gr
from bayesbias.datasets import adult_llama
from bayesbias.groups import GroupRates


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--centred-info", type=float, nargs="+", default=[np.inf])
    ap.add_argument("--target-accept", type=float, default=0.9)
    ap.add_argument("--out", default="benchmarks/results/groups_mixing.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    t = adult_llama()
    g = GroupRates(t["label"], t["pred"], sensitive_features=t[["race", "sex", "age"]],
                   metrics=["tpr", "fpr", "error_rate"], pos_label="greater than 50K",
                   bins={"age": [25, 65]}, structure="independent", seed=1)
    spec = gr.load_group_spec(structure="full")
    rows = []
    for info in args.centred_info:
        gr.Kernel.CENTRED_INFO = info
        for seed in args.seeds:
            t0 = time.perf_counter()
            fit = gr.fit_counts(g.k, g.n, g.shape, spec, seed=seed,
                                target_accept=args.target_accept)
            row = {"centred_info": info, "seed": seed, "divergences": fit["divergences"],
                   "rhat_max": fit["rhat_max"], "ess_min": fit["ess_min"],
                   "seconds": time.perf_counter() - t0, "load_average": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"settings": vars(args), "fits": rows}, indent=2,
                                         default=str))


if __name__ == "__main__":
    main()
