"""The context family: exact cell likelihood, cells, same draws as before, recovery.

The same draws as before it joined the families (a real encoder run); recovery of known
spreads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesbias.config import CONNECTIONS
from bayesbias.errors import DistanceTableError, ModelSpecError
from bayesbias.models import fit_model, load_spec
from bayesbias.models.context import cell_loglik, cells, context_cells


def test_cell_likelihood_is_the_multivariate_normal_with_the_context_integrated_out():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7):
        x = rng.normal(0.8, 0.1, size=n)
        mu, tau, sigma = 0.75, 0.04, 0.09
        cov = sigma**2 * np.eye(n) + tau**2 * np.ones((n, n))
        want = stats.multivariate_normal(np.full(n, mu), cov).logpdf(x)
        got = cell_loglik(n, x.mean(), ((x - x.mean()) ** 2).sum(), mu, tau, sigma)
        assert got == pytest.approx(want, abs=1e-10)


def _simulate(seed=1, n_words=12, n_ctx=10, n_attr=6, tau_word=0.06, tau_ctx=0.03,
              sigma=0.08):
    rng = np.random.default_rng(seed)
    mu_bar = dict(zip(CONNECTIONS, (0.70, 0.74, 0.76, 0.85), strict=True))
    rows = []
    for w in range(n_words):
        for c in CONNECTIONS:
            mu = mu_bar[c] + tau_word * rng.normal()
            for k in range(n_ctx):
                u = tau_ctx * rng.normal()
                for a in range(n_attr):
                    rows.append((f"w{w}", c, k, f"{c}{a}", mu + u + sigma * rng.normal()))
    return pd.DataFrame(rows, columns=["protected_word", "connection", "context", "attribute",
                                       "cosine_distance"]), mu_bar


def test_cells_are_sufficient_statistics():
    table, _ = _simulate(n_words=2, n_ctx=3, n_attr=4)
    cells = context_cells(table)
    assert len(cells) == 2 * 4 * 3 and (cells["n"] == 4).all()
    one = table[(table.protected_word == "w1") & (table.connection == "human")
                & (table.context == 2)]["cosine_distance"]
    row = cells[(cells.w == "w1") & (cells.c == "human") & (cells.k == "2")].iloc[0]
    assert row["mean"] == pytest.approx(one.mean())
    assert row["ss"] == pytest.approx(((one - one.mean()) ** 2).sum())
    with pytest.raises(DistanceTableError, match="context"):
        context_cells(table.drop(columns="context"))


def test_spec_is_a_family_spec(tmp_path):
    spec = load_spec("context")
    assert spec.family == "context"
    assert set(spec.priors) == {"mu_bar", "tau_word", "tau_context", "sigma"}
    assert "tau_context[c] ~ Exponential(lam=2)" in spec.card()
    bad = tmp_path / "bad.toml"
    bad.write_text('family = "context"\n[priors]\nmu_bar = { dist = "Normal", mu = 1.0, '
                   'sigma = 0.3 }\n')
    with pytest.raises(ModelSpecError, match="missing: tau_word, tau_context, sigma"):
        load_spec(bad)
    with pytest.raises(ModelSpecError, match="word-level cells only"):
        load_spec("context", level="class")
    with pytest.raises(ModelSpecError, match="one residual sd per connection"):
        load_spec("context", residual_sd="single")


def test_simulated_tables_are_refused_with_the_reason():
    from bayesbias.testing import simulate_table

    with pytest.raises(ModelSpecError, match="no context draws"):
        simulate_table("context")


def test_the_old_names_are_deprecated_aliases():
    from bayesbias.models import context

    with pytest.warns(DeprecationWarning, match="load_spec"):
        assert context.load_context_spec().hash == load_spec("context").hash


def _with_class(table):
    t = table.copy()
    t.insert(1, "protected_class", np.where(t["protected_word"].str[1:].astype(int) % 2,
                                            "odd", "even"))
    return t


def test_cell_layout_sorts_the_words_and_keeps_the_context_cells():
    table, _ = _simulate(n_words=12, n_ctx=3, n_attr=4)
    table = _with_class(table).iloc[::-1].reset_index(drop=True)  # words in reverse order
    c = cells(table)
    assert c.units.tolist() == sorted(f"w{i}" for i in range(12))
    # rows still point at their own word after the reordering
    assert (c.units[c.unit_idx] == table["protected_word"].to_numpy()).all()
    assert c.n.sum() == len(table) and (c.n == 3 * 4).all()
    sub = c.sub_cells
    assert sub["n"].sum() == len(table) and sub["contexts"] == 3
    assert (c.units[sub["unit"]] == context_cells(table)["w"].to_numpy()).all()
    with pytest.raises(DistanceTableError, match="context"):
        cells(table.drop(columns="context"))


def test_a_context_table_reads_back(tmp_path):
    """A table written by `contexts` reads back whole: a pair repeats once per context."""
    from bayesbias.datasets import read_table

    table, _ = _simulate(n_words=2, n_ctx=3, n_attr=2)
    table = _with_class(table)
    table.insert(3, "attribute_class", table["connection"].map(
        {"associated": "even", "different": "odd", "human": "human", "none": "none"}))
    table.loc[table["protected_word"] == "w1", "attribute_class"] = table["connection"].map(
        {"associated": "odd", "different": "even", "human": "human", "none": "none"})
    table["cosine_similarity"] = 1 - table["cosine_distance"]
    table.to_csv(tmp_path / "ctx.csv", index=False)
    back = read_table(str(tmp_path / "ctx.csv"))
    assert len(back) == len(table) and "context" in back.columns
    assert cells(back).sub_cells["contexts"] == 3


def _posterior_fit(table, seed=0):
    """Return a Fit of the context family with made-up draws near the simulation's values."""
    import xarray as xr

    from bayesbias.models import Fit

    c = cells(table)
    rng = np.random.default_rng(seed)
    shape = (2, 200)

    def draws(loc, scale, extra=(4,)):
        return np.abs(rng.normal(loc, scale, shape + extra))

    post = xr.Dataset(
        {"mu_bar": (("chain", "draw", "connection"), draws([0.70, 0.74, 0.76, 0.85], 0.01)),
         "tau_word": (("chain", "draw", "connection"), draws(0.06, 0.005)),
         "tau_context": (("chain", "draw", "connection"), draws(0.03, 0.005)),
         "sigma": (("chain", "draw", "connection"), draws(0.08, 0.002)),
         "mu": (("chain", "draw", "protected_word", "connection"),
                np.nan_to_num(c.mean) + rng.normal(0, 0.005, shape + c.mean.shape))},
        coords={"connection": list(CONNECTIONS), "protected_word": c.units.tolist()})
    tk, tw = post["tau_context"], post["tau_word"]
    post["context_share"] = tk**2 / (tk**2 + tw**2)
    return Fit(xr.DataTree.from_dict({"posterior": post}), load_spec("context"), c)


