"""Cells and table checks built from 1-D label codes equal the row-wise construction.

The reference functions below are the construction used before the vectorised one
(``np.unique(axis=0)`` of (unit, class) pairs, a MultiIndex of (attribute, kind), pandas
``duplicated`` on the string columns); the new code must give the same cells, in the same
order, with the same numbers (exact equality: the same float operations in the same order).
"""

import numpy as np
import pandas as pd
import pytest

from bayesbias.config import CONNECTIONS
from bayesbias.datasets import published_table, published_tables
from bayesbias.distances import read_distance_table, write_distance_table
from bayesbias.errors import DistanceTableError
from bayesbias.models.cells import ATTRIBUTE_KINDS, cells_from_table
from bayesbias.validation import empty_label_rows, label_codes


def _reference_unit_class(table, level):
    col = {"word": "protected_word", "class": "protected_class"}[level]
    unit_idx, units = pd.factorize(table[col], sort=False)
    class_codes, class_names = pd.factorize(table["protected_class"], sort=False)
    pairs = np.unique(np.column_stack([unit_idx, class_codes]), axis=0)
    assert pairs.shape[0] == units.size
    unit_class = np.empty(units.size, dtype=object)
    unit_class[pairs[:, 0]] = [str(class_names[k]) for k in pairs[:, 1]]
    return np.asarray([str(u) for u in units], dtype=object), unit_class


def _reference_attributes(table):
    col = table["attribute"]
    conn_idx = pd.Categorical(table["connection"], categories=list(CONNECTIONS)).codes
    kind_code = np.minimum(np.maximum(conn_idx.astype(np.int32) - 1, 0), 2)
    codes, pairs = pd.factorize(pd.MultiIndex.from_arrays([col.astype(str).to_numpy(),
                                                          kind_code]), sort=False)
    words = np.asarray([w for w, _ in pairs], dtype=object)
    kinds = np.asarray([ATTRIBUTE_KINDS[k] for _, k in pairs], dtype=object)
    repeated = pd.Series(words).duplicated(keep=False).to_numpy()
    names = np.asarray([f"{w} ({k})" if r else w
                        for w, k, r in zip(words, kinds, repeated, strict=True)], dtype=object)
    return names, kinds, codes.astype(np.int32)


def _assert_same_cells(table, level):
    cells = cells_from_table(table, level)
    units, unit_class = _reference_unit_class(table, level)
    np.testing.assert_array_equal(cells.units, units)
    np.testing.assert_array_equal(cells.unit_class, unit_class)
    conn = pd.Categorical(table["connection"], categories=list(CONNECTIONS)).codes
    np.testing.assert_array_equal(cells.conn_idx, conn.astype(np.int32))
    y = table["cosine_distance"].to_numpy(dtype=float)
    flat = cells.unit_idx.astype(np.int64) * 4 + cells.conn_idx
    np.testing.assert_array_equal(cells.n.ravel(), np.bincount(flat, minlength=cells.n.size))
    if "attribute" in table.columns:
        names, kinds, idx = _reference_attributes(table)
        np.testing.assert_array_equal(cells.attributes, names)
        np.testing.assert_array_equal(cells.attribute_kind, kinds)
        np.testing.assert_array_equal(cells.attr_idx, idx)
    assert cells.y.tobytes() == y.tobytes()
    return cells


@pytest.mark.parametrize(("topic", "embedding"), published_tables())
@pytest.mark.parametrize("level", ["word", "class"])
def test_cells_equal_reference_on_shipped_tables(topic, embedding, level):
    _assert_same_cells(published_table(topic, embedding), level)


def _edge_table(seed=0, n=3000):
    """Return a random table with the awkward cases.

    Unicode, numeric-looking and padded labels, classes seen first late, an attribute in
    two roles, empty cells, an 'unknown' class.
    """
    rng = np.random.default_rng(seed)
    words = np.array(["żółw", "1", "01", " a", "a", "b b", "Ω", "x" * 40, "nan_", "z"])
    wclass = np.array(["k2", "k1", "k1", "k3", "k2", "k3", "unknown", "k1", "k2", "k3"])
    attrs = np.array(["α", "2", "02", "dual", "q", "r ", "s", "ß", "u"])
    w = rng.integers(0, words.size, n)
    a = rng.integers(0, attrs.size, n)
    conn = np.asarray(CONNECTIONS, dtype=object)[rng.integers(0, 3, n)]  # no "none" at all
    conn[attrs[a] == "dual"] = np.where(rng.random((attrs[a] == "dual").sum()) < 0.5,
                                        "human", "associated")
    d = rng.uniform(0, 2, n)
    return pd.DataFrame({"protected_word": words[w], "protected_class": wclass[w],
                         "attribute": attrs[a], "attribute_class": "x",
                         "connection": conn, "cosine_distance": d,
                         "cosine_similarity": 1 - d})


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", ["word", "class"])
def test_cells_equal_reference_on_edge_cases(seed, level):
    table = _edge_table(seed)
    cells = _assert_same_cells(table, level)
    assert (cells.n[:, CONNECTIONS.index("none")] == 0).all()  # empty cells stay empty
    assert any(" (" in str(x) for x in cells.attributes)  # "dual" in two roles
    _assert_same_cells(table.astype({"connection": "category"}), level)
    _assert_same_cells(table.astype({"protected_word": object, "attribute": object}), level)


def test_cells_refuse_a_word_in_two_classes():
    table = _edge_table(3)
    table.loc[table["protected_word"] == "z", "protected_class"] = ["k1", "k3"] * (
        (table["protected_word"] == "z").sum() // 2) + ["k1"] * (
        (table["protected_word"] == "z").sum() % 2)
    with pytest.raises(DistanceTableError, match="z belong to more than one protected class"):
        cells_from_table(table)


def test_label_helpers_match_row_wise_pandas():
    values = pd.Series(["a", " ", None, "b", "a", "", 3, "3", np.nan, "\t"], dtype=object)
    expected = (values.isna() | (values.astype(str).str.strip() == "")).to_numpy()
    np.testing.assert_array_equal(empty_label_rows(values), expected)
    ok = values[~expected].reset_index(drop=True)
    codes, labels = label_codes(ok)
    np.testing.assert_array_equal(labels[codes], ok.astype(str).to_numpy())
    assert labels.tolist() == ["a", "b", "3"]  # 3 and "3" are one label, first-seen order


def _reference_dedupe(table):
    return table.drop_duplicates(["protected_word", "attribute"]).reset_index(drop=True)


def test_dedupe_equals_pandas_drop_duplicates(tmp_path):
    table = published_table("religion", "reddit")
    rep = pd.concat([table, table.sample(500, random_state=1)], ignore_index=True)
    path = write_distance_table(rep, tmp_path / "rep.parquet")
    got = read_distance_table(path)
    want = _reference_dedupe(read_distance_table(path, duplicates="keep"))
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs["repeats_dropped"] == 500
    with pytest.raises(DistanceTableError, match="repeated pair"):
        read_distance_table(path, duplicates="error")
