"""Hard debiasing: array-layer geometry, embedding layer, errors, published signature.

The published signature: associated and different means become equal.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayesbias.cli import main
from bayesbias.debias import bias_subspace, equalize, hard_debias, neutralize, project
from bayesbias.distances import distance_table
from bayesbias.embeddings import Embedding, load_embedding
from bayesbias.errors import OutOfVocabularyError, WordListError
from bayesbias.wordlists import ProtectedClass, WordList, load_wordlist

# float64 arithmetic on unit vectors: errors are a few ulps times the dimension.
TOL64 = 1e-12


def _random_sets(rng, sizes, dim=10, direction=None, spread=1.0, noise=0.05):
    """Definite sets whose words differ mostly along `direction`."""
    direction = direction if direction is not None else np.eye(dim)[0]
    sets = []
    for n in sizes:
        centre = rng.normal(size=dim)
        offsets = rng.normal(size=(n, 1)) * spread * direction + noise * rng.normal(size=(n, dim))
        sets.append(centre + offsets)
    return sets


# -- array layer -------------------------------------------------------------------------
def test_subspace_recovers_the_direction_that_separates_the_sets():
    rng = np.random.default_rng(1)
    direction = rng.normal(size=10)
    direction /= np.linalg.norm(direction)
    sub = bias_subspace(_random_sets(rng, [2, 3, 3, 2, 2], direction=direction), k=1)
    # noise 0.05 vs spread 1: the recovered direction is within a few degrees.
    assert abs(sub.basis[0] @ direction) > 0.99
    assert sub.basis.shape == (1, 10)
    assert 0.9 < sub.explained_variance_ratio[0] <= 1.0


def test_subspace_basis_is_orthonormal_and_ratios_descend():
    rng = np.random.default_rng(2)
    sub = bias_subspace([rng.normal(size=(3, 8)) for _ in range(4)], k=5)
    np.testing.assert_allclose(sub.basis @ sub.basis.T, np.eye(5), atol=TOL64)
    assert np.all(np.diff(sub.explained_variance_ratio) <= 0)
    assert sub.explained_variance_ratio.sum() <= 1 + TOL64
    assert sub.max_k == 8  # 4 triples allow 8 directions; dim 8 allows 8 too


def test_subspace_is_invariant_to_word_order_within_sets():
    rng = np.random.default_rng(3)
    sets = [rng.normal(size=(3, 6)) for _ in range(3)]
    a = bias_subspace(sets, k=2)
    b = bias_subspace([s[::-1] for s in sets[::-1]], k=2)
    # Same subspace: the projectors agree (bases may differ in sign).
    np.testing.assert_allclose(a.basis.T @ a.basis, b.basis.T @ b.basis, atol=1e-10)


@pytest.mark.parametrize("sizes, k_max", [([2], 1), ([2, 2, 2], 3), ([3, 3], 4), ([2, 3], 3)])
def test_k_larger_than_the_sets_allow_is_an_error(sizes, k_max):
    rng = np.random.default_rng(4)
    sets = [rng.normal(size=(n, 20)) for n in sizes]
    assert bias_subspace(sets, k=k_max).k == k_max
    with pytest.raises(WordListError, match=f"at most {k_max}"):
        bias_subspace(sets, k=k_max + 1)


def test_k_is_capped_by_vector_length():
    rng = np.random.default_rng(5)
    with pytest.raises(WordListError, match="at most 3"):
        bias_subspace([rng.normal(size=(3, 3)) for _ in range(3)], k=4)


def test_rank_deficient_sets_are_an_error():
    v = np.random.default_rng(6).normal(size=5)
    with pytest.raises(WordListError, match="numerical rank"):
        bias_subspace([np.stack([v, v + 1]), np.stack([v, v + 1])], k=2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_k_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        bias_subspace([np.eye(3)[:2]], k=bad)


def test_one_vector_set_and_no_sets_are_errors():
    with pytest.raises(WordListError, match="two or more"):
        bias_subspace([np.ones((1, 4)), np.eye(4)[:2]])
    with pytest.raises(WordListError, match="no definite sets"):
        bias_subspace([])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_neutralize_removes_the_projection_and_keeps_unit_length(k):
    rng = np.random.default_rng(7)
    sub = bias_subspace([rng.normal(size=(3, 12)) for _ in range(3)], k=k)
    out = neutralize(rng.normal(size=(30, 12)) * 5, sub)
    assert np.abs(project(out, sub)).max() < TOL64
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=TOL64)


def test_neutralize_keeps_the_off_subspace_direction():
    rng = np.random.default_rng(8)
    sub = bias_subspace([rng.normal(size=(2, 6))], k=1)
    v = rng.normal(size=(4, 6))
    off = v - project(v, sub) @ sub.basis
    out = neutralize(v, sub)
    cos = np.sum(out * off, axis=1) / np.linalg.norm(off, axis=1)
    np.testing.assert_allclose(cos, 1.0, atol=TOL64)


def _parts(v, basis):
    inside = project(v, basis) @ basis
    return inside, v - inside


@pytest.mark.parametrize("k", [1, 2, 3])
def test_equalize_pair_is_mirror_symmetric(k):
    rng = np.random.default_rng(9)
    sub = bias_subspace([rng.normal(size=(2, 10)) for _ in range(3)], k=k)
    out = equalize(rng.normal(size=(2, 10)), sub)
    inside, off = _parts(out, sub.basis)
    np.testing.assert_allclose(off[0], off[1], atol=TOL64)  # same off-subspace part
    np.testing.assert_allclose(inside[0], -inside[1], atol=TOL64)  # opposite projections
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=TOL64)


def test_equalize_triple_with_one_direction_lands_at_plus_or_minus_r():
    """Multiclass symmetry, k = 1: shared off-subspace part, projections +r or -r.

    The projections sum to r times the sum of the signs of the offsets from the mean, so
    not to zero for three words: that is Manzini et al.'s equalisation, stated exactly.
    """
    rng = np.random.default_rng(10)
    sub = bias_subspace([rng.normal(size=(3, 10)) for _ in range(2)], k=1)
    v = rng.normal(size=(3, 10))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    out = equalize(v, sub)
    inside, off = _parts(out, sub.basis)
    np.testing.assert_allclose(off, np.broadcast_to(off[0], off.shape), atol=TOL64)
    coords = project(out, sub)[:, 0]
    r = np.sqrt(1 - off[0] @ off[0])
    np.testing.assert_allclose(np.abs(coords), r, atol=TOL64)
    signs = np.sign(project(v, sub)[:, 0] - project(v, sub)[:, 0].mean())
    np.testing.assert_allclose(coords, r * signs, atol=TOL64)


@pytest.mark.parametrize("n, k", [(3, 2), (4, 3), (5, 2)])
def test_equalized_set_is_equidistant_from_every_neutralized_word(n, k):
    """What equalising buys, for any set size: equal cosines with neutralised words."""
    rng = np.random.default_rng(11 + n + k)
    sub = bias_subspace([rng.normal(size=(n, 16)) for _ in range(3)], k=k)
    out = equalize(rng.normal(size=(n, 16)), sub)
    inside, off = _parts(out, sub.basis)
    np.testing.assert_allclose(off, np.broadcast_to(off[0], off.shape), atol=TOL64)
    norms = np.linalg.norm(inside, axis=1)
    np.testing.assert_allclose(norms, norms[0], atol=TOL64)
    neutral = neutralize(rng.normal(size=(20, 16)), sub)
    cos = neutral @ out.T  # all unit vectors
    np.testing.assert_allclose(cos, np.broadcast_to(cos[:, :1], cos.shape), atol=TOL64)


def test_equalize_ignores_input_length():
    rng = np.random.default_rng(12)
    sub = bias_subspace([rng.normal(size=(2, 5))], k=1)
    v = rng.normal(size=(2, 5))
    np.testing.assert_allclose(equalize(v, sub), equalize(v * [[3.0], [0.2]], sub), atol=TOL64)


# -- embedding layer ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def religion():
    return load_wordlist("religion")


@pytest.fixture(scope="module")
def fake_embedding(religion):
    """Random float32 vectors for every word of the religion list plus 40 others."""
    rng = np.random.default_rng(20)
    words = list(religion.all_words) + [f"extra{i}" for i in range(40)]
    return Embedding(words, rng.normal(size=(len(words), 24)).astype(np.float32), "fake")


def test_changes_only_stereotypes_and_definite_set_words(fake_embedding, religion):
    out, report = hard_debias(fake_embedding, religion)
    changed = set(religion.stereotypes) | {w for s in religion.definite_sets for w in s}
    assert set(report.changed_words) == changed
    assert set(report.neutralized) == set(religion.stereotypes)
    assert out.words == fake_embedding.words and out.vectors.dtype == np.float32
    for i, w in enumerate(fake_embedding.words):
        same = np.array_equal(out.vectors[i], fake_embedding.vectors[i])
        assert same == (w not in changed), w  # untouched rows bit-for-bit equal
    assert report.passed
    # float32 storage: projections of unit vectors are exact to ~1e-7.
    assert report.max_projection_after < 1e-6 < report.max_projection_before
    basis = out.meta["basis"]
    assert np.abs(project(out.matrix(report.neutralized), basis)).max() < 1e-6


def test_equalized_sets_are_symmetric_in_the_output(fake_embedding, religion):
    out, report = hard_debias(fake_embedding, religion, k=2)
    basis = out.meta["basis"]
    for s in religion.definite_sets:
        inside, off = _parts(out.matrix(s), basis)
        np.testing.assert_allclose(off, np.broadcast_to(off[0], off.shape), atol=1e-6)
        norms = np.linalg.norm(inside, axis=1)
        np.testing.assert_allclose(norms, norms[0], atol=1e-6)
    assert all(c["symmetric"] for c in report.set_checks)


def test_attributes_mode_also_neutralizes_controls(fake_embedding, religion):
    out, report = hard_debias(fake_embedding, religion, neutralize="attributes")
    assert set(report.neutralized) == set(religion.attributes)
    assert np.abs(project(out.matrix(religion.controls["none"]), out.meta["basis"])).max() < 1e-6


def test_custom_list_skips_definite_set_words(fake_embedding, religion):
    out, report = hard_debias(fake_embedding, religion, neutralize=["extra1", "jew", "extra2"])
    assert report.neutralized == ("extra1", "extra2")
    assert report.skipped == ("jew",)
    i = fake_embedding.index("greedy")
    assert np.array_equal(out.vectors[i], fake_embedding.vectors[i])


def test_no_equalize_changes_only_neutralized_words(fake_embedding, religion):
    out, report = hard_debias(fake_embedding, religion, equalize=False)
    assert report.equalized == () and set(report.changed_words) == set(religion.stereotypes)
    i = fake_embedding.index("jew")
    assert np.array_equal(out.vectors[i], fake_embedding.vectors[i])


def test_normalize_all_scales_rows_but_keeps_directions(fake_embedding, religion):
    out, _ = hard_debias(fake_embedding, religion, normalize_all=True)
    np.testing.assert_allclose(np.linalg.norm(out.vectors, axis=1), 1.0, atol=1e-6)
    i = fake_embedding.index("extra3")
    v = fake_embedding.vectors[i].astype(float)
    np.testing.assert_allclose(out.vectors[i], v / np.linalg.norm(v), atol=1e-7)


def test_input_embedding_is_not_modified(fake_embedding, religion):
    before = fake_embedding.vectors.copy()
    hard_debias(fake_embedding, religion, neutralize="attributes", normalize_all=True)
    assert np.array_equal(before, fake_embedding.vectors)


def _without(embedding, *drop):
    keep = [i for i, w in enumerate(embedding.words) if w not in drop]
    return Embedding([embedding.words[i] for i in keep], embedding.vectors[keep], "partial")


def test_missing_words_raise_or_are_dropped_with_a_report(fake_embedding, religion):
    partial = _without(fake_embedding, "rabbi", "greedy")
    with pytest.raises(OutOfVocabularyError) as info:
        hard_debias(partial, religion)
    assert info.value.missing == {"definite_set:rabbi/priest/imam": ["rabbi"],
                                  "neutralize:stereotypes": ["greedy"]}
    out, report = hard_debias(partial, religion, on_missing="drop")
    assert report.missing == info.value.missing
    assert ("priest", "imam") in report.equalized and "greedy" not in report.neutralized
    assert report.passed


def test_definite_set_left_with_one_word_is_an_error(fake_embedding, religion):
    partial = _without(fake_embedding, "rabbi", "priest")
    with pytest.raises(WordListError, match=r"rabbi.*1 word\(s\).*missing: rabbi, priest"):
        hard_debias(partial, religion, on_missing="drop")


def test_one_word_definite_set_in_a_word_list_is_an_error():
    classes = (ProtectedClass("a", ("x",), ()), ProtectedClass("b", ("y",), ()))
    with pytest.raises(WordListError, match="at least two words"):
        WordList("tiny", classes, definite_sets=(("x",),))


def test_k_too_large_for_the_word_list(fake_embedding, religion):
    # Five triples allow 10 directions.
    assert hard_debias(fake_embedding, religion, k=10)[1].k == 10
    with pytest.raises(WordListError, match="at most 10"):
        hard_debias(fake_embedding, religion, k=11)


def test_word_list_without_definite_sets_is_an_error(fake_embedding):
    classes = (ProtectedClass("a", ("extra1",), ("extra3",)),
               ProtectedClass("b", ("extra2",), ("extra4",)))
    with pytest.raises(WordListError, match="no definite sets"):
        hard_debias(fake_embedding, WordList("plain", classes))


def test_bad_neutralize_choice_lists_the_valid_ones(fake_embedding, religion):
    with pytest.raises(ValueError, match="stereotypes, attributes"):
        hard_debias(fake_embedding, religion, neutralize="everything")


def test_report_is_json_ready(fake_embedding, religion):
    import json

    _, report = hard_debias(fake_embedding, religion)
    payload = json.loads(json.dumps(report.to_dict()))
    assert payload["passed"] and payload["k"] == 2 and payload["needed_k"] == 2
    assert len(payload["changed_words"]) == 11 + 15
    assert "neutralised (stereotypes, 11)" in report.summary()


# -- the published signature -------------------------------------------------------------
def _gap(table):
    means = table.groupby("connection", observed=True)["cosine_distance"].mean()
    return means["associated"] - means["different"]


@pytest.mark.parametrize("topic", ["religion", "gender"])
def test_published_debiased_tables_have_equal_associated_and_different_means(topic):
    """The signature to reproduce: exact equality (float64 rounding) on disjoint sets."""
    from bayesbias.datasets import published_table

    assert abs(_gap(published_table(topic, "debiased_reddit"))) < 1e-12
    assert abs(_gap(published_table(topic, "reddit"))) > 0.01  # before debiasing: a gap


def test_published_race_table_keeps_a_gap_from_overlapping_sets():
    """Race's definite sets share words; sequential equalisation leaves a gap (0.012)."""
    from bayesbias.datasets import published_table

    assert 0.005 < abs(_gap(published_table("race", "debiased_reddit"))) < 0.02


