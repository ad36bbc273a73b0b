"""The context family: contexts as one more level of the hierarchy (encoders, CEAT draws).

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

A family of :mod:`bayesbias.models.families` (spec ``models/context.toml``), fitted by
:func:`~bayesbias.models.fit_model` into a :class:`~bayesbias.models.Fit`. Beyond the shared
hooks it defines the cell layout (``cells``: the (w, c, k) cells beside the usual (w, c)
ones), its likelihood (``likelihood``) and each row's predictive sd (``row_sd``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd

from ..config import CONNECTIONS
from ..errors import DistanceTableError, ModelSpecError
from .cells import Cells, cells_from_table
from .spec import ModelSpec, load_spec

__all__ = ["context_cells", "cell_loglik", "cells", "cell_means", "likelihood", "row_sd",
           "card_lines", "fit_context_model", "load_context_spec", "CONTEXT_PRIORS"]

PRIORS = ("mu_bar", "tau_word", "tau_context", "sigma")
SCALES = ("tau_word", "tau_context", "sigma")
PARAMETERS = ("mu_bar", "tau_word", "tau_context", "sigma", "context_share")
GROUP_MEAN = "mu_bar"
#: Priors of the context model, in model-card order (the family's ``PRIORS``).
CONTEXT_PRIORS = PRIORS

#: Sampled through ``pm.sample`` (PyMC's seeding; nutpie when installed), as before this
#: model joined the families: the same seed gives the draws ``contexts --fit`` gave.
PM_SAMPLE = True
#: NUTS target acceptance rate when the caller gives none.
TARGET_ACCEPT = 0.9


def validate(spec: ModelSpec, source: str) -> None:
    """Refuse the structural choices the context model does not have."""
    if spec.level != "word":
        raise ModelSpecError(f"{source}: the context family has word-level cells only, "
                             f"not level {spec.level!r}")
    if spec.residual_sd != "per_connection":
        raise ModelSpecError(f"{source}: the context family has one residual sd per "
                             "connection (residual_sd = \"per_connection\")")


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    return [f"  distance_i ~ Normal(mu[{unit}, c] + u[{unit}, c, k], {s})   "
            "(k: the row's context draw)",
            f"  u[{unit}, c, k] ~ Normal(0, tau_context[c])   (integrated out exactly)",
            f"  mu[{unit}, c] ~ Normal(mu_bar[c], tau_word[c])",
            f"  mu_bar[c] ~ {p['mu_bar']}",
            f"  tau_word[c] ~ {p['tau_word']}",
            f"  tau_context[c] ~ {p['tau_context']}",
            "  context_share[c] = tau_context[c]^2 / (tau_context[c]^2 + tau_word[c]^2)"]


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
    out = g.agg(n="count", mean="mean").reset_index()
    out["ss"] = g.apply(lambda s: float(((s - s.mean()) ** 2).sum())).to_numpy()
    return out


def cells(table: pd.DataFrame, level: str = "word") -> Cells:
    """Return the cells of a context table (the family's cell layout hook).

    The (word, connection) cells of :func:`~bayesbias.models.cells.cells_from_table`, with
    the words in sorted order, and in ``sub_cells`` the (word, connection, context) cells of
    :func:`context_cells`: ``n``, ``mean``, ``ss`` and the index of each one's word and
    connection.
    """
    sub = context_cells(table)  # first: names the missing context column
    base = cells_from_table(table, level)
    if base.unit_embedding is not None:
        raise DistanceTableError("the context model takes a table of one encoder (no "
                                 "embedding column)")
    order = np.argsort(base.units.astype(str), kind="stable")
    where = np.empty(order.size, dtype=np.int32)
    where[order] = np.arange(order.size, dtype=np.int32)
    words = base.units[order]
    index = {w: i for i, w in enumerate(words)}
    conn = {c: i for i, c in enumerate(CONNECTIONS)}
    layout = {"n": sub["n"].to_numpy(float), "mean": sub["mean"].to_numpy(float),
              "ss": sub["ss"].to_numpy(float),
              "unit": sub["w"].map(index).to_numpy(np.int64),
              "connection": sub["c"].map(conn).to_numpy(np.int64),
              "contexts": int(sub["k"].nunique())}
    return dataclasses.replace(base, units=words, unit_class=base.unit_class[order],
                               n=base.n[order], mean=base.mean[order], ss=base.ss[order],
                               unit_idx=where[base.unit_idx], sub_cells=layout)


def cell_loglik(n, mean, ss, mu, tau_context, sigma, xp=np):
    """Log density of the rows of each cell, context effect integrated out (exact).

    The n rows are Normal(mu, sigma² I + tau_context² J): the density is
    ``-n/2 log 2π - (n-1) log σ - ½ log(σ² + n τ²) - ss / (2σ²) - n (m - μ)² / (2 (σ² + n τ²))``.
    `xp` is numpy, or pytensor.tensor inside a model.
    """
    v = sigma**2 + n * tau_context**2
    return (-0.5 * n * math.log(2 * math.pi) - (n - 1) * xp.log(sigma) - 0.5 * xp.log(v)
            - ss / (2 * sigma**2) - n * (mean - mu) ** 2 / (2 * v))


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the priors, the word means ``mu`` and ``context_share`` to the current model.

    ``sigma`` and ``tau_context`` are created here too (before ``mu``, the order of the
    model before it joined the families, so that seeds give the same draws);
    :func:`likelihood` uses them. ``mu`` is centred: every word has many rows (attributes x
    context draws), and the centred form samples better than the non-centred one.
    """
    import pymc as pm

    p = spec.priors
    mu_bar = p["mu_bar"].create("mu_bar", dims="connection")
    tau_w = p["tau_word"].create("tau_word", dims="connection")
    tau_k = p["tau_context"].create("tau_context", dims="connection")
    p["sigma"].create("sigma", dims="connection")
    mu = pm.Normal("mu", mu_bar, tau_w, dims=(cells.unit_dim, "connection"))
    pm.Deterministic("context_share", tau_k**2 / (tau_k**2 + tau_w**2), dims="connection")
    return mu


def likelihood(spec: ModelSpec, cells: Cells, mu) -> None:
    """Add the rows' log-density (:func:`cell_loglik` over the (w, c, k) cells) to the model."""
    import pymc as pm
    import pytensor.tensor as pt

    if cells.sub_cells is None:
        raise DistanceTableError("the context model needs the cells of a table with a "
                                 "context column (bayesbias.models.context.cells)")
    model = pm.modelcontext(None)
    s = cells.sub_cells
    ci = s["connection"]
    pm.Potential("loglik", cell_loglik(s["n"], s["mean"], s["ss"], mu[s["unit"], ci],
                                       model["tau_context"][ci], model["sigma"][ci], xp=pt)
                 .sum())


def structure_key(spec: ModelSpec, cells: Cells) -> tuple:
    """Return the (w, c, k) cells: the model holds them as constants, not ``pm.Data``."""
    import hashlib

    s = cells.sub_cells or {}
    h = hashlib.sha256()
    for k in ("n", "mean", "ss", "unit", "connection"):
        if k in s:
            h.update(np.ascontiguousarray(s[k]).tobytes())
    return (h.hexdigest(),)


def model_data(spec: ModelSpec, cells: Cells) -> dict:
    """Return no ``pm.Data`` values: the model holds its cells as constants."""
    return {}


def simulate_cell_means(spec: ModelSpec, rng, n_u: int, unit: str, given):
    """Refuse: :func:`bayesbias.testing.simulate_table` makes tables without context draws."""
    raise ModelSpecError(f"model {spec.name!r}: simulated tables (simulate_table, calibrate) "
                         "have no context draws, so the context family is not simulated; "
                         "fit it to a table of `bayesbias contexts`")


def row_sd(posterior):
    """Sd of a row around its word mean, context integrated out: ``sqrt(sigma² + tau_context²)``.

    Used by the posterior predictive check and the model checks (a row's predictive given
    the parameters, in a context draw the check has not seen).
    """
    return np.sqrt(posterior["sigma"] ** 2 + posterior["tau_context"] ** 2)


# -- the names before the context model joined the families -----------------------------------
def load_context_spec(name_or_path="context") -> ModelSpec:
    """Load a context spec: :func:`~bayesbias.models.load_spec` (deprecated alias)."""
    warnings.warn("load_context_spec is deprecated; use bayesbias.models.load_spec",
                  DeprecationWarning, stacklevel=2)
    spec = load_spec(name_or_path)
    if set(spec.priors) != set(PRIORS):
        raise ModelSpecError(f"{name_or_path}: not a context spec; [priors] needs exactly "
                             f"{', '.join(PRIORS)}")
    return spec


def fit_context_model(table: pd.DataFrame, spec="context", **kwargs):
    """Fit the context model: :func:`~bayesbias.models.fit_model` (deprecated alias).

    Returns a :class:`~bayesbias.models.Fit`; `kwargs` are those of ``fit_model``
    (``ci_prob`` and ``ci_kind``, which only choose intervals, are dropped: give them to the
    Fit's tables).
    """
    from .sampling import fit_model

    kwargs.pop("ci_prob", None)
    kwargs.pop("ci_kind", None)
    warnings.warn("fit_context_model is deprecated; use bayesbias.models.fit_model(table, "
                  "'context')", DeprecationWarning, stacklevel=2)
    return fit_model(table, spec, **kwargs)
