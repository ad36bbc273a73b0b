"""One command-line and JSON vocabulary.

Every option has help that states its default (the value itself, not just the word);
an option name means one thing in every command; earlier spellings keep working with a
deprecation warning; each command's ``--json`` follows the schema of its result type
(``bayesbias.schemas``), which ``docs/json.md`` documents.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import jsonschema
import pytest
from json_schemas import validate

from bayesbias.cli import build_parser, main
from bayesbias.cli._common import _DeprecatedAlias

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")

ROOT = Path(__file__).resolve().parents[1]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(p):
    """Yield the visible options of `p` (not --help, not the global --debug / --quiet)."""
    for a in p._actions:
        if (isinstance(a, (argparse._HelpAction, _DeprecatedAlias)) or not a.option_strings
                or a.help == argparse.SUPPRESS or a.dest in ("debug", "quiet")):
            continue
        yield a


def _forms(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [" ".join(map(str, value)), ",".join(map(str, value))]
    out = [str(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        out.append(f"{value:,}")
    if isinstance(value, float):
        out.append(f"{value:g}")
    return out


def test_every_option_has_help_that_states_its_default():
    missing_help, hidden = [], []
    for name, p in _subparsers().items():
        fmt = p._get_formatter()
        for a in _options(p):
            if not a.help:
                missing_help.append(f"{name} {a.option_strings[0]}")
                continue
            if a.required or isinstance(a, (argparse._StoreTrueAction,
                                            argparse._StoreFalseAction,
                                            argparse._StoreConstAction)):
                continue
            text = fmt._expand_help(a)
            if "default" not in text:
                hidden.append(f"{name} {a.option_strings[0]}: {text}")
            elif a.default is not None and not any(
                    re.search(r"(?<![\w.])" + re.escape(f) + r"(?!\w)", text)
                    for f in _forms(a.default)):
                hidden.append(f"{name} {a.option_strings[0]}: {a.default!r} not in {text!r}")
    assert not missing_help, missing_help
    assert not hidden, "\n".join(hidden)


def test_an_option_name_means_one_thing_in_every_command():
    seen: dict[str, tuple] = {}
    clashes = []
    for name, p in _subparsers().items():
        for a in _options(p):
            for flag in a.option_strings:
                dest = a.dest
                if isinstance(a, argparse._AppendAction) and dest.endswith("s"):
                    dest = dest.removesuffix("s") if dest != "distances" else dest
                sig = (dest, a.nargs)
                if flag in ("--a", "--b"):  # compare's sides vs the word sets: see below
                    continue
                if flag in seen and seen[flag][0] != sig:
                    clashes.append(f"{flag}: {seen[flag][1]} {seen[flag][0]} vs {name} {sig}")
                seen.setdefault(flag, (sig, name))
    assert not clashes, "\n".join(clashes)
    # the flags the issue found with two meanings, each with one now
    parsers = _subparsers()
    assert {a.dest for p in parsers.values() for a in _options(p)
            if "--draws" in a.option_strings} == {"draws"}
    for cmd in ("ceat", "contexts"):  # context draws have their own name
        assert not any("--draws" in a.option_strings for a in _options(parsers[cmd]))
    assert not any("--null" in a.option_strings for a in _options(parsers["design"]))
    assert not any("--classes" in a.option_strings for a in _options(parsers["design"]))
    assert not any("--targets" in a.option_strings for a in _options(parsers["mac"]))
    tables = {n for n, p in parsers.items() for a in _options(p)
              if "--distances" in a.option_strings}
    assert tables >= {"distances", "weat", "mac", "simulate", "fit", "report", "design"}
    assert not any("--table" in a.option_strings for p in parsers.values()
                   for a in _options(p))  # only as a deprecated alias
    lists = {n for n, p in parsers.items() for a in _options(p)
             if "--wordlist" in a.option_strings}
    assert lists >= {"distances", "weat", "mac", "metric", "fit", "compare", "report",
                     "debias", "seat", "ceat", "contexts", "train", "design"}


#: (command, old spelling, new spelling, value, dest): each earlier spelling still parses.
ALIASES = [
    ("weat", "--test", "--wordlist", "weat6", "wordlist"),
    ("metric", "--test", "--wordlist", "weat6", "wordlist"),
    ("seat", "--test", "--wordlist", "seat6", "wordlist"),
    ("ceat", "--test", "--wordlist", "weat6", "wordlist"),
    ("ceat", "--draws", "--context-draws", "7", "draws"),
    ("contexts", "--draws", "--context-draws", "7", "draws"),
    ("weat", "--table", "--distances", "t.csv", "distances"),
    ("mac", "--table", "--distances", "t.csv", "distances"),
    ("simulate", "--table", "--distances", "t.csv", "distances"),
    ("fit", "--table", "--distances", "t.csv", "distances"),
    ("distances", "--table", "--distances", "t.csv", "distances"),
    ("report", "--table", "--distances", "t.csv", "distances"),
    ("design", "--null", "--null-contrast", "associated - human", "null_contrast"),
    ("design", "--classes", "--n-classes", "3", "n_classes"),
    ("mac", "--targets", "--target-counting", "definite_sets", "targets"),
    ("classifier", "--confidence", "--ci-prob", "0.9", "ci_prob"),
    ("classifier", "--n-boot", "--bootstrap", "9", "bootstrap"),
    ("classifier", "--parity", "--reading", "code", "reading"),
    ("bbu", "--confidence", "--ci-prob", "0.9", "ci_prob"),
]
_REQUIRED = {"seat": ["--encoder", "e"], "ceat": ["--encoder", "e", "--corpus", "c"],
             "contexts": ["--encoder", "e", "--corpus", "c", "-o", "x.csv"],
             "classifier": ["--data", "madlibs"], "metric": ["rnd"]}


@pytest.mark.parametrize(("command", "old", "new", "value", "dest"), ALIASES,
                         ids=[f"{c} {o}" for c, o, *_ in ALIASES])
def test_deprecated_spellings_still_work_with_a_warning(capsys, command, old, new, value,
                                                        dest):
    parser = build_parser([command])
    base = [command, *_REQUIRED.get(command, [])]
    if command == "metric":  # the positional goes first
        base = [command, "rnd"]
    new_args = parser.parse_args([*base, new, value])
    assert capsys.readouterr().err == ""
    old_args = parser.parse_args([*base, old, value])
    err = capsys.readouterr().err
    assert f"warning: {old} is deprecated; use {new}" in err
    assert getattr(old_args, dest) == getattr(new_args, dest)
    assert vars(old_args) == vars(new_args)
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    assert old not in capsys.readouterr().out.split()  # hidden from --help


def test_deprecated_alias_keeps_a_repeatable_option_repeatable(capsys):
    args = build_parser(["report"]).parse_args(
        ["report", "--distances", "a.csv", "--table", "b.csv"])
    assert args.distances == ["a.csv", "b.csv"]


def test_word_sets_parsed_in_one_place(capsys, tmp_path):
    """Both weat and metric take --x/--y/--a/--b alike, with the same errors."""
    for command in ("weat", "metric"):
        extra = ["rnd"] if command == "metric" else []
        assert main([command, *extra, "--x", "he", "--y", "she"]) == 2
        assert "missing --a --b" in capsys.readouterr().err
        assert main([command, *extra, "--wordlist", "gender", "--x", "he", "--y", "she",
                     "--a", "x", "--b", "y"]) == 2
        assert "either --wordlist or --x/--y/--a/--b" in capsys.readouterr().err


# -- JSON ---------------------------------------------------------------------------
def _json(capsys, argv) -> dict:
    assert main(["--quiet", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


FAST = [
    (["wordlists"], "wordlists"),
    (["wordlists", "religion"], "wordlist"),
    (["distances", "--wordlist", "religion"], "distance_table"),
    (["weat", "--wordlist", "weat7", "--permutations", "99", "--bootstrap", "20"], "weat"),
    (["weat", "--distances", "published:weat_7:reddit"], "weat"),
    (["mac", "--distances", "published:religion:reddit"], "mac"),
    (["metric", "rnd", "--wordlist", "gender", "--bootstrap", "10", "--null-reps", "5"],
     "metric"),
    (["metric", "all", "--wordlist", "weat7", "--bootstrap", "5", "--null-reps", "5",
      "--splits", "2"], "metric_table"),
    (["simulate", "--reps", "30", "--permutations", "19"], "null_study"),
    (["simulate", "--reps", "10", "--permutations", "19", "--sd", "0.05", "0.08"],
     "null_study"),
    (["bbu", "--n", "3160", "--delta", "0.05"], "bbu"),
    (["debias", "--wordlist", "religion"], "debias"),
    (["design", "--distances", "published:religion:reddit", "--model", "hierarchical",
      "--words", "5", "--reps", "10"], "design"),
    (["calibrate", "--method", "exact", "--reps", "10", "--shape", "small"], "calibration"),
]


@pytest.mark.parametrize(("argv", "result_type"), FAST, ids=[" ".join(a[:2]) for a, _ in FAST])
def test_command_json_follows_its_schema(capsys, argv, result_type):
    from bayesbias.schemas import COMMANDS

    payload = _json(capsys, argv)
    validate(payload, result_type)
    if argv[0] not in ("wordlists", "metric"):
        assert COMMANDS[argv[0]] == result_type


def test_schema_catches_a_renamed_key(capsys):
    payload = _json(capsys, ["distances", "--wordlist", "religion"])
    payload["missing"] = payload.pop("dropped_words")  # the earlier name
    with pytest.raises(jsonschema.ValidationError, match="dropped_words"):
        validate(payload, "distance_table")


def test_classifier_json_is_the_result_to_dict(capsys, monkeypatch):
    import bayesbias.cli.classifier as cli_classifier
    from bayesbias.plain import to_plain

    made = []
    real = cli_classifier.classifier_bias
    monkeypatch.setattr(cli_classifier, "classifier_bias",
                        lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    payload = _json(capsys, ["classifier", "--data", "madlibs", "--metrics", "bbu,auc,fped",
                             "--bootstrap", "20", "--seed", "3"])
    validate(payload, "classifier_bias")
    assert payload == json.loads(json.dumps(to_plain(made[0].to_dict())))
    assert payload["data"] == "madlibs" and set(payload["metrics"]) == {"bbu", "auc", "fped"}


def test_every_command_has_a_documented_schema():
    from bayesbias.schemas import COMMANDS, SCHEMAS, markdown

    commands = set(_subparsers())
    assert commands == set(COMMANDS), commands ^ set(COMMANDS)
    assert set(COMMANDS.values()) <= set(SCHEMAS)
    for result_type in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(
            __import__("bayesbias.schemas", fromlist=["schema"]).schema(result_type))
    assert (ROOT / "docs" / "json.md").read_text(encoding="utf-8") == markdown(), (
        "docs/json.md is stale: python -m bayesbias.schemas > docs/json.md")
