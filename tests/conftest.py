"""Shared fixtures: one small real fit per session; how pytest-xdist spreads the tests.

The default sampler compiles nothing per table (a cached C kernel, loaded once per
process); model tests that need the PyMC/PyTensor path build one small model each.
"""

import os
import warnings

import pytest

# One OpenMP and one OpenBLAS thread per pytest-xdist worker (a user's setting wins): two
# workers on two cores already fill the machine, and each worker's extra threads spun on
# every small tensor or matrix operation (torch's libgomp: tests/test_encoders.py 15.5 ->
# 11.9 CPU-s, its CLI test 4.0 -> 1.5 s; OpenBLAS: the embedding-level, word-summary and
# WEAT modules 31.7 -> 29.5 CPU-s). Set before any test module imports numpy or torch;
# subprocesses inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

#: Test modules that import torch and sentence-transformers (about 5 CPU-s per process): one
#: work unit of the default run, so that one worker pays for that import, not both.
TORCH_MODULES = {"test_encoders.py", "test_encoders_light.py", "test_encoders_real.py",
                 "test_hostile_encoders.py"}
#: The default run's longest work units (seconds in a full run's ``--durations=0`` on the
#: shared machine: 38, 32, 21, 16, 14, 13, 12), handed out first, longest first: a long
#: module started last would keep one worker busy while the other idles (xdist orders the
#: rest by their number of tests). Replayed on those durations, the two workers' sums differ
#: by 4 s instead of 14.
LONGEST_FIRST = ("test_models_embedding_level.py", "torch modules", "test_word_summaries.py",
                 "test_xarray_lazy.py", "test_models_cli.py", "test_notebook_api.py",
                 "test_models_fit.py")


def pytest_xdist_make_scheduler(config, log):
    """Spread single tests over the workers when slow tests are selected (``-m slow``).

    The default run keeps pyproject's ``--dist loadscope`` (a module's tests on one worker,
    its module fixtures built once), with the modules of :data:`TORCH_MODULES` as one unit,
    and the units of :data:`LONGEST_FIRST` handed out first.
    The slow run is a few dozen independent long tests (README lines, notebooks, coverage
    studies), 2-4 minutes each, that would otherwise queue behind one another on one worker:
    work stealing balances them.
    """
    if config.getoption("dist", None) != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling, WorkStealingScheduling

    if config.getoption("markexpr", "") != "not slow":
        return WorkStealingScheduling(config, log)

    class TorchModulesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.split("::", 1)[0].rsplit("/", 1)[-1] in TORCH_MODULES:
                return "torch modules"
            return super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            for name in reversed(LONGEST_FIRST):
                for scope in [s for s in self.workqueue if s.rsplit("/", 1)[-1] == name]:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return TorchModulesTogether(config, log)


@pytest.fixture(scope="module")
def glove():
    """Load the shipped GloVe subset (``load_embedding("default")``) once per module."""
    from bayesbias.embeddings import load_embedding

    return load_embedding("default")


@pytest.fixture(scope="session")
def religion_fit():
    """Hierarchical fit of the published religion / Reddit table (short chains)."""
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains may miss the strict ESS targets
        return fit_model(published_table("religion", "reddit"), "hierarchical", draws=300, tune=300,
                         chains=2, seed=11)


@pytest.fixture(scope="module")
def quick_verdicts():
    """Keep the first fit of :func:`~bayesbias.verdicts.fit_for_verdict` (no refits).

    An undecided verdict makes ``fit_for_verdict`` refit with 4, 16 and 20 times the draws
    (up to ``MAX_VERDICT_DRAWS``); with the short chains of plumbing tests (report, fit CLI)
    that is nearly always, and those refits were most of these tests' time. Their loop is
    checked on its own in ``test_models_fit.py``. In-process runs only (not subprocesses).
    """
    from bayesbias.verdicts import fit_for_verdict

    saved = fit_for_verdict.__kwdefaults__["max_draws"]
    fit_for_verdict.__kwdefaults__["max_draws"] = 0
    yield
    fit_for_verdict.__kwdefaults__["max_draws"] = saved
