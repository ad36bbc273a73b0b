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
    res = seat(enc, "seat7", n_permutations=500, seed=1)
    t = load_seat_test("seat7")
    e = {k: enc.encode(list(v)) for k, v in t.sets.items()}
    want = weat_from_similarities(
        cosine_similarity_matrix(e["X"], e["A"]), cosine_similarity_matrix(e["X"], e["B"]),
        cosine_similarity_matrix(e["Y"], e["A"]), cosine_similarity_matrix(e["Y"], e["B"]),
        n_permutations=500, seed=1)
    assert res.effect_size == pytest.approx(want.effect_size, abs=1e-12)
    assert res.p_value == want.p_value
    assert "This is math." in res.association
    assert res.sizes == {"X": 72, "Y": 72, "A": 80, "B": 80}


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
