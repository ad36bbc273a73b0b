"""``bayesbias fit`` and ``bayesbias compare`` end to end."""

import json
import re

import pytest

from json_schemas import validate
from written import assert_fit, assert_png

from bayesbias.cli import main
from bayesbias.distances import write_distance_table
from bayesbias.testing import simulate_table

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")


def test_show_model_prints_the_priors(capsys):
    assert main(["fit", "--show-model", "--model", "additive"]) == 0
    out = capsys.readouterr().out
    assert "co[c] ~ Normal(mu=0, sigma=1)" in out and "sigma ~ HalfCauchy(beta=1)" in out


def test_bad_model_exits_2_naming_choices(capsys):
    assert main(["fit", "--show-model", "--model", "nope"]) == 2
    assert "shipped models" in capsys.readouterr().err


def test_bad_published_shorthand(capsys):
    assert main(["fit", "--distances", "published:religion"]) == 2
    assert "published:TOPIC:EMBEDDING" in capsys.readouterr().err


def test_fit_json_netcdf_and_plot(tmp_path, capsys):
    table, _ = simulate_table(seed=9, words_per_class=3, n_human=15, n_none=30)
    csv = write_distance_table(table, tmp_path / "t.csv")
    rc = main(["fit", "--distances", str(csv), "--draws", "200", "--tune", "200",
               "--chains", "2", "--seed", "3", "--json", "-o", str(tmp_path / "f.nc"),
               "--plot", str(tmp_path / "f.png"), "--ci-kind", "eti"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ci_kind"] == "eti" and out["ci_prob"] == 0.89
    assert [r["connection"] for r in out["group_means"]] == ["associated", "different",
                                                             "human", "none"]
    assert {"lower", "upper", "excludes_zero"} <= set(out["contrasts"][0])
    assert out["data"]["rows"] == len(table)
    assert 0.7 < out["ppc"][-1]["inside_0.89"] <= 1
    assert [c["contrast"] for c in out["verdict"]["contrasts"]] == [
        "associated - none", "associated - human", "associated - different", "human - none"]
    assert out["verdict"]["headline"] and out["verdict"]["rope"] is None
    validate(out, "fit")
    # one sentence on what WEAT answers and whether it agrees with the model
    assert "`associated - different`, no control group" in out["weat_reconciliation"]
    assert all(r["alternative"] == "two-sided" and r["p"] for r in out["weat"])
    saved = assert_fit(tmp_path / "f.nc", out["spec_hash"])  # the fit printed, reloaded
    assert saved.idata["posterior"].sizes["chain"] == 2
    assert_png(tmp_path / "f.png")
    # Same table shape: the compiled model is reused, so this costs no compilation.
    # 2 chains x 15 draws cannot reach a bulk ESS of 200: --strict must exit with 3.
    rc = main(["fit", "--distances", str(csv), "--draws", "15", "--tune", "15", "--chains", "2",
               "--strict"])
    assert rc == 3
    assert "ESS < 200" in capsys.readouterr().err
    # Text output leads with the verdict; a failed diagnostic says what to do with options
    # that `fit` has.
    rc = main(["fit", "--distances", str(csv), "--draws", "15", "--tune", "15", "--chains", "2",
               "--rope", "0.02"])
    text = capsys.readouterr().out
    assert rc == 0 and text.startswith("verdict for ") and "inside the ROPE" in text
    advice = next(line for line in text.splitlines() if line.startswith("What to do"))
    from bayesbias.cli import build_parser

    known = build_parser(["fit"])._subparsers._group_actions[0].choices["fit"]
    options = {o for a in known._actions for o in a.option_strings}
    named = set(re.findall(r"--[a-z-]+", advice))
    assert named and named <= options


def test_compare_cli(tmp_path, capsys):
    a, _ = simulate_table(seed=1, words_per_class=3, n_human=15, n_none=30)
    b = a.copy()
    human = b["connection"] == "human"
    b.loc[human, "cosine_distance"] -= 0.1
    b["cosine_similarity"] = 1 - b["cosine_distance"]
    pa = write_distance_table(a, tmp_path / "a.csv")
    pb = write_distance_table(b, tmp_path / "b.csv")
    rc = main(["compare", "--a", str(pa), "--b", str(pb), "--draws", "300", "--tune", "300",
               "--chains", "2", "--json", "--plot", str(tmp_path / "d.png"),
               "-o", str(tmp_path / "audit")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    # -o DIR: the before/after report, with both fits and provenance
    audit = tmp_path / "audit"
    md = (audit / "report.md").read_text()
    for heading in ("## Verdicts before and after", "## What changed and why",
                    "## Comparators before and after", "## Per-word movements",
                    "## Provenance", "## How to cite"):
        assert heading in md
    assert_fit(audit / "fits" / "a.nc", saved_hash := out["spec_hash"])
    assert_fit(audit / "fits" / "b.nc", saved_hash)
    assert_png(audit / "figures" / "differences.png")
    saved = json.loads((audit / "results.json").read_text())
    assert saved["moved"] == out["moved"] and len(saved["provenance"]["inputs"]) == 3
    assert out["moved"]["neutral"] == ["human"] and out["only_neutral_moved"]
    # the verdicts of both sides, and what changed, in the same words
    assert out["verdicts"]["a"]["code"] and out["verdicts"]["b"]["code"]
    assert out["verdicts"]["changes"][0].startswith("verdict ")
    ah = {c["contrast"]: c for c in out["verdicts"]["b"]["contrasts"]}["associated - human"]
    assert 0 <= ah["prob_below_zero"] <= 1
    assert out["mac_ttest"] is not None
    validate(out, "comparison")  # "verdict" is fit's object: the sentences are "summary"
    assert "verdict" not in out and out["summary"]
    rec = out["weat_reconciliation"]
    assert set(rec) == {"a", "b", "change"} and "measures only the gap" in rec["change"]
    assert_png(tmp_path / "d.png")
