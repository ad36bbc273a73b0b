"""The main job end to end on a real published table (small sampler settings)."""

import json

import pytest

from bayesbias.cli import main
from bayesbias.errors import ModelSpecError


def test_report_on_published_table(tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["--quiet", "report", "--distances", "published:religion:reddit",
                 "--draws", "150", "--tune", "150", "--chains", "2", "--permutations", "2000",
                 "--bootstrap", "100", "--null-reps", "300", "-o", str(out), "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    row = payload["overview"][0]
    # Published result (Dobrzeniecka & Urbaniak): in Reddit religion, human attributes and
    # stereotypes are both clearly closer than neutral words.
    assert row["associated - none"] < 0 and row["human - none"] < 0
    assert row["lower"] <= row["associated - none"] <= row["upper"]
    for name in ("index.html", "report.md", "results.json", "tables/overview.csv",
                 "fits/religion_reddit.nc"):
        assert (out / name).exists(), name
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figures == ["religion_reddit_forest.png", "religion_reddit_null.png"]
    html = (out / "index.html").read_text()
    assert "figures/religion_reddit_forest.png" in html and "89%" in html
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_failed_report_leaves_nothing(tmp_path):
    out = tmp_path / "rep"
    with pytest.raises(ModelSpecError):
        from bayesbias.report import ReportSettings, run_report

        run_report(ReportSettings(distances=("published:religion:reddit",), output=str(out),
                                  model="no-such-model", null_reps=50, n_bootstrap=0,
                                  n_permutations=100))
    assert list(tmp_path.iterdir()) == []


def test_report_refuses_to_replace_a_folder_that_is_not_a_report(tmp_path):
    from bayesbias.errors import InputDataError
    from bayesbias.report import ReportSettings, run_report

    precious = tmp_path / "project"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(InputDataError, match="not a bayesbias report folder"):
        run_report(ReportSettings(distances=("published:religion:reddit",),
                                  output=str(precious)))
    assert (precious / "notes.txt").read_text() == "keep me"


def test_cli_rejects_bad_numbers_before_any_work(capsys):
    for argv in (["report", "--ci-prob", "1.5"], ["fit", "--draws", "0"],
                 ["weat", "--ci-prob", "0"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    assert "must be" in capsys.readouterr().err
