"""The context model: contexts as one more level of the hierarchy (encoders, CEAT draws).

A distance table with a ``context`` column (``bayesbias contexts``) has one row per protected
word w, attribute and context draw k. Rows are grouped into cells (w, connection c, k)::

    distance ~ Normal(mu[w, c] + u[w, c, k], sigma[c])        rows of the cell (attributes)
    u[w, c, k] ~ Normal(0, tau_context[c])                    the word's context in draw k
    mu[w, c] ~ Normal(mu_bar[c], tau_word[c])                 the word
    mu_bar[c] ~ prior;  tau_word, tau_context, sigma ~ priors (per connection)

The context effects u are integrated out exactly: the n rows of a cell are jointly normal with
covariance sigma² I + tau_context² J, whose density depends on the rows only through the cell
count, mean and within-cell sum of squares, so the cost grows with cells, not rows. The
posterior shows how much of the spread between (word, context) means is the contexts:
``context_share[c] = tau_context² / (tau_context² + tau_word²)``.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._atomic import shipped_dir
from ..config import CONNECTIONS, defaults, validate_ci_prob
from ..errors import DistanceTableError, ModelSpecError
from ..verdicts import VERDICT_CONTRASTS
from .contrasts import contrast_label
from .spec import Prior
from .summaries import interval

__all__ = ["ContextSpec", "load_context_spec", "context_cells", "cell_loglik",
           "fit_context_model", "ContextFit", "CONTEXT_PRIORS"]

#: Priors of the context model, in model-card order.
CONTEXT_PRIORS = ("mu_bar", "tau_word", "tau_context", "sigma")
_SCALES = ("tau_word", "tau_context", "sigma")


@dataclass(frozen=True)
class ContextSpec:
    """Priors of the context model (``models/contextual/context.toml``)."""

    name: str
    priors: dict
    description: str = ""
    source: str = ""


def load_context_spec(name_or_path="context") -> ContextSpec:
    """Load the shipped ``context`` spec, or a TOML file with the same ``[priors]`` keys."""
    path = Path(name_or_path)
    if not path.is_file():
        # kept in a sub-folder: the other families' spec loader reads models/*.toml
        path = shipped_dir("models") / "contextual" / f"{name_or_path}.toml"
    if not path.is_file():
        raise ModelSpecError(f"context model spec {str(name_or_path)!r} not found")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ModelSpecError(f"{path}: not valid TOML: {exc}") from None
    if data.get("family") != "context":
        raise ModelSpecError(f"{path}: family must be 'context', got {data.get('family')!r}")
    raw = data.get("priors", {})
    if set(raw) != set(CONTEXT_PRIORS):
        raise ModelSpecError(f"{path}: [priors] needs exactly {', '.join(CONTEXT_PRIORS)}")
    priors = {k: Prior.from_dict(raw[k], k, str(path)) for k in CONTEXT_PRIORS}
    for k in _SCALES:
        if not priors[k].positive:
            raise ModelSpecError(f"{path}: prior {k!r} is a scale and needs a positive "
                                 f"distribution, not {priors[k].dist}")
    return ContextSpec(str(data.get("name", path.stem)), priors,
                       str(data.get("description", "")), str(path))


def context_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Group a table into (protected word, connection, context) cells.

    Returns each cell's row count, mean and within-cell sum of squares of the distances.
    """
    need = ["protected_word", "connection", "context", "cosine_distance"]
    absent = [c for c in need if c not in table.columns]
    if absent:
        raise DistanceTableError(f"the context model needs column(s) {', '.join(absent)} "
                                 "(make the table with `bayesbias contexts`)")
    x = pd.to_numeric(table["cosine_distance"], errors="coerce")
    if not np.isfinite(x).all():
        raise DistanceTableError("cosine_distance has missing or non-finite values")
    df = pd.DataFrame({"w": table["protected_word"].astype(str),
                       "c": table["connection"].astype(str),
                       "k": table["context"].astype(str), "x": x.astype(float)})
    bad = sorted(set(df["c"]) - set(CONNECTIONS))
    if bad:
        raise DistanceTableError(f"unknown connection(s) {', '.join(bad)}")
    g = df.groupby(["w", "c", "k"], sort=True)["x"]
    cells = g.agg(n="count", mean="mean").reset_index()
    cells["ss"] = g.apply(lambda s: float(((s - s.mean()) ** 2).sum())).to_numpy()
    return cells


