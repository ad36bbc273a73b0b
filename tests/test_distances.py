"""Distance tables: labels, numerical correctness, I/O, the published format."""

import numpy as np
import pandas as pd
import pytest

from bayesbias.datasets import published_table
from bayesbias.distances import (
    COLUMNS,
    cosine_similarity_matrix,
    distance_table,
    read_distance_table,
    to_xarray,
    write_distance_table,
)
from bayesbias.embeddings import Embedding
from bayesbias.errors import DistanceTableError, OutOfVocabularyError
from bayesbias.wordlists import load_wordlist


@pytest.fixture
def emb():
    rng = np.random.default_rng(1)
    wl = load_wordlist("religion")
    return Embedding(list(wl.all_words), rng.normal(size=(len(wl.all_words), 7)), "rnd")


def test_table_matches_independent_computation(emb):
    table = distance_table(emb, "religion")
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 15 * (11 + 85 + 226)
    vec = dict(zip(emb.words, emb.vectors, strict=True))
    for _, row in table.sample(200, random_state=0).iterrows():
        a, b = vec[row.protected_word], vec[row.attribute]
        cos = a @ b / np.sqrt((a @ a) * (b @ b))
        assert row.cosine_similarity == pytest.approx(cos, abs=1e-12)
        assert row.cosine_distance == pytest.approx(1 - cos, abs=1e-12)


def test_connection_labels(emb):
    table = distance_table(emb, "religion").set_index(["protected_word", "attribute"])
    assert table.loc[("muslim", "terrorist"), "connection"] == "associated"
    assert table.loc[("rabbi", "terrorist"), "connection"] == "different"
    assert table.loc[("rabbi", "greedy"), "connection"] == "associated"
    assert table.loc[("church", "walk"), "connection"] == "human"
    assert table.loc[("church", "ballpark"), "connection"] == "none"
    counts = table["connection"].value_counts()
    assert counts["associated"] == 55 and counts["different"] == 110


def test_missing_words_error_or_drop(emb):
    keep = [w for w in emb.words if w not in ("imam", "cheap")]
    small = Embedding(keep, emb.matrix(keep), "small")
    with pytest.raises(OutOfVocabularyError, match="imam") as info:
        distance_table(small, "religion")
    assert info.value.missing == {"protected:muslim": ["imam"], "stereotypes:jew": ["cheap"]}
    table = distance_table(small, "religion", on_missing="drop")
    assert "imam" not in set(table.protected_word) and "cheap" not in set(table.attribute)
    assert table.attrs["missing"] == {"protected:muslim": ["imam"], "stereotypes:jew": ["cheap"]}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(emb, tmp_path, suffix):
    table = distance_table(emb, "religion")
    path = write_distance_table(table, tmp_path / f"t{suffix}")
    back = read_distance_table(path)
    pd.testing.assert_frame_equal(back.reset_index(drop=True), table.reset_index(drop=True),
                                  check_exact=False, rtol=1e-9)
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_xarray_view(emb):
    ds = to_xarray(distance_table(emb, "religion"))
    assert dict(ds.sizes) == {"protected_word": 15, "attribute": 322}
    assert ds.protected_class.sel(protected_word="jew").item() == "jew"
    assert ds.connection.sel(protected_word="jew", attribute="greedy").item() == "associated"


def test_cosine_matrix_bounds():
    x = np.array([[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(cosine_similarity_matrix(x, x),
                               [[1, 1 / np.sqrt(2)], [1 / np.sqrt(2), 1]])


def test_published_race_repeats_and_sentinels():
    race = published_table("race", "reddit")
    assert len(race) == 3260 and race.attrs["repeats_dropped"] == 5868 - 3260
    kept = published_table("race", "reddit", duplicates="keep")
    assert len(kept) == 5868
    glove = published_table("religion", "glove")
    assert glove.attrs["missing"] == {"attribute": ["literaly"]}
    assert (glove.cosine_distance > -1).all()
    with pytest.raises(DistanceTableError, match="sentinel"):
        published_table("religion", "glove", missing="error")


def test_bad_tables(tmp_path):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"protected_word": ["a"], "attribute": ["b"]}).to_csv(bad, index=False)
    with pytest.raises(DistanceTableError, match="missing column"):
        read_distance_table(bad)
    rows = {"protected_word": ["a", "a"], "protected_class": ["x", "x"], "attribute": ["b", "b"],
            "attribute_class": ["none", "none"], "connection": ["none", "none"],
            "cosine_distance": [0.5, 0.6], "cosine_similarity": [0.5, 0.4]}
    pd.DataFrame(rows).to_csv(bad, index=False)
    with pytest.raises(DistanceTableError, match="different distances"):
        read_distance_table(bad)
    rows["connection"] = ["none", "bogus"]
    pd.DataFrame(rows).to_csv(bad, index=False)
    with pytest.raises(DistanceTableError, match="bogus"):
        read_distance_table(bad)
    with pytest.raises(DistanceTableError, match="no such file"):
        read_distance_table(tmp_path / "nope.csv")
