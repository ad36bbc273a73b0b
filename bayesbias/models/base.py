"""Build the PyMC model of a spec on cell data: shared residual sd and likelihood."""

from __future__ import annotations

import numpy as np

from ..config import CONNECTIONS
from ..errors import InvalidArgumentError
from .cells import Cells, normal_logp_cells
from .families import family as family_of
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
    if getattr(family_of(spec.family), "row_effects", None) is not None:
        return {}  # a row-level model has no pm.Data (see structure_key)
    out = cell_data(cells)
    extra = getattr(family_of(spec.family), "model_data", None)
    if extra is not None:
        out.update(extra(spec, cells))
    return out


def structure_key(spec: ModelSpec, cells: Cells) -> tuple:
    """Return what fixes a compiled model apart from its data (spec, shapes, cells)."""
    fam = family_of(spec.family)
    extra = tuple(fam.structure_key(spec, cells)) if hasattr(fam, "structure_key") else ()
    if getattr(fam, "row_effects", None) is not None:
        # a row-level model holds its data as constants, not pm.Data: never reuse it with
        # other data (with_data would fail on the missing cell statistics)
        import hashlib

        h = hashlib.sha256()
        for part in (cells.y, cells.unit_idx, cells.conn_idx, cells.attr_idx,
                     cells.unit_embedding):
            if part is not None:
                h.update(np.ascontiguousarray(part).tobytes())
        for labels in (cells.units, cells.attributes, cells.embedding_sample):
            if labels is not None:
                h.update("\x00".join(map(str, labels)).encode())
        extra = extra + (h.hexdigest(), cells.n_rows)
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
        a family with row effects, e.g. crossed). A family with its own ``likelihood`` hook
        (context) adds that instead.

    Returns
    -------
    pymc.Model
        With deterministic ``mu`` (dims ``(unit, connection)``), the cell means.
    """
    import pymc as pm

    if likelihood not in LIKELIHOODS:
        raise InvalidArgumentError(
            f"likelihood must be one of {', '.join(LIKELIHOODS)}, got {likelihood!r}")
    family = family_of(spec.family)
    if getattr(family, "row_effects", None) is not None:
        likelihood = "rows"  # a mean per row, not per cell: no cell statistics
    if cells.level != spec.level:
        raise InvalidArgumentError(
            f"cells are at level {cells.level!r} but the spec wants {spec.level!r}")
    coords = {cells.unit_dim: cells.units.tolist(), "connection": list(CONNECTIONS)}
    with pm.Model(coords=coords) as model:
        mu = family.cell_means(spec, cells)
        if getattr(family, "likelihood", None) is not None:  # the family's own (context)
            family.likelihood(spec, cells, mu)
            return model
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
