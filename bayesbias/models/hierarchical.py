"""The hierarchical family: cell means pooled towards a group-level mean per connection."""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means", "choose_noncentred", "marginal_blocks", "card_lines", "AUTO_RATIO"]

PRIORS = ("mu_bar", "tau", "sigma")
SCALES = ("tau", "sigma")
PARAMETERS = ("mu_bar", "tau", "sigma")
GROUP_MEAN = "mu_bar"
#: Given the scale parameters the group means are exactly Gaussian (Normal mu_bar prior):
#: the verdict reads Rao-Blackwellised interval ends (:mod:`.contrast_mixture`).
GAUSSIAN_GROUP_MEANS = True

#: The spec's ``noncentred`` choice applies (cell means pooled).
NONCENTRED = True
#: The exact (quadrature) posterior of :mod:`bayesbias.studies.exact_posterior` applies
#: (with one residual sd per connection and a Normal ``mu_bar`` prior).
EXACT_MARGINAL = True

#: Data-to-prior information ratio below which "auto" samples a connection non-centred.
AUTO_RATIO = 10.0


def choose_noncentred(cells: Cells) -> tuple[str, ...]:
    """Choose the connections whose typical cell is sparse (sampled non-centred).

    For connection c, with s2 the pooled within-cell variance, n the median cell count and
    t2 the between-cell variance of the cell means (less their sampling noise), the cell
    means are sampled non-centred when ``n * t2 / s2 < AUTO_RATIO`` (10; the estimate of t2
    from few cells is noisy, and non-centring costs little when cells are moderately sparse).
    """
    out = []
    for j, c in enumerate(CONNECTIONS):
        n = cells.n[:, j]
        has = n > 0
        if not has.any():
            continue
        s2 = cells.ss[has, j].sum() / max(n[has].sum() - has.sum(), 1)
        s2 = max(s2, 1e-12)
        means = cells.mean[has, j]
        t2 = (np.var(means, ddof=1) - np.mean(s2 / n[has])) if means.size > 1 else 0.0
        t2 = max(t2, 1e-8)
        if np.median(n[has]) * t2 / s2 < AUTO_RATIO:
            out.append(c)
    return tuple(out)


def simulate_cell_means(spec: ModelSpec, rng, n_u: int, unit: str, given: dict | None):
    """Return true cell means ``(n_u, 4)`` and parameters (name -> (dims, values)).

    For :func:`bayesbias.testing.simulate_table`: drawn from the spec's priors when `given`
    is None, else from the values in `given` (see :data:`bayesbias.testing.REALISTIC`).
    """
    n_c = len(CONNECTIONS)
    if given is None:
        mu_bar = np.asarray(spec.priors["mu_bar"].draw(rng, n_c), dtype=float)
        tau = np.asarray(spec.priors["tau"].draw(rng, n_c), dtype=float)
    else:
        mu_bar = np.broadcast_to(np.asarray(given["mu_bar"], float), (n_c,)).copy()
        tau = np.broadcast_to(np.asarray(given["tau"], float), (n_c,)).copy()
    mu = mu_bar + tau * rng.standard_normal((n_u, n_c))
    return mu, {"mu_bar": (("connection",), mu_bar), "tau": (("connection",), tau)}


def structure_key(spec: ModelSpec, cells: Cells) -> tuple:
    """Return what fixes the compiled PyMC model beyond the spec: the non-centred connections."""
    return choose_noncentred(cells) if spec.noncentred == "auto" else ()


def cell_means(spec: ModelSpec, cells: Cells):
    """Add ``mu_bar``, ``tau`` and the cell means ``mu`` to the current model.

    Connections in ``spec.noncentred`` are sampled as ``mu_bar + tau * z``; the others
    centred. Both give the same posterior; the mix only changes the sampler's geometry.
    """
    import pymc as pm
    import pytensor.tensor as pt

    unit = cells.unit_dim
    mu_bar = spec.priors["mu_bar"].create("mu_bar", dims="connection")
    tau = spec.priors["tau"].create("tau", dims="connection")
    chosen = choose_noncentred(cells) if spec.noncentred == "auto" else spec.noncentred
    model = pm.modelcontext(None)
    model.noncentred = chosen  # recorded in the fit's attributes
    nc = [i for i, c in enumerate(CONNECTIONS) if c in chosen]
    ce = [i for i, c in enumerate(CONNECTIONS) if c not in chosen]
    if not nc:
        return pm.Normal("mu", mu_bar, tau, dims=(unit, "connection"))
    columns = [None] * len(CONNECTIONS)
    model.add_coord("connection_noncentred", [CONNECTIONS[i] for i in nc])
    z = pm.Normal("mu_z", 0.0, 1.0, dims=(unit, "connection_noncentred"))
    for j, i in enumerate(nc):
        columns[i] = mu_bar[i] + tau[i] * z[:, j]
    if ce:
        model.add_coord("connection_centred", [CONNECTIONS[i] for i in ce])
        mc = pm.Normal("mu_centred", mu_bar[ce], tau[ce], dims=(unit, "connection_centred"))
        for j, i in enumerate(ce):
            columns[i] = mc[:, j]
    return pm.Deterministic("mu", pt.stack(columns, axis=1), dims=(unit, "connection"))


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    nc = ("chosen from the data (auto)" if spec.noncentred == "auto"
          else ", ".join(spec.noncentred) or "none")
    return [f"  distance_i ~ Normal(mu[{unit}, c], {s})",
            f"  mu[{unit}, c] ~ Normal(mu_bar[c], tau[c])",
            f"  mu_bar[c] ~ {p['mu_bar']}",
            f"  tau[c] ~ {p['tau']}",
            f"  (PyMC sampler only) non-centred connections: {nc}"]


def marginal_blocks(spec: ModelSpec):
    """Parameters of the cell-marginal form (see :mod:`bayesbias.models.marginal`)."""
    from .marginal import Block

    return ([Block("mu_bar", spec.priors["mu_bar"], "M"), Block("tau", spec.priors["tau"], "T"),
             Block("sigma", spec.priors["sigma"], "S",
                   per_connection=spec.residual_sd == "per_connection")], {})


def derived(values: dict, m) -> dict:
    """Return no derived variables (mu_bar is sampled)."""
    return {}
