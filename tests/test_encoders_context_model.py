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


def test_a_context_fit_is_a_fit_without_a_pointwise_likelihood():
    """Fitted through fit_model into the shared Fit: verdict, tables, checks; no LOO."""
    import warnings

    from bayesbias.verdicts import verdict_from_fit

    table, _ = _simulate(n_words=4, n_ctx=3, n_attr=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(_with_class(table), "context", draws=100, tune=100, chains=2, seed=1)
    assert fit.idata.attrs["target_accept"] == 0.9  # the family's default
    assert fit.idata.attrs["marginal"] == 0
    assert set(fit.parameters()["parameter"].str.split("[").str[0]) == {
        "mu_bar", "tau_word", "tau_context", "sigma", "context_share"}
    share = fit.posterior["context_share"]
    tk, tw = fit.posterior["tau_context"], fit.posterior["tau_word"]
    assert np.allclose(share, tk**2 / (tk**2 + tw**2))
    assert verdict_from_fit(fit).code
    d = fit.to_dict()
    assert d["family"] == "context" and "prob_below_zero" in d["contrasts"][0]
    assert {c.code for c in fit.checks} >= {"ppc_coverage", "attribute_dependence"}
    # the predictive check's row sd integrates the context out
    sd = np.sqrt(fit.posterior["sigma"] ** 2 + tk**2).transpose("chain", "draw", ...).values
    assert np.allclose(fit._cell_sigma(), sd)
    with pytest.raises(ModelSpecError, match="no log-likelihood per row"):
        fit.loo()


@pytest.mark.slow
def test_recovers_word_and_context_spreads():
    table, mu_bar = _simulate(n_words=15, n_ctx=12)
    fit = fit_model(_with_class(table), "context", draws=500, tune=500, chains=4, seed=3)
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


#: Draws of the context model before it joined the families (bayesbias.models.context.
#: fit_context_model at commit bef0b98), on the table of a real encoder run: the packaged
#: all-MiniLM-L6-v2 on the madlibs corpus, word list madlibs_identity, 3 contexts per word,
#: 3 context draws, seed 11 (1815 rows); then draws=300, tune=300, chains=2, seed=11.
#: Rows: chain 0 draw 0, chain 0 draw 299, chain 1 draw 150; columns: mu_bar, then
#: tau_context (connections in CONNECTIONS order). On this machine the whole posterior
#: (six variables) was np.array_equal before and after; rtol 1e-12 allows last-bit noise only.
BEFORE = np.array([
    [8.7248785835047959e-01, 8.8666551261793858e-01, 9.5944406129179272e-01,
     9.7361608196645344e-01, 6.2584243321713473e-04, 7.2162250249659960e-03,
     2.4350762986089809e-03, 4.8378692610005535e-03],
    [8.9350975233944208e-01, 9.0459357233987980e-01, 9.5186566631640579e-01,
     9.6780484715257087e-01, 1.3787624691835950e-02, 1.3328470121689421e-03,
     7.7621030731278825e-03, 4.7883516798858175e-03],
    [8.9546995747881453e-01, 8.9639248889134526e-01, 9.5048803494240619e-01,
     9.6844463905377132e-01, 2.5312620397288182e-03, 2.6252937246477008e-04,
     6.1782883485124495e-03, 7.6593639158513744e-05]])


@pytest.mark.slow
def test_same_seed_same_draws_as_before_the_move(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    try:
        import all_minilm_l6_v2  # noqa: F401  the packaged model
    except ImportError:
        pytest.skip("the packaged all-MiniLM-L6-v2 is not installed")
    import warnings

    from bayesbias.encoders import EncoderSource
    from bayesbias.encoders.contexts import context_distance_table

    monkeypatch.setenv("BAYESBIAS_CACHE", str(tmp_path / "cache"))
    src = EncoderSource("all-MiniLM-L6-v2", how="contexts", corpus="madlibs", contexts=3,
                        seed=11)
    table, _ = context_distance_table(src, "madlibs_identity", n_draws=3)
    assert len(table) == 1815
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_model(table, "context", draws=300, tune=300, chains=2, seed=11)
    post = fit.posterior
    got = []
    for chain, draw in ((0, 0), (0, 299), (1, 150)):
        got.append(np.concatenate([post[v].isel(chain=chain, draw=draw).values
                                   for v in ("mu_bar", "tau_context")]))
    np.testing.assert_allclose(np.array(got), BEFORE, rtol=1e-12, atol=0)
