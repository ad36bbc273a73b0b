"""Old name of :mod:`bayesbias.models.summaries` (kept so existing imports keep working)."""

from .summaries import *  # noqa: F403
from .summaries import CI_KINDS, SAMPLE_DIMS, interval, resolve_ci, summarise, to_frame  # noqa: F401