def cell_loglik(n, mean, ss, mu, tau_context, sigma, xp=np):
    """Log density of the rows of each cell, context effect integrated out (exact).

    The n rows are Normal(mu, sigma² I + tau_context² J): the density is
    ``-n/2 log 2π - (n-1) log σ - ½ log(σ² + n τ²) - ss / (2σ²) - n (m - μ)² / (2 (σ² + n τ²))``.
    `xp` is numpy, or pytensor.tensor inside a model.
    """
    v = sigma**2 + n * tau_context**2
    return (-0.5 * n * math.log(2 * math.pi) - (n - 1) * xp.log(sigma) - 0.5 * xp.log(v)
            - ss / (2 * sigma**2) - n * (mean - mu) ** 2 / (2 * v))


@dataclass
class ContextFit:
    """Posterior of the context model with intervals for every connection."""

    summary: pd.DataFrame
    contrasts: pd.DataFrame
    posterior: object = field(repr=False)
    ci_prob: float = 0.89
    ci_kind: str = "hdi"
    n_rows: int = 0
    n_cells: int = 0
    n_words: int = 0
    n_contexts: int = 0
    diagnostics: dict = field(default_factory=dict)
    spec: str = ""

    def to_dict(self) -> dict:
        """Plain-Python dict (JSON-ready)."""
        return {"verdict": self.verdict().to_dict(),
                "summary": self.summary.to_dict(orient="records"),
                "contrasts": self.contrasts.to_dict(orient="records"),
                "ci_prob": self.ci_prob, "ci_kind": self.ci_kind, "rows": self.n_rows,
                "cells": self.n_cells, "words": self.n_words, "contexts": self.n_contexts,
                "diagnostics": self.diagnostics, "spec": self.spec}

    def verdict(self, name: str = "", rope: float | None = None):
        """Return the control-group :class:`~bayesbias.verdicts.Verdict` from mu_bar's draws.

        The same rule and words as ``bayesbias fit``; a connection without rows makes its
        contrasts "no data".
        """
        from ..verdicts import verdict_from_draws

        mu = self.posterior["mu_bar"]
        present = set(mu["connection"].values.tolist())
        draws, has = {}, {}
        n = mu.sizes["chain"] * mu.sizes["draw"]
        for a, b in VERDICT_CONTRASTS:
            lab = contrast_label(a, b)
            has[lab] = a in present and b in present
            draws[lab] = (np.ravel((mu.sel(connection=a) - mu.sel(connection=b))
                                   .transpose("chain", "draw").values)
                          if has[lab] else np.zeros(n))
        return verdict_from_draws(name, draws, self.ci_prob, self.ci_kind, rope, has)

    def diagnostics_text(self) -> str:
        """Return the sampler diagnostics in one line."""
        d = self.diagnostics
        return (f"diagnostics: max r-hat {d.get('max_rhat', float('nan')):.3f}, min bulk ESS "
                f"{d.get('min_ess_bulk', float('nan')):.0f}, {d.get('divergences', 0)} "
                f"divergence(s) ({d.get('chains')} chains x {d.get('draws')} draws, seed "
                f"{d.get('seed')})")

    def __str__(self) -> str:
        pct = f"{self.ci_prob:.0%} {self.ci_kind.upper()}"
        v = self.verdict()
        d = self.diagnostics
        bad = d.get("max_rhat", 1.0) > 1.01 or d.get("divergences", 0) > 0
        lines = [str(v), f"  {v.rule}"]
        if bad:
            lines.append(f"  warning: sampler diagnostics failed ({self.diagnostics_text()}); "
                         "read the verdict as rough until --fit-draws and --chains are raised")
        lines += ["",
                 f"context model ({self.n_rows} rows in {self.n_cells} cells: {self.n_words} "
                 f"words x {self.n_contexts} context draws; {pct})",
                 self.summary.round(4).to_string(index=False),
                 "contrasts of the group means (mu_bar):",
                 self.contrasts.round(4).to_string(index=False),
                 self.diagnostics_text()]
        return "\n".join(lines)


