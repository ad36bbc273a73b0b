"""One engine for many independent seeded tasks: in this process, or on Dask.

Design studies, sensitivity refits and simulation-based calibration are thousands of
independent fits. :func:`run_tasks` runs a function over a list of task keys:

- sequentially in this process (``workers=None``, the default in the library),
- on a local Dask cluster of ``workers`` processes (the CLI's ``--workers N``), or
- on an existing Dask cluster (``scheduler="tcp://host:8786"``, the CLI's ``--scheduler``).

Each task gets its own :class:`numpy.random.Generator` from
``SeedSequence(seed, spawn_key=key)``: the numbers depend on the seed and the task's key
only, never on the number of workers or the order in which tasks finish. Progress is logged
on ``bayesbias.progress`` as tasks finish; on ``KeyboardInterrupt`` the tasks finished so far
are returned (``TaskResults.complete`` is False) instead of being lost.

The null-study engine of :mod:`bayesbias.comparators.null` uses the same seed scheme
(``spawn_key=(cell, chunk)``) and could run on :func:`run_tasks` unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .errors import InputDataError
from .progress import progress

__all__ = ["TaskResults", "run_tasks", "task_rng", "chunks"]

log = logging.getLogger(__name__)


def task_rng(seed: int, key: Sequence[int]) -> np.random.Generator:
    """Return the generator of task `key` (a tuple of non-negative ints) under `seed`."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=tuple(
        int(k) for k in key)))


def chunks(total: int, size: int) -> list[tuple[int, int]]:
    """Split `total` replications into ``(start, n)`` chunks of at most `size`.

    Part of the seed scheme: results are reproducible for a fixed chunk size.
    """
    if total < 1 or size < 1:
        raise InputDataError(f"need total >= 1 and chunk size >= 1, got {total}, {size}")
    return [(s, min(size, total - s)) for s in range(0, total, size)]


@dataclass
class TaskResults:
    """Results of :func:`run_tasks` by task key, in the order the keys were given.

    Attributes
    ----------
    results : dict
        Key -> result of the finished tasks (all of them unless interrupted).
    keys : list
        Every key that was asked for.
    wall_time_s : float
    workers : int or None
        Dask workers used (None: in this process).
    """

    results: dict
    keys: list
    wall_time_s: float = 0.0
    workers: int | None = None
    errors: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every task finished."""
        return len(self.results) == len(self.keys)

    @property
    def done(self) -> list:
        """Keys of the finished tasks, in the given order."""
        return [k for k in self.keys if k in self.results]

    def ordered(self) -> list:
        """Results of the finished tasks in the given key order."""
        return [self.results[k] for k in self.done]


def _call(fn, seed, key, args):
    return fn(*args, rng=task_rng(seed, key))


def _client(workers: int | None, scheduler: str | None, processes: bool):
    from dask.distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler), None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                           dashboard_address=None, silence_logs=logging.ERROR)
    return Client(cluster), cluster


def run_tasks(fn: Callable, tasks: Sequence[tuple[tuple[int, ...], tuple]], *, seed: int,
              workers: int | None = None, scheduler: str | None = None,
              processes: bool = True, label: str = "tasks") -> TaskResults:
    """Run ``fn(*args, rng=...)`` for every ``(key, args)`` in `tasks`.

    Parameters
    ----------
    fn : callable
        A module-level function (picklable); called with the task's arguments and a keyword
        ``rng`` seeded from ``(seed, key)``.
    tasks : sequence of (key, args)
        `key` is a tuple of non-negative ints, unique per task.
    seed : int
    workers : int, optional
        Start a local Dask cluster with this many single-threaded workers. None (default)
        and no `scheduler`: run in this process.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``); overrides `workers`.
    processes : bool
        Local cluster of processes (default) or of threads in this process.
    label : str
        Name of the tasks in progress messages.

    Returns
    -------
    TaskResults
        Partial (``complete`` False) if interrupted with Ctrl-C.
    """
    keys = [tuple(int(k) for k in key) for key, _ in tasks]
    if len(set(keys)) != len(keys):
        raise InputDataError("task keys must be unique")
    if workers is not None and workers < 1:
        raise InputDataError(f"workers must be >= 1, got {workers}")
    t0 = time.perf_counter()
    results: dict = {}
    total = len(keys)
    step = max(1, total // 20)

    def _report(done: int) -> None:
        if done % step == 0 or done == total:
            progress.info("%s: %d of %d done (%.0f s)", label, done, total,
                          time.perf_counter() - t0)

    if workers is None and not scheduler:
        try:
            for key, (_, args) in zip(keys, tasks, strict=True):
                results[key] = _call(fn, seed, key, args)
                _report(len(results))
        except KeyboardInterrupt:
            log.warning("%s interrupted: %d of %d finished", label, len(results), total)
        return TaskResults(results, keys, time.perf_counter() - t0, None)

    from dask.distributed import as_completed

    client, cluster = _client(workers, scheduler, processes)
    n_workers = len(client.scheduler_info().get("workers", {})) or workers
    try:
        submitted = [client.submit(_call, fn, seed, key, args, pure=False)
                     for key, (_, args) in zip(keys, tasks, strict=True)]
        key_of = {fut.key: key for fut, key in zip(submitted, keys, strict=True)}
        progress.info("%s: %d submitted to Dask (%s workers)", label, total, n_workers)
        try:
            for fut in as_completed(submitted):
                results[key_of[fut.key]] = fut.result()
                _report(len(results))
        except KeyboardInterrupt:
            log.warning("%s interrupted: %d of %d finished", label, len(results), total)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return TaskResults(results, keys, time.perf_counter() - t0, n_workers)

