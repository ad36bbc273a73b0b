"""Hostile corpus, class 6: the surfaces added last round (issue 21).

CSV formula injection, full disks during a netCDF write, memory bounds, the corpus reader,
undefined diagnostics, the report folder (files a user added, unwritable targets, long
names), forked workers whose parent dies. Every case: a typed error (CLI exit 2, one line),
nothing half-written, nothing stray.
"""

from __future__ import annotations

import csv
import os

import numpy as np
import pandas as pd
import pytest
from hostile import listing, run_cli, run_main

from bayesbias._atomic import spreadsheet_safe

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")

FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]


# -- CSV formula injection -------------------------------------------------------------
def test_spreadsheet_safe_neutralises_text_only():
    df = pd.DataFrame({"group": FORMULAS + ["plain", "-1.5"],
                       "value": [-1.0, 2.0, -3.5, 0.0, 1.0, 2.0, -7.0, -0.25],
                       "n": np.arange(8) - 4})
    out = spreadsheet_safe(df)
    assert all(v.startswith("'") for v in out["group"][:len(FORMULAS)])
    assert out["group"].iloc[-2] == "plain" and out["group"].iloc[-1] == "-1.5"
    pd.testing.assert_series_equal(out["value"], df["value"])  # numbers stay numbers
    pd.testing.assert_series_equal(out["n"], df["n"])
    assert df["group"].iloc[0].startswith("=")  # the input is not changed


def test_classifier_output_has_no_formula_cells(tmp_path, capsys):
    """Group names such as =HYPERLINK(...) were written unchanged into classifier -o."""
    rng = np.random.default_rng(0)
    n = 200
    groups = {"=HYPERLINK(\"http://evil\")": rng.integers(0, 2, n),
              "@cmd": rng.integers(0, 2, n), "+plus": rng.integers(0, 2, n)}
    df = pd.DataFrame({"label": rng.integers(0, 2, n), "s": rng.random(n), **groups})
    src = tmp_path / "scores.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "table.csv"
    code, _, err = run_main(capsys, ["classifier", "--data", src, "--label", "label",
                                     "--score", "s", "--groups", ",".join(groups),
                                     "--metrics", "auc", "--bootstrap", "0", "-o", out])
    assert code == 0, err
    with open(out, newline="", encoding="utf-8") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@")], cells
    negative = [c for c in cells if c.startswith("-")]
    assert all(float(c) < 0 for c in negative)  # only numbers start with '-'
    table = pd.read_csv(out)
    assert "'=HYPERLINK(\"http://evil\")" in set(table["group"])


# -- Unicode spellings of one word ------------------------------------------------------
def _wordlist(tmp_path, a_prot, b_prot, a_st=("x",), b_st=("y",)):
    import json

    text = (f"[classes.a]\nprotected_words = {json.dumps(list(a_prot))}\n"
            f"stereotypes = {json.dumps(list(a_st))}\n"
            f"[classes.b]\nprotected_words = {json.dumps(list(b_prot))}\n"
            f"stereotypes = {json.dumps(list(b_st))}\n")
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    return path


NFC, NFD = "caf\u00e9", "cafe\u0301"


@pytest.mark.parametrize(("a", "b", "note"), [
    ([NFC, NFD], ["she"], "not in NFC form"),
    ([NFC], [NFD], "not in NFC form"),
    (["jew"], ["j\u200dew"], "invisible characters"),
    (["jew", "jew\u200b"], ["she"], "invisible characters"),
    (["jew"], ["\uff4a\uff45\uff57"], "compatibility"),
], ids=["nfc-nfd-same-class", "nfc-nfd-two-classes", "zwj", "zwsp", "fullwidth"])
def test_unicode_spellings_of_one_word_refused(tmp_path, capsys, a, b, note):
    """Kept as different words with no message before issue 21."""
    from bayesbias.errors import WordListError
    from bayesbias.wordlists import load_wordlist

    path = _wordlist(tmp_path, a, b)
    with pytest.raises(WordListError, match=f"two Unicode spellings.*{note}"):
        load_wordlist(path)
    code, _, err = run_main(capsys, ["wordlists", path])
    assert code == 2 and str(path) in err and "Traceback" not in err


def test_unicode_words_alone_are_kept_as_written(tmp_path):
    from bayesbias.wordlists import load_wordlist

    wl = load_wordlist(_wordlist(tmp_path, [NFD, "\u05d9\u05d4\u05d5\u05d3\u05d9"], ["she"]))
    assert NFD in wl.protected_words  # looked up as written: no silent normalisation