def fit_context_model(table: pd.DataFrame, spec="context", *, draws: int | None = None,
                      tune: int | None = None, chains: int | None = None,
                      seed: int | None = None,
                      ci_prob: float | None = None, ci_kind: str | None = None,
                      progressbar: bool = False) -> ContextFit:
    """Fit the context model to a distance table with a ``context`` column.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``protected_word``, ``connection``, ``context``, ``cosine_distance``.
    spec : str, path or ContextSpec
    draws, tune, chains, seed
        Sampler settings (PyMC's NUTS, nutpie when installed).
    ci_prob, ci_kind
        Interval probability and kind (``"hdi"`` or ``"eti"``; package defaults).

    Returns
    -------
    ContextFit
        ``summary``: per connection, posterior mean and interval of mu_bar, tau_word,
        tau_context, sigma and context_share; ``contrasts``: differences of mu_bar between
        connections (associated - none, associated - human, associated - different,
        human - none).
    """
    import arviz_stats as az  # the functions of `arviz`, without arviz-plots (matplotlib)
    import pymc as pm
    import pytensor.tensor as pt

    spec = spec if isinstance(spec, ContextSpec) else load_context_spec(spec)
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    ci_kind = defaults.ci_kind if ci_kind is None else ci_kind
    seed = defaults.seed if seed is None else int(seed)
    draws = defaults.draws if draws is None else int(draws)
    tune = defaults.tune if tune is None else int(tune)
    chains = defaults.chains if chains is None else int(chains)
    cells = context_cells(table)
    present = [c for c in CONNECTIONS if (cells["c"] == c).any()]
    words = sorted(cells["w"].unique())
    from .sampling import _check_settings  # the same bounds (and memory bound) as every fit

    draws, tune, chains = _check_settings(draws, tune, chains, 0.8, len(words) * len(present))
    wi = cells["w"].map({w: i for i, w in enumerate(words)}).to_numpy()
    ci = cells["c"].map({c: i for i, c in enumerate(present)}).to_numpy()
    n = cells["n"].to_numpy(float)
    m = cells["mean"].to_numpy(float)
    ss = cells["ss"].to_numpy(float)
    coords = {"connection": present, "protected_word": words}
    with pm.Model(coords=coords):
        p = spec.priors
        mu_bar = p["mu_bar"].create("mu_bar", dims="connection")
        tau_w = p["tau_word"].create("tau_word", dims="connection")
        tau_k = p["tau_context"].create("tau_context", dims="connection")
        sigma = p["sigma"].create("sigma", dims="connection")
        # centred: every word has many rows (attributes x context draws), so its mean is well
        # identified and the centred form samples better than the non-centred one
        mu = pm.Normal("mu", mu_bar, tau_w, dims=("protected_word", "connection"))
        pm.Potential("rows", cell_loglik(n, m, ss, mu[wi, ci], tau_k[ci], sigma[ci], xp=pt)
                     .sum())
        pm.Deterministic("context_share", tau_k**2 / (tau_k**2 + tau_w**2), dims="connection")
        idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed,
                          progressbar=progressbar, target_accept=0.9)
    post = idata.posterior
    names = ["mu_bar", "tau_word", "tau_context", "sigma", "context_share"]
    rows = []
    for name in names:
        da = post[name]
        lo, hi = _bounds(da, ci_prob, ci_kind)
        mean = da.mean(("chain", "draw"))
        for c in present:
            rows.append({"parameter": name, "connection": c,
                         "mean": float(mean.sel(connection=c)),
                         "lower": float(lo.sel(connection=c)),
                         "upper": float(hi.sel(connection=c))})
    summary = pd.DataFrame(rows)
    crow = []
    for a, b in VERDICT_CONTRASTS:
        if a in present and b in present:
            d = post["mu_bar"].sel(connection=a) - post["mu_bar"].sel(connection=b)
            lo, hi = _bounds(d, ci_prob, ci_kind)
            crow.append({"contrast": contrast_label(a, b), "mean": float(d.mean()),
                         "lower": float(lo), "upper": float(hi),
                         "prob_below_zero": float((d < 0).mean())})
    rhat = az.rhat(idata, var_names=["mu_bar", "tau_word", "tau_context", "sigma"])
    ess = az.ess(idata, var_names=["mu_bar", "tau_word", "tau_context", "sigma"])
    diverging = idata.sample_stats["diverging"] if "diverging" in idata.sample_stats else None
    diag = {"max_rhat": float(max(float(rhat[v].max()) for v in rhat.data_vars)),
            "min_ess_bulk": float(min(float(ess[v].min()) for v in ess.data_vars)),
            "divergences": int(diverging.sum()) if diverging is not None else 0,
            "draws": draws, "tune": tune, "chains": chains, "seed": seed}
    return ContextFit(summary, pd.DataFrame(crow), post, ci_prob, ci_kind, int(n.sum()),
                      len(cells), len(words), int(cells["k"].nunique()), diag, spec.source)


def _bounds(da, prob: float, kind: str):
    """Lower and upper bounds over chain and draw (:func:`.summaries.interval`)."""
    ci = interval(da, prob, kind)
    return ci.sel(ci_bound="lower"), ci.sel(ci_bound="upper")
