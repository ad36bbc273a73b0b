"""SEAT: WEAT whose members are template sentences (no model needed: a stand-in encoder)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from bayesbias.comparators.seat import (
    available_seat_tests,
    load_seat_test,
    seat,
    seat_test_from_words,
)
from bayesbias.comparators.weat import weat_from_similarities
from bayesbias.distances import cosine_similarity_matrix
from bayesbias.errors import WordListError


class HashEncoder:
    """Deterministic random vectors per text, standing in for a model."""

    name = "hash"

    def encode(self, texts):  # noqa: D102
        return np.vstack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=8)
                          for t in texts])


def test_shipped_tests():
    assert {"seat6", "seat7"} <= set(available_seat_tests())
    t = load_seat_test("seat6")
    assert t.names == {"X": "MaleNames", "Y": "FemaleNames", "A": "Career", "B": "Family"}
    assert t.sizes()["X"] == t.sizes()["Y"] == 64
    assert "sent-bias" in t.provenance["file"]


def test_seat_is_weat_on_sentence_embeddings():
    enc = HashEncoder()
    res = seat(enc, "seat7", n_permutations=500, seed=1, alternative="greater")
    t = load_seat_test("seat7")
    e = {k: enc.encode(list(v)) for k, v in t.sets.items()}
    want = weat_from_similarities(
        cosine_similarity_matrix(e["X"], e["A"]), cosine_similarity_matrix(e["X"], e["B"]),
        cosine_similarity_matrix(e["Y"], e["A"]), cosine_similarity_matrix(e["Y"], e["B"]),
        n_permutations=500, seed=1)
    assert res.effect_size == pytest.approx(want.effect_size, abs=1e-12)
    # May et al.'s sentence-level test is the secondary result
    assert res.sentence_level["p_value"] == want.p_value
    assert "This is math." in res.association
    assert res.sizes == {"X": 72, "Y": 72, "A": 80, "B": 80}
    # the units are the words: 8 + 8 targets (12,870 splits, exact), 8 + 8 attributes
    assert res.units == {"X": 8, "Y": 8, "A": 8, "B": 8}
    assert res.permutation == "exact" and res.n_permutations == 12_870
    text = str(res)
    assert text.startswith("SEAT ") and "secondary, sentence level" in text
    assert "permutation test of the words" in text


def test_shipped_tests_know_the_word_of_every_sentence():
    for name in ("seat6", "seat7"):
        t = load_seat_test(name)
        for key in "XYAB":
            assert len(t.words[key]) == len(t.sets[key])
    t = load_seat_test("seat7")
    assert t.words["X"][:5] == ("math",) * 4 + ("algebra",)
    made = seat_test_from_words("weat7")
    assert made.units("Y")[0] == "poetry"


def test_cluster_tests_reduce_to_the_sentence_tests_with_one_sentence_per_word():
    from bayesbias.comparators.seat import cluster_permutation_test
    from bayesbias.comparators.weat import permutation_test

    rng = np.random.default_rng(3)
    sx, sy = rng.normal(0.2, 1, 7), rng.normal(0, 1, 6)
    for alt in ("greater", "less", "two-sided"):
        one = cluster_permutation_test(sx, sy, range(7), range(6), alternative=alt)
        assert one.p_value == pytest.approx(permutation_test(sx, sy, alternative=alt).p_value)
    # every word's sentences equal: the word-level test is WEAT's test on the words
    wx, wy = np.repeat(sx, 3), np.repeat(sy, 3)
    ux, uy = np.repeat(np.arange(7), 3), np.repeat(np.arange(6), 3)
    got = cluster_permutation_test(wx, wy, ux, uy, alternative="two-sided")
    assert got.p_value == pytest.approx(permutation_test(sx, sy,
                                                         alternative="two-sided").p_value)
    assert got.n_permutations == 1716  # C(13, 7): the words' splits, not the sentences'


def test_cluster_bootstrap_with_one_sentence_per_word_is_the_word_bootstrap():
    from bayesbias.comparators.seat import cluster_bootstrap_effect_size
    from bayesbias.comparators.weat import bootstrap_effect_size

    rng = np.random.default_rng(4)
    sim_a, sim_b = rng.normal(size=(12, 5)), rng.normal(size=(12, 4))
    sim_a[:6] += 0.5
    ours = cluster_bootstrap_effect_size(sim_a, sim_b, 6, range(12), range(5), range(4),
                                         n_bootstrap=8000, seed=1)
    plain = bootstrap_effect_size(sim_a, sim_b, 6, n_bootstrap=8000, seed=2)
    q = [0.055, 0.5, 0.945]
    assert np.nanquantile(ours, q) == pytest.approx(np.nanquantile(plain, q), abs=0.06)


def _clustered_sims(rng, n_words, per_word, tau, sigma, n_attr=3):
    """Similarity blocks whose s(t) = u[word] + e[t] (no true effect), attributes constant."""
    def target():
        u = np.repeat(rng.normal(0, tau, n_words), per_word)
        return u + rng.normal(0, sigma, n_words * per_word)
    sx, sy = target(), target()
    units = np.repeat(np.arange(n_words), per_word)
    a = np.repeat(np.arange(n_attr), 2)
    blocks = [np.repeat(s[:, None], len(a), axis=1) for s in (sx, sy)]
    zeros = [np.zeros((len(sx), len(a))), np.zeros((len(sy), len(a)))]
    return blocks[0], zeros[0], blocks[1], zeros[1], \
        {"X": units, "Y": units + 1000, "A": a, "B": a + 1000}


def _seat_coverage(n_sims, bootstrap, seed):
    from bayesbias.comparators.seat import seat_from_similarities

    rng = np.random.default_rng(seed)
    word_cover, sent_cover, word_rej, sent_rej = [], [], [], []
    for i in range(n_sims):
        xa, xb, ya, yb, units = _clustered_sims(rng, 16, 8, tau=1.0, sigma=1.0)
        r = seat_from_similarities(xa, xb, ya, yb, units, bootstrap=bootstrap,
                                   n_permutations=200, exact_limit=0, seed=i, ci_prob=0.89)
        word_cover.append(r.ci[0] <= 0 <= r.ci[1])
        lo, hi = r.sentence_level["ci"]
        sent_cover.append(lo <= 0 <= hi)
        word_rej.append(r.p_value < 0.05)
        sent_rej.append(r.sentence_level["p_value"] < 0.05)
    return (np.mean(word_cover), np.mean(sent_cover), np.mean(word_rej), np.mean(sent_rej))


def test_word_level_intervals_cover_better_than_sentence_level_ones_quick():
    word, sent, word_rej, sent_rej = _seat_coverage(60, 200, seed=2024)
    assert word >= 0.75 and sent <= 0.7 and word - sent >= 0.2, (word, sent)
    assert word_rej <= 0.15 and sent_rej >= 0.2, (word_rej, sent_rej)


@pytest.mark.slow
def test_word_level_intervals_cover_and_sentence_level_ones_do_not():
    """Word-level intervals cover at their nominal rate; sentence-level ones do not.

    Words drawn from a population, sentences sharing a word effect (tau = sigma, 16 words
    of 8 sentences per set): the truth is d = 0. The word-level 89% interval covers 0 at
    about 89% and the word-level p rejects at about 5%; the sentence-level interval
    (sentences as independent) covers far less and its p rejects far more (design effect
    1 + 7 * 0.5). Measured with these settings: coverage 0.873 (word level) and 0.502
    (sentence level); rejection at 0.05: 0.048 and 0.367.
    """
    word, sent, word_rej, sent_rej = _seat_coverage(400, 500, seed=7)
    # binomial sd of a share near 0.89 over 400 runs: 0.016
    assert 0.85 <= word <= 0.93, word
    assert sent < 0.65, sent
    assert word_rej <= 0.08 and sent_rej > 0.3, (word_rej, sent_rej)


def test_word_list_becomes_template_sentences():
    t = seat_test_from_words("weat7")
    assert t.sets["X"][:4] == ("This is math.", "That is math.", "There is math.",
                               "It is math.")
    assert len(t.sets["Y"]) == 82  # not cut to the size of X (only May et al.'s files are)
    res = seat(HashEncoder(), "weat7", n_permutations=200)
    assert res.sizes["A"] == 80


def test_bad_seat_file(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text('[sets.X]\nsentences = ["a"]\n', encoding="utf-8")
    with pytest.raises(WordListError, match=r"\[sets.X\]"):
        load_seat_test(bad)
    with pytest.raises(WordListError, match="neither shipped"):
        load_seat_test(tmp_path / "none.toml")


def test_seat_command_imports_no_pandas_before_the_vectors():
    """The seat command's modules and its JSON output import no pandas (0.4 s of a run).

    pandas then comes only through ``bayesbias.distances`` (cosine_similarity_matrix).
    """
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "import bayesbias.comparators.seat, bayesbias.cli.contextual\n"
            "from bayesbias.plain import to_plain\n"
            "assert to_plain({'a': np.arange(2), 'b': np.nan}) == {'a': [0, 1], 'b': None}\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
