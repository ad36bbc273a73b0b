"""Encoders as a source of word vectors: loading, tokenising, pooling, cache, three ways.

A tiny BERT with random weights and a vocabulary made from the word lists is built and saved
here (no download), so the real loading, tokenising and pooling code runs in the default
test run. These tests skip only when torch / transformers / sentence-transformers are not
installed (the optional extra ``bayesbias[transformers]``, or ``[test]``).
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import sys

import numpy as np
import pytest

from bayesbias.encoders import (
    EncoderError,
    EncoderSource,
    MissingExtraError,
    Templates,
    find_contexts,
    load_encoder,
    read_corpus,
)
from bayesbias.wordlists import load_wordlist

HAVE_EXTRA = all(
    __import__("importlib").util.find_spec(m) is not None
    for m in ("torch", "transformers", "sentence_transformers"))
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="sentence-transformers / torch absent "
                                 "(extra [transformers] or [test])")

BASE_WORDS = ["this", "is", "a", "an", "that", "there", "here", "it", "the", "they", "are",
              "these", "those", "person", "thing", "things", "people", "name", "will", "did",
              "can", "may", "i", "you", "am", "being", "and", "hate", "s", "'", ".", ",",
              "male", "man", "woman", "female", "nurse", "nurses", "doctor"]


def _vocab():
    words = set(BASE_WORDS)
    for name in ("weat7", "weat6", "madlibs_identity"):
        wl = load_wordlist(name)
        words |= {w.lower() for w in wl.protected_words + wl.stereotypes}
    words.discard("hairstylist")  # kept out: must be split into sub-word tokens
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    return list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)
                              + letters + [f"##{c}" for c in letters]))


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    """Build a random 2-layer BERT as a transformers and a sentence-transformers folder."""
    if not HAVE_EXTRA:
        pytest.skip("sentence-transformers / torch absent (extra [transformers] or [test])")
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        import sentence_transformers.sentence_transformer.modules as st_models
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers import models as st_models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-encoder")
    hf = root / "hf"
    hf.mkdir()
    words = _vocab()
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:  # transformers 5
        tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    else:  # transformers 4
        vocab = root / "vocab.txt"
        vocab.write_text("\n".join(words) + "\n", encoding="utf-8")
        tok = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    assert tok.tokenize("Math nurse") == ["math", "nurse"]
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(hf, safe_serialization=True)
    tok.save_pretrained(hf)
    st = root / "st"
    transformer = st_models.Transformer(str(hf), max_seq_length=32)
    model = SentenceTransformer(modules=[transformer,
                                         st_models.Pooling(32, pooling_mode="mean"),
                                         st_models.Normalize()], device="cpu")
    model.save(str(st), create_model_card=False)
    return hf, st


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


# -- loading ------------------------------------------------------------------------------
@needs_extra
def test_hf_folder_mean_pooling_matches_transformers(tiny_dirs, cache_dir):
    """Sentence vectors equal a mean of the last hidden states computed with transformers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    hf, _ = tiny_dirs
    enc = load_encoder(hf, cache_dir=cache_dir)
    assert enc.dim == 32 and os.environ["HF_HUB_OFFLINE"] == "1"
    texts = ["This is a nurse.", "The doctor is here.", "hairstylist"]
    got = enc.encode(texts)
    tok = AutoTokenizer.from_pretrained(hf, local_files_only=True)
    model = AutoModel.from_pretrained(hf, local_files_only=True).eval()
    with torch.no_grad():
        batch = tok(texts, padding=True, return_tensors="pt")
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    want = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)


@needs_extra
def test_sentence_transformers_folder(tiny_dirs, cache_dir):
    from sentence_transformers import SentenceTransformer

    _, st = tiny_dirs
    enc = load_encoder(st, cache_dir=cache_dir)
    texts = ["This is a nurse.", "They are kind."]
    want = SentenceTransformer(str(st), device="cpu").encode(texts)
    np.testing.assert_allclose(enc.encode(texts), want, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(enc.encode(texts), axis=1), 1.0, atol=1e-6)


