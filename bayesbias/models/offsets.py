"""The offsets family (the authors' R code): a shared intercept plus pooled offsets.

``mu[w, c] ~ Normal(m + offset[c], tau[c])`` with one intercept ``m`` for all connections;
the group-level mean of connection c is ``mu_bar[c] = m + offset[c]``. This is
``buildModel`` in the authors' ``functions/newModelBuilding.R`` (Dobrzeniecka & Urbaniak),
where the paper's text writes the hierarchical family instead.
"""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from .cells import Cells
from .marginal import Block
from .spec import ModelSpec

__all__ = ["cell_means", "marginal_blocks", "derived", "card_lines"]

PRIORS = ("m", "offset", "tau", "sigma")
SCALES = ("tau", "sigma")
PARAMETERS = ("mu_bar", "m", "offset", "tau", "sigma")
GROUP_MEAN = "mu_bar"
#: m and the offsets trade off (only m + offset[c] meets the data): nutpie's low-rank mass
#: matrix adapts to that direction (bulk ESS 321 -> see tests with "diag").
ADAPTATION = "low_rank"


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    p = spec.priors
    return [f"  distance_i ~ Normal(mu[{unit}, c], {s})",
            f"  mu[{unit}, c] ~ Normal(m + offset[c], tau[c]);  group mean mu_bar[c] = "
            "m + offset[c]",
            f"  m ~ {p['m']}",
            f"  offset[c] ~ {p['offset']}",
            f"  tau[c] ~ {p['tau']}"]


def marginal_blocks(spec: ModelSpec):
    """Parameters of the cell-marginal form (see :mod:`bayesbias.models.marginal`)."""
    return ([Block("m", spec.priors["m"], "I", per_connection=False),
             Block("offset", spec.priors["offset"], "M"),
             Block("tau", spec.priors["tau"], "T"),
             Block("sigma", spec.priors["sigma"], "S",
                   per_connection=spec.residual_sd == "per_connection")], {})


def simulate_cell_means(spec: ModelSpec, rng, n_u: int, unit: str, given: dict | None):
    """Return true cell means ``(n_u, 4)`` and parameters (name -> (dims, values)).

    For :func:`bayesbias.testing.simulate_table`: drawn from the spec's priors when `given`
    is None, else from the values in `given` (see :data:`bayesbias.testing.REALISTIC`).
    """
    p = spec.priors
    n_c = len(CONNECTIONS)
    if given is None:
        m = float(np.asarray(p["m"].draw(rng, None), dtype=float))
        offset = np.asarray(p["offset"].draw(rng, n_c), dtype=float)
        tau = np.asarray(p["tau"].draw(rng, n_c), dtype=float)
    else:  # the realistic group means split into their mean and the offsets from it
        mb = np.asarray(given["mu_bar"], float)
        m, offset, tau = float(mb.mean()), mb - mb.mean(), np.asarray(given["tau"], float)
    mu_bar = m + offset
    mu = mu_bar + tau * rng.standard_normal((n_u, n_c))
    return mu, {"mu_bar": (("connection",), mu_bar), "tau": (("connection",), tau),
                "m": ((), m), "offset": (("connection",), offset)}


def derived(values: dict, m):
    """Return the group means ``mu_bar = m + offset``."""
    return {"mu_bar": m}


def cell_means(spec: ModelSpec, cells: Cells):
    """Add ``m``, ``offset``, ``tau``, ``mu_bar`` and the cell means ``mu`` (non-centred)."""
    import pymc as pm

    m = spec.priors["m"].create("m")
    offset = spec.priors["offset"].create("offset", dims="connection")
    tau = spec.priors["tau"].create("tau", dims="connection")
    mu_bar = pm.Deterministic("mu_bar", m + offset, dims="connection")
    z = pm.Normal("mu_z", 0.0, 1.0, dims=(cells.unit_dim, "connection"))
    return pm.Deterministic("mu", mu_bar[None, :] + tau[None, :] * z,
                            dims=(cells.unit_dim, "connection"))
