"""parallel.JobPool: jobs beside this process's own work, the same results wherever they ran."""

import logging
import os
import threading
import time
import warnings

import numpy as np
import pytest

from bayesbias.errors import EmbeddingFormatError
from bayesbias.parallel import JobPool

#: Longest a test waits for a worker to reach a state: a regression fails, never hangs.
TIMEOUT = 60.0


def wait_until(condition, what: str, timeout: float = TIMEOUT, every: float = 0.01) -> None:
    """Poll `condition()` until it is true; fail the test naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting until {what}")
        time.sleep(every)


def seeded_draws(seed: int, n: int) -> tuple[int, np.ndarray]:
    return os.getpid(), np.random.default_rng(seed).normal(size=n)


def wait_then_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def bad_file(path: str):
    # an error whose __init__ takes several arguments: it does not survive pickling, so
    # the pool must raise it by running the job here
    raise EmbeddingFormatError(path, "not a vector file", line=3)


def talkative(n: int) -> int:
    logging.getLogger("bayesbias.progress").info("job progress %d", n)
    logging.getLogger("bayesbias.test").debug("a debug record nobody asked for")
    warnings.warn(f"job warning {n}", UserWarning, stacklevel=1)
    return n


def test_one_job_runs_here_when_asked_for():
    pool = JobPool(1)
    job = pool.submit(seeded_draws, 3, 5)
    pid, draws = job.result()
    assert pid == os.getpid()
    np.testing.assert_array_equal(draws, np.random.default_rng(3).normal(size=5))
    assert job.result() is job.result()  # computed once


def test_results_do_not_depend_on_where_a_job_ran():
    with JobPool(2) as pool:
        jobs = [pool.submit(seeded_draws, s, 1000) for s in range(4)]
        # else this process may take it first
        wait_until(jobs[0]._future.done, "the first job is done")
        results = [j.result() for j in jobs]
    assert results[0][0] != os.getpid()  # the first job ran in the worker
    for seed, (_, draws) in enumerate(results):
        np.testing.assert_array_equal(draws, seeded_draws(seed, 1000)[1])


def test_a_first_job_goes_ahead_of_the_waiting_ones():
    with JobPool(2) as pool:
        busy = pool.submit(wait_then_pid, 0.5)  # the worker's, while the others queue
        wait_until(lambda: busy._future is not None, "the worker has the first job")
        late = [pool.submit(wait_then_pid, 0.01) for _ in range(2)]
        first = [pool.submit(seeded_draws, s, 10, first=True) for s in (1, 2)]
        # queued ahead of `late`, in the order submitted
        assert pool._waiting == [*first, *late]
        wait_until(lambda: first[0]._future is not None and first[0]._future.done(),
                   "the worker ran the first `first` job")
        results = [j.result() for j in first]
        [j.result() for j in late]
    assert results[0][0] != os.getpid()  # the worker ran it next, not this process
    for seed, (_, draws) in zip((1, 2), results, strict=True):
        np.testing.assert_array_equal(draws, seeded_draws(seed, 10)[1])


def test_help_runs_here_what_no_worker_started():
    with JobPool(2) as pool:
        jobs = [pool.submit(wait_then_pid, 0.3) for _ in range(5)]
        pool.help()
        pids = [j.result() for j in jobs]
    here = pids.count(os.getpid())
    # a worker is handed one job at a time: it runs the first, and the next oldest whenever it
    # is free (one or two more while this process runs the newest ones, under load); this
    # process takes the rest, newest first, and no job runs twice or is lost
    assert 2 <= here <= 4 and pids[0] != os.getpid()
    assert pids[-1] == os.getpid()  # help() took the newest job first


def test_waiting_for_a_running_job_runs_the_waiting_ones_here():
    """While a worker runs the job asked for, this process takes the queue, newest first."""
    with JobPool(2) as pool:
        first = pool.submit(wait_then_pid, 1.0)
        wait_until(lambda: first._future is not None, "a worker has the first job")
        rest = [pool.submit(wait_then_pid, 0.05) for _ in range(4)]
        assert first.result() != os.getpid()
        # done here while the worker slept: no job is left waiting for it
        assert not pool._waiting
        assert rest[-1]._done and rest[-1].result() == os.getpid()
        pids = [j.result() for j in rest]
    assert pids.count(os.getpid()) >= 3


def test_a_job_that_fails_while_waiting_raises_where_its_result_is_asked():
    with JobPool(2) as pool:
        first = pool.submit(wait_then_pid, 0.5)
        wait_until(lambda: first._future is not None, "a worker has the first job")
        bad = pool.submit(bad_file, "vectors.txt")
        assert first.result() != os.getpid()  # not the other job's error
        with pytest.raises(EmbeddingFormatError, match="vectors.txt"):
            bad.result()


def test_an_error_in_a_worker_is_raised_here_as_itself():
    with JobPool(2) as pool:
        job = pool.submit(bad_file, "vectors.txt")
        with pytest.raises(EmbeddingFormatError, match="vectors.txt"):
            job.result()


@pytest.fixture
def progress_logger_as_the_library_leaves_it():
    # an in-process CLI test earlier in this pytest worker may have quietened the progress
    # logger (main() stops it propagating and sets WARNING): start from the library default
    progress = logging.getLogger("bayesbias.progress")
    saved = progress.propagate, progress.level
    progress.propagate = True
    progress.setLevel(logging.NOTSET)
    yield
    progress.propagate = saved[0]
    progress.setLevel(saved[1])


@pytest.mark.usefixtures("progress_logger_as_the_library_leaves_it")
def test_a_workers_records_and_warnings_are_shown_here(caplog):
    with JobPool(2) as pool:
        job = pool.submit(talkative, 7)
        # wait until the worker has it, so that result() replays rather than runs it here
        wait_until(lambda: job._future.running() or job._future.done(),
                   "the job has started")
        with caplog.at_level(logging.INFO, logger="bayesbias"), \
                pytest.warns(UserWarning, match="job warning 7"):
            assert job.result() == 7
    msgs = [(r.name, r.getMessage()) for r in caplog.records]
    assert ("bayesbias.progress", "job progress 7") in msgs
    assert not any("debug record" in m for _, m in msgs)  # this process's level decides


def test_leaving_on_an_error_stops_the_workers_at_once():
    pool = JobPool(2)
    with pytest.raises(KeyboardInterrupt), pool:
        job = pool.submit(wait_then_pid, 30)
        wait_until(job._future.running, "the job is running")
        procs = list(pool._pool._processes.values())
        raise KeyboardInterrupt
    wait_until(lambda: not any(p.is_alive() for p in procs), "every worker has stopped",
               timeout=5, every=0.02)
    assert threading.active_count() < 10  # nothing left spinning


def test_jobs_not_started_are_cancelled_on_close():
    pool = JobPool(2)
    jobs = [pool.submit(wait_then_pid, 0.2) for _ in range(4)]
    pool.close()
    # whatever the worker did not start runs here when asked for: no job is lost
    assert all(isinstance(j.result(), int) for j in jobs)


def test_a_worker_that_dies_costs_time_not_results():
    import signal

    with JobPool(2) as pool:
        first = pool.submit(wait_then_pid, 1.5)
        wait_until(first._future.running, "the first job is running")
        for proc in pool._pool._processes.values():
            os.kill(proc.pid, signal.SIGKILL)
        later = [pool.submit(seeded_draws, s, 10) for s in range(3)]
        assert first.result() == os.getpid()  # run again here
        for seed, job in enumerate(later):
            np.testing.assert_array_equal(job.result()[1], seeded_draws(seed, 10)[1])


def test_leaving_waits_for_the_executors_manager_thread():
    # Python 3.13.0's exit hook races with a manager thread still closing its pipe after
    # shutdown(wait=False): an OSError traceback on stderr after a clean report
    for stop in (False, True):
        pool = JobPool(2)
        job = pool.submit(wait_then_pid, 0.05)
        executor = pool._pool
        manager = executor._executor_manager_thread
        if not stop:
            job.result()
        pool.close(stop=stop)
        assert manager is not None and not manager.is_alive()
        assert executor._executor_manager_thread is None


def slow_with_progress(seconds: float) -> int:
    logging.getLogger("bayesbias.progress").info("step 1 of 2 done")
    time.sleep(seconds)
    return os.getpid()


def test_waiting_for_a_workers_job_shows_what_and_how_far(caplog, monkeypatch):
    import bayesbias.parallel as par

    monkeypatch.setattr(par, "WAIT_REPORT_S", 0.3)
    monkeypatch.setattr("bayesbias.progress.EVERY_SECONDS", 0.3)
    with caplog.at_level(logging.INFO, logger="bayesbias.progress"):
        with JobPool(2) as pool:
            job = pool.submit(slow_with_progress, 1.5, _label="list: slow job")
            wait_until(lambda: job._future is not None and job._future.running(),
                       "the worker runs the job")
            assert job.result() != os.getpid()
    waits = [r.getMessage() for r in caplog.records if "waiting for a worker" in
             r.getMessage()]
    # a line per 0.3 s once 0.3 s have passed (load may stretch the gaps): what and how far
    assert 1 <= len(waits) <= 6, waits
    assert all(w.startswith("list: slow job: waiting for a worker (") for w in waits)
    assert waits[-1].endswith("): step 1 of 2 done")
    # the job's own record is still shown once its result is in
    assert [r.getMessage() for r in caplog.records].count("step 1 of 2 done") == 1


def test_waiting_is_silent_when_progress_is_off(caplog, monkeypatch):
    import bayesbias.parallel as par

    monkeypatch.setattr(par, "WAIT_REPORT_S", 0.1)
    with caplog.at_level(logging.WARNING, logger="bayesbias.progress"):
        with JobPool(2) as pool:
            job = pool.submit(slow_with_progress, 0.6, _label="list: slow job")
            job.result()
    assert not [r for r in caplog.records if "waiting" in r.getMessage()]
