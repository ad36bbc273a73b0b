"""The report: verdicts from the control groups, the folder it writes, hostile names.

Verdict logic is checked on NumPy draws with known answers; the end-to-end runs use the
published religion / Reddit table (the same cell structure as the session's shared fit, so
the compiled model is reused) with short chains.
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from bayesbias.cli import main
from bayesbias.errors import ModelSpecError, OutputPathError
from bayesbias.report.document import Report, check_output, safe_name, unique_names
from bayesbias.verdicts import contrast_evidence, verdict_changes, verdict_from_draws

# Plumbing runs: short chains, and no refits of undecided verdicts (conftest's quick_verdicts)
pytestmark = pytest.mark.usefixtures("quick_verdicts")

SMALL = ["--draws", "100", "--tune", "100", "--chains", "2", "--permutations", "500",
         "--bootstrap", "0", "--null-reps", "100", "--quiet", "--no-robustness"]


# -- verdict logic on draws with a known answer ---------------------------------------------

def _normal(mean, sd=0.01, n=40_000, seed=0):
    return np.random.default_rng(seed).normal(mean, sd, n)


def _draws(an, ah, ad, hn):
    return {"associated - none": _normal(an, seed=1), "associated - human": _normal(ah, seed=2),
            "associated - different": _normal(ad, seed=3), "human - none": _normal(hn, seed=4)}


def test_contrast_evidence_matches_the_normal_closed_form():
    # N(-0.03, 0.01): P(< 0) = Phi(3) = 0.99865; 89% HDI = mean -+ 1.5982 sd. MC error with
    # 40k draws: sd of a share ~ 2e-4, of an interval end ~ 1e-4.
    ev = contrast_evidence(_normal(-0.03)[None, :], 0.89, "hdi", rope=0.02)
    assert ev["prob_below_zero"][0] == pytest.approx(0.99865, abs=1e-3)
    assert ev["lower"][0] == pytest.approx(-0.03 - 1.5982 * 0.01, abs=5e-4)
    assert ev["upper"][0] == pytest.approx(-0.03 + 1.5982 * 0.01, abs=5e-4)
    # P(|d| < 0.02) = Phi(5) - Phi(1) = 0.15866
    assert ev["share_in_rope"][0] == pytest.approx(0.15866, abs=5e-3)
    assert ev["status"][0] == "undecided"  # upper end -0.014 is inside the ROPE
    assert contrast_evidence(_normal(-0.03)[None, :], 0.89, "hdi")["status"][0] == "below"


@pytest.mark.parametrize(("means", "code"), [
    ((-0.1, -0.08, -0.05, -0.02), "stereotype-specific"),
    ((-0.1, 0.0, -0.05, -0.1), "no closer than human"),
    # race on the shipped GloVe subset: human - none is larger than associated - none
    ((-0.13, 0.09, -0.01, -0.22), "human closer than stereotypes"),
    ((0.0, 0.0, 0.0, 0.0), "not closer than neutral"),
    ((0.1, 0.1, 0.0, 0.0), "further than neutral"),
])
def test_verdict_rule(means, code):
    v = verdict_from_draws("t", _draws(*means))
    assert v.code == code
    assert [c.contrast for c in v.contrasts] == ["associated - none", "associated - human",
                                                 "associated - different", "human - none"]
    assert "AND than neutral human attributes" in v.rule
    json.dumps(v.to_dict(), allow_nan=False)
    assert list(v.to_frame()["contrast"]) == [c.contrast for c in v.contrasts]
    assert v.headline in str(v)
    # the table label: an undecided contrast never reads as evidence of absence
    assert "no closer" not in v.label and "not closer" not in v.label
    assert ("undecided" in v.label) == (code in ("no closer than human",
                                                 "not closer than neutral"))


def test_undecided_never_reads_as_evidence_of_absence():
    v = verdict_from_draws("t", _draws(-0.1, -0.005, 0.0, -0.05))  # P(< 0) about 0.69
    assert 0.6 < v["associated - human"].prob_below_zero < 0.8
    assert "not credibly closer or further than neutral human attributes (undecided)" in \
        v.explanation
    assert "not credibly closer than human attributes" in v.headline
    assert "no closer than" not in str(v)
    # the rule names the code only with its caveat
    assert v.rule.count("no closer than") == 1
    assert "'no closer than human' (not evidence that stereotypes are not closer)" in v.rule
    assert "(undecided)" in v["associated - different"].phrase()
    near = verdict_from_draws("t", _draws(-0.1, -0.025, 0.0, -0.05), rope=0.02)
    assert "not clearly by more than the ROPE (undecided)" in near.explanation
    assert "not by more than the ROPE" in near.headline


def test_verdict_says_when_the_human_control_is_closer_than_the_stereotypes():
    v = verdict_from_draws("race", _draws(-0.13, 0.09, -0.01, -0.22))
    assert "human attributes are closer still" in v.headline
    assert any("larger than `associated - none`" in n for n in v.notes)


def test_rope_practically_equal_and_no_data():
    v = verdict_from_draws("t", _draws(0.0, 0.0, 0.0, 0.0), rope=0.05)
    assert v.code == "practically none" and v["associated - none"].status == "equivalent"
    assert v["associated - none"].share_in_rope == pytest.approx(1.0)
    v = verdict_from_draws("t", _draws(-0.1, -0.1, -0.1, 0.0),
                           has_data={"associated - different": False})
    assert v["associated - different"].status == "no data"
    assert v.to_dict()["contrasts"][2]["mean"] is None
    v = verdict_from_draws("t", _draws(-0.1, -0.1, -0.1, 0.0),
                           has_data={"associated - none": False, "human - none": False})
    assert v.code == "no data"


def test_verdict_changes_in_the_same_words():
    a = verdict_from_draws("a", _draws(-0.1, -0.08, -0.05, -0.02))
    b = verdict_from_draws("b", _draws(-0.1, 0.0, -0.05, -0.1))
    lines = verdict_changes(a, b, ("orig", "debiased"))
    assert lines[0].startswith("verdict changed")
    assert any(line.startswith("`associated - human` changed") for line in lines)
    assert verdict_changes(a, a)[0].startswith("verdict unchanged")


# -- output folder: names, checks, atomic replacement -----------------------------------------

def test_safe_names_stay_inside():
    assert safe_name("/tmp/x") == "tmp_x"
    assert safe_name("../../../x") == "x"
    assert safe_name('x" onerror="alert(1)') == "x_onerror_alert_1"
    assert safe_name("..") == "wordlist" and "/" not in safe_name("a/../../b")
    assert unique_names(["religion", "religion", "Religion"]) == ["religion", "religion_2",
                                                                  "Religion_3"]


def test_output_checked_before_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    for bad, match in [("", "empty"), (".", r"'\.'"), ("..", r"'\.\.'"),
                       (str(afile / "rep"), "is a file"), (str(afile), "not a folder"),
                       ("/dev/null", "not a folder"), (str(tmp_path / "x"), None)]:
        if match is None:  # the current folder's parent, named without dots
            monkeypatch.chdir(tmp_path / "x")
            with pytest.raises(OutputPathError, match="current folder or one above"):
                check_output(str(tmp_path))
            monkeypatch.chdir(tmp_path)
            continue
        with pytest.raises(OutputPathError, match=match):
            check_output(bad)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputPathError, match="symbolic link"):
        check_output(link)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # root may write anyway: nothing to refuse then
            with pytest.raises(OutputPathError, match="permission"):
                check_output(ro / "rep")
    finally:
        ro.chmod(0o700)
    # nothing left behind by the checks
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt", "link", "ro", "x"]


def test_marker_plus_a_users_file_is_not_replaced(tmp_path):
    out = tmp_path / "rep"
    Report("t").write(out)
    (out / "tables" / "mine.xlsx").write_text("keep")
    with pytest.raises(OutputPathError, match="mine.xlsx"):
        Report("t").write(out)
    assert (out / "tables" / "mine.xlsx").read_text() == "keep"
    (out / "tables" / "mine.xlsx").unlink()
    (out / "notes.txt").write_text("keep")
    with pytest.raises(OutputPathError, match="notes.txt"):
        Report("t").write(out)


def _write_many(args):
    folder, tag, n = args
    for i in range(n):
        r = Report(f"writer {tag}")
        r.section("s").text(f"{tag}-{i}")
        r.data = {"writer": tag, "i": i}
        r.write(folder)
    return tag


def test_concurrent_reports_to_one_folder_last_writer_wins(tmp_path):
    out = tmp_path / "rep"
    # threads: the renames release the GIL, so the writers really interleave
    with ThreadPoolExecutor(6) as pool:
        done = list(pool.map(_write_many, [(str(out), t, 10) for t in range(4)]))
    assert sorted(done) == [0, 1, 2, 3]  # no writer failed
    data = json.loads((out / "results.json").read_text())
    assert data["i"] == 9  # a complete report of one writer's last write
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # no .rep.* / .old left


# -- end to end ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, quick_verdicts):
    """One report on the published table under three names: duplicate and hostile.

    Its ``--json`` output is kept in :data:`PRINTED`.
    """
    import contextlib
    import io

    from bayesbias.datasets import published_table
    from bayesbias.distances import write_distance_table

    root = tmp_path_factory.mktemp("hostile")
    table = published_table("religion", "reddit")
    evil = 'x" onerror="alert(1).csv'
    (root / "a").mkdir()
    (root / "b").mkdir()
    first = write_distance_table(table, root / "a" / evil)
    second = write_distance_table(table, root / "b" / evil)  # the same name again
    out = root / "rep"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["report", "--distances", str(first), "--distances", str(second),
                     "-o", str(out), "--json", "--rope", "0.02", "--jobs", "2", *SMALL])
    PRINTED["hostile_run"] = printed.getvalue()
    return root, out, code


#: What the module's report runs printed on stdout.
PRINTED: dict[str, str] = {}


def test_report_json_follows_its_schema(hostile_run):
    from json_schemas import validate

    root, out, code = hostile_run
    printed = json.loads(PRINTED["hostile_run"])
    validate(printed, "report")
    assert printed["output"] == str(out) and len(printed["verdicts"]) == 2


def test_report_leads_with_verdicts(hostile_run, capsys):
    root, out, code = hostile_run
    assert code == 0
    md = (out / "report.md").read_text()
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Verdicts"
    assert sections[-4:] == ["## Model card", "## Settings: choices that affect the numbers",
                             "## Provenance", "## How to cite"]
    assert md.index("associated - human") < md.index("WEAT per pair")
    # explanations where the term first appears
    for term in ("89% HDI: the narrowest interval", "`different`: stereotypes listed",
                 "tau[c]: the between-word sd", "r-hat: agreement", "ESS: effective sample"):
        assert md.count(term) == 1, term
    assert "distance_i ~ Normal(" in md  # model card
    data = json.loads((out / "results.json").read_text())
    assert [v["name"] for v in data["verdicts"]] == ['x" onerror="alert(1)'] * 2
    v = data["verdicts"][0]
    assert v["rope"] == 0.02 and "AND than neutral human attributes" in v["rule"]
    assert {c["contrast"] for c in v["contrasts"]} == {
        "associated - none", "associated - human", "associated - different", "human - none"}
    assert all(0 <= c["prob_below_zero"] <= 1 and c["share_in_rope"] is not None
               for c in v["contrasts"])
    # reddit religion (published): associated - none below 0, human - none below 0
    an = v["contrasts"][0]
    assert an["mean"] < 0 and an["lower"] <= an["mean"] <= an["upper"]
    wl = data["wordlists"]["x_onerror_alert_1"]
    assert wl["word_contrasts"][0]["contrast"] == "associated - none"
    means = [r["mean"] for r in wl["word_contrasts"] if r["contrast"] == "associated - none"]
    assert means == sorted(means)
    # the MAC in the null figure is the MAC printed (the pair's)
    assert f"MAC = {wl['null']['mac_pair']:.3f}" in md
    assert "permutation test keeps these very words" in md


def test_every_verdict_contrast_is_in_the_contrast_table_and_the_forest(hostile_run):
    import pandas as pd

    root, out, code = hostile_run
    data = json.loads((out / "results.json").read_text())
    for key, wl in data["wordlists"].items():
        named = [c["contrast"] for c in data["verdicts"][0]["contrasts"]]
        table = pd.read_csv(out / "tables" / f"{key}_contrasts.csv")
        assert set(named) <= set(table["contrast"]), key
        assert len(table) == 6 and table["contrast"].nunique() == 6  # "all": six pairs
        assert set(named) <= set(wl["forest_contrasts"]), key
        assert {r["contrast"] for r in wl["contrasts"]} == set(table["contrast"])
    md = (out / "report.md").read_text()
    assert "no closer than any human" not in md
    # WEAT reconciled with the verdict, p as a bound with its sidedness, one interval of d
    assert md.count("asks only whether protected words are closer to their own") == 4
    over = pd.read_csv(out / "tables" / "overview.csv")
    assert over["WEAT p"].str.endswith("(two-sided)").all()
    assert not over["verdict"].str.contains("no closer|not closer").any()
    assert "weat_reconciliation" in wl
    weat = pd.read_csv(out / "tables" / f"{key}_weat.csv")
    assert "p_value" not in weat and (weat["alternative"] == "two-sided").all()


@pytest.mark.slow
def test_verdict_box_carries_the_robustness_line(tmp_path):
    from bayesbias.distances import write_distance_table
    from bayesbias.testing import simulate_table

    table, _ = simulate_table(seed=4, words_per_class=3, n_human=8, n_none=10)
    csv = write_distance_table(table, tmp_path / "sim.csv")
    small = [a for a in SMALL if a != "--no-robustness"]
    out = tmp_path / "rep"
    assert main(["report", "--distances", str(csv), "-o", str(out), "--jobs", "2",
                 *small]) == 0
    md = (out / "report.md").read_text()
    data = json.loads((out / "results.json").read_text())
    line = data["wordlists"]["sim"]["robustness"]
    assert line.startswith("Robustness over 200 word lists resampled within each class")
    assert "`associated - human`" in line and "% of the lists" in line
    assert md.count(line) == 2  # the overview's verdict box and the word list's
    assert "--no-robustness" in md  # the settings say how to leave it out
    # a model without exact refits says why there is no robustness line
    out2 = tmp_path / "rep2"
    assert main(["report", "--distances", str(csv), "-o", str(out2), "--model", "additive",
                 "--jobs", "1", *small]) == 0
    data = json.loads((out2 / "results.json").read_text())
    assert data["wordlists"]["sim"]["robustness"].startswith("Robustness: not computed")


def _without_provenance(name: str, text: str) -> str:
    """The page without its provenance section (date and command line differ run to run)."""
    if name == "report.md":
        return text[:text.index("## Provenance")] + text[text.index("## How to cite"):]
    start = text.index('<section id="provenance">')
    return text[:start] + text[text.index("</section>", start):]


@pytest.mark.slow
def test_rerun_reproduces_the_report_with_any_number_of_processes(hostile_run, tmp_path):
    # `--rerun results.json --jobs 1` against the first run's --jobs 2 (the WEAT, null and
    # figure jobs ran in a worker or here, whichever came first): the settings come back from
    # results.json and every file is the same, numbers and figures byte for byte
    root, out, _ = hostile_run
    one = tmp_path / "one"
    assert main(["report", "--rerun", str(out / "results.json"), "-o", str(one),
                 "--jobs", "1", "--quiet"]) == 0
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert any(f.suffix == ".png" for f in files)
    for f in files:
        if f.suffix == ".nc":  # holds the sampler's wall time
            continue
        a, b = (out / f).read_bytes(), (one / f).read_bytes()
        if f.name == "results.json":
            a, b = (json.loads(x) for x in (a, b))
            assert a["provenance"]["inputs"] == b["provenance"]["inputs"]
            assert "--rerun" in b["provenance"]["command"]
            for d in (a, b):
                d.pop("elapsed_s"), d.pop("output", None), d["settings"].pop("output")
                d.pop("provenance")
        elif f.suffix in (".md", ".html"):
            a, b = (_without_provenance(f.name, x.decode()) for x in (a, b))
        assert a == b, f


def test_rerun_refuses_what_is_not_a_report(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text('{"settings": {"draws": 10, "colour": "red"}}')
    assert main(["report", "--rerun", str(bad), "-o", str(tmp_path / "r")]) == 2
    assert "colour" in capsys.readouterr().err
    assert main(["report", "--rerun", str(tmp_path / "none.json"),
                 "-o", str(tmp_path / "r")]) == 2


def test_report_says_what_it_measured_and_how_to_cite(hostile_run):
    root, out, code = hostile_run
    md = (out / "report.md").read_text()
    head = md[:md.index("## Verdicts")]
    assert head.startswith("# bayesbias report: x_onerror") or "onerror" in head.splitlines()[0]
    assert "**Measured**" in head and "15 protected words in 3 classes (jew, christian, muslim)" \
        in head and "**Contents**" in head and "](#provenance)" in head
    assert "for the x\" onerror=\"alert(1) word 'judaism' (class jew)" in md  # own words
    assert "religion word such as 'jew'" not in md
    cite = md[md.index("## How to cite"):]
    assert "Dobrzeniecka" in cite and "Caliskan" in cite and "Manzini" in cite
    prov = md[md.index("## Provenance"):md.index("## How to cite")]
    assert "sha256" in prov and "command: `bayesbias report --distances" in prov
    page = (out / "index.html").read_text()
    assert '<nav class="toc"' in page and 'href="#verdicts"' in page
    assert '<details class="long">' in page and "overflow-x:auto" in page
    data = json.loads((out / "results.json").read_text())
    assert [r["role"] for r in data["provenance"]["inputs"]] == ["distances", "distances",
                                                                 "model"]


def test_duplicate_names_keep_every_result(hostile_run):
    root, out, code = hostile_run
    data = json.loads((out / "results.json").read_text())
    assert list(data["wordlists"]) == ["x_onerror_alert_1", "x_onerror_alert_1_2"]
    fits = sorted(p.name for p in (out / "fits").iterdir())
    assert fits == ["x_onerror_alert_1.nc", "x_onerror_alert_1_2.nc"]
    figs = {p.name for p in (out / "figures").iterdir()}
    assert {"x_onerror_alert_1_2_forest.png", "x_onerror_alert_1_null.png"} <= figs
    assert sorted(p.name for p in root.iterdir()) == ["a", "b", "rep"]


def test_html_escapes_input_in_text_and_attributes(hostile_run):
    html5lib = pytest.importorskip("html5lib")
    root, out, code = hostile_run
    doc = html5lib.parse((out / "index.html").read_text(), namespaceHTMLElements=False)
    attrs = {a for el in doc.iter() for a in el.attrib}
    assert not {a for a in attrs if a.startswith("on")}
    assert not doc.findall(".//script")
    texts = [el.text or "" for el in doc.iter("h2")]
    assert any('x" onerror="alert(1)' in t for t in texts)
    ids = {el.attrib["id"] for el in doc.iter() if "id" in el.attrib}
    for el in doc.iter():
        for key in ("src", "href"):
            if el.attrib.get(key, "").startswith("#"):  # the table of contents
                assert el.attrib[key][1:] in ids
            elif key in el.attrib:
                target = (out / el.attrib[key]).resolve()
                assert target.is_file() and out.resolve() in target.parents


def test_wordlist_names_become_confined_unique_keys(tmp_path):
    from bayesbias.wordlists import load_wordlist

    lists = [_renamed(tmp_path, i, name) for i, name in enumerate(["/tmp/x", "../../../x",
                                                                    "religion"])]
    names = [load_wordlist("religion").name] + [load_wordlist(p).name for p in lists]
    assert names == ["religion", "/tmp/x", "../../../x", "religion"]  # as written
    assert unique_names(names) == ["religion", "tmp_x", "x", "religion_2"]


def _renamed(folder: Path, i: int, name: str) -> str:
    """Save the shipped religion list as ``folder/l{i}.toml`` under the list name `name`."""
    import tomllib

    from bayesbias._atomic import shipped_dir

    text = (shipped_dir("wordlists") / "religion.toml").read_text(encoding="utf-8")
    old = tomllib.loads(text)["name"]
    p = folder / f"l{i}.toml"
    p.write_text(text.replace(f"name = {json.dumps(old)}", f"name = {json.dumps(name)}", 1),
                 encoding="utf-8")
    return str(p)


@pytest.mark.slow
def test_wordlist_names_are_confined(tmp_path, monkeypatch):
    before = {p: p.exists() for p in (Path("/tmp/x.nc"), Path("/tmp/x_forest.png"))}
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    paths = [_renamed(work, i, name) for i, name in enumerate(["/tmp/x", "../../../x",
                                                                "religion"])]
    argv = ["report", "--wordlist", "religion", *sum([["--wordlist", p] for p in paths], []),
            "-o", "rep", "--json", *SMALL]
    assert main(argv) == 0
    assert {p: p.exists() for p in before} == before
    assert sorted(p.name for p in tmp_path.rglob("*") if "rep" not in p.parts) == \
        ["a", "b", "l0.toml", "l1.toml", "l2.toml"]
    data = json.loads((work / "rep" / "results.json").read_text())
    assert list(data["wordlists"]) == ["religion", "tmp_x", "x", "religion_2"]


def test_failed_report_leaves_nothing(tmp_path):
    from bayesbias.report import ReportSettings, run_report

    out = tmp_path / "rep"
    with pytest.raises(ModelSpecError):
        run_report(ReportSettings(distances=("published:religion:reddit",), output=str(out),
                                  model="no-such-model", null_reps=50, n_bootstrap=0,
                                  n_permutations=100))
    assert list(tmp_path.iterdir()) == []


def test_report_refuses_to_replace_a_folder_that_is_not_a_report(tmp_path):
    from bayesbias.report import ReportSettings, run_report

    precious = tmp_path / "project"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(OutputPathError, match="not a bayesbias report folder"):
        run_report(ReportSettings(distances=("published:religion:reddit",),
                                  output=str(precious)))
    assert (precious / "notes.txt").read_text() == "keep me"


def test_cli_rejects_bad_numbers_before_any_work(capsys):
    for argv in (["report", "--ci-prob", "1.5"], ["fit", "--draws", "0"],
                 ["weat", "--ci-prob", "0"], ["report", "--rope", "-1"],
                 ["report", "--rope", "nan"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    assert "must be" in capsys.readouterr().err


def test_report_options_have_help_with_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = capsys.readouterr().out
    for opt in ("--target-accept", "--sampler", "--rope", "--null-reps", "--quiet", "--debug"):
        assert opt in text
    # each option's own default, stated in its help (every command: test_cli_vocabulary)
    flat = " ".join(text.split())
    for stated in ("(default 0.8)", "(default auto)", "(default: none)", "(default 5000)",
                   "(default 100000)", "(default 2000)", "(default sample)",
                   "(default bayesbias-report;"):
        assert stated in flat, stated


def test_quiet_and_debug_after_the_command_name():
    from bayesbias.cli import build_parser

    parser = build_parser()
    for cmd in ("report", "fit", "compare"):
        extra = ["--a", "x", "--b", "y"] if cmd == "compare" else []
        assert parser.parse_args([cmd, *extra, "--quiet", "--debug"]).quiet is True
        args = parser.parse_args(["--quiet", cmd, *extra])
        assert args.quiet is True and args.debug is False
        assert parser.parse_args([cmd, *extra]).quiet is False


def test_coverage_warning_hook_and_fallback():
    from types import SimpleNamespace

    import pandas as pd

    from bayesbias.report.sections import coverage_warning

    def ppc(share):
        return pd.DataFrame({"connection": ["none", "all"], "inside_0.89": [share, share]})

    narrow = SimpleNamespace(ppc=lambda: ppc(0.62))
    assert "too narrow" in coverage_warning(narrow)
    assert coverage_warning(SimpleNamespace(ppc=lambda: ppc(0.88))) is None
    check = SimpleNamespace(code="ppc_coverage", ok=False, message="62% inside: too narrow")
    assert coverage_warning(SimpleNamespace(checks=[check])) == "62% inside: too narrow"
    ok = SimpleNamespace(code="ppc_coverage", ok=True, message="fine")
    assert coverage_warning(SimpleNamespace(checks=[ok])) is None


def test_settings_with_an_encoder_source_are_plain_json():
    # `report --encoder` puts an EncoderSource (holding an open vector cache once used) in
    # the settings; results.json must describe it, not try to copy it
    import json

    from bayesbias.encoders.words import EncoderSource
    from bayesbias.report.pipeline import ReportSettings

    source = EncoderSource("all-MiniLM-L6-v2", how="contexts", corpus="madlibs", contexts=5)
    out = ReportSettings(embedding=source).to_dict()
    assert out["embedding"] == {"encoder": "all-MiniLM-L6-v2", "how": "contexts",
                                "corpus": "madlibs", "contexts": 5,
                                "seed": source.seed, "cache": True, "backend": "auto"}
    assert json.loads(json.dumps(out)) == out


def test_title_and_first_lines_name_the_source():
    from types import SimpleNamespace

    from bayesbias.report.navigation import measured_lines, report_title

    class Encoder:
        def to_dict(self):
            return {"encoder": "all-MiniLM-L6-v2", "how": "templates"}

    glove = SimpleNamespace(distances=(), embedding="default")
    assert report_title(glove, ["religion", "race"]) == \
        "bayesbias report: GloVe 6B 50d subset: religion, race"
    published = SimpleNamespace(distances=("published:religion:debiased_reddit",),
                                embedding="default")
    assert report_title(published, []) == \
        "bayesbias report: published religion table (Reddit, debiased)"
    encoder = SimpleNamespace(distances=(), embedding=Encoder())
    assert "sentence encoder all-MiniLM-L6-v2 (templates)" in report_title(encoder, ["x"])
    lines = measured_lines(encoder, [])
    assert lines[1].startswith("**Caveat**: Measured on template sentences")


def test_rerun_names_the_options_it_ignores():
    from bayesbias.cli import build_parser
    from bayesbias.cli.report import ignored_with_rerun

    parser = build_parser(["report"])
    args = parser.parse_args(["report", "--rerun", "r.json", "--draws", "50", "--wordlist",
                              "race", "-o", "new", "--jobs", "1", "--quiet"])
    assert ignored_with_rerun(args) == ["--wordlist", "--draws"]
    assert ignored_with_rerun(parser.parse_args(["report", "--rerun", "r.json"])) == []


def test_a_word_missing_from_shared_control_lists_is_reported_once(caplog):
    # religion, race and gender share the control lists; GloVe lacks the control typo
    # "literaly": one warning per report, not one per word list
    import logging

    from bayesbias.report.pipeline import ReportSettings, _tables

    with caplog.at_level(logging.WARNING, logger="bayesbias.embeddings"):
        tables = _tables(ReportSettings())
    assert [name for name, _ in tables] == ["religion", "race", "gender"]
    dropped = [r for r in caplog.records if "literaly" in r.getMessage()]
    assert len(dropped) == 1, [r.getMessage() for r in dropped]
    assert all(t.attrs["missing"] for _, t in tables)  # each table still records it
    # the filter is gone after the report's tables are made
    assert not logging.getLogger("bayesbias.embeddings").filters


def test_robustness_line_says_how_the_refits_were_made():
    """Say which refits: exact, or the crossed default's hierarchical part.

    Under the crossed default the attribute effects are plugged in; these are not exact
    refits of the model in the box.
    """
    from types import SimpleNamespace

    import pandas as pd

    from bayesbias.report.sections import robustness_line
    from bayesbias.studies.design import VERDICTS
    from bayesbias.studies.sensitivity import METHOD

    def sens(method):
        c = list(VERDICTS)
        return SimpleNamespace(
            resampled=pd.DataFrame({"contrast": c, "share_holds": [0.5] * len(c)}),
            baseline=pd.DataFrame({"contrast": c, "holds": [True] * len(c)}),
            leave_one_out=pd.DataFrame({"contrast": c, "flips": [False] * len(c),
                                        "word": ["w"] * len(c)}),
            settings={"n_resamples": 200, "ci_prob": 0.89, "method": method})

    assert "; exact refits):" in robustness_line(sens(METHOD))
    crossed = robustness_line(sens("crossed plug-in: attribute deviations removed, ..."))
    assert "exact refits" not in crossed and "attribute-word effects plugged in" in crossed


def _model_line(**settings) -> str:
    """The report's "model" choice line for these settings."""
    from bayesbias.report.pipeline import ReportSettings, _choices

    seen = {}
    rec = type("R", (), {"choice": lambda self, k, v: seen.__setitem__(k, v)})()
    _choices(rec, ReportSettings(distances=("x",), **settings))
    return seen["model"]


