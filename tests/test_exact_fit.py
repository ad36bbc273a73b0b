"""The paper's model from its exact posterior (``exact_fit``) against NUTS on shipped lists."""

import warnings

import numpy as np
import pytest

from bayesbias.errors import InvalidArgumentError, ModelSpecError
from bayesbias.inputs.distances import distance_table
from bayesbias.inputs.embeddings import load_embedding
from bayesbias.inputs.wordlists import load_wordlist
from bayesbias.models import fit_model
from bayesbias.studies.exact_posterior import exact_fit
from bayesbias.verdicts import VERDICT_CONTRASTS, verdict_from_fit

LABELS = [f"{a} - {b}" for a, b in VERDICT_CONTRASTS]


@pytest.fixture(scope="module")
def race():
    return distance_table(load_embedding("default"), load_wordlist("race"))


def test_exact_fit_gives_the_verdict_nuts_gives(race):
    """Same code and interval ends as NUTS, both read by the Rao-Blackwellised mixture.

    Every end within 5 combined Monte Carlo errors, plus 3e-4 for the quadrature grid.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nuts = verdict_from_fit(fit_model(race, "hierarchical", seed=3, checked=False), "race")
    exact = verdict_from_fit(exact_fit(race, "hierarchical", seed=3), "race")
    assert exact.code == nuts.code
    for lab in LABELS:
        a, b = exact[lab], nuts[lab]
        for end in ("lower", "upper"):
            m = np.hypot(getattr(a, f"mcse_{end}"), getattr(b, f"mcse_{end}"))
            assert np.isfinite(m) and m < 2e-3
            assert abs(getattr(a, end) - getattr(b, end)) <= 5 * m + 3e-4, (lab, end)


def test_exact_fit_is_shaped_like_a_sampled_fit_and_reproducible(race):
    fit = exact_fit(race, "hierarchical", draws=250, chains=2, seed=7)
    post = fit.posterior
    assert dict(post["mu"].sizes) == {"chain": 2, "draw": 250, "protected_word": 10,
                                      "connection": 4}
    assert post["tau"].dims == ("chain", "draw", "connection")
    again = exact_fit(race, "hierarchical", draws=250, chains=2, seed=7).posterior
    np.testing.assert_array_equal(post["mu_bar"].values, again["mu_bar"].values)
    other = exact_fit(race, "hierarchical", draws=250, chains=2, seed=8).posterior
    assert not np.array_equal(post["mu_bar"].values, other["mu_bar"].values)


def test_exact_fit_needs_the_exact_form(race):
    with pytest.raises(ModelSpecError, match="exact marginal"):
        exact_fit(race, "crossed")


def test_exact_fit_refuses_word_draws_it_could_not_keep(race, monkeypatch):
    """Above WORD_DRAWS_BYTES a typed error: the report's paper model then samples."""
    import bayesbias.models.word_summaries as ws

    monkeypatch.setattr(ws, "WORD_DRAWS_BYTES", 8 * 4 * 1000 * 40 - 1)
    with pytest.raises(InvalidArgumentError, match="would take"):
        exact_fit(race, "hierarchical")
    exact_fit(race, "hierarchical", draws=999)
