"""Fitting a model spec to a distance table: the public names, gathered from their modules.

One module each: :mod:`.sampling` (:func:`fit_model`, sampler settings and limits),
:mod:`.result` (:class:`Fit`, its model checks), :mod:`.diagnostics` (r-hat, ESS,
divergences), :mod:`.files` (:func:`load_fit`), :mod:`.contrasts` (the contrast lists).
``from bayesbias.models.fit import Fit`` and the other names below keep working.
"""

from __future__ import annotations

from .._xarray import _no_distributed_probe
from .contrasts import ALL_CONTRASTS, CONTRASTS, contrast_label, contrast_pairs, differences
from .diagnostics import (
                          BFMI_MIN,
                          ESS_PER_CHAIN_MIN,
                          HELPERS,
                          RHAT_MAX,
                          Diagnostics,
                          SamplerWarning,
                          check,
                          diagnose,
)
from .files import (
                          FitFileError,
                          _cells_from_groups,
                          _data_groups,
                          _refuse_external,
                          load_fit,
)
from .result import PPC_TOLERANCE, Check, Fit
from .sampling import (
                          BYTES_PER_ATTRIBUTE,
                          BYTES_PER_CELL,
                          BYTES_PER_DRAW,
                          MAX_CHAINS,
                          MAX_DRAWS,
                          MAX_FIT_BYTES,
                          SAMPLERS,
                          _check_settings,
                          fit_memory,
                          fit_model,
)

__all__ = [
    "Fit",
    "Diagnostics",
    "SamplerWarning",
    "fit_model",
    "load_fit",
    "CONTRASTS",
    "ALL_CONTRASTS",
    "contrast_pairs",
    "SAMPLERS",
    "RHAT_MAX",
    "ESS_PER_CHAIN_MIN",
    "FitFileError",
    "Check",
]

# names other modules and tests import from here (private ones included)
_REEXPORTED = (contrast_label, differences, BFMI_MIN, HELPERS, check, diagnose,
               _cells_from_groups, _data_groups, _no_distributed_probe, _refuse_external,
               PPC_TOLERANCE, BYTES_PER_ATTRIBUTE, BYTES_PER_CELL, BYTES_PER_DRAW, MAX_CHAINS,
               MAX_DRAWS, MAX_FIT_BYTES, _check_settings, fit_memory)