@pytest.mark.parametrize("topic", ["religion", "gender"])
def test_debiasing_shipped_glove_reproduces_the_signature(glove, topic):
    """Associated and different means become equal (the published tables: < 1e-15).

    Our vectors are stored as float32 (relative rounding 6e-8), so cosines carry errors
    of order 1e-7; 1e-6 leaves room for that and nothing else. Before debiasing the gap
    is > 0.05 (religion) and > 0.03 (gender) on this embedding.
    """
    before = distance_table(glove, topic, on_missing="drop")
    debiased, report = hard_debias(glove, topic, on_missing="drop")
    after = distance_table(debiased, topic, on_missing="drop")
    assert report.passed
    assert abs(_gap(before)) > 0.03
    assert abs(_gap(after)) < 1e-6


# -- writing and the command line --------------------------------------------------------
@pytest.mark.parametrize("name, binary", [("out.bin", True), ("out.txt", False),
                                          ("out.txt.gz", False)])
def test_cli_writes_a_file_the_toolkit_and_gensim_read(fake_embedding, tmp_path, capsys,
                                                       name, binary):
    import json

    from bayesbias.cli import main
    from bayesbias.embeddings import load_embedding, save_embedding

    src = save_embedding(fake_embedding, tmp_path / "in.bin", binary=True)
    out = tmp_path / name
    code = main(["debias", "--embedding", str(src), "--wordlist", "religion", "-k", "2",
                 "-o", str(out), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["passed"] and payload["k"] == 2
    assert payload["output_format"] == ("word2vec-binary" if binary else "word2vec")
    means = {r["connection"]: r for r in payload["mean_cosine_distance"]}
    # Random vectors: debiasing makes associated and different exactly equal here too.
    assert abs(means["associated"]["after"] - means["different"]["after"]) < 1e-6
    back = load_embedding(out)
    expected, _ = hard_debias(fake_embedding, "religion", k=2)
    assert back.words == expected.words
    np.testing.assert_array_equal(back.vectors, expected.vectors)  # float32 round trip
    gensim = pytest.importorskip("gensim")
    kv = gensim.models.KeyedVectors.load_word2vec_format(str(out), binary=binary)
    np.testing.assert_array_equal(kv["jew"], expected.matrix(["jew"])[0].astype(np.float32))


def test_cli_errors_are_clean(fake_embedding, tmp_path, capsys):
    from bayesbias.cli import main
    from bayesbias.embeddings import save_embedding

    src = str(save_embedding(fake_embedding, tmp_path / "in.txt"))
    assert main(["debias", "--embedding", src, "--wordlist", "religion", "-k", "11"]) == 2
    assert "at most 10" in capsys.readouterr().err
    assert main(["debias", "--embedding", src, "--wordlist", "weat1"]) == 2
    assert "no definite_sets" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["debias", "--embedding", src, "-k", "0"])
    assert "-k: must be >= 1" in capsys.readouterr().err
    code = main(["debias", "--embedding", src, "--neutralize", "extra1,extra2", "--json"])
    assert code == 0 and '"neutralize": "custom"' in capsys.readouterr().out


# -- definite sets that share words (the race list) ----------------------------------------
@pytest.fixture(scope="module")
def race_embedding():
    race = load_wordlist("race")
    rng = np.random.default_rng(30)
    words = list(race.all_words) + ["extra0"]
    return Embedding(words, rng.normal(size=(len(words), 16)), "fake-race")


def test_sequential_equalisation_leaves_earlier_overlapping_sets_asymmetric(race_embedding):
    _, report = hard_debias(race_embedding, "race")
    by_set = {tuple(c["words"]): c for c in report.set_checks}
    # Manzini's order: a set sharing words with a later one is overwritten by it.
    assert not by_set[("black", "caucasian", "asian")]["symmetric"]
    assert by_set[("black", "white", "asian")]["symmetric"]
    assert by_set[("africa", "europe", "asia")]["symmetric"]
    assert report.passed  # the check only requires sets not overwritten later


def test_merged_equalisation_makes_every_set_symmetric(race_embedding):
    out, report = hard_debias(race_embedding, "race", overlapping="merge")
    assert report.equalized == (("black", "caucasian", "asian", "african", "white"),
                                ("africa", "america", "asia", "china", "europe"))
    assert all(c["symmetric"] for c in report.set_checks) and report.passed
    basis = out.meta["basis"]
    for group in report.equalized:
        _, off = _parts(out.matrix(group), basis)
        np.testing.assert_allclose(off, np.broadcast_to(off[0], off.shape), atol=1e-10)


def test_bad_overlapping_choice_lists_the_valid_ones(race_embedding):
    with pytest.raises(ValueError, match="sequential, merge"):
        hard_debias(race_embedding, "race", overlapping="joint")


# -- properties over random shapes ---------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 5), dim=st.integers(4, 12), k=st.integers(1, 3),
                  seed=st.integers(0, 2**32 - 1))
