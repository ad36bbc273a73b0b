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
    assert out["min_n"] == 11903  # Ethayarajh (2020), section 3.3 (test_bernstein.py)


def test_bbu_with_n(capsys):
    assert main(["bbu", "--n", "3160", "--ci-prob", "0.95", "--gamma", "0.5",
                 "--variance", "4", "--json"]) == 0
    out = _json(capsys)
    # Ethayarajh (2020), section 3.3: WinoBias's 3160 examples claim only delta >= 0.0975
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
            "--group-column", "dialect", "--metrics", "parity_gap,avggf,pos_avggf",
            "--bootstrap", "0", "--json"]
    assert main(base) == 0
    paper = json.loads(capsys.readouterr().out)["metrics"]
    assert main(base + ["--reading", "code"]) == 0
    code = json.loads(capsys.readouterr().out)["metrics"]
    assert main(base + ["--parity", "code"]) == 0  # the earlier name of --reading
    assert json.loads(capsys.readouterr().out)["metrics"].keys() == code.keys()
    assert paper["parity_gap"]["phi"] == "accuracy"
    assert code["parity_gap_code"]["phi"] == "positive_rate"
    # the authors' AverageGroupFairness compares each group with all rows in both readings;
    # only its TC versions (AverageGroupFairnessOnlyClass) compare with the other groups
    assert paper["avggf"]["background"] == code["avggf"]["background"] == "all"
    assert code["avggf"]["value"] == paper["avggf"]["value"]
    assert paper["pos_avggf"]["background"] == "all"
    assert code["pos_avggf_code"]["background"] == "rest"
    # Borkan's published grouping: whole-word match ('american' in 'african american')
    assert main(["--quiet", "classifier", "--data", "madlibs", "--terms",
                 "american,african american", "--metrics", "auc", "--match", "word", "--json"]) == 0
    word = json.loads(capsys.readouterr().out)
    assert main(["--quiet", "classifier", "--data", "madlibs", "--terms",
                 "american,african american", "--metrics", "auc", "--json"]) == 0
    longest = json.loads(capsys.readouterr().out)
    assert word["groups"]["american"] > longest["groups"]["american"]


def test_cf_average_follows_the_reading(tmp_path, capsys):
    # 6 templates x 2 groups, 2 terms in group a and 1 or 3 in group b
    rng = np.random.default_rng(2)
    rows = []
    for j in range(6):
        for g, k in (("a", 2), ("b", 1 + 2 * (j % 2))):
            rows += [{"src": f"t{j}", "grp": g, "gold": j % 2, "p": rng.random()}
                     for _ in range(k)]
    path = tmp_path / "cf.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    base = ["--quiet", "classifier", "--data", str(path), "--label", "gold", "--score", "p",
            "--group-column", "grp", "--source", "src", "--metrics", "cfgap,avgif",
            "--bootstrap", "0", "--json"]
    out = {}
    for extra in ([], ["--reading", "code"], ["--cf-average", "terms"],
                  ["--reading", "code", "--cf-average", "groups"]):
        assert main(base + extra) == 0
        out[" ".join(extra)] = json.loads(capsys.readouterr().out)["metrics"]
    assert out[""]["cfgap"]["cf_average"] == "groups"
    assert out["--reading code"]["cfgap"]["cf_average"] == "combinations"
    assert out["--reading code"]["cfgap"]["evaluations"] == 3 * 2 + 3 * 6
    assert out["--cf-average terms"]["cfgap"] == out["--reading code"]["cfgap"]
    assert out["--reading code --cf-average groups"]["cfgap"]["value"] == pytest.approx(
        out[""]["cfgap"]["value"], abs=1e-15)
    # AvgIF compares the groups' sets of terms in every mode
    assert out["--reading code"]["avgif"]["value"] == out[""]["avgif"]["value"]
    with pytest.raises(SystemExit) as exc:
        main(base + ["--cf-average", "pairs"])
    assert exc.value.code == 2


def test_reading_code_gives_the_authors_values(tmp_path, capsys):
    # the counterfactual data of tests/data/reference with 2-3 and 5 terms per group; the
    # authors' classes' values from tests/test_generalized.py (AUTHORS_CF)
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "czarnowska_data", Path(__file__).parent / "data" / "reference" / "czarnowska_data.py")
    cd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cd)
    df = cd.counterfactual_data("large", 1).assign(y=lambda t: t["y"].astype(int))
    path = tmp_path / "cf.csv"
    df.to_csv(path, index=False)
    assert main(["--quiet", "classifier", "--data", str(path), "--label", "y", "--score", "prob",
                 "--group-column", "group", "--source", "source", "--metrics",
                 "cfgap,pertsd,avgif", "--reading", "code", "--seed", "20", "--bootstrap", "0",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["metrics"]
    assert out["cfgap"]["value"] == pytest.approx(0.14208880681159042, abs=1e-9)
    assert out["pertsd"]["value"] == pytest.approx(0.09136998573402703, abs=1e-9)
    assert out["avgif"]["value"] == pytest.approx(0.11148232043348301, abs=1e-9)
