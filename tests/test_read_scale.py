"""Reading Parquet tables by their dictionary codes gives what the plain read gave.

``read_distance_table`` reads a Parquet file's string label columns dictionary-encoded and
keeps their ``pd.factorize`` for ``cells_from_table``. The reference here is the plain path
(``pd.read_parquet`` of the whole file, codes computed by hashing), run through the same
checks: the tables, the errors and the cells must be equal (exactly).
"""

import numpy as np
import pandas as pd
import pytest

import bayesbias.distances as distances
from bayesbias.datasets import read_table
from bayesbias.distances import read_distance_table
from bayesbias.errors import DistanceTableError
from bayesbias.models.cells import cells_from_table
from bayesbias.validation import (
    count_distinct_bounded,
    distinct_bounded,
    empty_label_rows,
    factorize_bounded,
    known_label_codes,
)

LABELS = ("protected_word", "protected_class", "attribute", "attribute_class")


def _plain(monkeypatch, path, **kw):
    """``read_distance_table`` through ``pd.read_parquet`` (no codes from the read)."""
    with monkeypatch.context() as m:
        m.setattr(distances, "_read_parquet", lambda p, labels="str": (pd.read_parquet(p), {}))
        return read_distance_table(path, **kw)


def _base(n_copies=3):
    base = read_table("published:religion:reddit").astype({"connection": str})
    out = pd.concat([base] * n_copies, ignore_index=True)
    k = np.repeat(np.arange(n_copies), len(base)).astype(str)
    out["attribute"] = out["attribute"].astype(str) + "_" + k  # pairs stay unique
    return out


def _assert_same_read(monkeypatch, path, **kw):
    new = read_distance_table(path, **kw)
    old = _plain(monkeypatch, path, **kw)
    pd.testing.assert_frame_equal(new, old)
    assert new.attrs == old.attrs
    for col in LABELS:
        got = known_label_codes(new[col])
        if got is None:
            continue
        want = pd.factorize(new[col])
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1].equals(want[1]) and got[1].dtype == want[1].dtype
    return new, old


def _assert_same_cells(new, old):
    a, b = cells_from_table(new), cells_from_table(old.copy(deep=True))
    for field in ("units", "unit_class", "n", "mean", "ss", "y", "unit_idx", "conn_idx",
                  "attributes", "attribute_kind", "attr_idx"):
        x, y = getattr(a, field), getattr(b, field)
        np.testing.assert_array_equal(x, y, err_msg=field)
        assert x.dtype == y.dtype, field


@pytest.mark.parametrize("writer", [
    {},  # pandas' defaults: dictionary pages, one row group
    {"row_group_size": 1000},  # a dictionary per row group, in different orders
    {"use_dictionary": False},  # plain pages: dictionaries built on read
])
def test_parquet_read_equals_the_plain_read(monkeypatch, tmp_path, writer):
    table = _base()
    rng = np.random.default_rng(0)
    table = table.iloc[rng.permutation(len(table))].reset_index(drop=True)
    path = tmp_path / "t.parquet"
    table.to_parquet(path, index=False, **writer)
    new, old = _assert_same_read(monkeypatch, path)
    assert all(known_label_codes(new[c]) is not None for c in LABELS)
    _assert_same_cells(new, old)


def test_parquet_edge_values_and_layouts(monkeypatch, tmp_path):
    """Unicode, an index written with the table, object columns, extra and optional columns."""
    table = _base(2)
    table.loc[:40, "attribute"] = table.loc[:40, "attribute"] + "é ß 漢"
    table["note"] = "ignored"
    table["embedding"] = np.where(np.arange(len(table)) % 2 == 0, "e1", "e2")
    table.index = pd.Index(np.arange(len(table)) * 3 + 7, name="row")
    path = tmp_path / "t.parquet"
    table.astype({c: object for c in LABELS}).to_parquet(path, row_group_size=777)
    new, old = _assert_same_read(monkeypatch, path)
    assert "note" not in new.columns and new.index.name == "row"
    # a categorical column (stored as a dictionary type) takes the plain route
    table.astype({"protected_class": "category"}).to_parquet(path)
    _assert_same_read(monkeypatch, path)


