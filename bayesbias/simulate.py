"""Alias of :mod:`bayesbias.comparators.null` (the null-study engine), kept for old imports."""

from .comparators.null import *  # noqa: F401,F403
from .comparators.null import __all__  # noqa: F401
