"""Terms nested in groups (``bayesbias groups --term``): recovery of sd_term and coverage.

A known truth: 4 groups with logits -1.2, -0.4, 0.3 and 1.0 and 6 terms in each; a term's
logit is its group's plus a deviation Normal(0, ``--sd-term``) drawn anew in every
replication, and its size is drawn from 20..80 rows (so the post-stratification weights
differ). The counts are fitted with the family's model (``fit_counts(..., terms=...)``,
structure ``full``) and the library's post-stratification (:class:`GroupRates`' cell
rates are the terms' rates weighted by their sizes). Recorded per replication: the
posterior mean and 90% interval of sd_term, whether each term's 90% interval covers its
true rate, whether each group's (post-stratified) interval covers the true size-weighted
rate, and divergent transitions. Replication r is seeded by ``[--seed-base, r]``.

    python benchmarks/groups_terms_sim.py --reps 200 --seed-base 9100 \
        --out benchmarks/results/groups_terms_sim.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bayesbias.models.group_rates import fit_counts, load_group_spec

GROUP_LOGITS = np.array([-1.2, -0.4, 0.3, 1.0])
TERMS_PER_GROUP = 6


def simulate(rng, sd_term: float):
    """Return the term counts and truths: term_cell, k (1, NT), n (1, NT), true term rates."""
    G, J = GROUP_LOGITS.size, TERMS_PER_GROUP
    term_cell = np.repeat(np.arange(G), J)
    eta = GROUP_LOGITS[term_cell] + rng.normal(0, sd_term, G * J)
    p = 1 / (1 + np.exp(-eta))
    n = rng.integers(20, 81, G * J)
    k = rng.binomial(n, p)
    return term_cell, k[None], n[None], p


def replicate(rep: int, seed_base: int, sd_term: float, draws: int, tune: int,
              chains: int, ci_prob: float = 0.9) -> dict:
    """Fit one simulated table; its sd_term summary and the coverage of its intervals."""
    rng = np.random.default_rng([seed_base, rep])
    term_cell, k, n, p = simulate(rng, sd_term)
    G = GROUP_LOGITS.size
    kc = np.bincount(term_cell, weights=k[0], minlength=G).astype(np.int64)[None]
    nc = np.bincount(term_cell, weights=n[0], minlength=G).astype(np.int64)[None]
    fit = fit_counts(kc, nc, (G,), load_group_spec(structure="full"), draws=draws, tune=tune,
                     chains=chains, seed=rep, terms=(term_cell, k, n))
    pt = fit["p_term"].reshape(-1, term_cell.size)
    sd = fit["sd_term"].reshape(-1)
    lo, hi = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    t_lo, t_hi = np.quantile(pt, [lo, hi], axis=0)
    # groups: the terms post-stratified by their observed sizes (as GroupRates)
    w = np.zeros((term_cell.size, G))
    w[np.arange(term_cell.size), term_cell] = n[0] / nc[0][term_cell]
    g_draws = pt @ w
    g_true = p @ w
    g_lo, g_hi = np.quantile(g_draws, [lo, hi], axis=0)
    s_lo, s_hi = np.quantile(sd, [lo, hi])
    return {"rep": rep, "sd_mean": float(sd.mean()), "sd_median": float(np.median(sd)),
            "sd_lower": float(s_lo), "sd_upper": float(s_hi),
            "sd_covered": bool(s_lo <= sd_term <= s_hi),
            "terms_covered": int(np.sum((t_lo <= p) & (p <= t_hi))), "terms": int(p.size),
            "groups_covered": int(np.sum((g_lo <= g_true) & (g_true <= g_hi))),
            "groups": G, "divergences": int(fit["divergences"]),
            "rhat_max": fit["rhat_max"]}


def summarise(rows: list[dict], sd_term: float) -> dict:
    """Coverage and sd_term recovery over the replications."""
    def wilson(k, n, z=1.96):
        p = k / n
        c = (p + z * z / (2 * n)) / (1 + z * z / n)
        h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return [round(c - h, 4), round(c + h, 4)]

    reps = len(rows)
    tc = sum(r["terms_covered"] for r in rows)
    tn = sum(r["terms"] for r in rows)
    gc = sum(r["groups_covered"] for r in rows)
    gn = sum(r["groups"] for r in rows)
    sc = sum(r["sd_covered"] for r in rows)
    means = np.array([r["sd_mean"] for r in rows])
    return {"reps": reps, "sd_term_true": sd_term,
            "sd_term_posterior_mean_average": float(means.mean()),
            "sd_term_posterior_mean_sd": float(means.std(ddof=1)) if reps > 1 else None,
            "sd_term_median_of_medians": float(np.median([r["sd_median"] for r in rows])),
            "sd_term_interval_coverage": sc / reps, "sd_term_coverage_wilson95": wilson(sc, reps),
            "term_coverage": tc / tn, "term_cases": tn,
            "group_coverage": gc / gn, "group_cases": gn,
            "fits_with_divergences": sum(r["divergences"] > 0 for r in rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed-base", type=int, default=9100)
    ap.add_argument("--sd-term", type=float, default=0.6)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/groups_terms_sim.json")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = [replicate(r, a.seed_base, a.sd_term, a.draws, a.tune, a.chains)
            for r in range(a.reps)]
    out = {"settings": vars(a), "summary": summarise(rows, a.sd_term),
           "seconds": time.perf_counter() - t0, "replications": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"], indent=1), f"\n{out['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
