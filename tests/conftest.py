"""Shared fixtures: one small real fit per session.

The default sampler compiles nothing per table (a cached numba kernel, loaded once per
process); model tests that need the PyMC/PyTensor path build one small model each.
"""

import warnings

import pytest


@pytest.fixture(scope="session")
def religion_fit():
    """Hierarchical fit of the published religion / Reddit table (short chains)."""
    from bayesbias.datasets import published_table
    from bayesbias.models import fit_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains may miss the strict ESS targets
        return fit_model(published_table("religion", "reddit"), draws=300, tune=300,
                         chains=2, seed=11)
