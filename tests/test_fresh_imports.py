"""What a fresh interpreter imports: one subprocess reports every fact, one test per fact.

Each step below used to run in a process of its own (tests/test_light_stats.py,
tests/test_models_sampling.py, tests/test_xarray_lazy.py); one process pays Python's and
the package's imports once. The steps run in this order, each fact read right after its
step: a module absent after every step was imported by none of them, so no check is weaker
than in a process of its own (the report modules' check comes first, before any fit).
"""

import json
import subprocess
import sys

import pytest

_STEPS = """
import json, sys, warnings
import numpy as np
facts = {}

# 1. the report modules and the light statistics (no fit yet)
import bayesbias.report.sections, bayesbias.comparators.metrics
from bayesbias.intervals import normal_quantile, posterior_interval
from bayesbias.comparators.ect import ect
from bayesbias.models._rank_diagnostics import rank_diagnostics
from bayesbias.verdicts import interval_end_mcse
rng = np.random.default_rng(0)
d = rng.normal(size=(3, 4, 100))
rank_diagnostics(d, 0.94); normal_quantile(0.95); posterior_interval(d[0], 0.9)
interval_end_mcse(d[0], (-1.0, 1.0)); ect(d[0], d[1], d[2])
facts["light"] = sorted(m for m in ("scipy.stats", "arviz_stats") if m in sys.modules)

# 2. the report's robustness refits (exact posterior, crossed plug-in): the priors' closed
# forms (no fit yet: simulate_table below imports scipy.stats)
from bayesbias.datasets import published_table
from bayesbias.report.sections import ROBUSTNESS_DRAWS
from bayesbias.studies.sensitivity import sensitivity
sensitivity(published_table("race", "reddit"), "crossed", n_resamples=20,
            n_draws=ROBUSTNESS_DRAWS, estimator="mixture", screen=True)
facts["robustness"] = "scipy.stats" in sys.modules

# 3. a default fit: nutpie's compiled core, not the nutpie package
warnings.simplefilter("ignore")
from bayesbias.models import fit_model, _native
from bayesbias.testing import simulate_table
t, _ = simulate_table(seed=1, words_per_class=2, n_human=4, n_none=6)
f = fit_model(t, "hierarchical", draws=50, tune=50, chains=1)
facts["sampler"] = [int(f.idata.attrs["marginal"]), _native.library() is not None,
                    "nutpie" in sys.modules]

# 4. a fit and its file: neither dask nor sparse
from bayesbias.datasets import published_table
from bayesbias.models import load_fit
fit = fit_model(published_table("race", "reddit"), draws=200, tune=200, seed=1)
fit.contrasts(); fit.diagnostics(); fit.save(sys.argv[1])
load_fit(sys.argv[1]).contrasts()
facts["xarray"] = ["dask" in sys.modules, "dask.array" in sys.modules, "sparse" in sys.modules]

print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    """Run every step in one fresh interpreter; return its facts (its stderr on failure)."""
    path = tmp_path_factory.mktemp("fresh") / "f.nc"
    out = subprocess.run([sys.executable, "-c", _STEPS, str(path)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_report_modules_do_not_import_scipy_stats_or_arviz_stats(facts):
    """Moved from tests/test_light_stats.py."""
    assert facts["light"] == []


def test_the_robustness_refits_do_not_import_scipy_stats(facts):
    """The exact posterior's prior densities and quantiles are closed forms (0.7 s saved)."""
    assert facts["robustness"] is False


def test_the_default_sampler_skips_nutpies_wrapper(facts):
    """A default fit drives nutpie's compiled core: the ``nutpie`` package is not imported.

    Moved from tests/test_models_sampling.py.
    """
    marginal, native, nutpie = facts["sampler"]
    if not native:
        pytest.skip("no working C compiler")
    assert [marginal, native, nutpie] == [1, True, False]


def test_a_fit_and_its_file_import_neither_dask_nor_sparse(facts):
    """Moved from tests/test_xarray_lazy.py."""
    assert facts["xarray"] == [False, False, False]
