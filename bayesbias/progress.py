"""Progress of long steps (reading large files, sampling, simulations, permutations).

Library code reports progress as INFO records on the ``bayesbias.progress`` logger; the CLI
shows them on stderr with the elapsed time unless ``--quiet``. In Python, turn them on with
``logging.getLogger("bayesbias.progress").setLevel(logging.INFO)`` plus a handler.
"""

from __future__ import annotations

import contextlib
import logging

__all__ = ["progress", "EVERY_LINES", "filtered", "once_per_message"]

progress = logging.getLogger("bayesbias.progress")

#: Report every this many lines or vectors while scanning an embedding file.
EVERY_LINES = 100_000


@contextlib.contextmanager
def filtered(name: str, keep):
    """Within the block, show only the records of logger `name` for which `keep(record)`."""
    logger = logging.getLogger(name)
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def once_per_message(name: str):
    """Within the block, show each distinct message of logger `name` once.

    A report reads one embedding for several word lists that share the control lists:
    a word missing from a shared list is one finding, not one per list.
    """
    seen: set[tuple[int, str]] = set()

    def first(record: logging.LogRecord) -> bool:
        key = (record.levelno, record.getMessage())
        if key in seen:
            return False
        seen.add(key)
        return True

    return filtered(name, first)
