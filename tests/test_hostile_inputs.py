"""Hostile corpus, class 2: malformed or unusual input files.

Embedding files (every format, malformed lines, non-regular files), word lists, distance
tables, TOML nesting, unreadable files, terminal escape codes. Every case: a typed error
(CLI exit 2, one line naming the file / word / column), no traceback, nothing written.
"""

from __future__ import annotations

import gzip
import os
import struct
import threading

import numpy as np
import pandas as pd
import pytest
from hostile import assert_clean_error, listing, run_cli, run_main
from written import assert_distance_table

from bayesbias.distances import distance_table, read_distance_table, write_distance_table
from bayesbias.embeddings import Embedding, load_embedding
from bayesbias.errors import DistanceTableError, EmbeddingFormatError, WordListError
from bayesbias.wordlists import load_wordlist

WORDS = ["alpha", "beta", "gamma", "delta", "eps"]


def _text(rows, header=True) -> bytes:
    lines = [f"{len(rows)} 3"] if header else []
    lines += rows
    return ("\n".join(lines) + "\n").encode()


GOOD = [f"{w} {i + 1}.0 0.5 -0.25" for i, w in enumerate(WORDS)]

# A malformed record on the line of "delta", which the study below does not ask for.
MALFORMED = {
    "short-vector": "delta 1.0 2.0",
    "non-number": "delta 1.0 x 2.0",
    "nan": "delta 1.0 nan 2.0",
    "inf": "delta 1.0 inf 2.0",
    "zero-vector": "delta 0 0 0",
    "duplicate": "beta 1.0 2.0 3.0",
}


def _write(path, rows, fmt):
    if fmt == "word2vec":
        path.write_bytes(_text(rows))
    elif fmt == "glove":
        path.write_bytes(_text(rows, header=False))
    elif fmt == "gzip":
        path.write_bytes(gzip.compress(_text(rows)))
    return path