def test_equalize_and_neutralize_properties(n, dim, k, seed):
    """Equalise and neutralise keep their guarantees for any set size and k.

    Shared off-subspace part, unit rows, equal cosines with neutralised words, and no
    projection left on neutralised words.
    """
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(n, dim)) for _ in range(3)]
    k = min(k, dim - 1, 3 * (n - 1))
    sub = bias_subspace(sets, k=k)
    out = equalize(rng.normal(size=(n, dim)), sub)
    inside, off = _parts(out, sub.basis)
    np.testing.assert_allclose(off, np.broadcast_to(off[0], off.shape), atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-10)
    neutral = neutralize(rng.normal(size=(5, dim)), sub)
    assert np.abs(project(neutral, sub)).max() < 1e-10
    cos = neutral @ out.T
    np.testing.assert_allclose(cos, np.broadcast_to(cos[:, :1], cos.shape), atol=1e-10)


# -- issue 10 section 3: debiasing must not merge words ---------------------------------
def test_default_k_keeps_three_word_sets_distinct(fake_embedding, religion):
    from bayesbias.debias import needed_k

    assert needed_k(religion.definite_sets) == 2
    debiased, report = hard_debias(fake_embedding, religion)
    assert report.k == 2 and report.passed and not report.merged_words
    for s in report.equalized:
        m = debiased.matrix(s)
        gaps = [np.linalg.norm(m[i] - m[j]) for i in range(len(s)) for j in range(i + 1, len(s))]
        assert min(gaps) > 1e-3


