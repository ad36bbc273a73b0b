"""Model specs as data: loading, validation with the valid choices, hashes, model cards."""

import pytest

from bayesbias.errors import ModelSpecError
from bayesbias.models import ModelSpec, Prior, available_models, load_spec


def test_shipped_specs_load_and_print_their_priors():
    names = available_models()
    assert {"hierarchical", "additive", "separate"} <= set(names)
    for name in names:
        spec = load_spec(name)
        card = spec.card()
        assert spec.hash in card
        for prior in spec.priors.values():
            assert str(prior) in card


def test_default_is_the_published_hierarchical_model():
    spec = load_spec()
    assert spec.family == "hierarchical"
    assert str(spec.priors["mu_bar"]) == "Normal(mu=1, sigma=0.3)"
    assert str(spec.priors["tau"]) == "Exponential(lam=2)"
    assert str(spec.priors["sigma"]) == "Exponential(lam=2)"
    assert str(load_spec("additive").priors["sigma"]) == "HalfCauchy(beta=1)"


def test_hash_ignores_labels_but_not_priors():
    spec = load_spec("hierarchical")
    assert spec.replace(name="x", description="y").hash == spec.hash
    changed = spec.replace(priors={"tau": {"dist": "Exponential", "lam": 3.0}})
    assert changed.hash != spec.hash
    assert changed.priors["mu_bar"] == spec.priors["mu_bar"]
    assert load_spec("hierarchical", residual_sd="single").hash == \
        load_spec("hierarchical_single_sd").hash


def test_roundtrip_through_dict_and_toml(tmp_path):
    spec = load_spec("additive", level="class")
    assert ModelSpec.from_dict(spec.to_dict()).hash == spec.hash
    path = tmp_path / "mine.toml"
    path.write_text('family = "separate"\nresidual_sd = "per_connection"\n[priors]\n'
                    'mu = { dist = "Normal", mu = 0.9, sigma = 0.2 }\n'
                    'sigma = { dist = "HalfNormal", sigma = 0.5 }\n')
    mine = load_spec(path)
    assert mine.priors["mu"] == Prior("Normal", (("mu", 0.9), ("sigma", 0.2)))
    assert mine.residual_sd == "per_connection"


@pytest.mark.parametrize("overrides, message", [
    ({"level": "sentence"}, "level must be one of word, class"),
    ({"residual_sd": "two"}, "residual_sd must be one of per_connection, single"),
    ({"noncentred": ["bias"]}, "associated, different, human, none"),
    ({"priors": {"tau": {"dist": "Normal", "mu": 0.0, "sigma": 1.0}}}, "positive distribution"),
    ({"priors": {"tau": {"dist": "Exponential", "beta": 1.0}}}, "needs parameters lam"),
    ({"priors": {"tau": {"dist": "Weibull", "lam": 1.0}}}, "Exponential"),
    ({"priors": {"rho": {"dist": "Normal", "mu": 0.0, "sigma": 1.0}}}, "unknown: rho"),
    ({"colour": "red"}, "valid"),
])
def test_invalid_specs_name_the_valid_choices(overrides, message):
    with pytest.raises(ModelSpecError, match=message):
        load_spec("hierarchical", **overrides)


def test_unknown_model_and_additive_prior_checks():
    with pytest.raises(ModelSpecError, match="shipped models: additive"):
        load_spec("hierarchicl")
    with pytest.raises(ModelSpecError, match="Normal priors"):
        load_spec("additive", priors={"co": {"dist": "StudentT", "nu": 3.0, "mu": 0.0,
                                             "sigma": 1.0}})
    with pytest.raises(ModelSpecError, match="family must be one of"):
        ModelSpec.from_dict({"family": "linear", "priors": {}})


def test_non_finite_prior_parameters_are_refused():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ModelSpecError, match="finite"):
            load_spec("hierarchical", priors={"mu_bar": {"dist": "Normal", "mu": bad,
                                                         "sigma": 0.3}})
        with pytest.raises(ModelSpecError, match="finite"):
            load_spec("hierarchical", priors={"sigma": {"dist": "HalfNormal", "sigma": bad}})


def test_variant_specs_extend_the_base(tmp_path):
    base = load_spec("hierarchical")
    single = load_spec("hierarchical_single_sd")
    assert single.residual_sd == "single" and single.priors == base.priors
    authors = load_spec("hierarchical_authors")
    assert authors.family == "offsets" and authors.residual_sd == "single"
    assert str(authors.priors["m"]) == "Normal(mu=1, sigma=0.5)"
    assert str(authors.priors["offset"]) == "Normal(mu=0, sigma=0.2)"
    assert str(authors.priors["tau"]) == str(authors.priors["sigma"]) == "Exponential(lam=5)"
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "hierarchical"\nname = "mine"\n[priors]\n'
                    'tau = { dist = "HalfNormal", sigma = 0.2 }\n')
    spec = load_spec(mine)
    assert spec.priors["mu_bar"] == base.priors["mu_bar"]
    assert str(spec.priors["tau"]) == "HalfNormal(sigma=0.2)"
    loop = tmp_path / "loop.toml"
    loop.write_text('extends = "loop.toml"\n')
    with pytest.raises(ModelSpecError, match="extends"):
        load_spec(loop)


