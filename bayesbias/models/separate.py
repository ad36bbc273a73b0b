"""The separate family: one independent mean per cell, no pooling."""

from __future__ import annotations

from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means", "marginal_blocks", "card_lines"]

PRIORS = ("mu", "sigma")
SCALES = ("sigma",)
PARAMETERS = ("sigma",)
GROUP_MEAN = None


def card_lines(spec: ModelSpec, unit: str, s: str) -> list[str]:
    """Return the model card's equations."""
    return [f"  distance_i ~ Normal(mu[{unit}, c], {s})",
            f"  mu[{unit}, c] ~ {spec.priors['mu']}"]


def marginal_blocks(spec: ModelSpec):
    """Only sigma is sampled; with a Normal prior the cell means integrate out exactly."""
    from .marginal import Block

    prior = spec.priors["mu"]
    if prior.dist != "Normal":
        return None
    p = dict(prior.params)
    return ([Block("sigma", spec.priors["sigma"], "S",
                   per_connection=spec.residual_sd == "per_connection")],
            {"M": p["mu"], "T": p["sigma"]})


def derived(values: dict, m) -> dict:
    """Return no derived variables."""
    return {}


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the cell means ``mu`` (independent priors) to the current model."""
    return spec.priors["mu"].create("mu", dims=(cells.unit_dim, "connection"))
