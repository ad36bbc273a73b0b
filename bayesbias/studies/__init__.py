"""Studies around a bias measurement: design (assurance), sensitivity and calibration (SBC).

Each runs many independent analyses on the seeded task engine of :mod:`bayesbias.parallel`
(in this process, or on Dask). Design studies and sensitivity refits use the exact marginal
posterior of the hierarchical model (:mod:`bayesbias.studies.exact_posterior`); SBC checks it and
the NUTS fits of every spec.
"""

from .calibration import SBCResult, sbc
from .design import Design, DesignResult, Pilot, designs_grid, run_design
from .exact_posterior import MarginalPosterior, marginal_posterior
from .sensitivity import Sensitivity, sensitivity

__all__ = [
    # design
    "Design",
    "DesignResult",
    "Pilot",
    "designs_grid",
    "run_design",
    # sensitivity
    "Sensitivity",
    "sensitivity",
    # calibration
    "SBCResult",
    "sbc",
    # exact posterior
    "MarginalPosterior",
    "marginal_posterior",
]
