"""Progress of long steps (reading large files, sampling, simulations, permutations).

Library code reports progress as INFO records on the ``bayesbias.progress`` logger; the CLI
shows them on stderr with the elapsed time unless ``--quiet`` or ``--json``. In Python, turn
them on with ``logging.getLogger("bayesbias.progress").setLevel(logging.INFO)`` plus a
handler.

The hooks here are what long library calls take to report as they go: :func:`chain_callback`
(nutpie's per-chain draws, as the cell-marginal sampler shows them) and
:class:`TrainProgress` (``bayesbias train``: the plan, then each model as "k of N").
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

__all__ = ["progress", "EVERY_LINES", "EVERY_SECONDS", "filtered", "once_per_message",
           "enabled", "chain_callback", "TrainProgress"]

progress = logging.getLogger("bayesbias.progress")

#: Report every this many lines or vectors while scanning an embedding file.
EVERY_LINES = 100_000

#: Seconds between two progress lines of one running step (sampler chains).
EVERY_SECONDS = 2.0


def enabled() -> bool:
    """Whether progress records are shown (the CLI without ``--quiet`` / ``--json``)."""
    return progress.isEnabledFor(logging.INFO)


def chain_callback(label: str):
    """Return a nutpie ``progress_callback``: draws per chain, as the cell-marginal sampler.

    nutpie calls it from its sampler thread every ``progress_rate`` ms (give
    ``int(EVERY_SECONDS * 1000)``) with one ``ChainProgress`` per chain; each call logs
    ``LABEL: draws per chain 925/2000, 903/2000, ... (incl. tuning), 2.1 s``.
    """
    t0 = time.perf_counter()

    def report(chains) -> None:
        try:
            done = ", ".join(f"{c.finished_draws}/{c.total_draws}" for c in chains)
        except (AttributeError, TypeError):  # another nutpie's progress objects: no line
            return
        progress.info("%s: draws per chain %s (incl. tuning), %.1f s", label, done,
                      time.perf_counter() - t0)

    return report


class TrainProgress:
    """Progress of ``bayesbias train``: a plan line, then one line per model, "k of N".

    :func:`bayesbias.training.train_models` calls :meth:`plan` once the corpus is scanned
    and :meth:`trained` as each model is written (from its worker thread: counted under a
    lock, so that k is the number finished, whatever the order).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.total = 0
        self.done = 0

    def plan(self, models: int, todo: int, documents: int, tokens: int, out) -> None:
        """Log ``training N models of M documents (T tokens) into OUT`` (and what is left)."""
        self.total = int(todo)
        skipped = int(models) - int(todo)
        progress.info("training %d models of %d documents (%d tokens) into %s%s", models,
                      documents, tokens, out, f": {skipped} already trained, {todo} to train"
                      if skipped else "")

    def trained(self, name: str, words: int, seconds: float) -> None:
        """Log ``trained NAME: model k of N, W words in S s``."""
        with self._lock:
            self.done += 1
            k = self.done
        progress.info("trained %s: model %d of %d, %d words in %.1f s", name, k,
                      max(self.total, k), words, seconds)


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
