"""Issue 49 check: Rao-Blackwellised interval ends against a 64x longer chain.

On race, gender and religion (shipped lists on the shipped embedding) fit the default model
once with `--draws` per chain (4 chains) and once with `--factor` times as many per chain
(4 independent one-chain fits, other seeds, pooled), and compare for each verdict contrast:

* the mixture's interval ends of the short fit (:mod:`bayesbias.models.contrast_mixture`)
  with the sample interval ends of the long fit: the difference in units of the long
  chain's Monte Carlo standard error (:func:`bayesbias.verdicts.interval_end_mcse`) and of
  the combined error ``sqrt(mcse_long^2 + mcse_mixture^2)``;
* the MCSE of the mixture's ends with that of the short fit's sample ends (the gain).

    PYTHONPATH=$PWD python benchmarks/mixture_vs_long_chain.py --draws 1000 --factor 64
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

LISTS = ("race", "gender", "religion")


def compare(table, draws: int, factor: int, ci_prob=0.89, ci_kind="hdi", seeds=(1, 2)):
    """Return one row per (contrast, end) with both estimates and their errors."""
    from bayesbias.models import fit_model
    from bayesbias.verdicts import (
        VERDICT_CONTRASTS,
        _interval,
        interval_end_mcse,
        mixture_evidence,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        short = fit_model(table, "crossed", draws=draws, seed=seeds[0], checked=False)
        t1 = time.perf_counter()
        # the long run as independent one-chain fits (one 4-chain fit of 64x the draws
        # would keep ~12 GB of draws): as many chains as the short fit, each `factor` x
        chains = short.idata.posterior.sizes["chain"]
        longs = [fit_model(table, "crossed", draws=draws * factor, chains=1,
                           seed=seeds[1] + k, checked=False, keep_word_draws=False)
                 for k in range(chains)]
        t2 = time.perf_counter()
    import xarray as xr

    ev, mc = mixture_evidence(short, ci_prob, ci_kind)
    ev_l, _ = mixture_evidence(longs[0], ci_prob, ci_kind)
    da_s = short.contrast_draws(VERDICT_CONTRASTS)
    da_l = xr.concat([f.contrast_draws(VERDICT_CONTRASTS).assign_coords(chain=[k])
                      for k, f in enumerate(longs)], dim="chain")
    rows = []
    for i, (a, b) in enumerate(VERDICT_CONTRASTS):
        lab = f"{a} - {b}"
        ls = da_l.sel(contrast=lab).transpose("chain", "draw").values
        ss = da_s.sel(contrast=lab).transpose("chain", "draw").values
        e_long = _interval(ls.ravel(), ci_prob, ci_kind)
        m_long = interval_end_mcse(ls, e_long, ci_prob, ci_kind)
        e_short = _interval(ss.ravel(), ci_prob, ci_kind)
        m_short = interval_end_mcse(ss, e_short, ci_prob, ci_kind)
        for j, end in enumerate(("lower", "upper")):
            mix = float(ev["lower" if j == 0 else "upper"][i])
            m_mix = float(mc[lab][j])
            diff = mix - float(e_long[j])
            rows.append({"contrast": lab, "end": end, "mixture": mix, "mcse_mixture": m_mix,
                         "long_sample": float(e_long[j]), "mcse_long": float(m_long[j]),
                         # the mixture of one long chain (its thinned draws)
                         "long_mixture": float(ev_l["lower" if j == 0 else "upper"][i]),
                         "short_sample": float(e_short[j]), "mcse_short": float(m_short[j]),
                         "diff": diff, "z_long": diff / m_long[j],
                         "z_combined": diff / np.hypot(m_long[j], m_mix),
                         "mcse_gain": float(m_short[j]) / m_mix})
    return rows, {"short_fit_s": t1 - t0, "long_fit_s": t2 - t1}


def tables(names=LISTS):
    from bayesbias.distances import distance_table
    from bayesbias.embeddings import load_embedding
    from bayesbias.wordlists import load_wordlist

    wls = [load_wordlist(n) for n in names]
    emb = load_embedding("default", list(dict.fromkeys(w for wl in wls for w in wl.all_words)))
    return [(wl.name, distance_table(emb, wl, on_missing="drop")) for wl in wls]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--factor", type=int, default=64)
    ap.add_argument("--out", default="benchmarks/results/mixture_vs_long_chain.json")
    args = ap.parse_args(argv)
    out = {}
    for name, table in tables():
        rows, times = compare(table, args.draws, args.factor)
        out[name] = {"rows": rows, **times}
        print(f"{name}: short fit {times['short_fit_s']:.1f} s, long fit "
              f"{times['long_fit_s']:.1f} s ({args.factor}x {args.draws} draws per chain)")
        for r in rows:
            print(f"  {r['contrast']:24s} {r['end']:5s} mixture {r['mixture']:+.5f} "
                  f"(MCSE {r['mcse_mixture']:.1e})  long sample {r['long_sample']:+.5f} "
                  f"(MCSE {r['mcse_long']:.1e})  z_long {r['z_long']:+.2f}  "
                  f"z_comb {r['z_combined']:+.2f}  short-sample/mixture MCSE "
                  f"{r['mcse_gain']:.1f}x")
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    z = np.array([r["z_combined"] for v in out.values() for r in v["rows"]])
    print(f"max |z_combined| {np.abs(z).max():.2f} over {z.size} ends; "
          f"within 3: {(np.abs(z) < 3).all()}")


if __name__ == "__main__":
    main()
