"""Moved to :mod:`bayesbias.verdicts.recoverability`; this old path is kept for one release.

``import bayesbias.recoverability`` gives that module itself (one module object under both
names, so a setting or a patch made through either name reaches the same code).
"""

import sys

from .verdicts import recoverability as _moved

sys.modules[__name__] = _moved