def test_a_context_fit_is_a_fit_without_a_pointwise_likelihood():
    """The shared Fit reads a context fit: verdict, tables, checks; no pointwise likelihood."""
    from bayesbias.verdicts import verdict_from_fit

    table, _ = _simulate(n_words=6, n_ctx=4, n_attr=3)
    fit = _posterior_fit(_with_class(table))
    assert set(fit.parameters()["parameter"].str.split("[").str[0]) == {
        "mu_bar", "tau_word", "tau_context", "sigma", "context_share"}
    assert verdict_from_fit(fit).code == "stereotype-specific"
    d = fit.to_dict()
    assert d["family"] == "context" and "prob_below_zero" in d["contrasts"][0]
    assert {c.code for c in fit.checks} >= {"ppc_coverage", "attribute_dependence"}
    # a row's predictive sd integrates its context out: sqrt(sigma^2 + tau_context^2)
    post = fit.posterior
    sd = np.sqrt(post["sigma"] ** 2 + post["tau_context"] ** 2)
    assert np.allclose(fit._cell_sigma(), sd.transpose("chain", "draw", ...).values)
    with pytest.raises(ModelSpecError, match="no log-likelihood per row"):
        fit.loo()


def test_the_pymc_model_has_the_context_likelihood():
    """build_model of the context spec: priors, mu and the exact (w, c, k) cell likelihood."""
    from bayesbias.models.base import build_model

    table, _ = _simulate(n_words=3, n_ctx=2, n_attr=3)
    c = cells(_with_class(table))
    spec = load_spec("context")
    model = build_model(spec, c)
    assert [v.name for v in model.free_RVs] == ["mu_bar", "tau_word", "tau_context", "sigma",
                                                "mu"]  # the order of the draws before
    point = {"mu_bar": np.full(4, 0.75), "tau_word_log__": np.log(np.full(4, 0.05)),
             "tau_context_log__": np.log(np.full(4, 0.02)),
             "sigma_log__": np.log(np.full(4, 0.08)), "mu": np.full((3, 4), 0.76)}
    loglik = model.replace_rvs_by_values(model.potentials)[0]
    got = float(model.compile_fn(loglik, inputs=model.value_vars,
                                 on_unused_input="ignore")(point))
    s = c.sub_cells
    want = cell_loglik(s["n"], s["mean"], s["ss"], 0.76, 0.02, 0.08).sum()
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.slow
def test_recovers_word_and_context_spreads():
    table, mu_bar = _simulate(n_words=15, n_ctx=12)
    fit = fit_model(_with_class(table), "context", draws=500, tune=500, chains=4, seed=3)
    assert fit.idata.attrs["target_accept"] == 0.9  # the family's default
    s = fit.parameters(ci_prob=0.99).set_index("parameter")
    for c, value in mu_bar.items():
        lo, hi = s.loc[f"mu_bar[{c}]", ["lower", "upper"]]
        assert lo < value < hi, c
    for name, value in (("tau_word", 0.06), ("tau_context", 0.03), ("sigma", 0.08)):
        inside = [s.loc[f"{name}[{c}]", "lower"] < value < s.loc[f"{name}[{c}]", "upper"]
                  for c in CONNECTIONS]
        assert sum(inside) >= 3, name
    assert fit.diagnostics().to_dict()["max_rhat"] < 1.02
    assert fit.cells.n_rows == len(table) and fit.cells.sub_cells["n"].size == 15 * 4 * 12


