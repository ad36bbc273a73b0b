"""Forests of thousands of protected words draw a stated selection; the table keeps all."""

import struct
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesbias.config import CONNECTIONS
from bayesbias.models.plots import FOREST_MAX_UNITS, figure_png, fit_forest_figure, select_units
from bayesbias.testing import simulate_table


@pytest.fixture(scope="module")
def forest_data():
    """Forest tables of a simulated 4,000-word table (means and 2-se intervals per cell)."""
    table, _ = simulate_table("hierarchical", seed=5, n_classes=4, words_per_class=1000,
                              stereotypes_per_class=1, n_human=2, n_none=2)
    g = table.groupby(["protected_class", "protected_word", "connection"], observed=True)
    words = g["cosine_distance"].agg(mean="mean", sd="std", rows="count").reset_index()
    half = 2 * words["sd"].fillna(0.1) / np.sqrt(words["rows"])
    words = words.assign(lower=words["mean"] - half, upper=words["mean"] + half,
                         _c=words["connection"].map({c: i for i, c in enumerate(CONNECTIONS)}))
    groups = table.groupby("connection", observed=True)["cosine_distance"].agg(
        mean="mean").reset_index()
    groups = groups.assign(lower=groups["mean"] - 0.01, upper=groups["mean"] + 0.01)
    contrasts = pd.DataFrame({"contrast": ["associated - none"], "mean": [-0.1],
                              "lower": [-0.15], "upper": [-0.05]})
    return words, groups, contrasts


def test_few_units_are_all_drawn(forest_data):
    words, groups, _ = forest_data
    few = words[words["protected_word"].isin(words["protected_word"].unique()[:FOREST_MAX_UNITS])]
    shown, note = select_units(few, groups, "protected_word")
    assert note == "" and shown is few


def test_selection_of_4000_words_is_stated_and_extreme(forest_data):
    words, groups, _ = forest_data
    shown, note = select_units(words, groups, "protected_word")
    assert shown["protected_word"].nunique() == FOREST_MAX_UNITS
    assert note.startswith(f"{FOREST_MAX_UNITS} of 4,000 protected words shown: the 40 ")
    assert "widest intervals" in note and "20 with" in note
    # every cell of a drawn word is drawn, in the table's order
    assert len(shown) == len(words[words["protected_word"].isin(shown["protected_word"])])
    assert list(shown.index) == sorted(shown.index)
    gm = words["connection"].astype(str).map(
        dict(zip(groups["connection"].astype(str), groups["mean"], strict=True)))
    farthest = words.loc[(words["mean"] - gm).abs().idxmax(), "protected_word"]
    widest = words.loc[(words["upper"] - words["lower"]).idxmax(), "protected_word"]
    assert farthest in set(shown["protected_word"])
    assert widest in set(shown["protected_word"])


def test_forest_png_of_4000_words_stays_small(forest_data, tmp_path):

    words, groups, contrasts = forest_data
    shown, note = select_units(words, groups, "protected_word")
    data = {"words": shown, "groups": groups, "contrasts": contrasts,
            "unit": "protected_word", "label": "95% HDI", "selection": note,
            "title": "hierarchical model, 32000 rows\n" + textwrap.fill(note, 110)}
    png = figure_png(fit_forest_figure, data)
    (Path(tmp_path) / "forest.png").write_bytes(png)
    # the PNG header's IHDR chunk (no decoder: matplotlib's imread left a BytesIO with an
    # exported buffer whose collection printed an 'Exception ignored' into a later test)
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    # 60 words x 4 connections at 0.14 in per row and 120 dpi: about 4,200 px (all 4,000
    # words: 270,000 px)
    assert height < 4_500 and width < 1_500
    assert len(png) < 1_000_000


def test_word_contrast_table_of_4000_words_shows_the_ends_and_the_widest():
    from bayesbias.report.sections import _extreme_word_contrasts

    rng = np.random.default_rng(0)
    parts = []
    for c in ("associated - none", "associated - human"):
        mean = np.sort(rng.normal(size=4000))
        half = rng.uniform(0.1, 1.0, size=4000)
        parts.append(pd.DataFrame({"contrast": c, "protected_word": rng.permutation(4000)
                                   .astype(str), "mean": mean, "lower": mean - half,
                                   "upper": mean + half}))
    d = pd.concat(parts, ignore_index=True)
    shown, note = _extreme_word_contrasts(d, "protected_word")
    assert len(shown) == 2 * 60 and list(shown.index) == sorted(shown.index)
    assert note == ("per contrast the 20 most negative, the 20 most positive and the 20 with "
                    "the widest intervals among the rest of the 4,000 protected words are shown")
    for c, rows in d.groupby("contrast"):
        got = shown[shown["contrast"] == c]
        assert set(rows.index[:20]) | set(rows.index[-20:]) <= set(got.index)
        middle = rows.iloc[20:-20]
        widest = (middle["upper"] - middle["lower"]).nlargest(20).index
        assert set(widest) <= set(got.index)
    assert _extreme_word_contrasts(d[d["protected_word"].astype(int) < 60],
                                   "protected_word") == (None, "")
