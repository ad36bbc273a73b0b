r"""Sampler diagnostics of ``full`` on the shipped adult_llama table at the default settings.

Fits the 30 race x sex x age cells (metrics tpr, fpr, error_rate; 4 chains x 1000 draws after
1000 tuning steps and the library's target_accept: ``GroupRates``' defaults) once per seed
and per sampler setting and prints divergent transitions, the largest r-hat and the smallest
bulk ESS of the intercepts and sds, and the wall time.

    python benchmarks/groups_mixing.py --seeds 1 2 --out benchmarks/results/groups_mixing.json

Settings: ``--partial-sd S``: each top-order cell is sampled partly centred, with weight
``w = I S^2 / (1 + I S^2)``, ``I = n p (1 - p)`` its Fisher information (``none``: cells are
centred where ``I`` exceeds ``--centred-info``, otherwise non-centred; ``inf`` = never);
``--partial-lower yes``: the lower-order coordinates partly centred too; ``--target-accept``.
"""

from __future__ import annotations

import argparse
import itertools
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
    ap.add_argument("--partial-sd", nargs="+", default=["default"],
                    help="plug-in top-order sd of the partial centring ('none': by "
                         "--centred-info; 'default': the library's Kernel.PARTIAL_SD)")
    ap.add_argument("--partial-lower", nargs="+", default=["default"],
                    help="partly centre the lower orders too: 'yes', 'no' or 'default'")
    ap.add_argument("--target-accept", type=float, default=None,
                    help="default: the library's (fit_counts)")
    ap.add_argument("--out", default="benchmarks/results/groups_mixing.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    t = adult_llama()
    g = GroupRates(t["label"], t["pred"], sensitive_features=t[["race", "sex", "age"]],
                   metrics=["tpr", "fpr", "error_rate"], pos_label="greater than 50K",
                   bins={"age": [25, 65]}, structure="independent", seed=1)
    spec = gr.load_group_spec(structure="full")
    rows = []
    default_sd, default_lower = gr.Kernel.PARTIAL_SD, gr.Kernel.PARTIAL_LOWER
    kw = {} if args.target_accept is None else {"target_accept": args.target_accept}
    settings = itertools.product(args.centred_info, args.partial_sd, args.partial_lower)
    for info, psd, low in settings:
        gr.Kernel.CENTRED_INFO = info
        gr.Kernel.PARTIAL_LOWER = default_lower if low == "default" else low == "yes"
        gr.Kernel.PARTIAL_SD = (default_sd if psd == "default" else
                                None if psd == "none" else float(psd))
        for seed in args.seeds:
            t0 = time.perf_counter()
            fit = gr.fit_counts(g.k, g.n, g.shape, spec, seed=seed, **kw)
            row = {"centred_info": info, "partial_sd": gr.Kernel.PARTIAL_SD,
                   "partial_lower": gr.Kernel.PARTIAL_LOWER,
                   "target_accept": args.target_accept or "default",
                   "seed": seed, "divergences": fit["divergences"],
                   "rhat_max": fit["rhat_max"], "ess_min": fit["ess_min"],
                   "seconds": time.perf_counter() - t0, "load_average": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"settings": vars(args), "fits": rows}, indent=2,
                                         default=str))


if __name__ == "__main__":
    main()