#: Draws of the context model on the table of a real encoder run: the packaged
#: all-MiniLM-L6-v2 on the madlibs corpus, word list madlibs_identity, 3 contexts per word,
#: Mean cosine distance per connection (CONNECTIONS order) of the 3-draw, seed-11 madlibs
#: table of the packaged all-MiniLM-L6-v2 (1815 rows), measured 2026-11-28. The encodings are
#: float32 and differ in their last bits between runtimes and CPUs, so they are pinned at rtol
#: 1e-5, not bitwise. (Draws pinned bitwise against stored numbers, as this test did before,
#: failed on a fresh machine with the same code: a poorly mixed 300-draw fit turns last-bit
#: differences of the input into other draws.)
TABLE_MEANS = [0.8879475085635299, 0.8985431456648942, 0.9543022975033807, 0.9700617646031949]


@pytest.mark.slow
def test_same_seed_same_draws_on_the_encoder_table(tmp_path, monkeypatch):
    """The encoder's table matches its pinned means (rtol 1e-5); two fits of it with one seed,
    the first compiling the model and the second reusing it, give bitwise equal draws."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    try:
        import all_minilm_l6_v2  # noqa: F401  the packaged model
    except ImportError:
        pytest.skip("the packaged all-MiniLM-L6-v2 is not installed")
    import warnings

    from bayesbias.config import CONNECTIONS
    from bayesbias.encoders import EncoderSource
    from bayesbias.encoders.contexts import context_distance_table

    monkeypatch.setenv("BAYESBIAS_CACHE", str(tmp_path / "cache"))
    src = EncoderSource("all-MiniLM-L6-v2", how="contexts", corpus="madlibs", contexts=3,
                        seed=11)
    table, _ = context_distance_table(src, "madlibs_identity", n_draws=3)
    assert len(table) == 1815
    means = table.groupby("connection", observed=True)["cosine_distance"].mean()
    np.testing.assert_allclose([means[c] for c in CONNECTIONS], TABLE_MEANS, rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [fit_model(table, "context", draws=300, tune=300, chains=2, seed=11)
                for _ in range(2)]
    for v in ("mu_bar", "tau_context"):
        np.testing.assert_array_equal(fits[0].posterior[v].values, fits[1].posterior[v].values)


def test_a_context_fit_saves_and_loads(tmp_path):
    """A saved context fit loads as the family's Fit (words in the model's sorted order)."""
    import xarray as xr

    from bayesbias.models import Fit, load_fit
    from bayesbias.models.files import _data_groups

    table, _ = _simulate(n_words=4, n_ctx=3, n_attr=3)
    fit = _posterior_fit(_with_class(table))
    constant, observed = _data_groups(fit.cells)
    tree = fit.idata.copy()
    tree["constant_data"] = xr.DataTree(constant)
    tree["observed_data"] = xr.DataTree(observed)
    tree.attrs.update(spec=fit.spec.to_json(), spec_hash=fit.spec.hash)
    fit = Fit(tree, fit.spec, fit.cells)
    back = load_fit(fit.save(tmp_path / "ctx.nc", provenance={}))
    assert back.spec.hash == fit.spec.hash and back.cells.units.tolist() == ["w0", "w1", "w2",
                                                                             "w3"]
    assert np.allclose(back.group_means()["mean"], fit.group_means()["mean"])
    assert np.allclose(back._cell_sigma(), fit._cell_sigma())  # the row sd of the family
