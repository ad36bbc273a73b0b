"""The separate family: one independent mean per cell, no pooling."""

from __future__ import annotations

from .cells import Cells
from .spec import ModelSpec

__all__ = ["cell_means"]


def cell_means(spec: ModelSpec, cells: Cells):
    """Add the cell means ``mu`` (independent priors) to the current model."""
    return spec.priors["mu"].create("mu", dims=(cells.unit_dim, "connection"))
