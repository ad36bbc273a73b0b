"""Build the PyMC model of a spec on cell data: shared residual sd and likelihood."""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from ..errors import InvalidArgumentError
from .cells import Cells, normal_logp_cells
from .families import family_module
from .spec import ModelSpec

__all__ = ["build_model", "cell_data", "model_data", "structure_key", "LIKELIHOODS"]

LIKELIHOODS = ("sufficient", "rows")


def cell_data(cells: Cells) -> dict[str, np.ndarray]:
    """Return counts, means and sums of squares of the non-empty cells (the model data)."""
    ui, ci = cells.observed
    return {"cell_n": cells.n[ui, ci].astype(np.float64), "cell_mean": cells.mean[ui, ci],
            "cell_ss": cells.ss[ui, ci]}


def model_data(spec: ModelSpec, cells: Cells) -> dict[str, np.ndarray]:
    """Values of every ``pm.Data`` of the sufficient-statistic model (for reusing a build)."""
    out = cell_data(cells)
    if spec.family == "additive":
        from .additive import rotation

        mu0, s, v = rotation(spec, cells)
        out.update(prior_mean=mu0, prior_sd=s, rotation=v)
    return out


def structure_key(spec: ModelSpec, cells: Cells) -> tuple:
    """Return what fixes a compiled model apart from its data (spec, shapes, cells)."""
    extra = ()
    if spec.family == "hierarchical" and spec.noncentred == "auto":
        from .hierarchical import choose_noncentred

        extra = choose_noncentred(cells)
    return (spec.hash, cells.level, cells.units.size, (cells.n > 0).tobytes(), extra)


def build_model(spec: ModelSpec, cells: Cells, likelihood: str = "sufficient"):
    """Build the PyMC model of `spec` on `cells`.

    Parameters
    ----------
    spec : ModelSpec
    cells : Cells
        From :func:`bayesbias.models.cells.cells_from_table` at ``spec.level``.
    likelihood : {"sufficient", "rows"}
        ``"sufficient"`` (default): the exact per-cell form as a ``pm.Potential`` named
        ``loglik``, whose cost does not grow with the number of rows. ``"rows"``: one
        observed Normal per row named ``distance`` (for checks and benchmarks; always for
        a family with row effects, e.g. crossed).

    Returns
    -------
    pymc.Model
        With deterministic ``mu`` (dims ``(unit, connection)``), the cell means.
    """
    import pymc as pm

    if likelihood not in LIKELIHOODS:
        raise InvalidArgumentError(
            f"likelihood must be one of {', '.join(LIKELIHOODS)}, got {likelihood!r}")
    family = family_module(spec.family)
    if getattr(family, "row_effects", None) is not None:
        likelihood = "rows"  # a mean per row, not per cell: no cell statistics
    if cells.level != spec.level:
        raise InvalidArgumentError(
            f"cells are at level {cells.level!r} but the spec wants {spec.level!r}")
    coords = {cells.unit_dim: cells.units.tolist(), "connection": list(CONNECTIONS)}
    with pm.Model(coords=coords) as model:
        mu = family.cell_means(spec, cells)
        row_effect = (family.row_effects(spec, cells)
                      if getattr(family, "row_effects", None) is not None else 0.0)
        if spec.residual_sd == "per_connection":
            sigma = spec.priors["sigma"].create("sigma", dims="connection")
            sigma_col = sigma[None, :]
        else:
            sigma = spec.priors["sigma"].create("sigma")
            sigma_col = sigma
        if likelihood == "sufficient":
            ui, ci = cells.observed
            stats = cell_data(cells)
            n = pm.Data("cell_n", stats["cell_n"])
            mean = pm.Data("cell_mean", stats["cell_mean"])
            ss = pm.Data("cell_ss", stats["cell_ss"])
            sig = (sigma_col * pm.math.ones_like(mu))[ui, ci]
            pm.Potential("loglik", normal_logp_cells(mu[ui, ci], sig, n, mean, ss, xp=pm.math))
        else:
            sig = (sigma_col * pm.math.ones_like(mu))[cells.unit_idx, cells.conn_idx]
            pm.Normal("distance", mu[cells.unit_idx, cells.conn_idx] + row_effect, sig,
                      observed=cells.y)
    return model
