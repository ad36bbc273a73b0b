"""Training many embeddings (gensim), manifests, and the multi-embedding distance table."""

import gzip
import hashlib
import json

import numpy as np
import pytest

from bayesbias.cli import main
from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus
from bayesbias.ensemble import ensemble_table, manifest_table
from bayesbias.errors import InputDataError, InvalidArgumentError
from bayesbias.training import (TrainSettings, plan_models, read_manifest, resample_counts,
                                train_models)

SMALL = TrainSettings(vector_size=16, min_count=2, epochs=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    path = write_synthetic_corpus(d / "c.txt.gz", n_docs=300, planted=0.8, seed=3)
    synthetic_wordlist_toml(d / "syn.toml")
    return path


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    return out, train_models(corpus, out, seeds=2, bootstrap=2, settings=SMALL)


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.glob("*.bin"))}


def test_plan():
    names = [p.name for p in plan_models(2, 2)]
    assert names == ["original-seed1", "original-seed2", "bootstrap1-seed1",
                     "bootstrap2-seed1"]
    assert len(plan_models(2, 3, seeds_within=True)) == 6
    with pytest.raises(InvalidArgumentError):
        plan_models(0, 0)


def test_resample_counts_reproducible():
    a = resample_counts(100, 1, 0)
    assert a.sum() == 100 and (a == resample_counts(100, 1, 0)).all()
    assert not (a == resample_counts(100, 2, 0)).all()


def test_manifest_and_files(trained):
    out, manifest = trained
    assert [m["corpus_sample"] for m in manifest["models"]] == \
        ["original", "original", "bootstrap-1", "bootstrap-2"]
    assert manifest["documents"] == 300 and manifest["settings"]["sg"] == 1
    assert manifest["models"][2]["resample_sha256"] is not None
    m = read_manifest(out)
    assert all(x["path"].endswith(".bin") for x in m["models"])


def test_same_seed_same_vectors_with_two_dask_threads(corpus, trained, tmp_path):
    out, _ = trained
    train_models(corpus, tmp_path, seeds=2, bootstrap=2, settings=SMALL, jobs=2)
    assert _digests(tmp_path) == _digests(out)


def test_rerun_skips(corpus, trained):
    out, manifest = trained
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.bin")}
    again = train_models(corpus, out, seeds=2, bootstrap=2, settings=SMALL)
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.bin")} == before
    assert again["models"] == manifest["models"]


def test_bad_corpora(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(InputDataError, match="empty"):
        train_models(empty, tmp_path / "o")
    one = tmp_path / "one.txt.gz"
    with gzip.open(one, "wt") as fh:
        fh.write("a b c d\n")
    with pytest.raises(InputDataError, match="one document"):
        train_models(one, tmp_path / "o", bootstrap=2)
    with pytest.raises(InputDataError, match="no such"):
        train_models(tmp_path / "missing.txt", tmp_path / "o")


def test_manifest_outside_folder_refused(trained, tmp_path):
    out, manifest = trained
    bad = dict(manifest, models=[dict(manifest["models"][0], file="../../etc/passwd")])
    (tmp_path / "manifest.json").write_text(json.dumps(bad))
    with pytest.raises(InputDataError, match="outside"):
        read_manifest(tmp_path)


def test_manifest_table(trained, corpus):
    out, _ = trained
    t = manifest_table(out, corpus.parent / "syn.toml")
    assert t["embedding"].nunique() == 4
    assert set(t["corpus_sample"]) == {"original", "bootstrap-1", "bootstrap-2"}
    per = t.groupby("embedding").size()
    assert per.nunique() == 1  # every embedding has the same rows


def test_ensemble_drops_partial_words_and_refuses_dims(tmp_path, caplog):
    from bayesbias.embeddings import Embedding, save_embedding

    toml = synthetic_wordlist_toml(tmp_path / "syn.toml")
    words = [w for line in toml.splitlines() if "[" in line and '"' in line
             for w in line.split("[", 1)[1].strip("]").replace('"', "").split(", ")]
    rng = np.random.default_rng(0)
    save_embedding(Embedding(words, rng.normal(size=(len(words), 8))), tmp_path / "a.txt")
    save_embedding(Embedding(words[1:], rng.normal(size=(len(words) - 1, 8))),
                   tmp_path / "b.txt")
    with caplog.at_level("WARNING"):
        t = ensemble_table([tmp_path / "a.txt", tmp_path / "b.txt"], tmp_path / "syn.toml")
    assert words[0] not in set(t["protected_word"])
    assert f"{words[0]} (missing from b)" in caplog.text
    save_embedding(Embedding(words, rng.normal(size=(len(words), 4))), tmp_path / "c.txt")
    with pytest.raises(InputDataError, match="different dimensions"):
        ensemble_table([tmp_path / "a.txt", tmp_path / "c.txt"], tmp_path / "syn.toml")


def test_cli_train_and_errors(corpus, tmp_path, capsys):
    out = tmp_path / "runs"
    rc = main(["--quiet", "train", str(corpus), "-o", str(out), "--seeds", "2",
               "--vector-size", "16", "--min-count", "2", "--epochs", "1",
               "--wordlist", str(corpus.parent / "syn.toml"), "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert (out / "distances.csv").is_file() and len(payload["manifest"]["models"]) == 2
    from bayesbias.distances import read_distance_table

    t = read_distance_table(out / "distances.csv")
    assert t["embedding"].nunique() == 2  # the embedding column survives reading
    assert main(["train", str(tmp_path / "nope.txt"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nope.txt" in err and len(err.strip().splitlines()) == 1
    assert main(["train", str(corpus), "-o", str(out), "--seeds", "0"]) == 2


def test_interrupted_run_keeps_finished_models(corpus, tmp_path):
    train_models(corpus, tmp_path, seeds=1, settings=SMALL)
    (tmp_path / "manifest.json").unlink()  # as if interrupted before the manifest
    stamp = (tmp_path / "original-seed1.bin").stat().st_mtime_ns
    m = train_models(corpus, tmp_path, seeds=2, settings=SMALL)
    assert (tmp_path / "original-seed1.bin").stat().st_mtime_ns == stamp
    assert len(m["models"]) == 2
    other = TrainSettings(vector_size=8, min_count=2, epochs=1)
    train_models(corpus, tmp_path, seeds=1, settings=other)  # new settings: retrained
    assert (tmp_path / "original-seed1.bin").stat().st_mtime_ns != stamp


def test_changed_model_file_is_refused_and_retrained(corpus, tmp_path):
    out = tmp_path / "runs"
    manifest = train_models(corpus, out, seeds=2, settings=SMALL)
    first = manifest["models"][0]
    assert first["file_sha256"] == _digests(out)[first["file"]]
    good = (out / first["file"]).read_bytes()
    damaged = bytearray(good)
    damaged[-1] ^= 0xFF
    (out / first["file"]).write_bytes(bytes(damaged))
    with pytest.raises(InputDataError, match="original-seed1.bin.*changed since"):
        read_manifest(out)
    # a re-run replaces the changed model (same seed, same bytes) and keeps the other
    other = out / manifest["models"][1]["file"]
    kept = other.stat().st_mtime_ns
    train_models(corpus, out, seeds=2, settings=SMALL)
    assert (out / first["file"]).read_bytes() == good
    assert other.stat().st_mtime_ns == kept
    assert len(read_manifest(out)["models"]) == 2