def test_shipped_word_lists_have_one_spelling_per_word():
    from bayesbias.wordlists import available_wordlists, load_wordlist

    for name in available_wordlists():
        load_wordlist(name)


# -- full disk while writing --------------------------------------------------------------
def test_netcdf_larger_than_the_free_space_is_refused_before_writing(tmp_path, monkeypatch,
                                                                     religion_fit):
    """The fit is serialised in memory, then checked against the free space."""
    import bayesbias._atomic as atomic
    from bayesbias.errors import OutputPathError

    monkeypatch.setattr(atomic, "_free_bytes", lambda folder: 5000)
    with pytest.raises(OutputPathError, match=r"no space left.*bytes to write, 5,000 free"):
        religion_fit.save(tmp_path / "fit.nc")
    assert listing(tmp_path) == []


class _FullDisk:
    """A file whose writes fail as on a disk that filled up meanwhile."""

    def __init__(self, path, mode):
        self.path = path

    def __enter__(self):
        open(self.path, "wb").close()  # noqa: SIM115 - the temporary file exists
        return self

    def __exit__(self, *exc):
        return False

    def write(self, data):
        import errno
        import os

        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_filling_during_the_netcdf_write_is_clean(tmp_path, monkeypatch, religion_fit):
    """Today: ~200 lines of h5py errors, a segfault (rc 139), a hidden partial .nc left."""
    import bayesbias._atomic as atomic
    from bayesbias.errors import OutputPathError

    monkeypatch.setattr(atomic, "open", _FullDisk, raising=False)
    with pytest.raises(OutputPathError, match="cannot write .*fit.nc: no space left"):
        religion_fit.save(tmp_path / "fit.nc")
    assert listing(tmp_path) == []


def _tmpfs(path, size):
    import subprocess

    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True)
    if done.returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    return path


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs")
@pytest.mark.parametrize("size", ["2m", "4200k", "9m"])
def test_report_and_fit_on_a_really_full_disk(tmp_path, size):
    """A real small file system: exit 2, one line, nothing left (no segfault)."""
    import subprocess

    disk = _tmpfs(tmp_path / "disk", size)
    try:
        for args in (["fit", "--wordlist", "religion", "--draws", "2000", "--tune", "300",
                      "--chains", "2", "-o", disk / "fit.nc"], ["report", "-o", disk / "rep"]):
            done = run_cli([*args, "--quiet"], timeout=600)
            if done.returncode == 0:  # it fitted: make room for the next command
                subprocess.run(["rm", "-rf", str(args[-1])], check=True)
                continue
            assert done.returncode == 2, done.stderr[-2000:]
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
            assert "no space left" in done.stderr
            assert [p.name for p in disk.iterdir()] == []
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# -- memory bound of a fit ------------------------------------------------------------------
@pytest.fixture
def table40(tmp_path):
    from bayesbias.datasets import published_table

    t = published_table("religion", "reddit")
    path = tmp_path / "t40.csv"
    t.groupby("connection").sample(10, random_state=0).to_csv(path, index=False)
    return path


def test_fit_memory_bound_counts_what_is_stored(table40, capsys):
    """1e6 draws x 4 chains on 40 rows passed the old '2 GB' guard, then took 9.3 GB."""
    import gc

    from bayesbias.models.fit import MAX_FIT_BYTES, fit_memory

    # garbage of earlier tests (a BytesIO with an exported buffer) is collected, and its
    # 'Exception ignored' report printed, now rather than inside the command's stderr
    gc.collect()
    capsys.readouterr()
    code, _, err = run_main(capsys, ["fit", "--distances", table40, "--draws", "1000000",
                                     "--chains", "4", "--quiet"])
    assert code == 2 and "GB of draws in memory" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    # measured peak growth per draw and chain (nutpie, 60 cells): hierarchical 8.9 kB;
    # crossed with 29 / 322 attribute words 12.4 / 46.6 kB
    assert fit_memory(1, 1, 60) == pytest.approx(8_900, rel=0.1)
    assert fit_memory(1, 1, 60, 29) == pytest.approx(12_400, rel=0.1)
    assert fit_memory(1, 1, 60, 322) == pytest.approx(46_600, rel=0.1)
    assert fit_memory(1000, 4, 4 * 1000, 1000) < MAX_FIT_BYTES  # defaults, 1000 words: fine


