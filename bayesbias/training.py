"""Moved to :mod:`bayesbias.inputs.training`; this old path is kept for one release.

``import bayesbias.training`` gives that module itself (one module object under both
names, so a setting or a patch made through either name reaches the same code).
"""

import sys

from .inputs import training as _moved

sys.modules[__name__] = _moved