@needs_extra
def test_token_vectors_are_the_mean_of_the_words_subword_tokens(tiny_dirs, cache_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    hf, _ = tiny_dirs
    enc = load_encoder(hf, cache_dir=cache_dir)
    sentence = "You are a caring hairstylist"
    start = sentence.index("hairstylist")
    got = enc.token_vectors([sentence], [(start, start + len("hairstylist"))])[0]
    tok = AutoTokenizer.from_pretrained(hf, local_files_only=True)
    ids = tok(sentence, return_tensors="pt")
    pieces = tok.convert_ids_to_tokens(ids["input_ids"][0])
    n_pieces = len(tok.tokenize("hairstylist"))
    assert n_pieces > 1  # split into sub-words
    word = pieces.index("caring") + 1
    model = AutoModel.from_pretrained(hf, local_files_only=True).eval()
    with torch.no_grad():
        hidden = model(**ids).last_hidden_state[0].numpy()
    np.testing.assert_allclose(got, hidden[word:word + n_pieces].mean(axis=0), atol=1e-5)


@needs_extra
def test_cache_second_run_does_not_encode(tiny_dirs, cache_dir):
    hf, _ = tiny_dirs
    texts = ["This is a nurse.", "That is a doctor.", "This is a nurse."]
    first = load_encoder(hf, cache_dir=cache_dir)
    a = first.encode(texts)
    assert first.n_encoded == 2
    second = load_encoder(hf, cache_dir=cache_dir)
    b = second.encode(texts)
    assert second.n_encoded == 0
    np.testing.assert_array_equal(a, b)
    t = second.token_vectors(["This is a nurse."], [(10, 15)])
    assert second.n_encoded == 1
    third = load_encoder(hf, cache_dir=cache_dir)
    np.testing.assert_array_equal(third.token_vectors(["This is a nurse."], [(10, 15)]), t)
    assert third.n_encoded == 0
    off = load_encoder(hf, cache_dir=cache_dir, cache=False)
    off.encode(texts)
    assert off.n_encoded == 2


def test_not_on_disk_is_a_clear_error(tmp_path):
    with pytest.raises(EncoderError, match="not on disk"):
        load_encoder("sentence-transformers/some-model-not-here")
    with pytest.raises(EncoderError, match="not a model folder"):
        load_encoder(tmp_path)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(EncoderError, match="is a file"):
        load_encoder(tmp_path / "f.txt")


def _fake_folder(path, **config):
    """A model folder that passes the file checks: config.json, vocab.txt, one tensor."""
    import struct

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    (path / "vocab.txt").write_text("[PAD]\nnurse\n")
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header
                                             + np.zeros(2, "<f4").tobytes())
    return path


def test_missing_extra_names_the_extra(monkeypatch, tmp_path):
    """Name the reason and the extra when no installed route can run a folder.

    Import order changed (issue 26): the folder is checked before any library is needed,
    so the folder here is well formed; the light route cannot run it (roberta) and
    sentence-transformers is absent.
    """
    _fake_folder(tmp_path, model_type="roberta")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError,
                       match=r"architecture 'roberta'.*bayesbias\[transformers\]"):
        load_encoder(tmp_path)
    with pytest.raises(MissingExtraError, match=r"bayesbias\[transformers\]"):
        load_encoder(tmp_path, backend="sentence-transformers")


