r"""Issue 49 check: the same verdict code with every sampler seed, never "draw more".

For every shipped word list on the shipped embedding (``--embedding default``) and, with
``--published``, every shipped published distance table, fit the default model
(``crossed``, default draws) with `--seeds` sampler seeds and read the verdict
(:func:`bayesbias.verdicts.verdict_from_fit`, the Rao-Blackwellised interval ends). Reports
per table the codes over the seeds, whether any verdict text contains "draw more" or
"undecided at this precision", and, per interval end of the four contrasts, its sd over the
seeds against the mean Monte Carlo standard error the estimator reported (a check of that
MCSE). Heavy: about 25 tables x 20 seeds fits; run by hand.

    PYTHONPATH=$PWD python benchmarks/verdict_seed_stability.py --seeds 20 --refit \\
        --out benchmarks/results/verdict_seed_stability.json [--published]

``--refit`` runs :func:`~bayesbias.verdicts.fit_for_verdict`'s loop (4x the draws while a
deciding end sits near the edge of the borderline band); without it every verdict comes
from one fit at the default draws.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

LISTS = ("religion", "race", "gender", "weat1", "weat6", "weat7", "madlibs_identity")
BANNED = ("draw more", "undecided at this precision")


def tables(published: bool, lists_only: bool = False):
    from bayesbias.datasets import published_table, published_tables
    from bayesbias.distances import distance_table
    from bayesbias.embeddings import load_embedding
    from bayesbias.wordlists import load_wordlist

    out = []
    if not published or not lists_only:
        wls = [load_wordlist(n) for n in LISTS]
        words = list(dict.fromkeys(w for wl in wls for w in wl.all_words))
        emb = load_embedding("default", words)
        for wl in wls:
            out.append((f"{wl.name}/default", distance_table(emb, wl, on_missing="drop")))
    if published:
        for topic, emb_name in published_tables():
            out.append((f"published:{topic}:{emb_name}", published_table(topic, emb_name)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--published", action="store_true")
    ap.add_argument("--published-only", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated table names to run")
    ap.add_argument("--refit", action="store_true",
                    help="refit as fit_for_verdict does (4x draws near the band's edge)")
    ap.add_argument("--out", default="benchmarks/results/verdict_seed_stability.json")
    ap.add_argument("--tune", type=int, default=None,
                    help="tuning steps per chain (default: the model's own)")
    args = ap.parse_args(argv)
    from bayesbias.config import defaults
    from bayesbias.models import fit_model
    from bayesbias.verdicts import MAX_VERDICT_DRAWS, _needs_draws, verdict_from_fit

    out_path = Path(args.out)
    done = json.loads(out_path.read_text()) if out_path.exists() else {}
    only = {t for t in args.only.split(",") if t}
    for name, table in tables(args.published or args.published_only, args.published_only):
        if only and name not in only:
            continue
        rec = done.setdefault(name, {"runs": []})
        have = {r["seed"] for r in rec["runs"]}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if seed in have:
                continue
            t0 = time.perf_counter()
            draws = defaults.draws
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_model(table, "crossed", seed=seed, tune=args.tune, checked=False)
                # fit_for_verdict's loop (without its model checks): 4x the draws while a
                # deciding end sits near the edge of the borderline band
                while args.refit and draws < MAX_VERDICT_DRAWS and \
                        _needs_draws(verdict_from_fit(fit, name)):
                    draws = min(4 * draws, MAX_VERDICT_DRAWS)
                    fit = fit_model(table, "crossed", seed=seed, draws=draws, tune=args.tune,
                                    checked=False)
            t1 = time.perf_counter()
            v = verdict_from_fit(fit, name)
            t2 = time.perf_counter()
            text = " ".join([v.headline, *v.details, *v.notes, v.label])
            diag = fit.diagnostics().to_dict()  # r-hat, ESS, divergences: the fit's warnings
            rec["runs"].append({
                "seed": seed, "code": v.code, "headline": v.headline, "draws": draws,
                "tune": int(fit.idata.attrs["tune"]), "max_rhat": diag["max_rhat"],
                "min_ess_bulk": diag["min_ess_bulk"], "divergences": int(diag["divergences"]),
                "banned": [b for b in BANNED if b in text],
                "fit_s": t1 - t0, "verdict_s": t2 - t1,
                "contrasts": [{"contrast": c.contrast, "status": c.status,
                               "lower": c.lower, "upper": c.upper,
                               "mcse_lower": c.mcse_lower, "mcse_upper": c.mcse_upper,
                               "prob_below": c.prob_below_zero, "estimator": c.estimator}
                              for c in v.contrasts]})
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(json.dumps(done, indent=1, default=float))
        summarise(name, rec)
    print("\nALL:", "stable" if all(len({r["code"] for r in rec["runs"]}) == 1
                                     for rec in done.values()) else "UNSTABLE",
          "| banned phrases:", sum(len(r["banned"]) for rec in done.values()
                                   for r in rec["runs"]))


def summarise(name, rec):
    runs = rec["runs"]
    codes = Counter(r["code"] for r in runs)
    banned = sum(len(r["banned"]) for r in runs)
    # borderline counted apart (never a finding): codes, and contrasts whose status is it
    border = sum(str(r["code"]).startswith("borderline") for r in runs)
    border_c = sum(c["status"] in ("borderline", "imprecise") for r in runs
                   for c in r["contrasts"])
    warn = [r for r in runs if "max_rhat" in r and (r["max_rhat"] > 1.01
                                                     or r["min_ess_bulk"] < 400)]
    div = sum(r.get("divergences", 0) for r in runs)
    print(f"{name}: {len(runs)} seeds, codes {dict(codes)}, borderline codes {border}, "
          f"fits with an r-hat or ESS warning {len(warn)}, divergences {div}, "
          f"borderline contrasts {border_c}, banned phrases {banned}, "
          f"fit {np.median([r['fit_s'] for r in runs]):.2f} s, verdict "
          f"{np.median([r['verdict_s'] for r in runs]):.2f} s (medians)")
    for k, lab in enumerate(c["contrast"] for c in runs[0]["contrasts"]):
        st = Counter(r["contrasts"][k]["status"] for r in runs)
        parts = []
        for end in ("lower", "upper"):
            vals = np.array([r["contrasts"][k][end] for r in runs], float)
            mc = np.array([r["contrasts"][k][f"mcse_{end}"] for r in runs], float)
            if np.isfinite(vals).all() and len(vals) > 2:
                parts.append(f"{end} {vals.mean():+.4f} sd over seeds {vals.std(ddof=1):.1e} "
                             f"mean MCSE {np.nanmean(mc):.1e}")
        print(f"   {lab}: {dict(st)}; " + "; ".join(parts))


if __name__ == "__main__":
    main()