# -- the corpus is streamed, its lines and expansion bounded ------------------------------
def test_gzip_of_blank_lines_is_refused_fast_and_small(tmp_path):
    """A 4 MB gzip of newlines ran out of memory after 81 s before issue 21."""
    import gzip
    import resource
    import time

    from bayesbias.encoders import EncoderError, iter_corpus

    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip.compress(b"\n" * (300 << 20), compresslevel=9))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(EncoderError, match=f"{path}: expands more than 200-fold"):
        list(iter_corpus(path))
    assert time.perf_counter() - t0 < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # kB


@pytest.mark.parametrize("where", [1, 3])
def test_overlong_corpus_line_refused_naming_it(tmp_path, where):
    from bayesbias.encoders import EncoderError, iter_corpus

    lines = [b"the nurse is here", b"a doctor"]
    lines.insert(where - 1, b"x" * (2 << 20))
    path = tmp_path / "c.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(EncoderError, match=f"{path}, line {where}: longer than 1 MiB"):
        list(iter_corpus(path))


def test_corpus_stream_matches_the_whole_read(tmp_path):
    """Streaming keeps only matching sentences; the draws are those of the whole list."""
    from bayesbias.encoders import find_contexts, iter_corpus, read_corpus

    rng = np.random.default_rng(3)
    words = ["nurse", "doctor", "man", "woman", "ice-cream", "new york"]
    lines = []
    for i in range(4000):
        pick = rng.choice(words + ["x", "y"], size=3)
        lines.append(f"s{i % 1500} " + " ".join(pick) + ("\n\n" if i % 7 == 0 else ""))
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = find_contexts(read_corpus(path), words, n=5, seed=9)
    assert find_contexts(iter_corpus(path), words, n=5, seed=9) == whole
    assert all(len(v) == 5 for v in whole.values())


def test_corpus_bad_utf8_names_the_line(tmp_path):
    from bayesbias.encoders import EncoderError, iter_corpus

    path = tmp_path / "c.txt"
    path.write_bytes(b"ok\nfine\nbad \xff here\n")
    with pytest.raises(EncoderError, match=f"{path}, line 3: not UTF-8"):
        list(iter_corpus(path))


def test_contexts_draws_bounded_before_the_encoder_loads(tmp_path, capsys):
    """contexts --context-draws 1000000 built the whole table in memory before issue 21."""
    code, _, err = run_main(capsys, ["contexts", "--encoder", tmp_path / "no-such-model",
                                     "--corpus", "madlibs", "--wordlist", "religion",
                                     "--context-draws", "1000000", "-o", tmp_path / "t.csv"])
    assert code == 2 and "--context-draws 1,000,000" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and listing(tmp_path) == []


# -- the report folder ----------------------------------------------------------------------
def _report(rows=None):
    from bayesbias.report import Report

    r = Report("t")
    df = pd.DataFrame(rows or {"group": ["a", "=1+1"], "value": [-0.5, 1.0]})
    r.section("s").table(df, "main", "a table")
    return r


def test_users_csv_in_tables_is_never_deleted(tmp_path):
    """A user's tables/notes.csv was deleted when the report was written again."""
    from bayesbias.errors import OutputPathError

    out = tmp_path / "rep"
    _report().write(out)
    (out / "tables" / "notes.csv").write_text("mine")
    (out / "figures" / "sketch.png").write_bytes(b"\x89PNG mine")
    with pytest.raises(OutputPathError, match="tables/notes.csv"):
        _report().write(out)
    assert (out / "tables" / "notes.csv").read_text() == "mine"
    assert (out / "figures" / "sketch.png").exists()
    (out / "tables" / "notes.csv").unlink()
    (out / "figures" / "sketch.png").unlink()
    _report().write(out)  # only its own files: replaced
    assert sorted(p.name for p in (out / "tables").iterdir()) == ["main.csv"]


def test_marker_lists_every_file_written(tmp_path):
    from bayesbias.report import MARKER

    out = tmp_path / "rep"
    _report().write(out, extra_files={"fits": lambda d: (d.mkdir(), (d / "x.nc").write_bytes(
        b"nc"))})
    listed = (out / MARKER).read_text().splitlines()[2:]
    on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert sorted(listed) == on_disk


def test_older_marker_without_a_list_protects_sub_folders(tmp_path):
    from bayesbias.errors import OutputPathError
    from bayesbias.report import MARKER

    out = tmp_path / "rep"
    _report().write(out)
    (out / MARKER).write_text("written by bayesbias report\n")  # an older version's marker
    with pytest.raises(OutputPathError, match="older bayesbias.*tables/main.csv"):
        _report().write(out)
    assert (out / "tables" / "main.csv").exists()


