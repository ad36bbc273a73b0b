"""Null simulations: spec, nulls, determinism, summaries, the paper's figures.

Determinism is checked across Dask worker counts; uniform p-values under the null are slow.
"""

import json
import math

import numpy as np
import pytest

from bayesbias.cli import main
from bayesbias.comparators.null import (
    NullStudy,
    draw_similarities,
    neutral_pool,
    replication_table,
    run_grid,
    run_null_study,
    summarize,
    summary_dict,
    weat_bound,
)
from bayesbias.datasets import published_table


def test_spec_validation():
    with pytest.raises(ValueError, match="null must be one of"):
        NullStudy(null="bogus")
    with pytest.raises(ValueError, match="unknown statistic"):
        NullStudy(statistics=("weat_effect", "nope"))
    with pytest.raises(ValueError, match="targets"):
        NullStudy(targets=(0, 3))
    with pytest.raises(ValueError, match="pool"):
        NullStudy(null="resample")
    with pytest.raises(ValueError, match="callable"):
        NullStudy(extra={"x": 3})


@pytest.mark.parametrize("null", ["independent", "hierarchical"])
def test_draw_shapes_and_moments(null):
    study = NullStudy(null=null, targets=(3, 4), attributes=(5, 6), neutral=2, sd=0.08,
                      word_sd=0.1, attribute_sd=0.0)
    sim = draw_similarities(study, 4000, 1)
    assert sim.shape == (4000, 7, 13)
    expected = math.sqrt(0.08**2 + (0.1**2 if null == "hierarchical" else 0))
    assert sim.std() == pytest.approx(expected, rel=0.02)
    assert abs(sim.mean()) < 0.01
    if null == "hierarchical":  # word effects: rows share a level
        row_means = sim.mean(axis=2)
        assert row_means.std() > 0.08


def test_resample_null_uses_real_neutral_block():
    table = published_table("religion", "reddit")
    pool = neutral_pool(table)
    assert pool.shape == (15, 226)
    study = NullStudy(null="resample", targets=(4, 4), attributes=(5, 5), pool=pool, reps=300,
                      seed=2)
    sim = draw_similarities(study, 10, 0)
    assert sim.shape == (10, 8, 10)
    assert np.isin(sim, pool).all()
    # targets drawn without replacement within a replication
    assert all(len(set(map(tuple, np.round(s, 12)))) == 8 for s in sim)
    ds = run_null_study(study)
    assert np.isfinite(ds.weat_effect).all()


def test_ten_thousand_reps_of_16x16_weat_null():
    """Every replication is computed (no timing here: benchmarks/bench_weat.py --check)."""
    study = NullStudy(reps=10_000, seed=1, statistics=("weat_effect",))
    ds = run_null_study(study)
    assert ds.sizes["replication"] == 10_000
    d = ds.weat_effect.values
    assert np.isfinite(d).all() and len(np.unique(d)) > 9_000
    assert abs(np.median(d)) < 0.05  # no bias: centred on 0


def test_seeded_and_chunk_keyed():
    study = NullStudy(reps=500, seed=3, chunk_size=200, statistics=("weat_effect", "mac"))
    a, b = run_null_study(study), run_null_study(study)
    np.testing.assert_array_equal(a.weat_effect, b.weat_effect)
    c = run_null_study(NullStudy(reps=500, seed=4, chunk_size=200,
                                 statistics=("weat_effect", "mac")))
    assert not np.array_equal(a.weat_effect, c.weat_effect)
    # more replications extend the same stream: the first chunks are unchanged
    longer = run_null_study(NullStudy(reps=700, seed=3, chunk_size=200,
                                      statistics=("weat_effect", "mac")))
    np.testing.assert_array_equal(longer.weat_effect[:400], a.weat_effect[:400])


def test_identical_across_dask_worker_counts():
    study = NullStudy(reps=600, seed=5, chunk_size=100, targets=(4, 4), attributes=(4, 4),
                      statistics=("weat_effect", "weat_p", "mac_gap"))
    local = run_null_study(study)
    one = run_null_study(study, n_workers=1, processes=False)
    two = run_null_study(study, n_workers=2, processes=False)
    for ds in (one, two):
        for k in local.data_vars:
            np.testing.assert_array_equal(ds[k].values, local[k].values)


