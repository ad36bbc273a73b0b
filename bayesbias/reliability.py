"""Moved to :mod:`bayesbias.verdicts.reliability`; this old path is kept for one release.

``import bayesbias.reliability`` gives that module itself (one module object under both
names, so a setting or a patch made through either name reaches the same code).
"""

import sys

from .verdicts import reliability as _moved

sys.modules[__name__] = _moved
