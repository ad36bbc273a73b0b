"""Moved to :mod:`bayesbias.verdicts.reconcile`; this old path is kept for one release.

``import bayesbias.reconcile`` gives that module itself (one module object under both
names, so a setting or a patch made through either name reaches the same code).
"""

import sys

from .verdicts import reconcile as _moved

sys.modules[__name__] = _moved
