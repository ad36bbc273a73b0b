"""Hostile corpus, class 1: absurd option values and argument errors.

Every case: exit 2, one line naming the flag, no traceback, nothing written.
"""

from __future__ import annotations

import pytest
from hostile import assert_clean_error, listing, run_cli, run_main

from bayesbias import datasets, embeddings
from bayesbias.errors import BayesbiasError, InvalidArgumentError
from bayesbias.validation import (
    validate_ci_kind,
    validate_ci_prob,
    validate_float,
    validate_int,
    validate_seed,
)

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")

# (command line, flag that the message must name)
NUMERIC = [
    (["fit", "--distances", "published:religion:reddit", "--draws", "inf"], "--draws"),
    (["fit", "--distances", "published:religion:reddit", "--draws", "nan"], "--draws"),
    (["fit", "--distances", "published:religion:reddit", "--draws", "1e12"], "--draws"),
    (["fit", "--distances", "published:religion:reddit", "--tune", "inf"], "--tune"),
    (["fit", "--distances", "published:religion:reddit", "--chains", "inf"], "--chains"),
    (["fit", "--distances", "published:religion:reddit", "--chains", "0"], "--chains"),
    (["fit", "--distances", "published:religion:reddit", "--seed", "-1"], "--seed"),
    (["fit", "--distances", "published:religion:reddit", "--seed", "1e30"], "--seed"),
    (["fit", "--distances", "published:religion:reddit", "--ci-prob", "1.5"], "--ci-prob"),
    (["fit", "--distances", "published:religion:reddit", "--ci-prob", "nan"], "--ci-prob"),
    (["report", "--chains", "inf"], "--chains"),
    (["report", "--seed", "-1"], "--seed"),
    (["report", "--permutations", "inf"], "--permutations"),
    (["report", "--null-reps", "inf"], "--null-reps"),
    (["report", "--bootstrap", "-1"], "--bootstrap"),
    (["report", "--jobs", "0"], "--jobs"),
    (["report", "--jobs", "1.5"], "--jobs"),
    (["weat", "--wordlist", "weat7", "--permutations", "inf"], "--permutations"),
    (["weat", "--wordlist", "weat7", "--seed", "-1"], "--seed"),
    (["weat", "--wordlist", "weat7", "--bootstrap", "-1"], "--bootstrap"),
    (["simulate", "--workers", "0"], "--workers"),
    (["simulate", "--workers", "-1"], "--workers"),
    (["simulate", "--sd", "nan"], "--sd"),
    (["simulate", "--alpha", "2"], "--alpha"),
    (["simulate", "--alpha", "nan"], "--alpha"),
    (["simulate", "--reps", "-5"], "--reps"),
    (["bbu", "--n", "3160", "--variance", "inf"], "--variance"),
    (["bbu", "--n", "3160", "--variance", "nan"], "--variance"),
    (["bbu", "--n", "3160", "--ci-prob", "nan"], "--ci-prob"),
    (["debias", "-k", "inf"], "-k"),
    (["debias", "-k", "0"], "-k"),
    (["classifier", "--data", "madlibs", "--score", "TOXICITY@1", "--ci-prob", "1.5"],
     "--ci-prob"),
    (["classifier", "--data", "madlibs", "--score", "TOXICITY@1", "--threshold", "nan"],
     "--threshold"),
    (["classifier", "--data", "madlibs", "--score", "TOXICITY@1", "--bootstrap", "-5"],
     "--bootstrap"),
]


@pytest.mark.parametrize(("argv", "flag"), NUMERIC, ids=[" ".join(a[0:1] + a[-2:])
                                                         for a, _ in NUMERIC])
def test_absurd_numbers_refused_at_parse_time(capsys, tmp_path, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(capsys, argv)
    assert_clean_error(code, err, flag)
    assert listing(tmp_path) == []


def test_installed_cli_one_line_no_traceback(tmp_path):
    res = run_cli(["fit", "--distances", "published:religion:reddit", "--draws", "inf"],
                  cwd=tmp_path)
    assert_clean_error(res.returncode, res.stderr, "--draws")
    assert res.stdout == "" and listing(tmp_path) == []


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_and_debug_after_the_command(capsys, where):
    argv = ["wordlists", "religion", "--json"]
    argv = (["--quiet", "--debug"] + argv) if where == "before" else (argv + ["--quiet",
                                                                             "--debug"])
    code, out, _ = run_main(capsys, argv)
    assert code == 0 and '"religion"' in out


def test_debug_after_command_shows_traceback(capsys):
    with pytest.raises(BayesbiasError):
        run_main(capsys, ["wordlists", "no-such-list", "--debug"])


# -- the validation module, used by Python and the CLI alike ---------------------------
@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), float("inf"), "x", True])
def test_ci_prob_refused(bad):
    with pytest.raises(InvalidArgumentError, match="ci_prob"):
        validate_ci_prob(bad)


def test_validators_accept_and_refuse():
    assert validate_int("1e3", "n") == 1000 and validate_seed(0) == 0
    assert validate_float("0.5", "x", low=0, high=1) == 0.5
    for call in (lambda: validate_int("1.5", "n"), lambda: validate_int("inf", "n"),
                 lambda: validate_seed(-1), lambda: validate_seed(2**32),
                 lambda: validate_float("nan", "x"), lambda: validate_ci_kind("ETI"),
                 lambda: validate_float(0, "x", low=0, low_open=True)):
        with pytest.raises(InvalidArgumentError):
            call()


@pytest.mark.parametrize("call", [
    lambda: datasets.published_table("nope"),
    lambda: datasets.published_table("religion", "nope"),
    lambda: datasets.published_table("weat_7", "debiased_reddit"),
    lambda: embeddings.load_embedding("default", format="nope"),
    lambda: embeddings.lookup(embeddings.Embedding(["a"], [[1.0]]), {"x": ["a"]}, "nope"),
    lambda: embeddings.save_embedding(embeddings.Embedding(["a b"], [[1.0]]), "x.txt"),
], ids=["topic", "embedding", "debiased", "format", "on_missing", "save-words"])
def test_library_argument_errors_are_typed(call, tmp_path, monkeypatch):
    """Bad arguments raise a BayesbiasError (CLI exit 2), not a bare ValueError (exit 1)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BayesbiasError):
        call()
    assert listing(tmp_path) == []
