"""The sufficient-statistic likelihood equals the row-level one; the rotation is exact."""

import numpy as np
import pandas as pd
import pytest

from bayesbias.config import CONNECTIONS
from bayesbias.errors import DistanceTableError
from bayesbias.models import cells_from_table, load_spec
from bayesbias.models.additive import rotation
from bayesbias.models.base import build_model
from bayesbias.models.cells import normal_logp_cells, normal_logp_rows
from bayesbias.testing import simulate_table


def test_cell_statistics_match_pandas():
    table, _ = simulate_table(seed=3, words_per_class=2, n_human=7, n_none=9)
    cells = cells_from_table(table)
    grouped = table.groupby(["protected_word", "connection"], observed=True)["cosine_distance"]
    for (word, conn), rows in grouped:
        i = list(cells.units).index(word)
        j = CONNECTIONS.index(conn)
        assert cells.n[i, j] == len(rows)
        assert cells.mean[i, j] == pytest.approx(rows.mean(), abs=1e-14)
        assert cells.ss[i, j] == pytest.approx(((rows - rows.mean()) ** 2).sum(), abs=1e-12)
    assert cells.n.sum() == len(table)


def test_numpy_cell_logp_equals_row_logp():
    rng = np.random.default_rng(0)
    y = rng.normal(0.9, 0.2, 1000)
    cell = rng.integers(0, 7, 1000)
    mu, sigma = rng.normal(0.9, 0.1, 7), rng.uniform(0.1, 0.3, 7)
    n = np.bincount(cell, minlength=7)
    mean = np.bincount(cell, y, 7) / n
    ss = np.bincount(cell, (y - mean[cell]) ** 2, 7)
    rows = normal_logp_rows(y, mu[cell], sigma[cell]).sum()
    assert normal_logp_cells(mu, sigma, n, mean, ss) == pytest.approx(rows, rel=1e-12)


@pytest.mark.parametrize("model, overrides", [
    ("hierarchical", {}),
    ("hierarchical", {"residual_sd": "single", "noncentred": []}),
    ("hierarchical", {"level": "class"}),
    ("additive", {}),
    ("separate", {"residual_sd": "per_connection"}),
])
def test_sufficient_model_logp_equals_row_model_logp(model, overrides):
    """Same log-density (up to 1e-10 relative) at random points of each model variant."""
    spec = load_spec(model, **overrides)
    table, _ = simulate_table(model, seed=5, words_per_class=3, n_human=12, n_none=30,
                              **overrides)
    table = table.iloc[:-7]  # leave one cell short so cell sizes differ
    cells = cells_from_table(table, spec.level)
    suff, rows = build_model(spec, cells), build_model(spec, cells, "rows")
    # FAST_COMPILE: the Python linker, so the check costs no C compilation
    logp_s = suff.compile_logp(mode="FAST_COMPILE")
    logp_r = rows.compile_logp(mode="FAST_COMPILE")
    rng = np.random.default_rng(1)
    for _ in range(3):
        point = {k: v + rng.normal(0, 0.3, np.shape(v)) for k, v in suff.initial_point().items()}
        a, b = logp_s(point), logp_r(point)
        assert np.isfinite(a)
        assert a == pytest.approx(b, rel=1e-10, abs=1e-10)


def test_additive_rotation_is_orthogonal_and_keeps_the_prior():
    spec = load_spec("additive")
    table, _ = simulate_table("additive", seed=2, words_per_class=4, n_human=5, n_none=5)
    mu0, s, v = rotation(spec, cells_from_table(table))
    assert np.allclose(v @ v.T, np.eye(v.shape[0]), atol=1e-12)
    # theta = mu0 + s * (V w), w ~ N(0, I)  =>  cov(theta) = diag(s^2): the prior is unchanged
    cov = (s[:, None] * v) @ (s[:, None] * v).T
    assert np.allclose(cov, np.diag(s**2), atol=1e-12)
    assert mu0[0] == 1.0 and mu0[-1] == 0.0


def test_bad_tables_are_rejected_with_the_column_named():
    table, _ = simulate_table(seed=1, words_per_class=1, n_human=2, n_none=2)
    with pytest.raises(DistanceTableError, match="cosine_distance"):
        cells_from_table(table.drop(columns="cosine_distance"))
    bad = table.copy()
    bad["connection"] = bad["connection"].astype(str).replace({"none": "nothing"})
    with pytest.raises(DistanceTableError, match="nothing"):
        cells_from_table(bad)
    mixed = table.copy()
    mixed["protected_class"] = mixed["protected_class"].astype(str)
    mixed.loc[0, "protected_class"] = "class9"
    with pytest.raises(DistanceTableError, match="more than one protected class"):
        cells_from_table(mixed)
    nan = table.copy()
    nan.loc[3, "cosine_distance"] = np.nan
    with pytest.raises(DistanceTableError, match="non-finite"):
        cells_from_table(nan)
    with pytest.raises(DistanceTableError, match="no rows"):
        cells_from_table(pd.DataFrame(columns=table.columns))
