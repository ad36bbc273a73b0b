"""The hierarchical family: cell means pooled towards a group-level mean per connection."""

from __future__ import annotations

from ..config import CONNECTIONS
from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means"]


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
    nc = [i for i, c in enumerate(CONNECTIONS) if c in spec.noncentred]
    ce = [i for i, c in enumerate(CONNECTIONS) if c not in spec.noncentred]
    if not nc:
        return pm.Normal("mu", mu_bar, tau, dims=(unit, "connection"))
    model = pm.modelcontext(None)
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