@pytest.mark.parametrize("edit, match", [
    (lambda t: t.assign(connection=t["connection"].where(t.index != 5, "friend")),
     "unknown connection value"),
    (lambda t: t.assign(connection=t["connection"].where(t.index != 5, None)),
     "connection is empty at data row 6"),  # was a TypeError
    (lambda t: t.assign(protected_word=t["protected_word"].where(t.index != 9, "  ")),
     "protected_word is empty at data row 10"),
    (lambda t: t.assign(attribute=t["attribute"].where(t.index != 9, None)),
     "attribute is empty at data row 10"),
    (lambda t: t.assign(protected_class=t["protected_class"].where(t.index != 0, "other")),
     "is under 2 protected classes"),
    (lambda t: t.assign(attribute_class=t["attribute_class"].where(t.index != 3, "none")),
     "has connection"),
    (lambda t: pd.concat([t, t.iloc[:2]], ignore_index=True), None),  # repeats dropped
])
def test_parquet_errors_and_repeats_as_the_plain_read(monkeypatch, tmp_path, edit, match):
    path = tmp_path / "t.parquet"
    edit(_base(1)).to_parquet(path, index=False, row_group_size=1000)
    if match is None:
        new, old = _assert_same_read(monkeypatch, path)
        assert new.attrs["repeats_dropped"] == 2
        with pytest.raises(DistanceTableError) as a:
            read_distance_table(path, duplicates="error")
        with pytest.raises(DistanceTableError) as b:
            _plain(monkeypatch, path, duplicates="error")
        assert str(a.value) == str(b.value)
        return
    with pytest.raises(DistanceTableError, match=match) as a:
        read_distance_table(path)
    with pytest.raises(DistanceTableError) as b:
        _plain(monkeypatch, path)
    assert str(a.value) == str(b.value)


def test_kept_codes_follow_the_column(tmp_path):
    path = tmp_path / "t.parquet"
    _base(2).to_parquet(path, index=False)
    table = read_distance_table(path)
    assert known_label_codes(table["protected_word"]) is not None
    ref = cells_from_table(table.copy(deep=True))
    # a value set in place: the kept codes no longer describe the column
    table.loc[0, "protected_word"] = "brand new"
    assert known_label_codes(table["protected_word"]) is None
    got = cells_from_table(table)
    assert got.units[0] == "brand new" and got.units.size == ref.units.size + 1
    np.testing.assert_array_equal(got.unit_idx, cells_from_table(table.copy(deep=True)).unit_idx)
    # a slice of rows is a new array: no codes kept, the cells are those of the slice
    part = read_distance_table(path).iloc[::-1]
    assert known_label_codes(part["attribute"]) is None
    np.testing.assert_array_equal(cells_from_table(part).attributes,
                                  cells_from_table(part.copy(deep=True)).attributes)


@pytest.mark.parametrize("bound, n", [(5, 1000), (300, 100), (10**9, 1000), (1, 0)])
def test_bounded_integer_helpers_equal_pandas(bound, n):
    keys = np.random.default_rng(bound).integers(0, bound, n)
    codes, uniques = factorize_bounded(keys, bound)
    want_codes, want_uniques = pd.factorize(keys)
    np.testing.assert_array_equal(codes, want_codes)
    np.testing.assert_array_equal(uniques, want_uniques)
    np.testing.assert_array_equal(distinct_bounded(keys, bound), np.sort(pd.unique(keys)))
    assert count_distinct_bounded(keys, bound) == pd.unique(keys).size


@pytest.mark.parametrize("null", [None, 0])
def test_dictionary_codes_in_first_appearance_order(null):
    """Chunks with their own dictionaries, unused entries, nulls: codes as pd.factorize."""
    import pyarrow as pa

    chunks = [
        pa.DictionaryArray.from_arrays(pa.array([2, 0, null, 2, 1], type=pa.int32()),
                                       pa.array(["z", "y", "x", "unused"])),
        pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], type=pa.int32()),
                                       pa.array(["w", "x"])),
        pa.DictionaryArray.from_arrays(pa.array([1, 1], type=pa.int32()),
                                       pa.array(["w", "x"])),  # equal to the one before
    ]
    col = pa.chunked_array(chunks)
    values, (codes, uniques) = distances._dictionary_column(col)
    want = pd.Series(["x", "z", None if null is None else "z", "x", "y", "w", "x", "w", "x",
                      "x"], dtype="str")
    pd.testing.assert_series_equal(pd.Series(values), want)
    want_codes, want_uniques = pd.factorize(want)
    np.testing.assert_array_equal(codes, want_codes)
    assert uniques.equals(want_uniques)


