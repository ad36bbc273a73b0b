"""Classifier input validation and identity groups recovered from the madlibs templates."""

import numpy as np
import pandas as pd
import pytest

from bayesbias.classifier.data import (
    MADLIBS_REFERENCE_TERMS,
    counterfactual_frames,
    identity_groups,
    identity_terms,
    intersect_groups,
    validate_classifier_data,
)
from bayesbias.datasets import madlibs
from bayesbias.errors import InputDataError


@pytest.fixture(scope="module")
def ml():
    return madlibs()


def test_identity_terms_recovered_from_templates(ml):
    terms = identity_terms(ml)
    assert len(terms) == 51
    assert {"african american", "middle eastern", "middle aged", "lgbtq", "nonbinary"} <= set(
        terms)
    # adjectives and occupations fill template-specific slots and are not identity terms
    assert not {"happy", "awful", "best", "dancer", "woman", "person"} & set(terms)
    assert set(MADLIBS_REFERENCE_TERMS) <= set(terms)


def test_identity_groups_match_published_subset_sizes(ml):
    g = identity_groups(ml, list(MADLIBS_REFERENCE_TERMS))
    sizes = g.sum()
    # subset_size column of the published unitary table (tests/data/README.md)
    assert sizes["black"] == sizes["white"] == 1596
    assert all(sizes[t] == 1800 for t in MADLIBS_REFERENCE_TERMS if t not in ("black", "white"))
    assert g.index.equals(ml.index)


def test_longest_match_versus_whole_word(ml):
    longest = identity_groups(ml, ["african american", "american", "african"])
    word = identity_groups(ml, ["african american", "american", "african"], match="word")
    aa = ml["phrase"].str.contains("african american")
    # with longest match an "african american" phrase is not also "american"
    assert not (longest["american"] & aa).any()
    assert (word["american"] & aa).sum() == aa.sum()
    assert longest["african american"].sum() == word["african american"].sum() == aa.sum()


def test_intersect_groups(ml):
    g = identity_groups(ml, ["black", "white", "gay", "lesbian"])
    inter = intersect_groups(g, ["black", "white"], ["gay", "lesbian"])
    assert list(inter.columns) == ["black gay", "black lesbian", "white gay", "white lesbian"]
    assert (inter.sum() == 102).all()  # subset_size of the published intersectional table


def test_counterfactual_frames_group_variations(ml):
    g = identity_groups(ml)
    src = counterfactual_frames(ml, g)
    am = ml["template"] == "am_identity"
    assert src[am].nunique() == 1  # "I am {identity}": one source with 51 variations
    being = ml["template"] == "being_identity"
    assert src[being].nunique() == 16  # one per adjective
    two_terms = g.sum(axis=1) == 2
    assert src[two_terms].isna().all()


def _table():
    return pd.DataFrame({"y": ["pos", "neg", "pos", "neg"], "s": [0.9, 0.2, 0.4, 0.6],
                         "a": [True, True, False, False], "cat": ["x", "x", "y", "y"]})


def test_validate_ok_and_threshold():
    cd = validate_classifier_data(_table(), "y", score="s", groups=["a"], positive="pos",
                                  threshold=0.5)
    np.testing.assert_array_equal(cd.y, [True, False, True, False])
    np.testing.assert_array_equal(cd.pred, [True, False, False, True])
    cd2 = validate_classifier_data(_table(), "y", score="s", group_column="cat",
                                   positive="pos")
    assert cd2.group_names == ["x", "y"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(label="nope", score="s", groups=["a"], positive="pos"), "'nope'"),
    (dict(label="y", score="s", groups=["missing_group"], positive="pos"), "'missing_group'"),
    (dict(label="y", score="s", groups=["a"], positive="toxic"), "'toxic'"),
    (dict(label="y", score="s", groups=["a"]), "'y' must be binary"),
    (dict(label="y", score="s", positive="pos"), "group"),
    (dict(label="y", score="s", groups=["cat"], positive="pos"), "'cat' must be boolean"),
])
def test_validate_errors_name_the_column(kwargs, match):
    with pytest.raises(InputDataError, match=match):
        validate_classifier_data(_table(), **kwargs)


def test_nan_scores_and_non_binary_labels_rejected():
    t = _table()
    t.loc[2, "s"] = np.nan
    with pytest.raises(InputDataError, match="'s' has 1 missing"):
        validate_classifier_data(t, "y", score="s", groups=["a"], positive="pos")
    t = _table()
    t["y3"] = ["a", "b", "c", "a"]
    with pytest.raises(InputDataError, match="'y3' must be binary"):
        validate_classifier_data(t, "y3", score="s", groups=["a"], positive="a")


def test_madlibs_data_helper():
    from bayesbias.classifier.data import madlibs_data

    cd, full = madlibs_data("TOXICITY@6", terms=["gay", "straight"])
    assert cd.n == 30240 and cd.group_names == ["gay", "straight"]
    assert cd.y.sum() == 15120
    np.testing.assert_array_equal(cd.pred, full["TOXICITY@6"].to_numpy() >= 0.5)
    assert "group:gay" in full.columns
