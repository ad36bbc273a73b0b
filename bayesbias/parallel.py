"""One engine for many independent seeded tasks: in this process, or on Dask.

Design studies, sensitivity refits and simulation-based calibration are thousands of
independent fits. :func:`run_tasks` runs a function over a list of task keys:

- sequentially in this process (``workers=None``, the default in the library),
- on a local Dask cluster of ``workers`` processes (the CLI's ``--workers N``), or
- on an existing Dask cluster (``scheduler="tcp://host:8786"``, the CLI's ``--scheduler``).

:class:`JobPool` is the light engine for a few different jobs that overlap with this
process's own work (the report's ``--jobs``): spawned worker processes, no cluster, and a job
no worker has started yet runs here when its result is needed.

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
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

import numpy as np

from .errors import InputDataError, InvalidArgumentError
from .progress import EVERY_SECONDS, enabled, progress

__all__ = ["TaskResults", "run_tasks", "task_rng", "chunks", "dask_client", "JobPool", "Job",
           "default_jobs", "usable_cores", "thread_map"]

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
    task_time_s : float
        Seconds spent inside the tasks, summed over tasks (on Dask: measured by the workers).
    startup_s : float
        Seconds to start the local Dask cluster (0 in this process or on a given scheduler).
    """

    results: dict
    keys: list
    wall_time_s: float = 0.0
    workers: int | None = None
    errors: dict = field(default_factory=dict)
    task_time_s: float = 0.0
    startup_s: float = 0.0

    @property
    def speedup(self) -> float | None:
        """Task seconds per wall second on Dask (about the gain over this process), else None."""
        if self.workers is None or self.wall_time_s <= 0:
            return None
        return self.task_time_s / self.wall_time_s

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


def _timed_call(fn, seed, key, args):
    start = time.perf_counter()
    out = _call(fn, seed, key, args)
    return out, time.perf_counter() - start


