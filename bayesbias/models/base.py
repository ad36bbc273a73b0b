"""Build the PyMC model of a spec on cell data: shared residual sd and likelihood."""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from .cells import Cells, normal_logp_cells
from .spec import ModelSpec

__all__ = ["build_model", "LIKELIHOODS"]

LIKELIHOODS = ("sufficient", "rows")


def _family_module(family: str):
    from . import additive, hierarchical, separate

    return {"hierarchical": hierarchical, "additive": additive, "separate": separate}[family]


def build_model(spec: ModelSpec, cells: Cells, likelihood: str = "sufficient"):
    """The PyMC model of `spec` on `cells`.

    Parameters
    ----------
    spec : ModelSpec
    cells : Cells
        From :func:`bayesbias.models.cells.cells_from_table` at ``spec.level``.
    likelihood : {"sufficient", "rows"}
        ``"sufficient"`` (default): the exact per-cell form as a ``pm.Potential`` named
        ``loglik``, whose cost does not grow with the number of rows. ``"rows"``: one
        observed Normal per row named ``distance`` (for checks and benchmarks).

    Returns
    -------
    pymc.Model
        With deterministic ``mu`` (dims ``(unit, connection)``), the cell means.
    """
    import pymc as pm

    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {', '.join(LIKELIHOODS)}, got {likelihood!r}")
    if cells.level != spec.level:
        raise ValueError(f"cells are at level {cells.level!r} but the spec wants {spec.level!r}")
    coords = {cells.unit_dim: cells.units.tolist(), "connection": list(CONNECTIONS)}
    with pm.Model(coords=coords) as model:
        mu = _family_module(spec.family).cell_means(spec, cells)
        if spec.residual_sd == "per_connection":
            sigma = spec.priors["sigma"].create("sigma", dims="connection")
            sigma_col = sigma[None, :]
        else:
            sigma = spec.priors["sigma"].create("sigma")
            sigma_col = sigma
        if likelihood == "sufficient":
            ui, ci = cells.observed
            sig = (sigma_col * pm.math.ones_like(mu))[ui, ci]
            pm.Potential("loglik", normal_logp_cells(
                mu[ui, ci], sig, cells.n[ui, ci].astype(np.float64), cells.mean[ui, ci],
                cells.ss[ui, ci], xp=pm.math))
        else:
            sig = (sigma_col * pm.math.ones_like(mu))[cells.unit_idx, cells.conn_idx]
            pm.Normal("distance", mu[cells.unit_idx, cells.conn_idx], sig, observed=cells.y)
    return model