def test_report_tables_are_spreadsheet_safe(tmp_path):
    out = tmp_path / "rep"
    _report().write(out)
    table = pd.read_csv(out / "tables" / "main.csv")
    assert list(table["group"]) == ["a", "'=1+1"] and list(table["value"]) == [-0.5, 1.0]


def test_undefined_numbers_are_null_in_results_json(tmp_path):
    """report --chains 1 exited 1 writing results.json (r-hat is NaN with one chain)."""
    import json

    r = _report()
    r.data = {"max_rhat": np.float64("nan"), "ess": [np.inf, 3.0], "n": np.int64(4)}
    out = tmp_path / "rep"
    r.write(out)
    assert json.loads((out / "results.json").read_text()) == {
        "max_rhat": None, "ess": [None, 3.0], "n": 4}


@pytest.mark.slow
def test_report_with_one_chain_writes_null_diagnostics(tmp_path):
    import json

    done = run_cli(["report", "--chains", "1", "-o", tmp_path / "rep", "--quiet"], timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "rep" / "results.json").read_text()
    assert '"max_rhat": null' in text and "NaN" not in text
    json.loads(text)


# -- design and sensitivity on unusual pilots ------------------------------------------------
@pytest.fixture(scope="module")
def pilots(tmp_path_factory):
    from bayesbias.datasets import published_table

    t = published_table("religion", "reddit")
    root = tmp_path_factory.mktemp("pilots")
    first = t.groupby("protected_class", observed=True)["protected_word"].first()
    const = t.copy()
    const["cosine_distance"] = 0.5
    const["cosine_similarity"] = 0.5
    cases = {"no-none": t[t["connection"] != "none"], "one-word": t[t["protected_word"].isin(
        first)], "constant": const}
    out = {}
    for name, table in cases.items():
        out[name] = root / f"{name}.csv"
        table.to_csv(out[name], index=False)
    return out


@pytest.mark.parametrize(("case", "words"), [
    ("no-none", "no 'none' rows"), ("one-word", "single protected word"),
    ("constant", "every distance of connection")])
def test_design_refuses_a_pilot_it_cannot_use(pilots, capsys, case, words):
    """No none rows: an assurance drawn from the prior; one word per class or a constant
    table: 'mass on the grid edge ... please report' (exit 1) or no end, before issue 21."""
    code, _, err = run_main(capsys, ["design", "--distances", pilots[case], "--reps", "4",
                                     "--quiet"])
    assert code == 2 and words in err and str(pilots[case].name) in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_sensitivity_and_fit_refuse_unusable_tables(pilots):
    from bayesbias.distances import read_distance_table
    from bayesbias.errors import DistanceTableError
    from bayesbias.models import fit_model
    from bayesbias.studies.sensitivity import sensitivity

    for case in ("no-none", "one-word", "constant"):
        with pytest.raises(DistanceTableError):
            sensitivity(read_distance_table(pilots[case]), "hierarchical", n_resamples=2)
    with pytest.raises(DistanceTableError, match="every distance of connection"):
        fit_model(read_distance_table(pilots["constant"]), draws=10, tune=10, chains=1)


def test_fit_sensitivity_refuses_an_unusable_table_before_sampling(pilots, capsys, monkeypatch):
    from bayesbias.cli import fit as fit_cli

    monkeypatch.setattr(fit_cli, "fit_from_args", lambda *a, **k: pytest.fail("sampled"))
    code, _, err = run_main(capsys, ["fit", "--distances", pilots["no-none"], "--sensitivity",
                                     "--quiet"])
    assert code == 2 and "no 'none' rows" in err


@pytest.mark.parametrize(("model", "words"), [
    ("hierarchical_single_sd", "need residual_sd = per_connection"),
    ("separate", "draw new protected words from a fitted hierarchy")])
def test_design_refuses_a_pilot_fit_of_another_spec(tmp_path, capsys, model, words):
    """A pilot fit from a changed spec: refused with the reason, not 'grid edge ... report'."""
    fit = tmp_path / f"{model}.nc"
    code, _, err = run_main(capsys, ["fit", "--distances", "published:religion:reddit",
                                     "--model", model, "--draws", "30", "--tune", "30",
                                     "--chains", "1", "-o", fit, "--quiet"])
    assert code == 0, err
    code, _, err = run_main(capsys, ["design", "--pilot-fit", fit, "--reps", "4", "--quiet"])
    assert code == 2 and words in err and model in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
