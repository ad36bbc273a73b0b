"""Simulation-based calibration of the embedding_level family's native kernel (reduced).

    python benchmarks/bench_embedding_level_sbc.py REPS [--start 0] [--out ranks.jsonl]

Each replication draws every parameter from the spec's priors and every effect from the
model the kernel samples (word effects i.i.d. around ``M``; corpus-sample, attribute,
stereotype-strength and attribute x sample effects zero-sum, the last drawn apart when the
kernel integrates them out; cell deviations ``eta``, rows
``sigma``) on the design of a small bootstrap ensemble (4 embeddings, 4 protected words, 3
stereotypes per class, 3 human and 4 neutral attributes), fits it with ``fit_model`` (2
chains x 300 draws after 300 tuning steps) and records the rank of the truth among 99
thinned draws of ``M`` per connection, ``M[associated] - M[none]``, ``tau``, ``sigma``,
``eta`` (associated), ``omega``, ``gamma``, ``kappa0`` and ``psi``. Uniform ranks (a
chi-square test on 10 bins per quantity, Bonferroni over the quantities) mean the sampler
recovers the posterior of the model it claims.
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

QUANTITIES = ("M[associated]", "M[different]", "M[human]", "M[none]", "M[associated-none]",
              "tau[associated]", "sigma[associated]", "eta[associated]", "omega", "gamma",
              "kappa0", "psi")


def simulate(rep: int):
    """Return a table drawn from the priors and the truth of :data:`QUANTITIES`."""
    from bayesbias.ensemble import simulate_ensemble_table
    from bayesbias.models import load_spec
    from bayesbias.models.embedding_level import cells as el_cells
    from bayesbias.models.embedding_level import pack, row_attribute, structure

    rng = np.random.default_rng([rep, 5150])
    t, _ = simulate_ensemble_table(kind="bootstrap", n_embeddings=4, words_per_class=2,
                                   stereotypes_per_class=3, n_human=3, n_none=4, seed=rep)
    spec = load_spec("embedding_level")
    c = el_cells(t)
    t = t.take(_order(t)).reset_index(drop=True)  # the row order of the cells
    data, lay = pack(spec, c)
    h_n = int(data[0])
    prior_of = []
    for _, size, prior in lay["blocks"]:
        prior_of += [spec.priors[prior]] * size
    hyp = np.array([float(np.asarray(p.draw(rng, None))) for p in prior_of])
    sets = data[16 + 5 * h_n + 16:][:5 * int(data[2])].reshape(-1, 5)
    vals = np.zeros(int(data[1]))
    for z0, size, si, _, _ in sets:
        z = rng.standard_normal(int(size))
        vals[int(z0):int(z0 + size)] = hyp[int(si)] * (z - z.mean())
    bidx, bcoef = lay["bmap"]
    vidx, vcoef = lay["vmap"]

    def comb(idx, coef):
        return np.sum(np.where(idx >= 0, vals[np.maximum(idx, 0).astype(int)] * coef, 0.0), -1)

    B, v_row = comb(bidx, bcoef), comb(vidx, vcoef)
    if lay.get("uidx") is not None:  # attribute x sample deviations the kernel integrates out
        r_n = int(data[13])
        z = rng.standard_normal((int(data[12]) // r_n, r_n))
        u = hyp[lay["start"]["psi"]] * (z - z.mean(axis=1, keepdims=True))
        v_row = v_row + u.reshape(-1)[lay["uidx"]]
    roles = data[16 + 5 * h_n:16 + 5 * h_n + 16].astype(int)
    m, tau, eta, sig = (hyp[roles[4 * k:4 * k + 4]] for k in range(4))
    st = structure(c)
    word = m[None, :] + tau[None, :] * rng.standard_normal((st["words"].size, 4))
    e_u = c.unit_embedding.astype(int)
    cell = word[st["word_of"]] + B[e_u] + eta[None, :] * rng.standard_normal((c.units.size, 4))
    j = row_attribute(c, lay["stereo"].size > 0)[0]
    y = cell[c.unit_idx, c.conn_idx] + v_row[j] + sig[c.conn_idx] * rng.standard_normal(j.size)
    t["cosine_distance"] = y
    t["cosine_similarity"] = 1.0 - y
    start = lay["start"]
    truth = {f"M[{n}]": m[k] for k, n in enumerate(("associated", "different", "human",
                                                    "none"))}
    truth.update({"M[associated-none]": m[0] - m[3], "tau[associated]": tau[0],
                  "sigma[associated]": sig[0], "eta[associated]": eta[0],
                  "omega": hyp[start["omega"]], "gamma": hyp[start["gamma"]],
                  "kappa0": hyp[start["kappa0"]], "psi": hyp[start["psi"]]})
    return t, truth


def _order(t):
    from bayesbias.models.embedding_level import canonical_order

    o = canonical_order(t)
    return np.arange(len(t)) if o is None else o


def draws_of(fit) -> dict:
    """Posterior draws of :data:`QUANTITIES` (flat), ``M`` being the kernel's own."""
    p = fit.posterior
    # the kernel's M (the words' population mean): the posterior's M less the words' own mean
    m = (p["M"] - p["tau"] * p["word_mean_z"] / np.sqrt(p.sizes["word"])).values
    m = m.reshape(-1, 4)

    def flat(name, k=None):
        x = p[name].values
        x = x.reshape(x.shape[0] * x.shape[1], -1)
        return x[:, 0 if k is None else k]

    return {"M[associated]": m[:, 0], "M[different]": m[:, 1], "M[human]": m[:, 2],
            "M[none]": m[:, 3], "M[associated-none]": m[:, 0] - m[:, 3],
            "tau[associated]": flat("tau", 0), "sigma[associated]": flat("sigma", 0),
            "eta[associated]": flat("eta", 0), "omega": flat("omega"), "gamma": flat("gamma"),
            "kappa0": flat("kappa0"), "psi": flat("psi")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reps", type=int)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out", default="sbc_embedding_level.jsonl")
    a = ap.parse_args(argv)
    from bayesbias.models import fit_model

    warnings.simplefilter("ignore")
    with open(a.out, "a") as fh:
        for rep in range(a.start, a.start + a.reps):
            t, truth = simulate(rep)
            f = fit_model(t, "embedding_level", draws=300, tune=300, chains=2, cores=1,
                          seed=rep, checked=False)
            d = draws_of(f)
            keep = np.linspace(0, 599, 99).astype(int)
            ranks = {q: int((d[q][keep] < truth[q]).sum()) for q in QUANTITIES}
            div = int(f.idata.sample_stats["diverging"].values.sum())
            fh.write(json.dumps({"rep": rep, "ranks": ranks, "divergences": div}) + "\n")
            fh.flush()


def summary(path: str) -> dict:
    """Chi-square uniformity of the ranks (10 bins), per quantity and Bonferroni."""
    from scipy.stats import chisquare

    rows = [json.loads(x) for x in open(path)]
    out = {}
    for q in QUANTITIES:
        r = np.array([x["ranks"][q] for x in rows])
        counts = np.bincount(np.minimum(r * 10 // 100, 9), minlength=10)
        out[q] = float(chisquare(counts).pvalue)
    p_min = min(out.values())
    return {"replications": len(rows), "p": out, "min_p": p_min,
            "bonferroni": min(1.0, p_min * len(out)),
            "fits_with_divergences": sum(x["divergences"] > 0 for x in rows)}


if __name__ == "__main__":
    main()
