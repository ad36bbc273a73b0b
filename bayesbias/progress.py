"""Progress of long steps (reading large files, sampling, simulations, permutations).

Library code reports progress as INFO records on the ``bayesbias.progress`` logger; the CLI
shows them on stderr with the elapsed time unless ``--quiet``. In Python, turn them on with
``logging.getLogger("bayesbias.progress").setLevel(logging.INFO)`` plus a handler.
"""

from __future__ import annotations

import logging

__all__ = ["progress", "EVERY_LINES"]

progress = logging.getLogger("bayesbias.progress")

#: Report every this many lines or vectors while scanning an embedding file.
EVERY_LINES = 100_000