@pytest.mark.slow
@pytest.mark.parametrize("prior", [
    {"dist": "Normal", "mu": 1.0, "sigma": 0.3}, {"dist": "StudentT", "nu": 3, "mu": 1, "sigma": 2},
    {"dist": "Exponential", "lam": 2.0}, {"dist": "HalfNormal", "sigma": 0.5},
    {"dist": "HalfCauchy", "beta": 1.0}, {"dist": "HalfStudentT", "nu": 4, "sigma": 0.5},
    {"dist": "LogNormal", "mu": -1, "sigma": 0.5}, {"dist": "Gamma", "alpha": 2, "beta": 5}])
def test_prior_draw_has_the_distribution_of_pm_draw(prior):
    """Prior.draw (NumPy, fast) against pm.draw (PyMC's own sampler): two-sample KS test."""
    import numpy as np
    import pymc as pm
    from scipy import stats

    p = Prior.from_dict(prior)
    ours = p.draw(np.random.default_rng(0), 4000)
    theirs = pm.draw(p.dist_(), draws=4000, random_seed=1)
    assert stats.ks_2samp(ours, theirs).pvalue > 0.001


def test_every_family_implements_the_protocol_and_ships_a_spec():
    from bayesbias.models.families import FAMILIES, Family, family_module

    shipped = {load_spec(n).family for n in available_models()}
    for name in FAMILIES:
        mod = family_module(name)
        assert isinstance(mod, Family), name
        assert set(mod.SCALES) <= set(mod.PRIORS), name
        assert name in shipped, f"no shipped spec of family {name}"
        for flag in ("NONCENTRED", "EXACT_MARGINAL", "ATTRIBUTE_EFFECTS", "PM_SAMPLE",
                     "EMBEDDINGS"):
            assert isinstance(getattr(mod, flag, False), bool), (name, flag)
        assert 0 < getattr(mod, "TARGET_ACCEPT", 0.8) < 1, name
        for hook in ("validate", "model_data", "structure_key", "row_effects", "n_effects",
                     "simulate_cell_means", "simulate_row_effects", "cells", "likelihood",
                     "row_sd"):
            assert callable(getattr(mod, hook, len)), (name, hook)
        if getattr(mod, "likelihood", None) is not None:  # its own likelihood: its own sd
            assert "sigma" in mod.PRIORS and callable(getattr(mod, "row_sd", None)), name
        if getattr(mod, "EXACT_MARGINAL", False):  # what the exact posterior reads
            assert {"mu_bar", "tau", "sigma"} <= set(mod.PRIORS), name
        if getattr(mod, "ATTRIBUTE_EFFECTS", False):  # hierarchical part plus omega
            assert {"mu_bar", "tau", "sigma", "omega"} <= set(mod.PRIORS), name
            assert callable(mod.row_effects) and callable(mod.simulate_row_effects), name


def test_no_family_switches_outside_the_family_modules():
    """Code asks a family module for a flag or hook, never tests the family's name."""
    import re
    from pathlib import Path

    import bayesbias

    switch = re.compile(r"\.family\s*(==|!=|not in|in)\s*[\"'(\[]")
    found = [f"{path.name}:{i}" for path in Path(bayesbias.__file__).parent.rglob("*.py")
             for i, line in enumerate(path.read_text().splitlines(), 1) if switch.search(line)]
    assert not found, found


_NEW_FAMILY = '''
"""A test family: the hierarchical model with one between-unit sd for all connections."""
from bayesbias.models.marginal import Block

PRIORS = ("mu_bar", "tau", "sigma")
SCALES = ("tau", "sigma")
PARAMETERS = ("mu_bar", "tau", "sigma")
GROUP_MEAN = "mu_bar"


def card_lines(spec, unit, s):
    return [f"  mu[{unit}, c] ~ Normal(mu_bar[c], tau)"]


def cell_means(spec, cells):
    mu_bar = spec.priors["mu_bar"].create("mu_bar", dims="connection")
    tau = spec.priors["tau"].create("tau")
    import pymc as pm
    return pm.Normal("mu", mu_bar, tau, dims=(cells.unit_dim, "connection"))


def marginal_blocks(spec):
    return ([Block("mu_bar", spec.priors["mu_bar"], "M"),
             Block("tau", spec.priors["tau"], "T", per_connection=False),
             Block("sigma", spec.priors["sigma"], "S")], {})


def derived(values, m):
    return {}
'''


def test_a_new_family_is_one_module_and_one_spec(tmp_path, monkeypatch):
    """A family written as one module plus one spec file loads, prints and fits.

    It fits with the cell-marginal sampler, with nothing else changed.
    """
    import sys
    import warnings

    import numpy as np

    from bayesbias.models import _native, families, fit_model
    from bayesbias.testing import simulate_table

    (tmp_path / "shared_tau_family.py").write_text(_NEW_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(families.FAMILIES, "shared_tau", "shared_tau_family")
    (tmp_path / "shared_tau.toml").write_text(
        'family = "shared_tau"\n[priors]\nmu_bar = { dist = "Normal", mu = 1.0, sigma = 0.3 }\n'
        'tau = { dist = "Exponential", lam = 2.0 }\nsigma = { dist = "Exponential", lam = 2.0 }\n')
    spec = load_spec(tmp_path / "shared_tau.toml")
    assert "mu_bar[c], tau)" in spec.card()
    assert "noncentred" not in spec.to_dict()
    if _native.library() is None:
        pytest.skip("no working C compiler")
    table, _ = simulate_table(seed=2, words_per_class=3, n_human=10, n_none=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, spec, draws=200, tune=200, chains=2, seed=1)
    assert fit.idata.attrs["marginal"] == 1
    assert fit.posterior["tau"].dims == ("chain", "draw")
    assert np.isfinite(fit.group_means()["mean"]).all()
    sys.modules.pop("shared_tau_family", None)