@needs_extra
def test_pickle_weights_refused(tiny_dirs, tmp_path):
    import shutil

    hf, _ = tiny_dirs
    copy = tmp_path / "m"
    shutil.copytree(hf, copy)
    for f in copy.glob("*.safetensors"):
        f.unlink()
    (copy / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(EncoderError, match="safetensors"):
        load_encoder(copy)


# -- templates ----------------------------------------------------------------------------
def _subsequence(short, long):
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def test_seat_rule_reproduces_the_shipped_seat_sentences():
    """SEAT's templates and rule regenerate May et al.'s sentences for WEAT 6 and 7.

    The authors cut the larger target set to the size of the smaller by removing sentences
    at random, so a cut set is an ordered subset of the regenerated one.
    """
    from bayesbias.comparators.seat import load_seat_test

    t = Templates.shipped()
    for n, capitalise in ((7, False), (6, True)):
        sets = load_wordlist(f"weat{n}").weat_sets()
        shipped = load_seat_test(f"seat{n}")
        for key in "XYAB":
            words = [w.capitalize() if capitalise and key in "XY" else w
                     for w in getattr(sets, key)]
            made = [s for w in words for s in t.seat_sentences(w)]
            got = list(shipped.sets[key])
            if len(made) == len(got):
                assert made == got, (n, key)
            else:
                assert key in "XY" and _subsequence(got, made), (n, key)
                assert len(shipped.sets["X"]) == len(shipped.sets["Y"])
    assert load_seat_test("seat7").sizes() == {"X": 72, "Y": 72, "A": 80, "B": 80}


def test_user_templates_in_the_word_list(tmp_path):
    toml = tmp_path / "t.toml"
    toml.write_text(
        'name = "t"\n[classes.a]\nprotected_words = ["nurse"]\nstereotypes = ["kind"]\n'
        '[classes.b]\nprotected_words = ["doctor"]\nstereotypes = ["rude"]\n'
        '[templates]\ndefault = ["I saw {article} {term}."]\n'
        '[templates.words]\nkind = "adjective"\n', encoding="utf-8")
    t = Templates.from_wordlist(load_wordlist(toml))
    assert t.sentences("nurse") == ["I saw a nurse."]
    assert t.sentences("kind") == ["This is kind.", "That is kind.", "They are kind."]
    bad = tmp_path / "bad.toml"
    bad.write_text(toml.read_text().replace('"adjective"', '"adverb"'), encoding="utf-8")
    with pytest.raises(EncoderError, match="unknown template group 'adverb'"):
        Templates.from_wordlist(load_wordlist(bad))


# -- corpus -------------------------------------------------------------------------------
def test_corpus_reading_and_seeded_contexts(tmp_path):
    lines = ["The nurse is here.", "", "A NURSE came.", "nurses are here", "The nurse is here.",
             "my nurse-friend", "nurse nurse"] + [f"Nurse number {i}." for i in range(30)]
    path = tmp_path / "c.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    sentences = read_corpus(path)
    assert len(sentences) == len(set(lines)) - 1  # blank and repeat dropped
    ctx = find_contexts(sentences, ["nurse", "doctor"], n=5, seed=1)
    assert ctx["doctor"] == [] and len(ctx["nurse"]) == 5
    for s, (a, b) in ctx["nurse"]:
        assert s[a:b].lower() == "nurse"
    assert ctx == find_contexts(sentences, ["doctor", "nurse"], n=5, seed=1)  # order-free
    assert ctx != find_contexts(sentences, ["nurse"], n=5, seed=2)
    every = find_contexts(sentences, ["nurse"], n=100, seed=1)["nurse"]
    got = {s for s, _ in every}
    assert "nurses are here" not in got and "my nurse-friend" not in got
    assert "A NURSE came." in got and ("nurse nurse", (0, 5)) in every
    with pytest.raises(EncoderError, match="no such file"):
        read_corpus(tmp_path / "none.txt")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(EncoderError, match="no sentences"):
        read_corpus(tmp_path / "empty.txt")


# -- the three ways and the hook ------------------------------------------------------------
@needs_extra
def test_three_ways_through_load_embedding(tiny_dirs, cache_dir, tmp_path, monkeypatch):
    from bayesbias.embeddings import load_embedding

    monkeypatch.setenv("BAYESBIAS_CACHE", str(cache_dir))
    hf, _ = tiny_dirs
    corpus = tmp_path / "c.txt"
    corpus.write_text("The nurse is kind.\nA kind doctor.\nThe doctor came.\n", encoding="utf-8")
    words = ["nurse", "doctor", "kind"]
    enc = load_encoder(hf)
    alone = load_embedding(EncoderSource(str(hf), how="word"), words)
    np.testing.assert_allclose(alone.matrix(words), enc.encode(words), atol=1e-6)
    tpl = load_embedding(EncoderSource(str(hf), how="templates"), words)
    t = Templates.shipped()
    np.testing.assert_allclose(tpl.matrix(["nurse"])[0],
                               enc.encode(t.sentences("nurse")).mean(axis=0), atol=1e-6)
    src = EncoderSource(str(hf), how="contexts", corpus=str(corpus), contexts=5)
    ctx = load_embedding(src, words + ["secretary"])
    assert "secretary" not in ctx and ctx.meta["contexts_used"]["doctor"] == 2
    s1, s2 = "A kind doctor.", "The doctor came."
    want = enc.token_vectors([s1, s2], [(7, 13), (4, 10)]).mean(axis=0)
    np.testing.assert_allclose(ctx.matrix(["doctor"])[0], want, atol=1e-6)
    with pytest.raises(EncoderError, match="need a corpus"):
        EncoderSource(str(hf), how="contexts")


# -- command line ---------------------------------------------------------------------------
def _cli(capsys, *argv):
    from bayesbias.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@needs_extra
def test_cli_weat_and_report_options_accept_an_encoder(tiny_dirs, capsys, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("BAYESBIAS_CACHE", str(tmp_path / "cache"))
    hf, _ = tiny_dirs
    code, out, err = _cli(capsys, "--quiet", "weat", "--encoder", str(hf), "--wordlist", "weat7",
                          "--json")
    assert code == 0, err
    data = json.loads(out)  # nothing but JSON on stdout
    assert "encoder" in data["source"] and np.isfinite(data["effect_size"])
    with pytest.raises(SystemExit) as exc:
        _cli(capsys, "weat", "--encoder", str(hf), "--embedding", "x.txt")
    assert exc.value.code == 2 and "not both" in capsys.readouterr().err


def test_cli_encoder_errors_exit_2(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        _cli(capsys, "weat", "--encoder", "nothing-here", "--word-vectors", "word",
             "--corpus", "c.txt")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        _cli(capsys, "weat", "--corpus", "c.txt")
    assert exc.value.code == 2 and "need --encoder" in capsys.readouterr().err
    code, _, err = _cli(capsys, "weat", "--encoder", str(tmp_path / "nope"), "--wordlist", "weat7")
    assert code == 2 and "not on disk" in err


@needs_extra
def test_cli_seat_ceat_contexts(tiny_dirs, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("BAYESBIAS_CACHE", str(tmp_path / "cache"))
    hf, _ = tiny_dirs
    code, out, err = _cli(capsys, "--quiet", "seat", "--encoder", str(hf), "--wordlist", "seat7",
                          "--permutations", "999", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["sizes"] == {"X": 72, "Y": 72, "A": 80, "B": 80}
    # the words are permuted (8 + 8: all 12,870 splits); the sentences only as secondary
    assert data["permutation"] == "exact" and data["units"]["X"] == 8
    assert data["sentence_level"]["permutation"] == "monte-carlo"
    assert data["test"] == "SEAT" and data["alternative"] == "two-sided"
    code, out, err = _cli(capsys, "--quiet", "ceat", "--encoder", str(hf), "--corpus",
                          "madlibs", "--wordlist", "madlibs_identity", "--contexts", "5",
                          "--context-draws", "50", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["n_draws"] == 50 and data["ci"][0] < data["combined"] < data["ci"][1]
    assert data["word_ci"][0] < data["ci"][0] and data["ci"][1] < data["word_ci"][1]
    table = tmp_path / "ctx.csv"
    code, out, err = _cli(capsys, "--quiet", "contexts", "--encoder", str(hf), "--corpus",
                          "madlibs", "--wordlist", "madlibs_identity", "--contexts", "3",
                          "--draws", "2", "-o", str(table))
    assert code == 0, err
    import pandas as pd

    t = pd.read_csv(table)
    assert sorted(t["context"].unique()) == [0, 1]
    assert set(t["connection"]) == {"associated", "different", "human", "none"}
    assert len(t) == 2 * 11 * (28 + 20 + 7)
