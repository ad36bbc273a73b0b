"""bayesbias._stats gives scipy.stats' and arviz_stats' numbers (exactly or to 1e-12)."""

import numpy as np
import pytest
import xarray as xr

from bayesbias import _stats as light


@pytest.fixture(scope="module")
def draws(religion_fit):
    """Real posterior draws: every scalar parameter of a fit, shape (param, chain, draw)."""
    post = religion_fit.idata.posterior
    blocks = []
    for da in post.data_vars.values():
        da = da.transpose("chain", "draw", ...)
        v = da.values.reshape(da.sizes["chain"], da.sizes["draw"], -1)
        blocks.append(np.moveaxis(v, 2, 0))
    return np.concatenate(blocks).astype(float)


def test_rankdata_equals_scipy_with_ties_and_nan():
    from scipy import stats

    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(7, 50)), 1)  # many ties
    x[2, 5] = np.nan
    for axis in (0, 1, -1):
        assert np.array_equal(light.rankdata(x, axis=axis), stats.rankdata(x, axis=axis),
                              equal_nan=True)
    ints = rng.integers(0, 4, size=(3, 9))
    assert np.array_equal(light.rankdata(ints), stats.rankdata(ints, axis=-1))
    assert light.rankdata(np.empty((2, 0))).shape == (2, 0)
    # ties at a row's ends, a row's last value tied with the next row's first, a row all
    # tied, one column (tied_ranks finds the runs of ties from the tied positions alone)
    edge = np.array([[1.0, 1, 2, 2], [2, 2, 3, 3], [5, 5, 5, 5], [0, 1, 2, 3], [3, 3, 3, 4]])
    assert np.array_equal(light.rankdata(edge), stats.rankdata(edge, axis=-1))
    assert np.array_equal(light.rankdata(np.ones((3, 1))), np.ones((3, 1)))


def test_normal_ppf_and_fft_length_equal_scipy():
    import scipy.fft
    from scipy import stats

    q = np.linspace(1e-12, 1 - 1e-12, 2001)
    assert np.array_equal(light.normal_ppf(q), stats.norm.ppf(q))
    assert [light.next_fast_len(t) for t in range(1, 3000)] == \
        [scipy.fft.next_fast_len(t) for t in range(1, 3000)]


def test_intervals_equal_arviz_on_real_draws(draws):
    from arviz_stats.base import array_stats

    flat = draws.reshape(len(draws), -1)
    for prob in (0.5, 0.89, 0.95, 0.999, 1.0):
        assert np.array_equal(light.hdi(flat, prob), array_stats.hdi(flat, prob, axis=-1))
        assert np.array_equal(light.eti(flat, prob), array_stats.eti(flat, prob, axis=-1))
    bimodal = np.concatenate([flat[0], flat[0] + 10 * flat[0].std()])  # one interval, no modes
    assert np.array_equal(light.hdi(bimodal, 0.95), array_stats.hdi(bimodal, 0.95))
    with pytest.raises(ValueError, match="prob"):
        light.hdi(flat, 0.0)


def test_bfmi_and_quantile_mcse_equal_arviz(religion_fit, draws):
    from arviz_stats.base import array_stats

    energy = religion_fit.idata.sample_stats["energy"].transpose("chain", "draw").values
    np.testing.assert_allclose(light.bfmi(energy),
                               array_stats.bfmi(energy, chain_axis=-2, draw_axis=-1),
                               rtol=1e-12, atol=0)
    for d in draws[:6]:
        for p in (0.025, 0.3, 0.5, 0.975):
            ref = array_stats.mcse(d, chain_axis=0, draw_axis=1, method="quantile", prob=p)
            assert light.mcse_quantile(d, p) == pytest.approx(float(ref), rel=1e-12, abs=1e-15)
    assert np.isnan(light.mcse_quantile(draws[0][:, :3], 0.5))


def test_summaries_interval_identical_to_arviz(religion_fit):
    import arviz_stats as az

    from bayesbias.models.summaries import interval

    for name, da in religion_fit.idata.posterior.data_vars.items():
        for kind, fn in (("hdi", az.hdi), ("eti", az.eti)):
            ref = fn(da, prob=0.9, dim=["chain", "draw"])
            ref.attrs.update(ci_prob=0.9, ci_kind=kind)
            got = interval(da, 0.9, kind)
            xr.testing.assert_identical(got, ref)
            assert got["ci_bound"].attrs == ref["ci_bound"].attrs, name