def test_smaller_k_refused_unless_allowed(fake_embedding, religion):
    from bayesbias.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="allow_merge"):
        hard_debias(fake_embedding, religion, k=1)
    _, report = hard_debias(fake_embedding, religion, k=1, allow_merge=True)
    assert report.merged_words and report.passed  # allowed: listed, not a failure
    assert "merged (allowed)" in report.summary()


def test_shipped_religion_not_merged(tmp_path):
    """`bayesbias debias --embedding default --wordlist religion` keeps jew != christian."""
    out = tmp_path / "r.bin"
    assert main(["--quiet", "debias", "--embedding", "default", "--wordlist", "religion",
                 "-o", str(out)]) == 0
    emb = load_embedding(out, ["jew", "christian", "church", "synagogue", "rabbi", "priest",
                               "bible", "torah"])
    for a, b in [("jew", "christian"), ("church", "synagogue"), ("rabbi", "priest"),
                 ("bible", "torah")]:
        x, y = emb.matrix([a, b])
        assert x @ y / np.linalg.norm(x) / np.linalg.norm(y) < 0.99


def test_failed_check_writes_nothing_without_force(tmp_path, monkeypatch):
    from bayesbias import debias as debias_mod

    monkeypatch.setattr(debias_mod.DebiasReport, "passed", property(lambda self: False))
    out = tmp_path / "r.bin"
    assert main(["--quiet", "debias", "--wordlist", "religion", "-o", str(out)]) == 3
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert main(["--quiet", "debias", "--wordlist", "religion", "-o", str(out),
                 "--force"]) == 3
    written = load_embedding(out, ["jew", "church"])  # --force wrote the debiased vectors
    assert written.vectors.shape == (2, load_embedding("default", ["jew"]).vectors.shape[1])