def dask_client(workers: int | None = None, scheduler: str | None = None,
                processes: bool = True, client=None):
    """Return the Dask client of a run, and the local cluster it started (None if none).

    `client` as given; else a client of the scheduler at `scheduler`; else a new
    ``LocalCluster`` of `workers` single-threaded workers (processes or threads). The one
    place that starts Dask for :func:`run_tasks` and the null studies.
    """
    if client is not None:
        return client, None
    from dask.distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler), None
    import dask

    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers so that long-lived
    # workers hand memory back; for the short numpy-heavy tasks here that makes every
    # temporary array a fresh mmap (a design study ran 1.5x slower per task, measured in
    # benchmarks/bench_design.py). The workers of a cluster started here get glibc's own.
    # its INFO records (scheduler address, nannies) are not the user's business
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
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
        raise InvalidArgumentError(f"workers must be >= 1, got {workers}")
    t0 = time.perf_counter()
    results: dict = {}
    total = len(keys)
    step = max(1, total // 20)

    def _report(done: int) -> None:
        if done % step == 0 or done == total:
            progress.info("%s: %d of %d done (%.0f s)", label, done, total,
                          time.perf_counter() - t0)

    if workers is None and not scheduler:
        busy = 0.0
        try:
            for key, (_, args) in zip(keys, tasks, strict=True):
                results[key], seconds = _timed_call(fn, seed, key, args)
                busy += seconds
                _report(len(results))
        except KeyboardInterrupt:
            log.warning("%s interrupted: %d of %d finished", label, len(results), total)
        return TaskResults(results, keys, time.perf_counter() - t0, None, task_time_s=busy)

    from dask.distributed import as_completed

    client, cluster = dask_client(workers, scheduler, processes)
    startup = time.perf_counter() - t0 if cluster is not None else 0.0
    n_workers = len(client.scheduler_info().get("workers", {})) or workers
    busy = 0.0
    try:
        submitted = [client.submit(_timed_call, fn, seed, key, args, pure=False)
                     for key, (_, args) in zip(keys, tasks, strict=True)]
        key_of = {fut.key: key for fut, key in zip(submitted, keys, strict=True)}
        progress.info("%s: %d submitted to Dask (%s workers)", label, total, n_workers)
        try:
            for fut in as_completed(submitted):
                results[key_of[fut.key]], seconds = fut.result()
                busy += seconds
                _report(len(results))
        except KeyboardInterrupt:
            log.warning("%s interrupted: %d of %d finished", label, len(results), total)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    out = TaskResults(results, keys, time.perf_counter() - t0, n_workers, task_time_s=busy,
                      startup_s=startup)
    if cluster is not None and out.complete and out.speedup < 1.0:
        log.warning(
            "%s: %d Dask worker(s) did not help: about %.1f s of work took %.1f s, %.1f s of "
            "it starting the cluster; a run this size is faster in this process (without "
            "--workers)", label, n_workers, busy, out.wall_time_s, startup)
    return out


# -- a few jobs beside this process's own work ------------------------------------------

def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Two processes when this one may use two or more cores, else one."""
    return 2 if usable_cores() >= 2 else 1


#: Most threads :func:`thread_map` starts.
MAX_THREADS = 4


def thread_map(fn: Callable, *iterables, threads: int | None = None) -> list:
    """``[fn(*args) for args in zip(*iterables)]``, over threads; results in order.

    For NumPy work that releases the GIL (sorts, FFTs, ufuncs on big blocks): pure numbers,
    each call its own, so the results are those of the loop. `threads` defaults to the
    usable cores, at most :data:`MAX_THREADS`; with one, or one item, the loop runs here.
    The threads live for this call only (no pool left behind for a fork to inherit).
    """
    items = list(zip(*iterables, strict=True))
    threads = usable_cores() if threads is None else int(threads)
    threads = max(1, min(threads, MAX_THREADS, len(items)))
    if threads == 1:
        return [fn(*args) for args in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda args: fn(*args), items))


class Job:
    """The result of ``fn(*args, **kwargs)``, computed by a worker or, if none started it, here."""

    def __init__(self, fn, args, kwargs, pool: JobPool | None = None, label: str | None = None):
        self._call = (fn, args, kwargs)
        self._pool = pool  # while the job waits for a worker
        self._future = None  # once a worker has it
        self._slot = None  # the worker's progress slot while it runs the job
        self._first = False  # queued ahead of the others (JobPool.submit's `first`)
        self._done = False
        self._value = None
        #: What the job computes, in progress lines while this process waits for it.
        self.label = label or getattr(fn, "__name__", None) or getattr(
            getattr(fn, "func", None), "__name__", "a job")

    def result(self):
        """Wait for the worker's result, or compute it here if no worker has started it.

        While a worker runs it, this process runs the jobs still waiting (newest first)
        instead of waiting idle.
        """
        if not self._done:
            fn, args, kwargs = self._call
            value = _MISSING
            future = self._pool._claim(self) if self._pool is not None else None
            if future is not None:
                while not future.done() and self._pool._help_one():
                    pass
                try:
                    value, records, caught = self._wait(future)
                except Exception:  # noqa: BLE001 - rerun here to raise the real error
                    value = _MISSING
                else:
                    _replay(records, caught)
            if value is _MISSING:
                value = fn(*args, **kwargs)
            self._value, self._done, self._call = value, True, None
        return self._value


    def _wait(self, future):
        """Return the worker's result; waiting over :data:`WAIT_REPORT_S`, say so.

        Every :data:`~bayesbias.progress.EVERY_SECONDS` a line on the progress logger says
        what this process waits for, for how long, and the job's latest progress message
        in the worker (silent when progress is not shown: ``--quiet``, ``--json``).
        """
        if not enabled():
            return future.result()
        start = time.perf_counter()
        due = start + WAIT_REPORT_S
        while True:
            try:
                return future.result(timeout=max(0.0, due - time.perf_counter()))
            except FutureTimeout:
                pass
            pool = self._pool
            latest = pool._latest(self) if pool is not None else ""
            progress.info("%s: waiting for a worker (%.0f s)%s", self.label,
                          time.perf_counter() - start, f": {latest}" if latest else "")
            due += EVERY_SECONDS


_MISSING = object()

#: Seconds this process waits for a worker's job before saying so (then every
#: :data:`~bayesbias.progress.EVERY_SECONDS`).
WAIT_REPORT_S = 2.0

#: Bytes of a worker's latest progress message kept for the main process.
SLOT_BYTES = 240


class JobPool:
    """Run a few jobs in ``jobs - 1`` worker processes beside this one.

    For a handful of different jobs that overlap with this process's own work (the report's
    comparators, metrics and figures while it fits the models), where a Dask cluster's
    start-up would cost more than it saves. A worker gets the oldest waiting job when it is
    free; a job still waiting when its result is needed runs here, and :meth:`help` runs the
    waiting jobs here, newest first. With ``jobs=1`` every job runs here, when asked for.
    Results do not depend on `jobs`: a job gets its seed from its arguments. Use as a context
    manager; on leaving, the waiting jobs are dropped and the workers exit after the job they
    are running (leaving waits for them), or at once on an error (a job returns data and
    writes no file).

    On Linux the workers are forked when the first job is queued, after importing the
    modules named in `preload` and calling its callables, so that the workers need not do
    it again; elsewhere they are spawned.
    """

    def __init__(self, jobs: int = 1, preload: tuple = ()):
        self.jobs = int(jobs)
        self.preload = tuple(preload)
        self._pool = None
        self._waiting: list[Job] = []
        self._busy = 0  # jobs handed to workers and not finished
        self._broken = False  # a worker died: nothing more is handed out
        self._lock = threading.RLock()  # a done callback may run inside _hand_out
        self._slots = None  # shared memory: each running job's latest progress message
        self._free_slots: list[int] = []

    def _start(self) -> ProcessPoolExecutor:
        import importlib

        for item in self.preload:
            item() if callable(item) else importlib.import_module(item)
        method = "fork" if sys.platform == "linux" else "spawn"
        context = multiprocessing.get_context(method)
        # one slot per worker for the latest progress message of the job it runs, read
        # while this process waits for that job (no pipe a busy main process must drain)
        self._slots = context.Array("c", SLOT_BYTES * (self.jobs - 1))
        self._free_slots = list(range(self.jobs - 1))
        pool = ProcessPoolExecutor(self.jobs - 1, initializer=_worker_start,
                                   initargs=(os.getpid(), self._slots),
                                   mp_context=context)
        if method == "fork":
            # The only other threads here are BLAS's idle pool, which OpenBLAS shuts down
            # around fork() itself; Python warns about any thread (DeprecationWarning).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                pool.submit(int).result()  # forks the workers now, before any other thread
        return pool

    def submit(self, fn, /, *args, here: bool = False, first: bool = False,
               **kwargs) -> Job:
        """Queue ``fn(*args, **kwargs)`` (a module-level function with picklable arguments).

        With `here`, the job runs in this process when its result is asked for (for inputs
        that are costly to send, such as a sentence encoder). With `first`, a free worker
        takes it before the jobs queued without `first` (after the earlier `first` ones): for
        a job on this process's own path that a worker can do while this one goes on. A
        keyword ``_label`` (not passed on) names the job in the progress lines shown while
        waiting for it.
        """
        label = kwargs.pop("_label", None)
        if self.jobs <= 1 or here:
            return Job(fn, args, kwargs, label=label)
        if self._pool is None:
            self._pool = self._start()
        job = Job(fn, args, kwargs, self, label=label)
        job._first = bool(first)
        with self._lock:
            at = len(self._waiting)
            if first:  # behind the waiting `first` jobs, ahead of the others
                at = next((i for i, j in enumerate(self._waiting) if not j._first), at)
            self._waiting.insert(at, job)
        self._hand_out()
        return job

    def _hand_out(self, finished=None) -> None:
        """Give waiting jobs, oldest first, to the free workers (one job each at a time)."""
        from concurrent.futures.process import BrokenProcessPool

        with self._lock:
            if finished is not None:
                self._busy -= 1
                slot = getattr(finished, "_bayesbias_slot", None)
                if slot is not None:
                    self._free_slots.append(slot)
                # the executor tells its futures it broke while holding the lock submit
                # takes: no new job from here then (the jobs left run here)
                if not finished.cancelled() and isinstance(finished.exception(),
                                                           BrokenProcessPool):
                    self._broken = True
            while (self._pool is not None and not self._broken and self._waiting
                   and self._busy < self.jobs - 1):
                job = self._waiting[0]
                fn, args, kwargs = job._call
                slot = self._free_slots.pop() if self._free_slots else None
                if slot is not None:
                    self._write_slot(slot, b"")
                try:
                    job._future = self._pool.submit(_run_in_worker, fn, args, kwargs, slot)
                except Exception:  # noqa: BLE001 - a worker died: the jobs left run here
                    self._broken = True
                    if slot is not None:
                        self._free_slots.append(slot)
                    return
                job._future._bayesbias_slot = slot
                job._slot = slot
                self._waiting.pop(0)
                self._busy += 1
                job._future.add_done_callback(self._hand_out)

    def _write_slot(self, slot: int, data: bytes) -> None:
        _write_slot(self._slots, slot, data)

    def _latest(self, job: Job) -> str:
        """Return the latest progress message of `job` in its worker ("" if none yet)."""
        slots, slot = self._slots, job._slot
        if slots is None or slot is None or job._future is None or job._future.done():
            return ""
        with slots.get_lock():
            raw = slots[slot * SLOT_BYTES:(slot + 1) * SLOT_BYTES]
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")

    def _claim(self, job: Job):
        """Return the worker's future of `job`; None if it was waiting (it is now ours)."""
        with self._lock:
            if job in self._waiting:
                self._waiting.remove(job)
                return None
            return job._future

    def help(self) -> None:
        """Run here, newest first, every job still waiting for a worker.

        Call it when this process has nothing else to do: the workers keep the oldest jobs,
        this process takes the rest, and nobody waits for a job nobody runs.
        """
        while self._help_one():
            pass

    def _help_one(self) -> bool:
        """Run here the newest job still waiting for a worker; False if none is waiting.

        A job that fails is left undone: it runs again, and raises, where its result is
        asked for (not in the middle of waiting for another job).
        """
        with self._lock:
            if not self._waiting:
                return False
            job = self._waiting[-1]
        try:
            job.result()
        except Exception:  # noqa: BLE001 - raised again by its own result()
            log.debug("a job run while waiting failed; it runs again when asked for")
        return True

    def close(self, stop: bool = False) -> None:
        """Drop the waiting jobs; let the workers finish and exit, or `stop` them."""
        with self._lock:
            pool, self._pool, self.jobs = self._pool, None, 1
        if pool is None:
            return
        if stop:  # the results are not wanted (an error or Ctrl-C): end the workers now
            procs = list((getattr(pool, "_processes", None) or {}).values())
            for proc in procs:
                proc.terminate()
        # Wait for the executor's manager thread: Python 3.13.0's exit hook races with a
        # thread still closing its wake-up pipe after shutdown(wait=False) and prints an
        # OSError traceback (fixed in CPython by gh-125451). The workers are idle or
        # stopped here, so the wait is short.
        pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> JobPool:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(stop=exc_type is not None)


