"""Moved to :mod:`bayesbias.classifier.groups`; this old path is kept for one release.

``import bayesbias.groups`` gives that module itself (one module object under both
names, so a setting or a patch made through either name reaches the same code).
"""

import sys

from .classifier import groups as _moved

sys.modules[__name__] = _moved
