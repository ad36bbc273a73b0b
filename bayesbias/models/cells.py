"""Per-cell sufficient statistics of a distance table and the exact Normal log-likelihood.

A cell is a (unit, connection) pair, where the unit is a protected word or a protected class.
For a Normal likelihood whose mean and sd depend only on the cell, the log-density of the rows
of a cell is exactly

    -n/2 log(2 pi) - n log(sigma) - (ss + n (ybar - mu)^2) / (2 sigma^2)

with n the count, ybar the mean and ss the sum of squared deviations from ybar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import CONNECTIONS
from ..errors import DistanceTableError, InvalidArgumentError
from ..validation import (
    distinct_bounded,
    empty_label_rows,
    factorize_bounded,
    known_label_codes,
    label_codes,
)

__all__ = ["Cells", "cells_from_table", "normal_logp_cells", "normal_logp_rows",
           "cell_mean_conditional", "UNIT_DIMS", "ATTRIBUTE_KINDS"]

#: The name of the unit dimension for each level.
UNIT_DIMS = {"word": "protected_word", "class": "protected_class"}
_NEEDED = ("protected_word", "protected_class", "connection", "cosine_distance")
_LOG_2PI = float(np.log(2 * np.pi))
#: Kinds of attribute word: a stereotype (of some class), a human attribute, a neutral word.
ATTRIBUTE_KINDS = ("stereotype", "human", "none")


@dataclass(frozen=True, eq=False)
class Cells:
    """Rows of a distance table grouped into (unit, connection) cells.

    Attributes
    ----------
    level : {"word", "class"}
    units : ndarray of str
        Protected words (or classes), in first-appearance order.
    unit_class : ndarray of str
        The protected class of each unit.
    n, mean, ss : ndarray, shape (n_units, 4)
        Count, mean and sum of squared deviations of the cosine distances in each cell
        (mean is NaN and ss 0 in empty cells). Columns follow :data:`CONNECTIONS`.
    y : ndarray, shape (n_rows,)
        The cosine distances; ``unit_idx`` and ``conn_idx`` give each row's cell.
    attributes : ndarray of str or None
        The attribute words (first-appearance order), when the table names them;
        ``attr_idx`` gives each row's attribute and ``attribute_kind`` each attribute's
        kind (:data:`ATTRIBUTE_KINDS`: a stereotype, a human attribute or a neutral word).
    unit_base, unit_embedding : ndarray of str or None
        For a table of several embeddings (an ``embedding`` column, see
        :mod:`bayesbias.ensemble`): a unit is a protected word (or class) in one embedding,
        labelled ``"word @ embedding"``; these give its word and its embedding index.
    embeddings, embedding_sample : ndarray of str or None
        The embedding labels and the corpus sample of each (``corpus_sample`` column, else
        ``"original"``).
    sub_cells : dict or None
        Finer cells of a family's own layout (its ``cells`` hook, e.g. the context family's
        (word, connection, context) cells); None for the other families.
    """

    level: str
    units: np.ndarray
    unit_class: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    ss: np.ndarray
    y: np.ndarray
    unit_idx: np.ndarray
    conn_idx: np.ndarray
    attributes: np.ndarray | None = None
    attribute_kind: np.ndarray | None = None
    attr_idx: np.ndarray | None = None
    unit_base: np.ndarray | None = None
    unit_embedding: np.ndarray | None = None
    embeddings: np.ndarray | None = None
    embedding_sample: np.ndarray | None = None
    sub_cells: dict | None = None

    @property
    def unit_dim(self) -> str:
        """``"protected_word"`` or ``"protected_class"``."""
        return UNIT_DIMS[self.level]

    @property
    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        """Unit and connection indices of the non-empty cells."""
        return np.nonzero(self.n > 0)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.y.size)

    def row_cells(self) -> np.ndarray:
        """Each row's flat cell ``unit * 4 + connection`` (int64; a new array)."""
        flat = self.unit_idx.astype(np.int64)
        flat *= len(CONNECTIONS)
        flat += self.conn_idx
        return flat

    def summary(self) -> dict:
        """Return counts and mean distance per connection, for stamping saved fits."""
        n = self.n.sum(axis=0)
        tot = np.where(self.n > 0, self.n * np.nan_to_num(self.mean), 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = tot / n
        return {
            "rows": self.n_rows,
            "level": self.level,
            "units": int(self.units.size),
            "classes": sorted(set(self.unit_class.tolist())),
            "rows_per_connection": {c: int(k) for c, k in zip(CONNECTIONS, n, strict=True)},
            "mean_distance_per_connection": {
                c: (None if not np.isfinite(m) else round(float(m), 6))
                for c, m in zip(CONNECTIONS, mean, strict=True)},
            "empty_cells": int((self.n == 0).sum()),
        }


def cells_from_table(table: pd.DataFrame, level: str = "word") -> Cells:
    """Group a distance table into cells and compute their sufficient statistics.

    Parameters
    ----------
    table : pandas.DataFrame
        Needs columns ``protected_word, protected_class, connection, cosine_distance``
        (see :mod:`bayesbias.distances`).
    level : {"word", "class"}
    """
    if level not in UNIT_DIMS:
        raise InvalidArgumentError(f"level must be one of {', '.join(UNIT_DIMS)}, got {level!r}")
    absent = [c for c in _NEEDED if c not in table.columns]
    if absent:
        raise DistanceTableError(f"distance table lacks column(s) {', '.join(absent)}; "
                                 f"the models need {', '.join(_NEEDED)}")
    if len(table) == 0:
        raise DistanceTableError("distance table has no rows")
    facts = {}
    for col in ("protected_word", "protected_class", "connection"):
        if col != "connection":  # connection is usually categorical: its codes are at hand
            # the codes of a table as read (read_distance_table), else one hashing pass
            facts[col] = known_label_codes(table[col]) or pd.factorize(table[col], sort=False)
        missing = empty_label_rows(table[col], facts.get(col))
        if missing.any():
            first = int(np.flatnonzero(missing)[0])
            raise DistanceTableError(f"column {col} has {int(missing.sum())} empty or missing "
                                     f"value(s), first at row {first}")
    y = table["cosine_distance"]
    # a float column as it is (no copy); anything else converted, non-numbers as NaN
    y = (y.to_numpy() if y.dtype == np.float64 else
         pd.to_numeric(y, errors="coerce").to_numpy(dtype=np.float64))
    if not np.isfinite(y).all():
        first = int(np.flatnonzero(~np.isfinite(y))[0])
        raise DistanceTableError(f"cosine_distance has non-finite values, first at row {first}")
    conn = table["connection"]
    bad = sorted({str(v) for v in pd.unique(conn)} - set(CONNECTIONS))
    if bad:
        raise DistanceTableError(f"unknown connection value(s) {', '.join(bad)}; valid: "
                                 f"{', '.join(CONNECTIONS)}")
    conn_idx = _connection_codes(conn)
    col = UNIT_DIMS[level]
    per_embedding = {}
    if "embedding" in table.columns:
        per_embedding = _embedding_units(table, col)
        unit_codes, units = pd.factorize(per_embedding.pop("key"), sort=False)
    else:
        unit_codes, units = facts[col]
    unit_idx = unit_codes.astype(np.int32)
    units = np.asarray([str(u) for u in units], dtype=object)
    class_codes, class_names = facts["protected_class"]
    # the distinct (unit, class) pairs, sorted, as np.unique(axis=0) of the two columns
    # would give them, from one int64 key per row (hashed, then only the pairs sorted)
    n_cls = max(len(class_names), 1)
    key = unit_idx.astype(np.int64)
    key *= n_cls
    key += class_codes
    key = distinct_bounded(key, units.size * n_cls)
    pairs = np.column_stack([key // n_cls, key % n_cls])
    if pairs.shape[0] != units.size:
        dup = np.flatnonzero(np.bincount(pairs[:, 0]) > 1)
        raise DistanceTableError(f"protected word(s) {', '.join(units[dup[:5]])} belong to "
                                 "more than one protected class")
    unit_class = np.empty(units.size, dtype=object)
    names = np.asarray([str(c) for c in class_names], dtype=object)  # few classes
    unit_class[pairs[:, 0]] = names[pairs[:, 1]]
    shape = (units.size, len(CONNECTIONS))
    flat = unit_idx.astype(np.int64) * len(CONNECTIONS) + conn_idx
    size = shape[0] * shape[1]
    n = np.bincount(flat, minlength=size).reshape(shape)
    s1 = np.bincount(flat, weights=y, minlength=size).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, s1 / n, np.nan)
    dev = mean.ravel()[flat]
    np.subtract(y, dev, out=dev)  # y - mean, squared below: in place, the same numbers
    dev *= dev
    ss = np.bincount(flat, weights=dev, minlength=size).reshape(shape)
    del dev, flat
    attributes = attribute_kind = attr_idx = None
    if "attribute" in table.columns:
        attributes, attribute_kind, attr_idx = _attribute_index(table, conn_idx)
    return Cells(level=level, units=units, unit_class=unit_class, n=n, mean=mean, ss=ss,
                 y=y, unit_idx=unit_idx, conn_idx=conn_idx, attributes=attributes,
                 attribute_kind=attribute_kind, attr_idx=attr_idx,
                 **_unit_parts(per_embedding, unit_codes, units.size))


def _connection_codes(conn: pd.Series) -> np.ndarray:
    """Index into :data:`CONNECTIONS` of each row (int32), by one hashing pass."""
    if isinstance(conn.dtype, pd.CategoricalDtype) and list(conn.cat.categories) == list(
            CONNECTIONS):
        return conn.cat.codes.to_numpy().astype(np.int32)
    codes, uniq = pd.factorize(conn)
    where = {c: i for i, c in enumerate(CONNECTIONS)}
    to = np.asarray([where.get(u, -1) for u in np.asarray(uniq, dtype=object)] + [-1],
                    dtype=np.int32)
    return to[codes]


def _embedding_units(table: pd.DataFrame, col: str) -> dict:
    """Return each row's unit key ``"word @ embedding"``, the embeddings and their samples."""
    emb = table["embedding"].astype(str).to_numpy()
    codes, labels = pd.factorize(emb, sort=False)
    if "corpus_sample" in table.columns:
        sample = table["corpus_sample"].astype(str).to_numpy()
        first = pd.Series(sample).groupby(codes).agg(lambda s: sorted(set(s)))
        bad = [labels[i] for i, v in first.items() if len(v) > 1]
        if bad:
            raise DistanceTableError(f"embedding {bad[0]} has rows of more than one "
                                     "corpus_sample")
        samples = np.asarray([first[i][0] for i in range(labels.size)], dtype=object)
    else:
        samples = np.asarray(["original"] * labels.size, dtype=object)
    base = table[col].astype(str).to_numpy()
    return {"key": pd.Series(base, dtype=object) + " @ " + pd.Series(emb, dtype=object),
            "base": base, "codes": codes, "labels": np.asarray(labels, dtype=object),
            "samples": samples}


def _unit_parts(per_embedding: dict, unit_codes: np.ndarray, n_units: int) -> dict:
    """Return the Cells fields of a multi-embedding table (empty for a single embedding)."""
    if not per_embedding:
        return {}
    first = np.zeros(n_units, dtype=np.int64)
    first[unit_codes[::-1]] = np.arange(unit_codes.size)[::-1]  # a row of each unit
    return {"unit_base": np.asarray(per_embedding["base"][first], dtype=object),
            "unit_embedding": per_embedding["codes"][first].astype(np.int32),
            "embeddings": per_embedding["labels"],
            "embedding_sample": per_embedding["samples"]}


def _attribute_index(table: pd.DataFrame, conn_idx: np.ndarray):
    """Attribute words, the kind of each (from its rows' connections) and each row's index.

    All three are None when some row has no attribute.
    """
    col = table["attribute"]
    fact = known_label_codes(col) or pd.factorize(col)
    missing = empty_label_rows(col, fact)
    if missing.any():  # only the crossed family needs them; it says so
        return None, None, None
    # connection codes: 0 associated, 1 different -> stereotype (0); 2 human (1); 3 none (2)
    kind_code = np.asarray([0, 0, 1, 2], dtype=np.int8)[conn_idx]
    # An attribute listed in two roles (say a stereotype and a neutral word) is one
    # attribute per role: its rows in one role say nothing of its effect in the other.
    # (attribute, kind) pairs in first-appearance order, from one int64 key per row
    a, labels = label_codes(col, fact)
    key = a.astype(np.int64)
    key *= 3
    key += kind_code
    codes, keys = factorize_bounded(key, labels.size * 3)
    del key
    words = labels[keys // 3]
    kinds = np.asarray(ATTRIBUTE_KINDS, dtype=object)[keys % 3]
    repeated = np.bincount(keys // 3, minlength=labels.size)[keys // 3] > 1  # labels distinct
    names = np.asarray([f"{w} ({k})" if r else w
                        for w, k, r in zip(words, kinds, repeated, strict=True)], dtype=object)
    return names, kinds, codes.astype(np.int32, copy=False)


def normal_logp_cells(mu, sigma, n, mean, ss, xp=np):
    """Exact Normal log-density of all rows from cell statistics (summed over cells).

    `mu`, `sigma`, `n`, `mean` and `ss` are arrays of the non-empty cells (broadcastable);
    `xp` is the array module (numpy or ``pytensor.tensor``).
    """
    return xp.sum(-0.5 * n * _LOG_2PI - n * xp.log(sigma)
                  - (ss + n * (mean - mu) ** 2) / (2 * sigma**2))


def normal_logp_rows(y, mu, sigma):
    """Pointwise Normal log-density (numpy)."""
    z = (y - mu) / sigma
    return -0.5 * _LOG_2PI - np.log(sigma) - 0.5 * z * z


def cell_mean_conditional(m, t, s, n, ybar):
    """Mean and precision of a cell mean given its rows (the conjugate Normal update).

    ``mu ~ Normal(m, t)`` a priori and ``n`` rows ``~ Normal(mu, s)`` with mean ``ybar``:
    ``mu`` is Normal with precision ``1/t^2 + n/s^2`` and mean
    ``(m/t^2 + n ybar/s^2) / precision``. Arrays broadcast; an empty cell (``n = 0``, any
    finite ``ybar``) gets the prior. Used by every sampler that integrates the cell means out
    (:mod:`bayesbias.models.marginal`, the crossed family, the exact posterior of
    :mod:`bayesbias.studies.exact_posterior`) to draw them back.
    """
    prec = 1.0 / (t * t) + n / (s * s)
    return (m / (t * t) + n * ybar / (s * s)) / prec, prec
