"""Provenance (versions, command line, input digests) and the citation block."""

import hashlib
import json
import sys

import pytest

from bayesbias import provenance as prov
from bayesbias.citation import REFERENCES, references


def test_shipped_names_resolve_to_the_files_they_stand_for():
    from bayesbias.datasets import DATA_DIR

    rec = prov.input_record("distances", "published:religion:reddit")
    path = DATA_DIR / "published" / "religion_group_reddit_dataset.csv.gz"
    assert rec["file"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rec["file"]["bytes"] == path.stat().st_size and rec["shipped"] == "shipped"
    for role, name in (("embedding", "default"), ("wordlist", "religion"), ("model", "crossed")):
        assert len(prov.input_record(role, name)["file"]["sha256"]) == 64, name


def test_files_folders_and_encoders(tmp_path):
    f = tmp_path / "w.toml"
    f.write_bytes(b"abc")
    rec = prov.input_record("wordlist", str(f))
    assert rec["file"] == {"path": str(f), "bytes": 3,
                           "sha256": hashlib.sha256(b"abc").hexdigest()}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x").write_bytes(b"1")
    folder = prov.file_digest(tmp_path)
    assert folder["bytes"] == 4
    (tmp_path / "sub" / "x").write_bytes(b"2")  # same size, new content: a new digest
    assert prov.file_digest(tmp_path)["sha256"] != folder["sha256"]

    class Source:
        def to_dict(self):
            return {"encoder": "m", "how": "templates"}

    assert prov.input_record("embedding", Source()) == {
        "role": "embedding", "given": {"encoder": "m", "how": "templates"}, "file": None}
    assert prov.input_record("embedding", tmp_path / "absent.txt")["file"] is None


def test_record_is_plain_json_and_names_versions_and_command():
    prov.set_command(["report", "--wordlist", "my list.toml"])
    record = prov.provenance([("model", "hierarchical")])
    assert json.loads(json.dumps(record)) == record
    assert record["command"] == "bayesbias report --wordlist 'my list.toml'"
    assert {"numpy", "pymc", "nutpie", "arviz"} <= set(record["packages"])
    assert record["python"] == ".".join(map(str, sys.version_info[:3]))
    assert "torch" not in sys.modules or "torch" in record["packages"]
    lines = prov.provenance_lines(record)
    assert any("sha256" in line for line in lines)
    same = prov.compare_inputs(record["inputs"], record["inputs"])
    changed = [dict(r, file=dict(r["file"], sha256="0" * 64)) for r in record["inputs"]]
    assert same == [] and len(prov.compare_inputs(changed, record["inputs"])) == 1


def test_saved_fit_carries_provenance(religion_fit, tmp_path):
    from bayesbias.models import load_fit

    path = religion_fit.save(tmp_path / "fit.nc")
    assert "provenance" not in religion_fit.idata.attrs
    record = json.loads(load_fit(path).idata.attrs["provenance"])
    roles = {r["role"]: r for r in record["inputs"]}
    assert roles["distances"]["given"] == "published:religion:reddit"
    assert roles["distances"]["file"]["sha256"] and roles["model"]["file"]["sha256"]
    assert record["bayesbias"] and record["packages"]["arviz"]


def test_references():
    assert [r for _, r in references({"weat", "bayesian"})][0].startswith("Dobrzeniecka")
    assert len(references(REFERENCES)) == len(REFERENCES)
    with pytest.raises(KeyError, match="known"):
        references({"nope"})


def test_citation_file_names_this_version_and_the_papers():
    yaml = pytest.importorskip("yaml")
    import tomllib
    from pathlib import Path

    top = Path(__file__).resolve().parent.parent
    cff = yaml.safe_load((top / "CITATION.cff").read_text())
    version = tomllib.loads((top / "pyproject.toml").read_text())["project"]["version"]
    assert cff["cff-version"] == "1.2.0" and str(cff["version"]) == version
    names = {a["family-names"] for r in cff["references"] for a in r["authors"]}
    assert {"Dobrzeniecka", "Caliskan", "Manzini"} <= names


def test_report_inputs_of_an_encoder_name_its_model_folder_and_corpus(tmp_path):
    from types import SimpleNamespace

    from bayesbias.report.reproduce import report_inputs

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a sentence\n")

    class Encoder:
        def to_dict(self):
            return {"encoder": str(model), "how": "contexts", "corpus": str(corpus)}

    settings = SimpleNamespace(distances=(), embedding=Encoder(), wordlists=("religion",),
                               model="crossed")
    roles = [role for role, _ in report_inputs(settings)]
    assert roles == ["embedding", "encoder model", "corpus", "wordlist", "controls", "model"]
    records = [prov.input_record(role, spec) for role, spec in report_inputs(settings)]
    assert records[1]["file"]["bytes"] == 2 and records[2]["file"]["bytes"] == 11


def test_rerun_settings_find_relative_inputs_in_the_recorded_folder(tmp_path, monkeypatch):
    from bayesbias.report.reproduce import settings_from_results

    first = tmp_path / "first"
    first.mkdir()
    (first / "t.csv").write_text("x")
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"settings": {"distances": ["t.csv", "published:race:glove"],
                                                "draws": 50, "output": "rep"},
                                   "provenance": {"cwd": str(first)}}))
    monkeypatch.chdir(tmp_path)
    s = settings_from_results(results, output="again")
    assert s.distances == (str(first / "t.csv"), "published:race:glove")
    assert s.draws == 50 and s.output == "again"