def test_grid_cells_match_single_studies():
    study = NullStudy(reps=300, seed=6, chunk_size=100, statistics=("weat_effect",))
    grid = run_grid(study, sizes=[((2, 2), (5, 5)), ((8, 8), (8, 8))], sds=[0.05, 0.08],
                    use_dask=False)
    assert dict(grid.sizes) == {"size": 2, "sd": 2, "replication": 300}
    first = run_null_study(NullStudy(reps=300, seed=6, chunk_size=100, targets=(2, 2),
                                     attributes=(5, 5), sd=0.05,
                                     statistics=("weat_effect",)))
    np.testing.assert_array_equal(grid.weat_effect.isel(size=0, sd=0), first.weat_effect)
    # cells have their own streams
    assert not np.array_equal(grid.weat_effect.isel(size=1, sd=0),
                              grid.weat_effect.isel(size=1, sd=1))
    s = summarize(grid)
    assert set(s["exceedance"].dims) == {"effect", "threshold", "size", "sd"}


def test_summary_false_positive_rates_near_alpha():
    study = NullStudy(reps=3000, seed=7, targets=(6, 6), attributes=(6, 6))
    s = summarize(run_null_study(study), alpha=0.05, thresholds=(0.5, 1.27))
    d = summary_dict(s)
    # exact permutation test and paired t-test are valid under this null:
    # 3000 reps -> SE of a 5% rate is 0.004; allow 4 SE
    for test in ("weat_p", "mac_gap_p"):
        assert abs(d["false_positive_rate"][test] - 0.05) < 0.016
    frac = d["fraction_abs_effect_at_least"]["weat_effect"]
    assert 0 <= frac["1.27"] <= frac["0.5"] <= 1
    assert d["quantiles"]["mac"]["0.5"] == pytest.approx(1.0, abs=0.01)  # mean distance 1
    json.dumps(d)


def test_hierarchical_null_keeps_weat_valid():
    study = NullStudy(null="hierarchical", reps=3000, seed=8, word_sd=0.2, attribute_sd=0.2,
                      targets=(6, 6), attributes=(6, 6), statistics=("weat_p", "mac"))
    ds = run_null_study(study)
    assert abs(float((ds.weat_p <= 0.05).mean()) - 0.05) < 0.016
    # MAC moves with the word and attribute effects even though nothing is biased
    indep = run_null_study(NullStudy(reps=3000, seed=8, targets=(6, 6), attributes=(6, 6),
                                     statistics=("mac",)))
    assert float(ds.mac.std()) > 3 * float(indep.mac.std())


def test_extra_statistic_gets_replication_table():
    seen = []

    def excludes_zero(table):
        seen.append(table)
        assoc = table.loc[table.connection == "associated", "cosine_distance"].mean()
        none = table.loc[table.connection == "none", "cosine_distance"].mean()
        return abs(assoc - none) > 0.05

    study = NullStudy(reps=20, seed=9, human=1, neutral=3, targets=(2, 3), attributes=(2, 2),
                      statistics=("weat_effect",), extra={"bayes_excludes_zero": excludes_zero})
    ds = run_null_study(study)
    assert ds.bayes_excludes_zero.shape == (20,) and len(seen) == 20
    t = seen[0]
    assert len(t) == 5 * 8
    assert t.connection.astype(str).value_counts().to_dict() == {
        "none": 15, "different": 10, "associated": 10, "human": 5}
    assert "bayes_excludes_zero" in summary_dict(summarize(ds))["false_positive_rate"]
    sim = draw_similarities(study, 1, 0)[0]
    assert replication_table(sim, study).cosine_similarity.to_numpy() == pytest.approx(
        sim.ravel())


def test_paper_two_plus_two_setup():
    """Dobrzeniecka & Urbaniak: 2+2 targets, 5+5 attributes, no bias."""
    kw = dict(targets=(2, 2), attributes=(5, 5), sd=0.05, reps=20_000, seed=1,
              statistics=("weat_effect",))
    sample = run_null_study(NullStudy(**kw)).weat_effect
    pop = run_null_study(NullStudy(sd_convention="population", **kw)).weat_effect
    # with the n - 1 sd, |d| can never exceed sqrt(3) (< 1.82 and < 1.93)
    assert float(abs(sample).max()) <= math.sqrt(3) + 1e-12
    assert weat_bound(2, 2) == pytest.approx(math.sqrt(3))
    # with the population sd, |d| <= 2 and values like 1.82 occur
    assert float(abs(pop).max()) <= 2 + 1e-12
    assert float((abs(pop) >= 1.82).mean()) > 0.05
    # The share of null samples with |d| >= 1.27 has no published value: the reference is
    # an independent computation, Caliskan et al.'s effect size written out here on fresh
    # Normal(0, 0.05) similarities (d does not depend on the sd). Both are Monte Carlo
    # shares near 0.3 from 20,000 draws: the sd of their difference is ~0.0046, so 0.02 is
    # over 4 sd.
    ref = _direct_weat_d(20_000, seed=99)
    for ddof, d in ((0, pop), (1, sample)):
        expected = float((abs(ref[ddof]) >= 1.27).mean())
        assert float((abs(d) >= 1.27).mean()) == pytest.approx(expected, abs=0.02)
    assert 0.3 < float((abs(ref[0]) >= 1.27).mean()) < 0.45  # population sd: ~37%
    assert 0.2 < float((abs(ref[1]) >= 1.27).mean()) < 0.35  # sample sd: ~27%


