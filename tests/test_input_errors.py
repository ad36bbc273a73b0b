"""Bad input to the comparators gives typed errors that name the problem."""

import numpy as np
import pytest

from bayesbias.comparators.mac import mac_from_table
from bayesbias.comparators.null import NullStudy, neutral_pool
from bayesbias.comparators.weat import weat_from_table
from bayesbias.datasets import published_table
from bayesbias.errors import DistanceTableError, InputDataError, WordListError


def test_resample_pool_too_small_is_refused():
    pool = neutral_pool(published_table("religion", "reddit"))
    assert pool.shape == (15, 226)
    NullStudy(null="resample", targets=(7, 8), attributes=(8, 8), pool=pool, reps=10)
    with pytest.raises(InputDataError, match="15 protected words"):
        NullStudy(null="resample", targets=(8, 8), attributes=(8, 8), pool=pool, reps=10)


def test_mac_with_a_word_lacking_a_class_names_it():
    table = published_table("religion", "reddit")
    gap = (table.protected_word == "rabbi") & (table.attribute_class == "muslim")
    with pytest.raises(DistanceTableError, match="'rabbi'.*'muslim'"):
        mac_from_table(table.loc[~gap])
    assert np.isfinite(mac_from_table(table).mac)


def test_weat_from_table_with_an_empty_set_is_a_table_error():
    table = published_table("gender", "reddit")
    no_b = table.loc[table.attribute_class != "woman"]
    with pytest.raises(DistanceTableError, match="B"):
        weat_from_table(no_b, classes=("man", "woman"))


def test_user_file_named_like_a_shipped_test(tmp_path, monkeypatch):
    from bayesbias.comparators.weat import resolve_weat_sets

    monkeypatch.chdir(tmp_path)
    (tmp_path / "weat_mine.toml").write_text(
        "name = 'mine'\n[classes.a]\nprotected_words = ['x1', 'x2']\nstereotypes = ['a1']\n"
        "[classes.b]\nprotected_words = ['y1', 'y2']\nstereotypes = ['b1']\n")
    assert resolve_weat_sets("weat_mine.toml").X == ("x1", "x2")
    assert resolve_weat_sets("weat_7").A[0] == "male"
    with pytest.raises(WordListError):
        resolve_weat_sets("weat_none.toml")


def test_group_flags_with_missing_values_are_refused():
    import pandas as pd

    from bayesbias.classifier import nuanced_auc_metrics

    y = np.array([0, 1, 0, 1, 0, 1])
    score = np.linspace(0, 1, 6)
    flags = pd.DataFrame({"g": [True, np.nan, False, True, False, True]})
    with pytest.raises(InputDataError, match="'g' has missing values"):
        nuanced_auc_metrics(y, score, flags)
