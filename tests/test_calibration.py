"""Simulation-based calibration (SBC)."""

import numpy as np
import pytest

from bayesbias.errors import InvalidArgumentError, ModelSpecError
from bayesbias.studies.calibration import sbc

SMALL = dict(method="exact", reps=10, chunk_size=5, n_keep=49, seed=1)


@pytest.fixture(scope="module")
def exact():
    """Run a small exact SBC (10 replications in two chunks)."""
    return sbc("hierarchical", **SMALL)


def test_sbc_exact_runs_and_reports(exact):
    r = exact
    assert r.ranks.shape == (10, 16)
    assert int(r.ranks.max()) <= 49 and int(r.ranks.min()) >= 0
    u = r.uniformity()
    assert set(u["quantity"]) >= {"contrast[associated - human]", "tau[none]"}
    assert "SBC of 'hierarchical'" in str(r)
    again = sbc("hierarchical", **SMALL)
    np.testing.assert_array_equal(r.ranks.values, again.ranks.values)


def test_sbc_validates():
    with pytest.raises(ModelSpecError):
        sbc("additive", method="exact", reps=2)
    with pytest.raises(InvalidArgumentError, match="shape"):
        sbc("hierarchical", method="exact", reps=2, shape="huge")


def test_uniformity_test_detects_miscalibration(exact):
    import copy

    import xarray as xr

    r = copy.copy(exact)  # the fixture's ranks stay as they are
    r.ranks = xr.DataArray(np.zeros((100, exact.ranks.sizes["quantity"])),  # all 0: too narrow
                           dims=("replication", "quantity"),
                           coords={"quantity": exact.ranks.quantity.values})
    assert r.uniformity().attrs["bonferroni_p"] < 1e-6


def test_few_replications_get_fewer_bins_a_warning_and_a_y_axis(exact):
    # 10 replications cannot fill 20 bins (the chi-square wants about 5 per bin)
    assert exact.uniformity().attrs["bins"] == 2
    with pytest.warns(UserWarning, match="only 10 replications"):
        fig = exact.plot()
    assert fig.axes[0].get_ylabel() == "replications" and len(fig.axes[0].get_yticks())
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_plot_draws_on_the_callers_axes(exact):
    from matplotlib.figure import Figure

    n = exact.ranks.sizes["quantity"]
    fig = Figure()
    axes = fig.subplots(1, n + 1)
    with pytest.warns(UserWarning, match="only 10 replications"):
        out = exact.plot(ax=axes)
    assert out is fig  # nothing new was made
    for a, q in zip(axes, exact.ranks.quantity.values, strict=False):
        assert a.patches and str(q) in a.get_title()
    assert not axes[-1].patches and axes[-1].axison  # the spare axes are left alone
    with pytest.raises(InvalidArgumentError, match=f"{n} axes needed"):
        exact.plot(ax=axes[:2])


@pytest.mark.slow
def test_sbc_exact_marginal_is_calibrated():
    """500 replications of the exact marginal posterior: uniform ranks.

    16 quantities, 20 bins each; the Bonferroni-adjusted smallest p must exceed 0.001 (a
    correct posterior fails this about 0.1% of the time; a posterior 20% too narrow or a
    bias of 0.2 posterior sd fails it reliably at 500 replications).
    """
    r = sbc("hierarchical", method="exact", reps=500, chunk_size=50, seed=2018)
    assert r.uniformity().attrs["bonferroni_p"] > 1e-3


def test_uniform_ranks_pass_when_bins_hold_unequal_numbers_of_ranks(exact):
    """Each bin's expected count is its own share of the possible ranks.

    20 bins over ranks 0..49 hold 3 or 2 possible ranks each; the test once assumed the other
    bin's share, so exactly uniform ranks failed the Bonferroni 1e-3 check 4 times in 5 and
    the NUTS SBC of the hierarchical model looked miscalibrated.
    """
    import copy

    import xarray as xr

    from bayesbias.studies.calibration import rank_edges

    edges = rank_edges(20, 49)
    assert edges[0] == 0 and edges[-1] == 50 and np.all(edges == np.round(edges))
    assert set(np.diff(edges)) == {2, 3}
    every = np.repeat(np.arange(50), 2)  # each possible rank exactly twice: 100 replications
    fake = copy.copy(exact)
    fake.n_keep = 49
    fake.ranks = xr.DataArray(np.column_stack([every, every[::-1]]),
                              dims=("replication", "quantity"), coords={"quantity": ["a", "b"]})
    u = fake.uniformity()
    assert u.attrs["bins"] == 20
    np.testing.assert_allclose(u["chi2"], 0.0, atol=1e-12)
    # random uniform ranks fail the test's own threshold at about its nominal rate
    rng = np.random.default_rng(0)
    fails = 0
    for _ in range(200):
        fake.ranks = xr.DataArray(rng.integers(0, 50, (100, 16)), dims=("replication", "quantity"),
                                  coords={"quantity": [f"q{i}" for i in range(16)]})
        fails += fake.uniformity().attrs["bonferroni_p"] < 1e-3
    assert fails <= 4


def test_twenty_replications_cannot_fail_a_half_width_posterior(exact):
    """Why the NUTS check below runs 100 replications, not 20.

    The ranks of a truth among 49 draws of a posterior half as wide as the right one,
    put through the same Bonferroni chi-square (16 quantities, 1e-3): at 20 replications
    (4 bins) the test almost never fails; at 100 (20 bins) it always does.
    """
    import copy

    import xarray as xr

    rng = np.random.default_rng(3)
    L = 49

    def fails(reps: int) -> bool:
        theta = rng.normal(size=reps)
        ranks = (rng.normal(scale=0.5, size=(reps, L)) < theta[:, None]).sum(1)
        fake = copy.copy(exact)  # the fixture's ranks stay as they are
        fake.ranks = xr.DataArray(
            np.column_stack([ranks] + [rng.integers(0, L + 1, reps) for _ in range(15)]),
            dims=("replication", "quantity"), coords={"quantity": [f"q{i}" for i in range(16)]})
        return fake.uniformity().attrs["bonferroni_p"] < 1e-3

    assert sum(fails(20) for _ in range(50)) <= 5
    assert sum(fails(100) for _ in range(50)) >= 45


@pytest.mark.slow
@pytest.mark.parametrize("model", ["hierarchical", "separate"])
def test_sbc_nuts_is_calibrated(model):
    """NUTS fits on small tables, 100 replications: uniform ranks.

    Power of this check (simulated ranks as in the test above, 300 runs each; one quantity
    miscalibrated among 16): a posterior half as wide as the right one fails it 299 times,
    one 0.7 as wide 83 times (28%); exactly uniform ranks fail it in 6 of 2,000 runs. At
    the 20 replications this test had before it failed none of them (< 1%). About 100 s
    for the hierarchical spec on 2 busy cores (the cell-marginal nutpie sampler).
    """
    r = sbc(model, reps=100, shape="small", chunk_size=10, draws=200, tune=300, chains=1,
            n_keep=49, seed=7)
    assert r.uniformity().attrs["bonferroni_p"] > 1e-3
