"""The ``classifier`` and ``bbu`` sub-commands end to end."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesbias.cli import main


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_bbu_minimum_n(capsys):
    assert main(["bbu", "--delta", "0.05", "--ci-prob", "0.95", "--gamma", "0.5",
                 "--variance", "4", "--json"]) == 0
    out = _json(capsys)
    assert out["min_n"] == 11903


def test_bbu_with_n(capsys):
    assert main(["bbu", "--n", "3160", "--ci-prob", "0.95", "--gamma", "0.5",
                 "--variance", "4", "--json"]) == 0
    out = _json(capsys)
    assert out["smallest_claimable_delta"] == pytest.approx(0.0975, abs=5e-4)
    assert out["half_width"] == out["smallest_claimable_delta"]


def test_bbu_bad_input(capsys):
    with pytest.raises(SystemExit) as exc:  # refused by the parser
        main(["bbu", "--n", "10", "--gamma", "0.9"])
    assert exc.value.code == 2
    assert "gamma" in capsys.readouterr().err


def test_classifier_madlibs_table(tmp_path, capsys):
    out = tmp_path / "table.csv"
    assert main(["classifier", "--data", "madlibs", "--score", "TOXICITY@6",
                 "--metrics", "auc,fped*,bbu", "--bootstrap", "20", "-o", str(out),
                 "--json"]) == 0
    payload = _json(capsys)
    assert payload["n"] == 30240 and payload["groups"]["black"] == 1596
    table = pd.read_csv(out)
    assert set(table["metric"]) >= {"subgroup_auc", "bpsn_auc", "negative_aeg", "fped*",
                                    "bbu:demographic_parity"}
    row = table[(table["metric"] == "bpsn_auc") & (table["group"] == "gay")].iloc[0]
    assert row["value"] == pytest.approx(0.942864549148, abs=1e-9)  # published TOXICITY@6
    assert row["lower"] < row["value"] < row["upper"] and row["ci_kind"] == "delong"
    assert not list(tmp_path.glob(".table.csv.*"))  # atomic write left no temp file


def test_classifier_csv_input_and_errors(tmp_path, capsys):
    df = pd.DataFrame({"label": [1, 0, 1, 0, 1, 0], "s": [.9, .1, .8, .4, .3, .6],
                       "g1": [1, 1, 1, 0, 0, 0], "g2": [0, 0, 1, 1, 1, 0]})
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    assert main(["classifier", "--data", str(path), "--label", "label", "--score", "s",
                 "--groups", "g1,g2", "--metrics", "auc,tpr_gap", "--bootstrap", "0",
                 "--json"]) == 0
    out = _json(capsys)
    assert set(out["metrics"]) == {"auc", "tpr_gap"}
    assert main(["classifier", "--data", str(path), "--label", "label", "--score", "nope",
                 "--groups", "g1"]) == 2
    assert "'nope'" in capsys.readouterr().err
    df.loc[2, "s"] = None
    df.to_csv(path, index=False)
    assert main(["classifier", "--data", str(path), "--label", "label", "--score", "s",
                 "--groups", "g1"]) == 2
    assert "missing or non-finite" in capsys.readouterr().err
    assert main(["classifier", "--data", "madlibs", "--metrics", "nonsense"]) == 2


def test_classifier_parquet_with_categorical_groups(tmp_path, capsys):
    df = pd.DataFrame({"gold": ["yes", "no"] * 30, "p": [0.8, 0.3, 0.6, 0.7, 0.4, 0.2] * 10,
                       "dialect": ["a"] * 20 + ["b"] * 20 + ["c"] * 20})
    src = tmp_path / "scores.parquet"
    df.to_parquet(src)
    out = tmp_path / "tidy.parquet"
    assert main(["classifier", "--data", str(src), "--label", "gold", "--positive", "yes",
                 "--score", "p", "--group-column", "dialect", "--metrics", "fned*,pertsd",
                 "--bootstrap", "0", "-o", str(out)]) == 2  # counterfactual needs --source
    assert "--source" in capsys.readouterr().err
    assert main(["classifier", "--data", str(src), "--label", "gold", "--positive", "yes",
                 "--score", "p", "--group-column", "dialect", "--metrics", "fned*,bbu",
                 "--criterion", "equal_opportunity", "--bootstrap", "50", "-o", str(out)]) == 0
    tidy = pd.read_parquet(out)
    assert set(tidy["group"]) >= {"a", "b", "c"}
    assert set(tidy.loc[tidy["metric"] == "bbu:equal_opportunity", "ci_kind"]) == {
        "bernstein", "hdi", "bootstrap"}


@pytest.mark.parametrize("argv", [
    ["classifier", "--data", "madlibs", "--confidence", "1.5"],
    ["classifier", "--data", "madlibs", "--ci-prob", "nan"],
    ["classifier", "--data", "madlibs", "--bootstrap", "-1"],
    ["classifier", "--data", "madlibs", "--n-boot", "-5"],
    ["classifier", "--data", "madlibs", "--threshold", "nan"],
    ["classifier", "--data", "madlibs", "--seed", "-1"],
    ["classifier", "--data", "madlibs", "--gamma", "0"],
    ["bbu", "--delta", "1e-300"],
    ["bbu", "--n", "100", "--gamma", "0"],
    ["bbu", "--n", "100", "--variance", "inf"],
    ["bbu", "--n", "100", "--variance", "nan"],
    ["bbu", "--n", "100", "--ci-prob", "1"],
])
def test_numeric_flags_refused_at_parse_time(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err


@pytest.mark.parametrize("extra,msg", [
    (["--metrics", ","], "no metric names"),
    (["--variance", "inf", "--metrics", "bbu"], "--variance"),
    (["--variance", "nan", "--metrics", "bbu"], "--variance"),
])
def test_classifier_bad_values(extra, msg, capsys):
    assert main(["classifier", "--data", "madlibs", *extra]) == 2
    assert msg in capsys.readouterr().err


def test_parity_readings_and_match_word(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 400
    t = pd.DataFrame({"gold": rng.integers(0, 2, n), "p": rng.random(n),
                      "dialect": rng.choice(["a", "b", "c"], n)})
    src = tmp_path / "d.csv"
    t.to_csv(src, index=False)
    base = ["--quiet", "classifier", "--data", str(src), "--label", "gold", "--score", "p",
            "--group-column", "dialect", "--metrics", "parity_gap,avggf", "--bootstrap", "0",
            "--json"]
    assert main(base) == 0
    paper = json.loads(capsys.readouterr().out)["metrics"]
    assert main(base + ["--parity", "code"]) == 0
    code = json.loads(capsys.readouterr().out)["metrics"]
    assert paper["parity_gap"]["phi"] == "accuracy"
    assert code["parity_gap_code"]["phi"] == "positive_rate"
    assert code["avggf_code"]["background"] == "rest"
    assert paper["avggf"]["background"] == "all"
    # Borkan's published grouping: whole-word match ('american' in 'african american')
    assert main(["--quiet", "classifier", "--data", "madlibs", "--terms",
                 "american,african american", "--metrics", "auc", "--match", "word", "--json"]) == 0
    word = json.loads(capsys.readouterr().out)
    assert main(["--quiet", "classifier", "--data", "madlibs", "--terms",
                 "american,african american", "--metrics", "auc", "--json"]) == 0
    longest = json.loads(capsys.readouterr().out)
    assert word["groups"]["american"] > longest["groups"]["american"]
