"""Studies around a bias measurement: design (assurance), sensitivity and calibration (SBC).

Each runs many independent analyses; they share the seeded task engine of
:mod:`bayesbias.parallel` (in this process, or on Dask).
"""

from .design import Design, DesignResult, Pilot, run_design

__all__ = ["Design", "DesignResult", "Pilot", "run_design"]
