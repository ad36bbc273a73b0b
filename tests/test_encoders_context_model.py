"""The context model: exact cell likelihood, cells from a table, recovery of known spreads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesbias.config import CONNECTIONS
from bayesbias.errors import DistanceTableError, ModelSpecError
from bayesbias.models.context import (
    cell_loglik,
    context_cells,
    fit_context_model,
    load_context_spec,
)


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


def test_spec_is_checked(tmp_path):
    spec = load_context_spec()
    assert set(spec.priors) == {"mu_bar", "tau_word", "tau_context", "sigma"}
    bad = tmp_path / "bad.toml"
    bad.write_text('family = "context"\n[priors]\nmu_bar = { dist = "Normal", mu = 1.0, '
                   'sigma = 0.3 }\n')
    with pytest.raises(ModelSpecError, match="needs exactly"):
        load_context_spec(bad)


@pytest.mark.slow
def test_recovers_word_and_context_spreads():
    table, mu_bar = _simulate(n_words=15, n_ctx=12)
    fit = fit_context_model(table, draws=500, tune=500, chains=4, seed=3, ci_prob=0.99)
    s = fit.summary.set_index(["parameter", "connection"])
    for c, value in mu_bar.items():
        lo, hi = s.loc[("mu_bar", c), ["lower", "upper"]]
        assert lo < value < hi, c
    for name, value in (("tau_word", 0.06), ("tau_context", 0.03), ("sigma", 0.08)):
        inside = [s.loc[(name, c), "lower"] < value < s.loc[(name, c), "upper"]
                  for c in CONNECTIONS]
        assert sum(inside) >= 3, name
    assert fit.diagnostics["max_rhat"] < 1.02
    assert fit.n_rows == len(table) and fit.n_cells == 15 * 4 * 12


def test_context_fit_leads_with_the_verdict_block_of_fit():
    import xarray as xr

    from bayesbias.models.context import ContextFit

    rng = np.random.default_rng(0)
    means = {"associated": 0.70, "different": 0.74, "human": 0.76, "none": 0.85}
    mu = np.stack([rng.normal(m, 0.005, (2, 500)) for m in means.values()], axis=-1)
    post = xr.Dataset({"mu_bar": (("chain", "draw", "connection"), mu)},
                      coords={"connection": list(means)})
    contrasts = pd.DataFrame([{"contrast": "associated - none", "mean": -0.15, "lower": -0.16,
                               "upper": -0.14, "prob_below_zero": 1.0}])
    fit = ContextFit(pd.DataFrame({"parameter": ["mu_bar"]}), contrasts, post,
                     diagnostics={"max_rhat": 1.001, "min_ess_bulk": 900.0, "divergences": 0,
                                  "draws": 500, "chains": 2, "seed": 1})
    text = str(fit)
    assert text.startswith("verdict for : evidence of stereotype-specific association")
    assert "`associated - human` = -0.060" in text and "Rule:" in text
    assert "diagnostics: max r-hat 1.001" in text and "{" not in text
    d = fit.to_dict()
    assert d["verdict"]["code"] == "stereotype-specific"
    assert "prob_below_zero" in d["contrasts"][0]
    # a missing connection: its contrasts are "no data", not read from the prior
    fit.posterior = post.sel(connection=["associated", "different", "none"])
    assert fit.verdict()["associated - human"].status == "no data"