@pytest.mark.parametrize("fmt", ["word2vec", "glove", "gzip"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_line_of_unused_word(tmp_path, fmt, case):
    """Not used: accepted unless validate=True (the README's stated guarantee)."""
    rows = GOOD[:3] + [MALFORMED[case]] + GOOD[4:]
    path = _write(tmp_path / f"e.{fmt}", rows, fmt)
    emb = load_embedding(path, ["alpha", "eps"])
    assert set(emb.words) == {"alpha", "eps"}
    line = f"line {4 if fmt == 'glove' else 5}\\b"
    with pytest.raises(EmbeddingFormatError, match=line):
        load_embedding(path, ["alpha", "eps"], validate=True)
    with pytest.raises(EmbeddingFormatError, match=line):
        load_embedding(path)  # no `words`: the whole file is checked


@pytest.mark.parametrize("fmt", ["word2vec", "glove", "gzip"])
@pytest.mark.parametrize("case", [c for c in MALFORMED if c != "duplicate"])
def test_malformed_line_of_used_word(tmp_path, fmt, case):
    rows = GOOD[:3] + [MALFORMED[case]] + GOOD[4:]
    path = _write(tmp_path / f"e.{fmt}", rows, fmt)
    with pytest.raises(EmbeddingFormatError, match=r"line [45]\b.*'delta'"):
        load_embedding(path, ["alpha", "delta"])


def test_bad_utf8_word(tmp_path):
    path = tmp_path / "e.txt"
    path.write_bytes(_text(GOOD[:3]) + b"\xff\xfe 1 2 3\n".replace(b"3 3", b"4 3"))
    path.write_bytes(b"4 3\n" + b"\n".join(r.encode() for r in GOOD[:3]) + b"\n\xff\xfe 1 2 3\n")
    with pytest.raises(EmbeddingFormatError, match="UTF-8"):
        load_embedding(path, ["alpha"], validate=True)


def _binary(path, records, dim=3):
    out = [f"{len(records)} {dim}\n".encode()]
    for word, vec in records:
        out.append(word + b" " + struct.pack(f"<{len(vec)}f", *vec) + b"\n")
    path.write_bytes(b"".join(out))
    return path


@pytest.mark.parametrize("case", ["nan", "zero", "duplicate", "bad-utf8"])
def test_binary_malformed_record(tmp_path, case):
    recs = [(w.encode(), [1.0 + i, 0.5, -0.25]) for i, w in enumerate(WORDS)]
    bad = {"nan": (b"delta", [1.0, float("nan"), 0.0]), "zero": (b"delta", [0.0, 0.0, 0.0]),
           "duplicate": (b"beta", [1.0, 2.0, 3.0]), "bad-utf8": (b"\xff\xfe", [1.0, 2.0, 3.0])}
    recs[3] = bad[case]
    path = _binary(tmp_path / "e.bin", recs)
    if case == "bad-utf8":  # every binary word is decoded: always an error
        with pytest.raises(EmbeddingFormatError, match="UTF-8"):
            load_embedding(path, ["alpha"])
        return
    assert load_embedding(path, ["alpha", "eps"]).words == ("alpha", "eps")
    with pytest.raises(EmbeddingFormatError, match="vector 4 of 5"):
        load_embedding(path, ["alpha", "eps"], validate=True)


def test_validate_flag_in_cli(capsys, tmp_path):
    rows = GOOD[:3] + [MALFORMED["non-number"]] + GOOD[4:]
    path = _write(tmp_path / "e.txt", rows, "word2vec")
    wl = tmp_path / "w.toml"
    wl.write_text('[classes.a]\nprotected_words = ["alpha"]\nstereotypes = ["beta"]\n'
                  '[classes.b]\nprotected_words = ["gamma"]\nstereotypes = ["eps"]\n')
    out = tmp_path / "t.csv"
    code, _, err = run_main(capsys, ["distances", "--embedding", path, "--wordlist", wl,
                                     "-o", out])
    assert code == 0
    rows = len(assert_distance_table(out))
    out.unlink()
    code, _, err = run_main(capsys, ["distances", "--embedding", path, "--wordlist", wl,
                                     "--validate", "-o", out])
    assert_clean_error(code, err, str(path), "line 5", "non-numeric")
    assert not out.exists()
    # --validate held for that run only: the same call without it loads the file again
    code, _, err = run_main(capsys, ["distances", "--embedding", path, "--wordlist", wl,
                                     "-o", out])
    assert code == 0, err
    assert_distance_table(out, rows)


# -- non-regular files: FIFO, devices, folders -----------------------------------------
def test_fifo_embedding_refused_without_blocking(tmp_path):
    fifo = tmp_path / "vectors.txt"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(_raises(lambda: load_embedding(fifo))))
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert done == [True]


def _raises(fn) -> bool:
    try:
        fn()
    except EmbeddingFormatError as exc:
        return "not a regular file" in str(exc)
    return False


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_device_embedding_refused(device, capsys):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    code, _, err = run_main(capsys, ["distances", "--embedding", device])
    assert_clean_error(code, err, device, "not a regular file")


def test_folder_and_fifo_as_other_inputs(tmp_path, capsys):
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    with pytest.raises(DistanceTableError, match="not a regular file"):
        read_distance_table(fifo)
    code, _, err = run_main(capsys, ["wordlists", str(fifo)])
    assert_clean_error(code, err, "not a regular file")
    code, _, err = run_main(capsys, ["distances", "--distances", str(tmp_path)])
    assert_clean_error(code, err, str(tmp_path))


# -- unreadable files ------------------------------------------------------------------
def test_unreadable_files(tmp_path, monkeypatch, capsys):
    emb = tmp_path / "e.txt"
    _write(emb, GOOD, "word2vec")
    table = tmp_path / "t.csv"
    table.write_text("x\n")
    wl = tmp_path / "w.toml"
    wl.write_text("name = 'x'\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) in
                        {str(emb), str(table)} else real_access(p, mode, **kw))
    code, _, err = run_main(capsys, ["distances", "--embedding", emb])
    assert_clean_error(code, err, str(emb), "permission")
    code, _, err = run_main(capsys, ["distances", "--distances", table])
    assert_clean_error(code, err, str(table), "permission")
    real_read = type(wl).read_text

    def deny(self, *a, **kw):
        if str(self) == str(wl):
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self, *a, **kw)

    monkeypatch.setattr(type(wl), "read_text", deny)
    code, _, err = run_main(capsys, ["wordlists", wl])
    assert_clean_error(code, err, str(wl), "Permission denied")


@pytest.mark.skipif(os.geteuid() != 0 or not hasattr(os, "setuid"),
                    reason="needs root to run the CLI as another user")
def test_unreadable_file_as_other_user(tmp_path):
    """A real permission error (chmod 000 as a non-root user): exit 2, one line."""
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody'")
    wl = tmp_path / "w.toml"
    wl.write_text("name = 'x'\n")
    wl.chmod(0)
    os.chmod(tmp_path, 0o755)
    try:
        res = run_cli(["wordlists", wl], cwd="/", user=nobody.pw_uid)
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot run as nobody: {exc}")
    if "No module named" in res.stderr or "Permission denied: '" in res.stderr and \
            "bayesbias" not in res.stderr:
        pytest.skip("the venv is not readable by 'nobody'")
    assert_clean_error(res.returncode, res.stderr, str(wl))


# -- TOML: nesting, encoding -----------------------------------------------------------
def test_deeply_nested_toml(tmp_path, capsys):
    wl = tmp_path / "deep.toml"
    wl.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(WordListError, match="nested too deeply|not valid TOML"):
        load_wordlist(wl)
    code, _, err = run_main(capsys, ["wordlists", wl])
    assert_clean_error(code, err, str(wl))


def test_toml_not_utf8(tmp_path):
    wl = tmp_path / "w.toml"
    wl.write_bytes(b"name = '\xff'\n")
    with pytest.raises(WordListError, match="UTF-8"):
        load_wordlist(wl)


# -- word lists ------------------------------------------------------------------------
def _wl(tmp_path, a_prot, a_st, b_prot, b_st, controls=None):
    text = (f"[classes.a]\nprotected_words = {a_prot!r}\nstereotypes = {a_st!r}\n"
            f"[classes.b]\nprotected_words = {b_prot!r}\nstereotypes = {b_st!r}\n")
    if controls:
        text += "[controls]\n" + "".join(f"{k} = {v!r}\n" for k, v in controls.items())
    path = tmp_path / "w.toml"
    path.write_text(text.replace("'", '"'))
    return path