def _direct_weat_d(reps: int, seed: int) -> dict[int, np.ndarray]:
    """WEAT d for 2+2 targets and 5+5 attributes, one replication at a time (reference)."""
    rng = np.random.default_rng(seed)
    out = {0: np.empty(reps), 1: np.empty(reps)}
    for i in range(reps):
        sim = rng.normal(0.0, 0.05, size=(4, 10))   # targets x (A | B) cosine similarities
        s = sim[:, :5].mean(axis=1) - sim[:, 5:].mean(axis=1)   # s(w, A, B)
        for ddof in (0, 1):
            out[ddof][i] = (s[:2].mean() - s[2:].mean()) / s.std(ddof=ddof)
    return out


def test_cli_simulate_json(capsys):
    rc = main(["simulate", "--null", "independent", "--targets", "8", "8", "--attributes",
               "8", "8", "--sd", "0.08", "--reps", "1000", "--seed", "1", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study"]["reps"] == 1000 and out["study"]["seed"] == 1
    assert set(out["false_positive_rate"]) == {"weat_p", "mac_gap_p"}
    assert out["weat_bound_abs_d"] == pytest.approx(weat_bound(8, 8))


def test_cli_simulate_grid_and_output(tmp_path, capsys):
    import xarray as xr

    out_path = tmp_path / "grid.nc"
    rc = main(["simulate", "--grid", "2,2x5,5", "4,4x4,4", "--sd", "0.05", "0.1", "--reps",
               "200", "--statistics", "weat_effect", "-o", str(out_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["cells"]) == 4
    ds = xr.open_dataset(out_path)
    assert dict(ds.sizes) == {"size": 2, "sd": 2, "replication": 200}
    ds.close()


def test_cli_simulate_bad_input(capsys):
    assert main(["simulate", "--null", "resample"]) == 2
    assert "--distances" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("exact", [True, False])
def test_p_values_uniform_under_null(exact):
    """Under the null the permutation p is uniform (exact) or slightly conservative (MC)."""
    study = NullStudy(reps=20_000, seed=11, targets=(7, 7), attributes=(6, 6),
                      statistics=("weat_p",), alternative="greater",
                      exact_limit=10**6 if exact else 0, n_permutations=199)
    p = run_null_study(study).weat_p.values
    se = lambda a: math.sqrt(a * (1 - a) / p.size)  # noqa: E731
    for alpha in (0.01, 0.05, 0.1, 0.25, 0.5, 0.75):
        rate = float((p <= alpha).mean())
        # 4 SE either side, plus the granularity of the p-value grid (3432 or 200 splits)
        grid = 1 / 3432 if exact else 1 / 200
        assert abs(rate - alpha) < 4 * se(alpha) + grid, (alpha, rate)


@pytest.mark.slow
def test_identical_with_worker_processes():
    """Real worker processes (pickled specs, separate interpreters) give the same numbers."""
    study = NullStudy(reps=400, seed=12, chunk_size=100, targets=(5, 5), attributes=(5, 5),
                      statistics=("weat_effect", "weat_p"))
    local = run_grid(study, sds=[0.05, 0.1], use_dask=False)
    procs = run_grid(study, sds=[0.05, 0.1], n_workers=2, processes=True)
    for k in local.data_vars:
        np.testing.assert_array_equal(procs[k].values, local[k].values)


@pytest.mark.parametrize("argv", [
    ["simulate", "--workers", "0"],
    ["simulate", "--workers", "-1"],
    ["simulate", "--sd", "0"],
    ["simulate", "--sd", "nan"],
    ["simulate", "--alpha", "2"],
    ["simulate", "--alpha", "nan"],
    ["simulate", "--permutations", "inf"],
    ["simulate", "--reps", "inf"],
    ["simulate", "--seed", "-1"],
    ["simulate", "--targets", "0", "3"],
    ["simulate", "--thresholds", "inf"],
    ["weat", "--permutations", "inf"],
    ["weat", "--bootstrap", "-1"],
    ["weat", "--seed", "-1"],
    ["weat", "--exact-limit", "inf"],
])
def test_numeric_flags_refused_at_parse_time(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err


def test_mac_accepts_table_alias(capsys):
    assert main(["--quiet", "mac", "--table", "published:religion:reddit", "--json"]) == 0
    assert '"mac"' in capsys.readouterr().out