def test_report_fits_with_each_models_own_target_accept():
    # the report used to pass 0.8 to every model: an ensemble's report then sampled
    # embedding_level at 0.8 while `fit` used the family's default (0.95 until its shifted
    # sets, 0.8 since; 0.95 still where its PyMC model is sampled)
    from bayesbias.report.pipeline import ReportSettings

    assert ReportSettings().target_accept is None  # fit_model applies the family default
    for model, shown in (("embedding_level", "target_accept 0.8 (the model's default; 0.95 "
                                             "where its PyMC model is sampled)"),
                         ("crossed", "target_accept 0.9 (the model's default; 0.8 where "
                                     "its PyMC model is sampled)")):
        assert shown in _model_line(model=model)
    assert "target_accept 0.95;" in _model_line(target_accept=0.95)


def test_the_worker_inherits_the_robustness_modules_only_when_the_line_is_made():
    """The refits' and the paper model's modules are imported before the fork when used.

    The worker runs the refits and this process reads them; not for ``--no-robustness``.
    The paper's model beside the default comes from its exact posterior; not beside the
    paper's model itself.
    """
    from bayesbias.report.pipeline import _JOB_MODULES, ReportSettings, _job_modules

    exact, refits = ("bayesbias.studies.exact_posterior",), ("bayesbias.studies.sensitivity",)
    assert _job_modules(ReportSettings(robustness=False)) == _JOB_MODULES + exact
    assert _job_modules(ReportSettings(robustness=False, model="hierarchical")) == _JOB_MODULES
    with_line = _job_modules(ReportSettings())
    assert with_line == _JOB_MODULES + refits + exact
    assert _job_modules(ReportSettings(robustness=False, sensitivity=True)) == with_line


def test_report_fits_with_each_models_own_tuning_steps():
    """``--tune`` not given: the model's own (crossed 500 on its compiled sampler)."""
    from bayesbias.cli import build_parser
    from bayesbias.models.sampling import default_tune
    from bayesbias.report.pipeline import ReportSettings

    assert ReportSettings().tune is None  # fit_model applies the family default
    assert (default_tune("crossed"), default_tune("crossed", pymc=True)) == (500, 1000)
    assert default_tune("hierarchical") == default_tune("hierarchical", pymc=True) == 1000
    for model, shown in (("crossed", "after 500 (the model's default; 1000 where its PyMC "
                                     "model is sampled) tuning steps"),
                         ("hierarchical", "after 1000 (the model's default) tuning steps")):
        assert shown in _model_line(model=model)
    assert "after 300 tuning steps" in _model_line(tune=300)
    for command, extra in (("report", []), ("fit", []), ("compare", ["--a", "x", "--b", "y"])):
        p = build_parser([command])
        assert p.parse_args([command, *extra]).tune is None
        helps = {a.dest: a.help for a in p._subparsers._group_actions[0].choices[command]
                 ._actions}
        assert f"{default_tune('crossed')} for crossed" in helps["tune"]
