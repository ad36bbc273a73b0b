r"""What stereotypes of unequal strength do to the `crossed` intervals on the shipped tables.

The `crossed` model gives every attribute word one effect ``v[a]`` on all its rows. A
stereotype also has an own-class strength: how much closer it sits to its own class's words
than to other classes' (``embedding_level`` models it as ``+-q[a]/2`` on the stereotype's
``associated`` / ``different`` rows, ``q ~ Normal(0, gamma)``). This script measures, per
shipped table,

- the spread of each stereotype's own-minus-other mean distance (word-centred) beyond its
  noise: the moment estimate of ``gamma`` and of ``gamma / sqrt(S)``, the sd it adds to the
  contrasts of ``associated``;
- with ``--fit``, both `crossed` and `crossed` plus ``+-q/2`` (PyMC's row-level model, the
  term added to the rows by patching ``crossed.row_effects``; prior ``gamma ~
  Exponential(10)``) on the same table with the same sampler, and their verdict-contrast
  intervals.

Usage::

    python benchmarks/crossed_strength.py                       # moments, every table
    python benchmarks/crossed_strength.py --fit religion:reddit  # and the two fits
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

CONTRASTS = ("associated - none", "associated - human", "associated - different")


def strength_moments(table: pd.DataFrame) -> dict:
    """Own-minus-other mean per stereotype, its noise and the excess sd (moment estimate)."""
    st = table[table["connection"].isin(["associated", "different"])].copy()
    st["res"] = st["cosine_distance"] - st.groupby(
        ["protected_word", "connection"], observed=True)["cosine_distance"].transform("mean")
    g = st.groupby(["attribute", "connection"], observed=True)["res"].agg(
        ["mean", "count", "var"]).unstack().dropna()
    d = g[("mean", "associated")] - g[("mean", "different")]
    noise = (g[("var", "associated")] / g[("count", "associated")]
             + g[("var", "different")] / g[("count", "different")]).mean()
    excess = max(float(d.var(ddof=1) - noise), 0.0)
    return {"stereotypes": int(d.size), "sd_own_minus_other": float(d.std(ddof=1)),
            "noise_sd": float(np.sqrt(noise)), "gamma_moment": float(np.sqrt(excess)),
            "sd_of_mean_strength": float(np.sqrt(excess / d.size))}


def _with_strength():
    """Patch crossed.row_effects to add +-q[a]/2 on a stereotype's associated / different rows."""
    import pymc as pm

    from bayesbias.config import CONNECTIONS
    from bayesbias.models import crossed

    original = crossed.row_effects

    def row_effects(spec, cells):
        v_rows = original(spec, cells)
        conn = np.asarray(cells.conn_idx)
        own = conn == CONNECTIONS.index("associated")
        other = conn == CONNECTIONS.index("different")
        both = np.intersect1d(np.unique(cells.attr_idx[own]), np.unique(cells.attr_idx[other]))
        j = np.full(cells.attributes.size, -1)
        j[both] = np.arange(both.size)
        model = pm.modelcontext(None)
        model.add_coord("stereotype", cells.attributes[both].tolist())
        gamma = pm.Exponential("gamma", 10.0)
        g = pm.Deterministic("stereotype_strength",
                             gamma * pm.Normal("stereotype_strength_z", 0.0, 1.0,
                                               dims="stereotype"), dims="stereotype")
        import pytensor.tensor as pt

        extra = pm.math.zeros(conn.size)
        for sel, sign in ((own, 0.5), (other, -0.5)):
            rows = np.flatnonzero(sel & (j[cells.attr_idx] >= 0))
            extra = pt.set_subtensor(extra[rows], sign * g[j[cells.attr_idx[rows]]])
        return v_rows + extra

    return original, row_effects


def fit_pair(table: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    """Fit crossed and crossed + g with PyMC's row-level model; return their contrasts."""
    from bayesbias.models import crossed, fit_model

    out = []
    original, patched = _with_strength()
    for label, fn in (("crossed", original), ("crossed + strength", patched)):
        crossed.row_effects = fn
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_model(table, "crossed", sampler="pymc", likelihood="rows", seed=seed,
                                keep_word_draws=True)
        finally:
            crossed.row_effects = original
        c = fit.contrasts().set_index("contrast")
        d = fit.diagnostics()
        for name in CONTRASTS:
            out.append({"model": label, "contrast": name, "mean": c.loc[name, "mean"],
                        "lower": c.loc[name, "lower"], "upper": c.loc[name, "upper"],
                        "width": c.loc[name, "upper"] - c.loc[name, "lower"],
                        "gamma": float(fit.posterior["gamma"].mean())
                        if "gamma" in fit.posterior else np.nan,
                        "rhat_ok": bool(d.ok)})
    return pd.DataFrame(out)


def main(argv=None) -> None:
    from bayesbias.datasets import published_table, published_tables

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", nargs="*", default=[], metavar="TOPIC:EMBEDDING")
    args = ap.parse_args(argv)
    rows = []
    for topic, emb in published_tables():
        r = strength_moments(published_table(topic, emb))
        if r["stereotypes"] >= 3:
            rows.append({"table": f"{topic}:{emb}", **r})
    with pd.option_context("display.width", 200, "display.precision", 4):
        print(pd.DataFrame(rows).to_string(index=False))
        for name in args.fit:
            topic, emb = name.split(":")
            print(f"\n{name}: crossed vs crossed + stereotype strength (PyMC, rows)")
            print(fit_pair(published_table(topic, emb)).to_string(index=False))


if __name__ == "__main__":
    main()
