"""Shared fixtures: one small real fit per session (PyTensor compilation is the slow part)."""

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