@pytest.mark.parametrize(("lists", "match"), [
    ((["he", " he"], ["x"], ["she"], ["y"]), "repeats word"),
    ((["he", "he\t"], ["x"], ["she"], ["y"]), "repeats word"),
    ((["he"], ["x"], ["she"], ["he"]), "'he' is a protected word of class 'a' and a stereotype"),
    ((["he"], ["he"], ["she"], ["y"]), "'he' is a protected word"),
    ((["he", "h e"], ["x"], ["she"], ["y"]), "whitespace inside"),
], ids=["space", "tab", "other-class-stereotype", "own-stereotype", "inner-space"])
def test_word_list_contradictions(tmp_path, lists, match):
    with pytest.raises(WordListError, match=match):
        load_wordlist(_wl(tmp_path, *lists))


def test_protected_word_in_control_group(tmp_path, capsys):
    path = _wl(tmp_path, ["he"], ["x"], ["she"], ["y"], {"human": ["kind", "he"]})
    with pytest.raises(WordListError, match="control group 'human' repeats protected"):
        load_wordlist(path)
    code, _, err = run_main(capsys, ["wordlists", path])
    assert_clean_error(code, err, str(path), "'he'")


@pytest.mark.parametrize("n", [50_000, pytest.param(500_000, marks=pytest.mark.slow)])
def test_large_word_list_duplicate_check_is_linear(tmp_path, n):
    """Check duplicates with a Counter, not list.count per word.

    The quadratic check took 20 s for 50k words; now TOML parsing dominates.
    """
    words = [f"w{i}" for i in range(n)]
    path = _wl(tmp_path, ["he"], words, ["she"], ["y"])
    assert len(load_wordlist(path).stereotypes) == n + 1
    path = _wl(tmp_path, ["he"], [*words, "w7", " w9 "], ["she"], ["y"])
    with pytest.raises(WordListError, match="'w7', 'w9'"):
        load_wordlist(path)


# -- distance tables -------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_table():
    emb = load_embedding("default")
    return distance_table(emb, "religion", on_missing="drop")


def test_contradicting_connection(tmp_path, small_table, capsys):
    bad = small_table.copy()
    bad["connection"] = bad["connection"].astype(str)
    i = int(np.flatnonzero(bad["connection"] == "associated")[0])
    bad.loc[i, "connection"] = "different"
    path = tmp_path / "t.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(DistanceTableError, match=f"data row {i + 1}.*'associated'"):
        read_distance_table(path)
    code, _, err = run_main(capsys, ["distances", "--distances", path])
    assert_clean_error(code, err, str(path), "connection")


def test_word_under_two_protected_classes(tmp_path, small_table):
    bad = small_table.copy()
    word = bad["protected_word"].iloc[0]
    rows = bad.index[bad["protected_word"] == word]
    bad.loc[rows[: len(rows) // 2], "protected_class"] = "christian"
    bad["connection"] = np.where(bad["attribute_class"].isin(["human", "none"]),
                                 bad["attribute_class"],
                                 np.where(bad["attribute_class"] == bad["protected_class"],
                                          "associated", "different"))
    path = tmp_path / "t.parquet"
    bad.to_parquet(path)
    with pytest.raises(DistanceTableError, match=f"{word!r} is under 2 protected classes"):
        read_distance_table(path)


def test_shipped_tables_pass_the_label_checks():
    from bayesbias.datasets import published_table, published_tables

    for topic, emb in published_tables():
        assert len(published_table(topic, emb)) > 0


def test_table_suffix_honoured_or_refused(tmp_path, small_table, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(capsys, ["distances", "--embedding", "default", "-o", "t.xlsx"])
    assert_clean_error(code, err, "t.xlsx", ".xlsx")
    assert listing(tmp_path) == []
    write_distance_table(small_table, "t.PARQUET")
    assert pd.read_parquet("t.PARQUET").shape == small_table.shape


# -- terminal escape codes -------------------------------------------------------------
def test_escape_codes_printed_escaped(tmp_path, capsys, monkeypatch):
    evil = "\x1b[2J\x1b]0;pwned\x07"
    wl = tmp_path / f"list{evil[:4]}.toml"
    wl.write_text(f'name = "n{evil}"\n[classes.a]\nprotected_words = ["x{evil}"]\n'
                  '[classes.b]\nprotected_words = ["y"]\n'.replace("\x1b", "\\u001b")
                  .replace("\x07", "\\u0007"))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, ["wordlists", wl])
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b" in out
    code, _, err = run_main(capsys, ["distances", "--embedding", tmp_path / f"no{evil}.txt"])
    assert code == 2 and "\x1b" not in err and "\\x1b" in err


def test_embedding_is_a_dataclass_not_a_file():
    # An in-memory embedding needs no file checks.
    emb = Embedding(["a", "b"], np.eye(2, dtype=np.float32))
    assert "a" in emb