def test_categorical_labels_keep_every_label(tmp_path):
    """Label columns become categoricals of the same labels, from the reader's codes."""
    from bayesbias.distances import categorical_labels

    path = tmp_path / "t.parquet"
    _base(3).to_parquet(path, index=False)
    table = read_distance_table(path)
    before = table.copy()
    codes = {c: known_label_codes(table[c]) for c in LABELS}
    assert all(v is not None for v in codes.values())
    size = table.memory_usage(deep=True).sum()
    assert categorical_labels(table) is table
    for col in LABELS:
        assert isinstance(table[col].dtype, pd.CategoricalDtype)
        assert table[col].astype(str).tolist() == before[col].astype(str).tolist()
        # categories in order of first appearance: the codes the reader kept
        np.testing.assert_array_equal(table[col].cat.codes.to_numpy(), codes[col][0])
        assert list(table[col].cat.categories) == pd.unique(before[col]).tolist()
    assert table.attrs == before.attrs
    assert table.memory_usage(deep=True).sum() < size / 2
    # the cells, and so the fit, are those of the str table
    a, b = cells_from_table(before), cells_from_table(table)
    for field in ("units", "attributes", "n", "unit_idx", "conn_idx", "attr_idx", "y"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    # a CSV (no codes kept) the same, by factorizing
    csv = tmp_path / "t.csv"
    before.to_csv(csv, index=False)
    plain = categorical_labels(read_distance_table(csv))
    for col in LABELS:
        assert plain[col].astype(str).tolist() == before[col].astype(str).tolist()


def test_fit_command_with_categorical_labels_prints_the_same(tmp_path, capsys, monkeypatch):
    """`bayesbias fit` on a table held with categorical labels prints the same JSON."""
    import json

    from bayesbias import distances as dist
    from bayesbias.cli import main
    from bayesbias.testing import simulate_table

    table, _ = simulate_table(seed=9, words_per_class=3, n_human=15, n_none=30)
    path = tmp_path / "t.parquet"
    table.to_parquet(path, index=False)
    args = ["--quiet", "fit", "--distances", str(path), "--draws", "100", "--tune", "100",
            "--chains", "2", "--seed", "3", "--json"]
    out = []
    for rows in (dist.CATEGORICAL_ROWS, 0):  # str labels (a small table), then categoricals
        monkeypatch.setattr(dist, "CATEGORICAL_ROWS", rows)
        assert main(args) == 0
        out.append(json.loads(capsys.readouterr().out))
        out[-1]["run"].pop("wall_time_s")
    assert out[0] == out[1]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_labels_read_as_categoricals_equal_categorical_labels_after_a_read(tmp_path, suffix):
    """``labels="categorical"``: the table `categorical_labels` makes of the str read."""
    from bayesbias.distances import CATEGORICAL_ROWS, categorical_labels

    path = tmp_path / f"t{suffix}"
    base = _base(3)
    base.to_parquet(path, index=False) if suffix == ".parquet" else base.to_csv(path,
                                                                                 index=False)
    want = categorical_labels(read_distance_table(path))
    got = read_distance_table(path, labels="categorical")
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs == want.attrs
    for col in LABELS:
        assert isinstance(got[col].dtype, pd.CategoricalDtype)
        assert got[col].cat.categories.dtype == "str"
    a, b = cells_from_table(want), cells_from_table(got)
    for field in ("units", "attributes", "n", "unit_idx", "conn_idx", "attr_idx", "y"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    # "auto": str below CATEGORICAL_ROWS
    assert len(base) < CATEGORICAL_ROWS
    assert read_distance_table(path, labels="auto")["attribute"].dtype == "str"


def test_labels_read_as_categoricals_are_checked_as_str_ones(tmp_path):
    """The same refusals: a wrong connection, an empty label, an unknown `labels`."""
    from bayesbias.errors import InvalidArgumentError

    bad = _base(3)
    bad.loc[2, "connection"] = "human" if bad.loc[2, "connection"] != "human" else "none"
    path = tmp_path / "bad.parquet"
    bad.to_parquet(path, index=False)
    with pytest.raises(DistanceTableError, match="has connection") as plain:
        read_distance_table(path)
    with pytest.raises(DistanceTableError, match="has connection") as cat:
        read_distance_table(path, labels="categorical")
    assert str(plain.value) == str(cat.value)
    empty = _base(3)
    empty.loc[4, "attribute"] = None
    empty.to_parquet(path, index=False)
    with pytest.raises(DistanceTableError, match="column attribute is empty at data row 5"):
        read_distance_table(path, labels="categorical")
    with pytest.raises(InvalidArgumentError, match="labels must be one of"):
        read_distance_table(path, labels="codes")


@pytest.mark.parametrize("labels, known", [(["b", "a", "b", "c", "a"], True),
                                           (["x", "x"], True), (["a", None, "b"], False)])
def test_categorical_codes_are_known_when_in_first_appearance_order(labels, known):
    """A categorical numbered as pd.factorize numbers it gives its own codes; else None."""
    col = pd.Series(labels, dtype="str")
    codes, uniques = pd.factorize(col)
    first = pd.Series(pd.Categorical.from_codes(codes, categories=uniques)) if known else \
        col.astype("category")
    got = known_label_codes(first)
    if not known:
        assert got is None
        return
    want = pd.factorize(first)
    np.testing.assert_array_equal(got[0], want[0])
    assert list(got[1]) == list(want[1])
    # sorted categories (pandas' default) are another numbering: not known
    if len(set(labels)) > 1:
        assert known_label_codes(col.astype("category")) is None
    # empty rows of a categorical, from its codes in any order
    np.testing.assert_array_equal(empty_label_rows(col.astype("category")),
                                  empty_label_rows(col))