def _exit_with_parent(parent: int) -> None:
    """End this worker when the main process dies, even by SIGKILL.

    Linux: the kernel sends SIGKILL on the parent's death (``PR_SET_PDEATHSIG``); a parent
    that died before the call is caught by comparing ``getppid``. Elsewhere a daemon thread
    watches ``getppid`` every half second.
    """
    if sys.platform == "linux":
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0:  # PR_SET_PDEATHSIG = 1
                if os.getppid() != parent:
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="bayesbias-parent-watch", daemon=True).start()


def _write_slot(slots, slot: int, data: bytes) -> None:
    """Put `data` (truncated, NUL-terminated) in progress slot `slot` of `slots`."""
    data = data[:SLOT_BYTES - 1] + b"\0"
    with slots.get_lock():
        slots[slot * SLOT_BYTES:slot * SLOT_BYTES + len(data)] = data


#: A worker's progress slots (:class:`JobPool`), set when it starts.
_SLOTS = None


class _Live(logging.Handler):
    """Write each progress record of the job a worker runs into the job's slot."""

    def __init__(self, slot: int):
        super().__init__(logging.INFO)
        self.slot = slot

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _write_slot(_SLOTS, self.slot, record.getMessage().encode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - progress must never break a job
            pass


def _worker_start(parent: int | None = None, slots=None) -> None:
    global _SLOTS
    _SLOTS = slots
    # A worker does not outlive the main process (a SIGKILL of it would leave the worker
    # running, holding the caller's stdout and stderr).
    if parent is not None:
        _exit_with_parent(parent)
    # Ctrl-C reaches the whole process group: the main process handles it and cancels the
    # jobs; a worker must not print a traceback of its own. A forked worker also drops the
    # main process's SIGTERM handler.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # A worker shows nothing itself: its records go back with each job's result, and the
    # main process shows them with its own settings (a forked worker has a copy of them).
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            if logger.name.startswith("bayesbias."):
                logger.propagate = True
    top = logging.getLogger("bayesbias")
    top.propagate = False
    if top.level == logging.NOTSET:
        top.setLevel(logging.DEBUG)  # main decides what to show


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args = record.getMessage(), None  # arguments may not pickle
        record.exc_info = record.exc_text = None
        self.records.append(record)


def _run_in_worker(fn, args, kwargs, slot=None):
    """Run a job in a worker; return its value with its log records and warnings.

    Its progress messages also go, as they come, to progress slot `slot` (if given).
    """
    collect = _Collect()
    logger = logging.getLogger("bayesbias")
    logger.addHandler(collect)
    live = _Live(slot) if slot is not None and _SLOTS is not None else None
    if live is not None:
        progress.addHandler(live)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = fn(*args, **kwargs)
    finally:
        logger.removeHandler(collect)
        if live is not None:
            progress.removeHandler(live)
    shown = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    return value, collect.records, shown


def _replay(records, caught) -> None:
    """Show a worker's log records and warnings here, as if the job had run here."""
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
    for message, category, filename, lineno in caught:
        warnings.warn_explicit(message, category, filename, lineno)
