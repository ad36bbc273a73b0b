"""Bayesian models of cosine distances with control groups.

Specs are data (``models/*.toml``); :func:`fit_model` fits one to a distance table with the
exact sufficient-statistic likelihood (per-word means integrated out and drawn afterwards,
see :mod:`bayesbias.models.marginal`) and returns a :class:`Fit` with diagnostics, tables
with ArviZ intervals, posterior predictive checks, LOO, forest plots and netCDF save/load.
:func:`compare_fits` compares two fits of the same spec (e.g. original vs debiased).
"""

from .._lazy import lazy_exports

_MODULES = {
    ".spec": ("ModelSpec", "Prior", "load_spec", "available_models"),
    ".fit": ("fit_model", "Fit", "Diagnostics", "Check", "FitFileError", "SamplerWarning",
             "load_fit", "CONTRASTS", "ALL_CONTRASTS"),
    ".cells": ("Cells", "cells_from_table"),
    ".compare": ("compare_fits", "Comparison", "loo_compare"),
}
# Names are imported on first use: listing models or parsing options stays light.
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

__all__ = [
    # specs
    "ModelSpec",
    "Prior",
    "load_spec",
    "available_models",
    # fitting
    "fit_model",
    "Fit",
    "Diagnostics",
    "Check",
    "FitFileError",
    "SamplerWarning",
    "load_fit",
    "CONTRASTS",
    "ALL_CONTRASTS",
    # data
    "Cells",
    "cells_from_table",
    # comparing
    "compare_fits",
    "Comparison",
    "loo_compare",
]
