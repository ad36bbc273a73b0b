"""WEAT: hand-computed cases, invariances, permutation p-values, bootstrap, OOV, CLI."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from bayesbias.cli import main
from bayesbias.comparators.mac import class_scores, mac_value
from bayesbias.comparators.weat import (
    association,
    bootstrap_effect_size,
    effect_size,
    mean_difference,
    n_splits,
    normal_permutation_p,
    permutation_test,
    resolve_weat_sets,
    split_indicators,
    sum_statistic,
    weat,
    weat_bound,
    weat_from_similarities,
    weat_from_table,
)
from bayesbias.datasets import published_table
from bayesbias.embeddings import Embedding, save_embedding
from bayesbias.errors import OutOfVocabularyError, WordListError

# A hand-computable case: one attribute per set, so s(w) = sim(w, a) - sim(w, b).
SIM_XA = np.array([[0.5], [0.3]])
SIM_XB = np.array([[0.1], [0.1]])
SIM_YA = np.array([[0.1], [0.0]])
SIM_YB = np.array([[0.2], [0.1]])
# s_x = [0.4, 0.2], s_y = [-0.1, -0.1]; pooled mean 0.1, sum of squares 0.18


def test_hand_computed_case():
    r = weat_from_similarities(SIM_XA, SIM_XB, SIM_YA, SIM_YB)
    assert r.statistic == pytest.approx(0.8)
    assert r.mean_difference == pytest.approx(0.4)
    assert r.effect_size == pytest.approx(0.4 / math.sqrt(0.18 / 3))
    pop = weat_from_similarities(SIM_XA, SIM_XB, SIM_YA, SIM_YB, sd="population")
    assert pop.effect_size == pytest.approx(0.4 / math.sqrt(0.18 / 4))
    assert pop.sd_convention == "population" and r.sd_convention == "sample"
    # 6 splits of 4 words; the observed one has the largest X sum -> p = 1/6 exactly
    assert r.permutation == "exact" and r.n_permutations == 6
    assert r.p_value == pytest.approx(1 / 6)
    two = weat_from_similarities(SIM_XA, SIM_XB, SIM_YA, SIM_YB, alternative="two-sided")
    assert two.p_value == pytest.approx(2 / 6)  # the observed split and its mirror
    less = weat_from_similarities(SIM_XA, SIM_XB, SIM_YA, SIM_YB, alternative="less")
    assert less.p_value == pytest.approx(1.0)


def test_effect_size_bound_sqrt3_for_two_plus_two():
    # |d| <= sqrt(N (N - ddof) / (n_x n_y)); reached when each set is constant
    assert weat_bound(2, 2) == pytest.approx(math.sqrt(3))
    assert weat_bound(2, 2, "population") == pytest.approx(2.0)
    assert float(effect_size([1.0, 1.0], [0.0, 0.0])) == pytest.approx(math.sqrt(3))
    assert float(effect_size([1.0, 1.0], [0.0, 0.0], sd="population")) == pytest.approx(2.0)
    rng = np.random.default_rng(0)
    d = effect_size(rng.normal(size=(100_000, 2)), rng.normal(size=(100_000, 2)))
    assert np.nanmax(np.abs(d)) <= math.sqrt(3) + 1e-12
    for nx, ny in [(3, 5), (8, 8), (1, 4)]:
        d = effect_size(rng.normal(size=(20_000, nx)), rng.normal(size=(20_000, ny)))
        assert np.nanmax(np.abs(d)) <= weat_bound(nx, ny) + 1e-12


def test_association_and_batches():
    rng = np.random.default_rng(1)
    sa, sb = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3, 6))
    s = association(sa, sb)
    assert s.shape == (5, 3)
    assert s[2, 1] == pytest.approx(sa[2, 1].mean() - sb[2, 1].mean())
    d = effect_size(s[:, :1], s[:, 1:])
    assert d.shape == (5,)
    assert d[3] == pytest.approx(float(effect_size(s[3, :1], s[3, 1:])))


def test_rejects_empty_and_nan():
    with pytest.raises(ValueError):
        effect_size([], [1.0, 2.0])
    with pytest.raises(ValueError):
        effect_size([np.nan, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        association(np.ones((2, 0)), np.ones((2, 3)))
    with pytest.raises(ValueError):
        weat_from_similarities(SIM_XA, SIM_XB, SIM_YA * np.nan, SIM_YB)
    with pytest.raises(ValueError):
        effect_size([1.0], [2.0], sd="bogus")


# -- a small registry of two-set statistics, checked by shared invariances -------------
def _mac(xa, xb, ya, yb):
    d = 1 - np.vstack([np.hstack([xa, xb]), np.hstack([ya, yb])])
    return float(mac_value(class_scores(d, [0] * xa.shape[1] + [1] * xb.shape[1])))


REGISTRY = {
    # name: (function of the four similarity blocks, flips sign when X and Y swap)
    "weat_effect_sample": (lambda *b: float(effect_size(
        association(b[0], b[1]), association(b[2], b[3]))), True),
    "weat_effect_population": (lambda *b: float(effect_size(
        association(b[0], b[1]), association(b[2], b[3]), sd="population")), True),
    "weat_statistic": (lambda *b: float(sum_statistic(
        association(b[0], b[1]), association(b[2], b[3]))), True),
    "weat_mean_difference": (lambda *b: float(mean_difference(
        association(b[0], b[1]), association(b[2], b[3]))), True),
    "mac": (_mac, False),
}


def _blocks(seed=3, nx=5, ny=4, na=6, nb=3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(nx, na)), rng.normal(size=(nx, nb)),
            rng.normal(size=(ny, na)), rng.normal(size=(ny, nb)))


@pytest.mark.parametrize("name", list(REGISTRY))
def test_registry_word_order_invariance(name):
    fn, _ = REGISTRY[name]
    xa, xb, ya, yb = _blocks()
    rng = np.random.default_rng(4)
    px, py = rng.permutation(xa.shape[0]), rng.permutation(ya.shape[0])
    pa, pb = rng.permutation(xa.shape[1]), rng.permutation(xb.shape[1])
    shuffled = fn(xa[px][:, pa], xb[px][:, pb], ya[py][:, pa], yb[py][:, pb])
    assert shuffled == pytest.approx(fn(xa, xb, ya, yb), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_registry_swapping_targets(name):
    fn, signed = REGISTRY[name]
    xa, xb, ya, yb = _blocks()
    swapped = fn(ya, yb, xa, xb)
    expected = -fn(xa, xb, ya, yb) if signed else fn(xa, xb, ya, yb)
    assert swapped == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", [n for n, (_, signed) in REGISTRY.items() if signed])
def test_registry_swapping_attributes_flips_sign(name):
    fn, _ = REGISTRY[name]
    xa, xb, ya, yb = _blocks(na=4, nb=4)
    assert fn(xb, xa, yb, ya) == pytest.approx(-fn(xa, xb, ya, yb), rel=1e-12, abs=1e-12)


def test_swap_flips_p_value_direction():
    xa, xb, ya, yb = _blocks(nx=5, ny=5)
    r = weat_from_similarities(xa, xb, ya, yb)
    s = weat_from_similarities(ya, yb, xa, xb, alternative="less")
    assert s.p_value == pytest.approx(r.p_value)
    assert s.effect_size == pytest.approx(-r.effect_size)


# -- permutation test -----------------------------------------------------------------
@pytest.mark.parametrize("alternative", ["greater", "less"])
@pytest.mark.parametrize("nx, ny", [(4, 4), (3, 5)])
def test_exact_matches_scipy(alternative, nx, ny):
    rng = np.random.default_rng(nx * 10 + ny)
    sx, sy = rng.normal(size=nx) + 0.4, rng.normal(size=ny)
    ours = permutation_test(sx, sy, alternative=alternative)
    ref = stats.permutation_test(
        (sx, sy), lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
        permutation_type="independent", alternative=alternative, n_resamples=np.inf)
    assert ours.exact and ours.n_permutations == n_splits(nx, ny)
    assert ours.p_value == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_exact_and_monte_carlo_agree(alternative):
    rng = np.random.default_rng(7)
    sx, sy = rng.normal(size=7) + 0.5, rng.normal(size=7)
    exact = permutation_test(sx, sy, alternative=alternative)
    mc = permutation_test(sx, sy, alternative=alternative, exact_limit=0,
                          n_permutations=40_000, seed=1)
    assert exact.exact and not mc.exact and mc.n_permutations == 40_000
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / 40_000)
    assert abs(mc.p_value - exact.p_value) < 5 * se + 1e-4  # 5 Monte Carlo SEs


def test_two_sided_equal_sizes_is_abs_statistic():
    rng = np.random.default_rng(8)
    sx, sy = rng.normal(size=5), rng.normal(size=5) + 0.3
    two = permutation_test(sx, sy, alternative="two-sided")
    # brute force on |sum_X - sum_Y|
    s = np.concatenate([sx, sy])
    obs = abs(sx.sum() - sy.sum())
    import itertools
    hits = total = 0
    for idx in itertools.combinations(range(10), 5):
        m = np.zeros(10, bool)
        m[list(idx)] = True
        hits += abs(s[m].sum() - s[~m].sum()) >= obs - 1e-12
        total += 1
    assert two.p_value == pytest.approx(hits / total)


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("exact_limit", [20_000, 0])
def test_blocked_splits_count_like_one_block(monkeypatch, alternative, exact_limit):
    # a batch of tests (a null study's replications) is compared with the splits in
    # cache-sized blocks; the counts, so the p-values, must not depend on the block size
    import importlib

    weat_module = importlib.import_module("bayesbias.comparators.weat")
    rng = np.random.default_rng(3)
    s = rng.normal(size=(300, 14)) * 0.05
    kw = dict(alternative=alternative, exact_limit=exact_limit, n_permutations=700, seed=4)
    one = permutation_test(s[:, :7], s[:, 7:], **kw).p_value
    monkeypatch.setattr(weat_module, "_BLOCK_CELLS", 300 * 37)  # blocks of 37 splits
    blocked = permutation_test(s[:, :7], s[:, 7:], **kw).p_value
    assert np.array_equal(one, blocked)
    loop = [permutation_test(s[i, :7], s[i, 7:], **kw).p_value for i in range(0, 300, 29)]
    assert np.array_equal(one[::29], loop)


def test_monte_carlo_p_never_zero_and_seeded():
    sx, sy = np.full(25, 1.0) + np.arange(25) * 1e-3, np.zeros(25) - np.arange(25) * 1e-3
    r = permutation_test(sx, sy, n_permutations=1000, seed=5)
    assert not r.exact
    assert r.p_value == pytest.approx(1 / 1001)
    rng = np.random.default_rng(9)
    sx, sy = rng.normal(size=25), rng.normal(size=25)
    a = permutation_test(sx, sy, n_permutations=5000, seed=11).p_value
    b = permutation_test(sx, sy, n_permutations=5000, seed=11).p_value
    c = permutation_test(sx, sy, n_permutations=5000, seed=12).p_value
    assert a == b and a != c


def test_split_count_limit_switches_method():
    xa, xb, ya, yb = _blocks(nx=6, ny=6)
    r = weat_from_similarities(xa, xb, ya, yb, exact_limit=n_splits(6, 6))
    assert r.permutation == "exact" and r.n_permutations == 924
    r = weat_from_similarities(xa, xb, ya, yb, exact_limit=923, n_permutations=500, seed=1)
    assert r.permutation == "monte-carlo" and r.n_permutations == 500 and r.seed == 1


def test_hundred_thousand_permutations_seeded_with_the_plus_one_bound():
    """100,000 Monte Carlo splits: seeded, never 0 (the +1 correction).

    Their speed against a per-permutation loop is measured in benchmarks/bench_weat.py
    (``--check``), not here: no wall-clock assert in the unit tests.
    """
    rng = np.random.default_rng(0)
    sx, sy = rng.normal(size=25) + 3.0, rng.normal(size=25)  # far apart: no split as extreme
    a = permutation_test(sx, sy, n_permutations=100_000, seed=1)
    b = permutation_test(sx, sy, n_permutations=100_000, seed=1)
    assert a.p_value == b.p_value == pytest.approx(1 / 100_001)
    assert a.n_permutations == 100_000 and not a.exact


def test_normal_approximation_has_the_exact_re_partition_moments():
    # over all 924 splits of 6 + 6 values the mean difference has mean 0 and variance
    # N S^2 / (n_x n_y): the moments the Normal approximation uses
    rng = np.random.default_rng(4)
    s = rng.gamma(1.0, size=12)
    diffs = []
    for chunk in split_indicators(6, 6, exact_limit=10_000):
        sum_x = chunk @ s
        diffs.append(sum_x / 6 - (s.sum() - sum_x) / 6)
    diffs = np.concatenate(diffs)
    assert diffs.size == 924
    assert diffs.mean() == pytest.approx(0.0, abs=1e-12)
    assert diffs.var() == pytest.approx(12 * s.var(ddof=1) / 36, rel=1e-12)


# The slow run (20,000 permutations each, about 3 CPU-s). The default run keeps the Normal
# route's light checks: its exact re-partition moments and its labels and batching (below),
# and the Monte Carlo route's (seeded, never 0, 100,000 splits; above).
@pytest.mark.slow
@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("n_x, n_y, shift", [(1000, 1200, 0.03), (500, 600, 0.045)])
def test_normal_approximation_matches_monte_carlo_for_hundreds_of_words(alternative, n_x,
                                                                         n_y, shift):
    # skewed association values (5% outliers), from the threshold (500 per set) up: the
    # Normal p is within 4 Monte Carlo standard errors (+ 0.001) of 20,000 random splits' p
    rng = np.random.default_rng(7)
    n = n_x + n_y
    v = np.where(rng.random(n) < 0.05, rng.normal(3, 1, n), rng.normal(0, 0.3, n))
    sx, sy = v[:n_x] + shift, v[n_x:]
    mc = permutation_test(sx, sy, alternative=alternative, n_permutations=20_000, seed=3,
                          normal_min=math.inf)
    assert mc.method == "monte-carlo"
    normal = permutation_test(sx, sy, alternative=alternative)
    assert normal.method == "normal" and normal.n_permutations == 0 and not normal.exact
    assert normal.p_value == pytest.approx(float(normal_permutation_p(sx, sy, alternative)))
    se = math.sqrt(mc.p_value * (1 - mc.p_value) / 20_000)
    assert 0.02 < mc.p_value < 0.98
    assert abs(normal.p_value - mc.p_value) < 4 * se + 0.001


def test_normal_approximation_is_labelled_and_batched():
    rng = np.random.default_rng(2)
    xa, xb = rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3))
    ya, yb = rng.normal(size=(1100, 3)), rng.normal(size=(1100, 3))
    r = weat_from_similarities(xa, xb, ya, yb)
    assert r.permutation == "normal" and r.n_permutations == 0 and r.seed is None
    assert "Normal approximation" in r.p_value_description
    batch = normal_permutation_p(rng.normal(size=(5, 1000)), rng.normal(size=(5, 1000)))
    assert batch.shape == (5,) and ((batch > 0) & (batch < 1)).all()
    # every split equal: p = 1, never a division by zero
    assert float(normal_permutation_p(np.ones(1000), np.ones(1000))) == 1.0
    # from defaults.normal_permutation_min (500) words per set the Normal; below it the
    # Monte Carlo splits stay
    assert weat_from_similarities(xa[:500], xb[:500], ya, yb).permutation == "normal"
    assert weat_from_similarities(xa[:499], xb[:499], ya, yb, n_permutations=200,
                                  seed=1).permutation == "monte-carlo"


# -- bootstrap --------------------------------------------------------------------------
def test_bootstrap_interval():
    xa, xb, ya, yb = _blocks(nx=8, ny=8, na=8, nb=8)
    xa = xa + 1.0  # X clearly closer to A
    r = weat_from_similarities(xa, xb, ya, yb, bootstrap=2000, ci_prob=0.9, seed=3)
    lo, hi = r.ci
    assert lo < r.effect_size < hi
    assert lo > 0  # a strong association is bounded away from zero
    assert r.ci_prob == 0.9 and r.n_bootstrap == 2000 and "bootstrap" in r.ci_kind
    again = weat_from_similarities(xa, xb, ya, yb, bootstrap=2000, ci_prob=0.9, seed=3)
    assert again.ci == r.ci
    draws = bootstrap_effect_size(np.vstack([xa, ya]), np.vstack([xb, yb]), 8,
                                  n_bootstrap=500, seed=1)
    assert draws.shape == (500,) and np.isfinite(draws).all()


def test_bootstrap_reports_degenerate_resamples():
    # s_x = [0.1, 0.2], s_y = [0.1, 0.3] (one attribute each): a resample drawing x1 twice
    # and y1 twice has all s equal, sd 0 and no effect size: probability 1/4 * 1/4 = 1/16
    xa, xb = np.array([[0.1], [0.2]]), np.zeros((2, 1))
    ya, yb = np.array([[0.1], [0.3]]), np.zeros((2, 1))
    r = weat_from_similarities(xa, xb, ya, yb, bootstrap=1600, seed=1)
    assert 50 <= r.n_bootstrap_degenerate <= 150  # expected 100, sd ~9.7
    assert r.ci is not None and all(np.isfinite(r.ci))


# -- word layer -------------------------------------------------------------------------
def _embedding(words, dim=6, seed=0):
    rng = np.random.default_rng(seed)
    return Embedding(list(words), rng.normal(size=(len(words), dim)), "test-emb")


SETS = {"X": ["x1", "x2", "x3"], "Y": ["y1", "y2", "y3"], "A": ["a1", "a2"], "B": ["b1", "b2"]}


def test_weat_on_embedding_matches_array_layer():
    emb = _embedding([w for ws in SETS.values() for w in ws])
    r = weat(emb, SETS)
    v = {w: emb.vectors[i] / np.linalg.norm(emb.vectors[i]) for i, w in enumerate(emb.words)}
    s = {w: np.mean([v[w] @ v[a] for a in SETS["A"]]) - np.mean([v[w] @ v[b] for b in SETS["B"]])
         for w in SETS["X"] + SETS["Y"]}
    sx, sy = [s[w] for w in SETS["X"]], [s[w] for w in SETS["Y"]]
    assert r.effect_size == pytest.approx((np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1))
    assert r.association["x2"] == pytest.approx(s["x2"])
    assert r.sizes == {"X": 3, "Y": 3, "A": 2, "B": 2}
    d = r.to_dict()
    assert d["sd_convention"] == "sample" and "n - 1" in d["sd_description"]
    json.dumps(d)


def test_oov_is_reported_not_silently_dropped():
    words = [w for ws in SETS.values() for w in ws if w not in ("x3", "b2")]
    emb = _embedding(words)
    with pytest.raises(OutOfVocabularyError) as info:
        weat(emb, SETS)
    assert info.value.missing == {"X": ["x3"], "B": ["b2"]}
    r = weat(emb, SETS, on_missing="drop")
    assert r.dropped == {"X": ["x3"], "B": ["b2"]}
    assert r.sizes == {"X": 2, "Y": 3, "A": 2, "B": 1}
    assert "x3" in str(r)


def test_set_validation():
    with pytest.raises(WordListError, match="both target sets"):
        resolve_weat_sets({**SETS, "Y": ["x1", "y2"]})
    with pytest.raises(WordListError, match="repeats"):
        resolve_weat_sets({**SETS, "A": ["a1", "a1"]})
    with pytest.raises(WordListError, match="empty"):
        resolve_weat_sets({**SETS, "B": []})
    with pytest.raises(WordListError, match="exactly 2"):
        resolve_weat_sets("religion")
    sets = resolve_weat_sets("weat_7")
    assert len(sets.X) == 8 and sets.names[0] == "math"


def test_weat_from_published_table():
    table = published_table("weat_7", "reddit")
    r = weat_from_table(table)
    assert r.sizes == {"X": 8, "Y": 8, "A": 8, "B": 8}
    assert r.names["X"] == "math" and r.permutation == "exact"
    wide = table.pivot_table(index="protected_word", columns="attribute",
                             values="cosine_similarity")
    x, y = list(r.association)[:8], list(r.association)[8:]
    a = table.loc[table.attribute_class == "math", "attribute"].unique()
    b = table.loc[table.attribute_class == "arts", "attribute"].unique()
    s = wide.loc[:, a].mean(axis=1) - wide.loc[:, b].mean(axis=1)
    assert r.effect_size == pytest.approx(
        (s[x].mean() - s[y].mean()) / s[x + y].std(ddof=1))
    # naming the classes in the other order swaps X with Y and A with B: d is unchanged
    swapped = weat_from_table(table, classes=["arts", "math"])
    assert swapped.effect_size == pytest.approx(r.effect_size)
    assert swapped.names["X"] == "arts"


# -- CLI --------------------------------------------------------------------------------
@pytest.fixture
def emb_file(tmp_path):
    emb = _embedding([w for ws in SETS.values() for w in ws])
    path = tmp_path / "vectors.txt"
    save_embedding(emb, path)
    return path


def test_cli_explicit_sets_json(emb_file, capsys):
    rc = main(["weat", "--embedding", str(emb_file), "--x", "x1,x2,x3", "--y", "y1,y2,y3",
               "--a", "a1,a2", "--b", "b1,b2", "--json", "--bootstrap", "200", "--seed", "1"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sizes"] == {"X": 3, "Y": 3, "A": 2, "B": 2}
    assert out["permutation"] == "exact" and out["n_permutations"] == 20
    assert out["ci_prob"] == pytest.approx(0.89) and len(out["ci"]) == 2


def test_cli_word_files_and_oov(emb_file, tmp_path, capsys):
    (tmp_path / "x.txt").write_text("x1\nx2\nx3\nnotaword\n")
    args = ["weat", "--embedding", str(emb_file), "--x", str(tmp_path / "x.txt"),
            "--y", "y1,y2,y3", "--a", "a1,a2", "--b", "b1,b2"]
    assert main(args) == 2
    assert "notaword" in capsys.readouterr().err
    assert main(args + ["--on-missing", "drop", "--json", "--alternative", "two-sided",
                        "--sd-convention", "population"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dropped_words"] == {"X": ["notaword"]}
    assert out["alternative"] == "two-sided" and out["sd_convention"] == "population"


def test_cli_needs_all_four_sets(emb_file, capsys):
    assert main(["weat", "--embedding", str(emb_file), "--x", "x1"]) == 2
    assert "--y" in capsys.readouterr().err


def test_cli_from_distance_table(tmp_path, capsys):
    from bayesbias.distances import write_distance_table

    path = tmp_path / "weat7.csv"
    write_distance_table(published_table("weat_7", "reddit"), path)
    assert main(["weat", "--distances", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sizes"] == {"X": 8, "Y": 8, "A": 8, "B": 8}
    assert out["effect_size"] == pytest.approx(weat_from_table(
        published_table("weat_7", "reddit")).effect_size, rel=1e-6)


def test_property_bound_sign_and_p_range():
    """For any finite association values: |d| within the bound, sign flips, 0 < p <= 1."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    # cosine-like values on a 1e-6 grid (no subnormals whose squares underflow)
    values = st.integers(-10**6, 10**6).map(lambda v: v / 10**6)

    @settings(max_examples=150, deadline=None)
    @given(arrays(np.float64, st.integers(1, 6), elements=values),
           arrays(np.float64, st.integers(1, 6), elements=values),
           st.sampled_from(["sample", "population"]),
           st.sampled_from(["greater", "less", "two-sided"]))
    def check(sx, sy, sd, alternative):
        hypothesis.assume(sx.size + sy.size >= 2)
        d = float(effect_size(sx, sy, sd=sd))
        if np.isfinite(d):
            assert abs(d) <= weat_bound(sx.size, sy.size, sd) + 1e-9
            assert float(effect_size(sy, sx, sd=sd)) == pytest.approx(-d, abs=1e-9)
        p = permutation_test(sx, sy, alternative=alternative).p_value
        assert 0 < p <= 1

    check()


def test_weat_class_pairs_on_a_three_class_table():
    from bayesbias.comparators.weat import weat_class_pairs, weat_from_table
    from bayesbias.datasets import published_table

    table = published_table("religion", "reddit")
    pairs = weat_class_pairs(table, alternative="two-sided", seed=1)
    assert [p for p, _ in pairs] == [("jew", "christian"), ("jew", "muslim"),
                                     ("christian", "muslim")]
    (x, y), first = pairs[0]
    assert first.sizes == {"X": 5, "Y": 5, "A": 4, "B": 3}
    sub = table.loc[table["protected_class"].isin([x, y]) & table["attribute_class"].isin([x, y])]
    # Relabelling the two classes swaps X with Y and A with B: d is unchanged.
    swapped = weat_from_table(sub, classes=(y, x), alternative="two-sided", seed=1)
    assert swapped.effect_size == pytest.approx(first.effect_size, abs=1e-12)
    assert swapped.p_value == pytest.approx(first.p_value)


def test_weat_class_pairs_equal_weat_on_each_pairs_rows():
    """Pairs taken from the stereotype rows give WEAT on all of the pair's rows."""
    import pandas as pd

    from bayesbias.comparators.weat import weat_class_pairs, weat_from_table
    from bayesbias.datasets import published_table
    from bayesbias.errors import DistanceTableError

    table = published_table("religion", "reddit")
    for (x, y), got in weat_class_pairs(table, alternative="two-sided", seed=1):
        sub = table.loc[table["protected_class"].isin([x, y])
                        & table["attribute_class"].isin([x, y])]
        ref = weat_from_table(sub, classes=(x, y), alternative="two-sided", seed=1)
        assert (got.effect_size, got.p_value, got.sizes) == (ref.effect_size, ref.p_value,
                                                             ref.sizes)
    # a second embedding: ignored without stereotype rows of a pair, else refused (as WEAT
    # on the pair's rows does)
    ref = weat_class_pairs(table, alternative="two-sided", seed=1)
    for conn, refused in (("none", False), ("associated", True)):
        other = table.loc[table["connection"] == conn].assign(embedding="b")
        two = pd.concat([table.assign(embedding="a"), other], ignore_index=True)
        if refused:
            with pytest.raises(DistanceTableError, match="2 embeddings"):
                weat_class_pairs(two, alternative="two-sided", seed=1)
        else:
            got = weat_class_pairs(two, alternative="two-sided", seed=1)
            assert [(k, r.effect_size, r.p_value) for k, r in got] == \
                [(k, r.effect_size, r.p_value) for k, r in ref]


def test_results_have_frames():
    from bayesbias.comparators.mac import mac_from_table
    from bayesbias.comparators.weat import weat_from_table
    from bayesbias.datasets import published_table

    r = weat_from_table(published_table("weat_7", "reddit"), bootstrap=50)
    f = r.to_frame()
    assert f["ci_kind"].iloc[0] == "bootstrap" and len(f) == 1
    m = mac_from_table(published_table("religion", "reddit"))
    assert {"protected_word", "S"} <= set(m.to_frame().columns)
