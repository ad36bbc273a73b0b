"""The long table of cosine distances between protected words and attributes.

One row per (protected word, attribute) pair with columns :data:`COLUMNS`. ``connection``
is ``associated`` (a stereotype of the word's own class), ``different`` (a stereotype of
another class), ``human`` (control: neutral human attribute) or ``none`` (control: neutral
word). ``attribute_class`` is the stereotype's class name, or ``human`` / ``none``.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .._atomic import atomic_path, check_output
from ..config import CONNECTIONS, FACTOR_PREFIX
from ..errors import DistanceTableError, OutputPathError
from ..validation import (
    count_distinct_bounded,
    distinct_bounded,
    empty_label_rows,
    factorize_bounded,
    known_label_codes,
    label_codes,
    remember_label_codes,
    validate_choice,
)
from .embeddings import Embedding, as_embedding, lookup
from .wordlists import WordList, load_wordlist

__all__ = [
    "COLUMNS",
    "categorical_labels",
    "check_pilot",
    "check_spread",
    "cosine_similarity_matrix",
    "distance_table",
    "lookup_parts",
    "read_distance_table",
    "read_published_table",
    "write_distance_table",
    "to_xarray",
    "ENSEMBLE_COLUMNS",
    "n_embeddings",
    "single_embedding",
]

log = logging.getLogger(__name__)

COLUMNS = (
    "protected_word",
    "protected_class",
    "attribute",
    "attribute_class",
    "connection",
    "cosine_distance",
    "cosine_similarity",
)
#: Columns kept when present: the embedding of each row and its corpus sample
#: (:mod:`bayesbias.inputs.ensemble`), the context draw of each row (``bayesbias contexts``).
OPTIONAL_COLUMNS = ("embedding", "corpus_sample", "context")
PUBLISHED_SENTINEL = -100.0
#: The columns a multi-embedding table adds to a distance table.
ENSEMBLE_COLUMNS = ("embedding", "corpus_sample")


# -- the table of many embeddings: one block of rows per embedding ----------------------------


def n_embeddings(table: pd.DataFrame) -> int:
    """Return the number of embeddings in a table (1 without an ``embedding`` column)."""
    if "embedding" not in table.columns:
        return 1
    return int(table["embedding"].nunique())


def single_embedding(table: pd.DataFrame, model: str, source: str = "") -> pd.DataFrame:
    """Return `table` ready for a model of one embedding, or refuse a table of several.

    A table with an ``embedding`` column holding one embedding comes back without the
    ensemble columns (its units are plain words); two or more raise
    :class:`~bayesbias.errors.DistanceTableError` naming the column and the model to use.
    `model` is a model name, or ``"WEAT"``, ``"MAC"`` or ``"a design or sensitivity
    study"``.
    """
    if "embedding" not in table.columns:
        return table
    k = n_embeddings(table)
    if k >= 2:
        where = f"{source}: " if source else ""
        if model in ("WEAT", "MAC", "a design or sensitivity study"):
            use = ("select one embedding's rows (per embedding: bayesbias report or fit "
                   "with --model embedding_level)")
            what = f"{model} describes"
        else:
            use = ("use --model embedding_level (one model of all of them), or select one "
                   "embedding's rows")
            what = f"the {model} model describes"
        raise DistanceTableError(f"{where}the table holds {k} embeddings (column "
                                 f"'embedding'); {what} one embedding: {use}")
    out = table.drop(columns=[c for c in table.columns
                              if c in ENSEMBLE_COLUMNS or str(c).startswith(FACTOR_PREFIX)])
    out.attrs = dict(table.attrs)
    return out



def cosine_similarity_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of `a` with every row of `b` (float64)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.clip(a @ b.T, -1.0, 1.0)


def _attribute_labels(wordlist: WordList) -> tuple[list[str], list[str]]:
    attrs, classes = [], []
    for c in wordlist.classes:
        for w in c.stereotypes:
            if w not in attrs:
                attrs.append(w)
                classes.append(c.name)
    for group in ("human", "none"):
        for w in wordlist.controls.get(group, ()):
            if w not in attrs:
                attrs.append(w)
                classes.append(group)
    return attrs, classes


def distance_table(embedding: Embedding, wordlist, on_missing: str = "error") -> pd.DataFrame:
    """Build the long distance table of `wordlist` on `embedding`.

    Parameters
    ----------
    embedding : Embedding
    wordlist : WordList or str
        A word list or the name/path of one.
    on_missing : {"error", "drop"}
        What to do with protected words and stereotypes not in the embedding. Control
        words (``control:human``, ``control:none``) are a sample of neutral words: those
        not in the embedding are always dropped. Dropped words are listed in
        ``table.attrs["missing"]`` (per word-list part) and logged.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`, one row per (protected word, attribute).
    """
    embedding = as_embedding(embedding)
    wordlist = load_wordlist(wordlist)
    kept_parts, missing = lookup_parts(embedding, wordlist.parts(), on_missing)
    keep = {w for words in kept_parts.values() for w in words}
    wl = wordlist.restrict(keep) if any(missing.values()) else wordlist
    protected = list(wl.protected_words)
    attrs, attr_classes = _attribute_labels(wl)
    if not protected or not attrs:
        raise DistanceTableError(
            f"no protected words or no attributes of {wordlist.name!r} are in {embedding.source}"
        )
    sim = cosine_similarity_matrix(embedding.matrix(protected), embedding.matrix(attrs))
    p_class = np.array([wl.class_of(w) for w in protected], dtype=object)
    a_class = np.array(attr_classes, dtype=object)
    pc = np.repeat(p_class, len(attrs))
    ac = np.tile(a_class, len(protected))
    connection = np.where(
        np.isin(ac, ["human", "none"]), ac, np.where(ac == pc, "associated", "different")
    )
    table = pd.DataFrame({
        "protected_word": np.repeat(np.array(protected, dtype=object), len(attrs)),
        "protected_class": pc,
        "attribute": np.tile(np.array(attrs, dtype=object), len(protected)),
        "attribute_class": ac,
        "connection": connection,
        "cosine_distance": 1.0 - sim.ravel(),
        "cosine_similarity": sim.ravel(),
    })
    table = _categorical(table)
    table.attrs.update(
        wordlist=wordlist.name, embedding=embedding.source,
        missing={k: v for k, v in missing.items() if v},
    )
    return table


def lookup_parts(embedding: Embedding, parts: dict, on_missing: str = "error"):
    """:func:`~bayesbias.embeddings.lookup` with the word-list policy for missing words.

    Protected words and stereotypes follow `on_missing`; control-group parts
    (``control:...``) missing from the embedding are dropped and listed, since the
    controls are a sample of neutral words (the shipped neutral list holds ``literaly``,
    a typo of the published tables that almost no embedding has).
    """
    controls = {k: v for k, v in parts.items() if k.startswith("control:")}
    others = {k: v for k, v in parts.items() if k not in controls}
    kept, missing = lookup(embedding, others, on_missing)
    kept_c, missing_c = lookup(embedding, controls, "drop")
    order = list(parts)
    kept.update(kept_c)
    missing.update(missing_c)
    return ({k: kept[k] for k in order}, {k: missing[k] for k in order})


def _categorical(table: pd.DataFrame, keep: tuple = ()) -> pd.DataFrame:
    """Make connection a categorical of :data:`CONNECTIONS` and the labels ``str``, but `keep`."""
    table["connection"] = _connection_categorical(table["connection"])
    for col in ("protected_word", "protected_class", "attribute", "attribute_class"):
        if table[col].dtype != "str" and col not in keep:
            table[col] = table[col].astype(str)
    return table


def _connection_categorical(conn: pd.Series, factorized=None) -> pd.Categorical:
    """``pd.Categorical(conn, categories=CONNECTIONS)``, by one hashing pass over the rows."""
    if isinstance(conn.dtype, pd.CategoricalDtype) and list(conn.cat.categories) == list(
            CONNECTIONS):
        return conn.array
    # missing values get code -1, as in pd.Categorical
    codes, uniq = pd.factorize(conn) if factorized is None else factorized
    where = {c: i for i, c in enumerate(CONNECTIONS)}
    to = np.asarray([where.get(u, -1) for u in np.asarray(uniq, dtype=object)] + [-1],
                    dtype=np.int8)
    return pd.Categorical.from_codes(to[codes], categories=list(CONNECTIONS))


def _first_rows(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Return the first row of each code of ``pd.factorize`` (-1, a missing value, included)."""
    if n_values > 16:  # hostile input: many values, one hashing pass
        return pd.Series(codes).drop_duplicates().index.to_numpy()
    seen = [k for k in range(-1, n_values) if k >= 0 or (codes.size and codes.min() < 0)]
    return np.asarray([int(np.argmax(codes == k)) for k in seen], dtype=np.int64)


def _validate(table: pd.DataFrame, source: str, codes: dict | None = None) -> pd.DataFrame:
    """Check and normalise a distance table; raise DistanceTableError naming `source`.

    `codes` may hold ``pd.factorize`` of label columns as read (:func:`_read_parquet`);
    it receives that of each label column kept, for :func:`_dedupe`. Label columns that
    are categoricals of those codes (:func:`_read_parquet` with ``categorical``) stay so.
    """
    codes = {} if codes is None else codes
    known = dict(codes)
    codes.clear()
    facts: dict = {}
    missing_cols = [c for c in COLUMNS if c not in table.columns]
    if missing_cols:
        raise DistanceTableError(
            f"{source}: missing column(s) {', '.join(missing_cols)}; a distance table needs "
            f"{', '.join(COLUMNS)}"
        )
    extra = [c for c in OPTIONAL_COLUMNS if c in table.columns]  # a multi-embedding table
    if "embedding" in extra:  # and the corpus samples' factors (decade, language, ...)
        extra += [c for c in table.columns if str(c).startswith(FACTOR_PREFIX)]
    # no .copy(): pandas copies on write, so the caller's frame is never changed
    table = table.loc[:, list(COLUMNS) + extra]
    for col in extra:
        if str(col).startswith(FACTOR_PREFIX):
            missing = table[col].isna().to_numpy() | (table[col].astype(str).str.strip()
                                                      == "").to_numpy()
            if missing.any():
                raise DistanceTableError(f"{source}: column {col} is empty at data row "
                                         f"{int(np.flatnonzero(missing)[0]) + 1}")
        if table[col].dtype != "str":
            table[col] = table[col].astype(str)
    conn = table["connection"]
    if not (isinstance(conn.dtype, pd.CategoricalDtype)  # as _read_parquet makes it
            and list(conn.cat.categories) == list(CONNECTIONS) and conn.cat.codes.min() >= 0):
        conn_codes = pd.factorize(conn)
        if conn_codes[0].size and conn_codes[0].min() < 0:
            raise DistanceTableError(f"{source}: column connection is empty at data row "
                                     f"{int(np.argmax(conn_codes[0] < 0)) + 1}")
        firsts = _first_rows(conn_codes[0], len(conn_codes[1]))  # a row of each value
        bad = sorted(set(conn.iloc[firsts].astype(str)) - set(CONNECTIONS))
        if bad:
            raise DistanceTableError(
                f"{source}: unknown connection value(s) {', '.join(bad)}; "
                f"valid: {', '.join(CONNECTIONS)}"
            )
        table["connection"] = _connection_categorical(conn, conn_codes)
    for col in ("cosine_distance", "cosine_similarity"):
        values = table[col]
        if values.dtype != np.float64:
            values = pd.to_numeric(values, errors="coerce")
        bad_rows = np.flatnonzero(~np.isfinite(values.to_numpy(dtype=float)))
        if bad_rows.size:
            raise DistanceTableError(
                f"{source}: column {col} has {bad_rows.size} non-numeric or missing value(s), "
                f"first at data row {bad_rows[0] + 1}"
            )
        if table[col].dtype != np.float64:  # (setting a float column again copies it)
            table[col] = values.astype(float)
    if not _allclose_complement(table["cosine_distance"].to_numpy(),
                                table["cosine_similarity"].to_numpy(), atol=1e-6):
        raise DistanceTableError(f"{source}: cosine_distance is not 1 - cosine_similarity")
    if (table["cosine_distance"] < -1e-9).any() or (table["cosine_distance"] > 2 + 1e-9).any():
        raise DistanceTableError(f"{source}: cosine_distance outside [0, 2]")
    for col in ("protected_word", "protected_class", "attribute", "attribute_class"):
        facts[col] = known.get(col) or pd.factorize(table[col])
        empty = empty_label_rows(table[col], facts[col])
        if empty.any():
            raise DistanceTableError(f"{source}: column {col} is empty at data row "
                                     f"{int(np.flatnonzero(empty)[0]) + 1}")
    _check_labels(table, source, facts)
    # label columns read as categoricals of the reader's codes (labels="categorical")
    keep = tuple(c for c in facts if isinstance(table[c].dtype, pd.CategoricalDtype)
                 and c in known and table[c].cat.categories.dtype == "str")
    # codes of the values as they are kept (``_categorical`` leaves a str column alone)
    codes.update({c: f for c, f in facts.items() if table[c].dtype == "str" or c in keep})
    codes.update({c: known[c] for c in extra if c in known})
    return _categorical(table, keep)


def _allclose_complement(a: np.ndarray, b: np.ndarray, atol: float,
                         block: int = 2**20) -> bool:
    """``np.allclose(a, 1 - b, atol=atol)`` in blocks of rows (a few MB of temporaries)."""
    return all(np.allclose(a[i:i + block], 1 - b[i:i + block], atol=atol)
               for i in range(0, len(a), block))


def _key(*parts) -> np.ndarray:
    """One int64 key per row from (codes, number of codes) pairs, most significant first."""
    key = parts[0][0].astype(np.int64)
    for codes, size in parts[1:]:
        key *= size  # in place: one array of temporaries
        key += codes
    return key


def _check_labels(table: pd.DataFrame, source: str, codes: dict | None = None) -> None:
    """One class per protected word, and connections that follow from the classes."""
    # Every check runs on label codes (one hashing pass per column), then on the few
    # distinct (word, class) and (attribute class, class) pairs.
    codes = codes or {}
    w, words = label_codes(table["protected_word"], codes.get("protected_word"))
    p, pclass = label_codes(table["protected_class"], codes.get("protected_class"))
    pairs = distinct_bounded(_key((w, words.size), (p, pclass.size)), words.size * pclass.size)
    n_classes = np.bincount(pairs // pclass.size, minlength=words.size)
    if (n_classes > 1).any():
        word = min(words[n_classes > 1])
        k = int(np.flatnonzero(words == word)[0])
        classes = sorted(pclass[pairs[pairs // pclass.size == k] % pclass.size])
        raise DistanceTableError(
            f"{source}: protected word {word!r} is under {len(classes)} protected classes "
            f"({', '.join(classes)})")
    a, aclass = label_codes(table["attribute_class"], codes.get("attribute_class"))
    conn_col = table["connection"]  # a categorical here: its codes need no hashing
    c, conn = label_codes(conn_col, (conn_col.cat.codes.to_numpy(), conn_col.cat.categories)
                          if isinstance(conn_col.dtype, pd.CategoricalDtype) else None)
    # the distinct (attribute class, class, connection) triples, one int64 key per row
    n_pairs = aclass.size * pclass.size
    triple = _key((a, aclass.size), (p, pclass.size), (c, conn.size))
    keys = distinct_bounded(triple, n_pairs * conn.size)
    pair, kc = keys // conn.size, keys % conn.size
    ka, kp = aclass[pair // pclass.size], pclass[pair % pclass.size]
    expected = np.asarray([x if x in ("human", "none") else
                           "associated" if x == y else "different"
                           for x, y in zip(ka, kp, strict=True)], dtype=object)
    wrong = (kp != "unknown") & (conn[kc].astype(str) != expected.astype(str))
    if wrong.any():
        bad = np.isin(triple, keys[wrong])
        combo = _key((a, aclass.size), (p, pclass.size))
        i = int(np.flatnonzero(bad)[0])
        expected = {int(k): e for k, e in zip(pair, expected, strict=True)}
        raise DistanceTableError(
            f"{source}: data row {i + 1} ({words[w[i]]!r}, {table['attribute'].iloc[i]!r}) "
            f"has connection {conn[c[i]]!r}, but its classes ({pclass[p[i]]!r} word, "
            f"{aclass[a[i]]!r} attribute) make it {expected[int(combo[i])]!r}"
            + (f"; {int(bad.sum())} such rows" if bad.sum() > 1 else ""))


def _dedupe(table: pd.DataFrame, duplicates: str, source: str,
            codes: dict | None = None) -> pd.DataFrame:
    # a pair repeats once per embedding (ensembles) and per context draw (encoder contexts)
    if duplicates == "keep":
        return table
    key = ["protected_word", "attribute"] + [c for c in ("embedding", "context")
                                             if c in table.columns]
    codes = codes or {}
    code = np.zeros(len(table), dtype=np.int64)
    for col in key:  # one int64 code per distinct key, by hashing (not string tuples)
        k, uniq = codes.get(col) or pd.factorize(table[col])
        if k.size and k.min() < 0:  # missing values: one more code, as duplicated()
            k = np.where(k < 0, len(uniq), k.astype(np.int64))
        if code.size and int(code.max()) + 1 > 2**62 // (len(uniq) + 1):
            code = pd.factorize(code)[0].astype(np.int64)  # renumber before it overflows
        code *= len(uniq) + 1  # in place: no temporaries of the rows
        code += k
    if code.size and count_distinct_bounded(code, int(code.max()) + 1) == code.size:
        return table  # every key once (the usual case): no hash table of the rows
    keep_row = ~pd.Series(code).duplicated().to_numpy()
    if keep_row.all():
        return table
    dup = pd.Series(code).duplicated(keep=False).to_numpy()
    if not dup.any():
        return table
    if duplicates == "error":
        first = table.loc[dup, key].iloc[0].tolist()
        raise DistanceTableError(f"{source}: repeated pair(s), first {first}")
    spread = table.loc[dup].groupby(key)["cosine_distance"].agg(lambda s: s.max() - s.min())
    if (spread > 1e-9).any():
        pair = spread[spread > 1e-9].index[0]
        raise DistanceTableError(f"{source}: pair {pair} repeats with different distances")
    n = int((~keep_row).sum())
    log.info("%s: dropped %d repeated (protected word, attribute) rows", source, n)
    out = table.loc[keep_row].reset_index(drop=True)
    out.attrs = dict(table.attrs, repeats_dropped=n)
    return out


def check_spread(table: pd.DataFrame, source: str = "distance table") -> None:
    """Refuse a connection whose distances are all equal: no model with a residual sd fits.

    Its posterior piles onto sd = 0 and the sampler never finishes (a constant table used
    to run for ever in ``fit`` and ``design``).

    Raises
    ------
    DistanceTableError
        Naming the connection.
    """
    x = table["cosine_distance"].to_numpy(dtype=float)
    codes, labels = label_codes(table["connection"])  # labels in first-appearance order
    for k, c in enumerate(labels):
        v = x[codes == k]
        if v.size > 1 and np.ptp(v) <= 1e-12 * max(1.0, float(np.abs(v).max())):
            raise DistanceTableError(
                f"{source}: every distance of connection {c!r} is {v[0]:.6g}; a model "
                "with a residual spread cannot be fitted to identical values")


def check_pilot(table: pd.DataFrame, source: str = "pilot") -> None:
    """Refuse a pilot table a design or sensitivity study cannot use, with the reason.

    Every connection (associated, different, human, none) must have rows, or its
    contrasts would come from the prior alone; every protected class needs two words, or
    the spread between words is the prior's; the distances must vary (:func:`check_spread`).

    Raises
    ------
    DistanceTableError
    """
    single_embedding(table, "a design or sensitivity study", source)
    present = set(table["connection"].astype(str))
    missing = [c for c in CONNECTIONS if c not in present]
    if missing:
        raise DistanceTableError(
            f"{source}: no {', '.join(repr(c) for c in missing)} rows; the contrasts with "
            f"{missing[0]!r} would come from the prior alone (give a pilot with all of "
            f"{', '.join(CONNECTIONS)})")
    words = table.groupby("protected_class", observed=True)["protected_word"].nunique()
    few = sorted(str(k) for k, n in words.items() if n < 2)
    if few:
        raise DistanceTableError(
            f"{source}: class(es) {', '.join(map(repr, few))} have a single protected word; "
            "the spread between words cannot be learned from one (give two or more)")
    check_spread(table, source)


def read_published_table(path, duplicates: str = "drop", missing: str = "drop") -> pd.DataFrame:
    """Read a table in the published format of Dobrzeniecka & Urbaniak.

    Parameters
    ----------
    path : path-like
        CSV with columns ``protected_word, word_to_compare, word_class, cosine_distance,
        cosine_similarity, connection``.
    duplicates : {"drop", "keep", "error"}
        Repeated (protected word, attribute) pairs (the race tables repeat pairs because
        protected words recur across Manzini's definite sets). ``"drop"`` keeps one row per
        pair after checking that the repeats agree, so no pair is counted twice.
    missing : {"drop", "error"}
        Rows with the ``-100`` sentinel (a word missing from the embedding). ``"drop"``
        removes them and lists the missing words in ``table.attrs["missing"]``.
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path, index_col=0)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DistanceTableError(f"{path}: cannot read as CSV: {exc}") from None
    needed = ["protected_word", "word_to_compare", "word_class", "cosine_distance",
              "cosine_similarity", "connection"]
    absent = [c for c in needed if c not in raw.columns]
    if absent:
        raise DistanceTableError(f"{path}: not in the published format; missing {absent}")
    sentinel = (raw["cosine_distance"] == PUBLISHED_SENTINEL) | (
        raw["cosine_similarity"] == PUBLISHED_SENTINEL)
    missing_words: dict[str, list[str]] = {}
    if sentinel.any():
        if missing == "error":
            raise DistanceTableError(f"{path}: {int(sentinel.sum())} rows hold the -100 sentinel")
        # A word is missing if all its rows are sentinels.
        for col, part in (("protected_word", "protected"), ("word_to_compare", "attribute")):
            frac = sentinel.groupby(raw[col]).mean()
            missing_words[part] = sorted(frac.index[frac == 1.0])
        log.info("%s: dropped %d rows with the -100 sentinel", path, int(sentinel.sum()))
        raw = raw.loc[~sentinel]
    assoc = raw.loc[raw["connection"] == "associated"]
    pclass = assoc.groupby("protected_word")["word_class"].first().str.removesuffix("_stereotype")
    table = pd.DataFrame({
        "protected_word": raw["protected_word"].astype(str),
        "protected_class": raw["protected_word"].map(pclass).fillna("unknown").astype(str),
        "attribute": raw["word_to_compare"].astype(str),
        "attribute_class": raw["word_class"].astype(str).str.removesuffix("_stereotype")
        .replace({"neutral": "none"}),
        "connection": raw["connection"],
        "cosine_distance": raw["cosine_distance"],
        "cosine_similarity": raw["cosine_similarity"],
    }).reset_index(drop=True)
    codes: dict = {}
    table = _validate(table, str(path), codes)
    table.attrs.update(source=str(path), missing={k: v for k, v in missing_words.items() if v},
                       sentinel_rows_dropped=int(sentinel.sum()))
    return _dedupe(table, duplicates, str(path), codes)


#: Label columns of :func:`read_distance_table`.
LABELS = ("str", "categorical", "auto")


def read_distance_table(path, duplicates: str = "drop", labels: str = "str") -> pd.DataFrame:
    """Read a distance table: our CSV/Parquet format, or the published CSV format.

    `labels`: the label columns as ``str`` (default), or as categoricals of the same labels
    in order of first appearance (``"categorical"``; ``"auto"``: from
    :data:`CATEGORICAL_ROWS` rows; :func:`categorical_labels`). From Parquet they are
    made from the codes read with the labels, so no string per row is ever built.
    """
    validate_choice(labels, LABELS, "labels")
    path = Path(path)
    if not path.exists():
        raise DistanceTableError(f"{path}: no such file")
    if not path.is_file():
        raise DistanceTableError(f"{path}: not a regular file (a folder, device or FIFO)")
    if not os.access(path, os.R_OK):
        raise DistanceTableError(f"{path}: no permission to read")
    codes: dict = {}
    if path.suffix in (".parquet", ".pq"):
        try:
            table, codes = _read_parquet(path, labels)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise DistanceTableError(f"{path}: cannot read as Parquet: {exc}") from None
    else:
        try:
            head = pd.read_csv(path, nrows=0)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError,
                UnicodeDecodeError) as exc:
            raise DistanceTableError(f"{path}: cannot read as CSV: {exc}") from None
        if "word_to_compare" in head.columns:
            return read_published_table(path, duplicates=duplicates)
        try:
            table = pd.read_csv(path)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise DistanceTableError(f"{path}: cannot read as CSV: {exc}") from None
    table = _validate(table, str(path), codes)
    table.attrs["source"] = str(path)
    out = _dedupe(table, duplicates, str(path), codes)
    if out is table:  # the codes still describe its rows: models.cells_from_table uses them
        for col, fact in codes.items():
            if out[col].dtype == "str":  # a categorical carries its codes
                remember_label_codes(out[col], fact)
    if labels == "categorical" or (labels == "auto" and len(out) >= CATEGORICAL_ROWS):
        categorical_labels(out)  # a CSV, or a column the Parquet read left as str
    return out


#: Label columns read as categoricals with ``labels="categorical"``.
_CATEGORICAL_COLUMNS = ("protected_word", "protected_class", "attribute", "attribute_class")
#: Label columns read from Parquet as dictionaries (their codes come with the read).
_LABEL_COLUMNS = ("protected_word", "protected_class", "attribute", "attribute_class",
                  "connection", "embedding", "context")


def _read_parquet(path: Path, labels: str = "str") -> tuple[pd.DataFrame, dict]:
    """``pd.read_parquet(path)`` of the table's columns, and ``pd.factorize`` of its labels.

    The string label columns are read dictionary-encoded (as Parquet usually stores them),
    one at a time, so their codes cost no hashing of the rows; they are returned as the
    ``str`` columns ``pd.read_parquet`` gives (with `labels` ``"categorical"``, or ``"auto"``
    from :data:`CATEGORICAL_ROWS` rows: as categoricals of those codes, when no value is
    missing), except ``connection``, returned as the categorical :func:`_validate` makes of
    it when its values are all valid. Columns a distance table does not use are not read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    names = list(schema.names)
    wanted = set(COLUMNS) | set(OPTIONAL_COLUMNS)
    fast = [c for c in _LABEL_COLUMNS if names.count(c) == 1
            and (pa.types.is_string(schema.field(c).type)
                 or pa.types.is_large_string(schema.field(c).type))]
    rest = [c for c in names if (c in wanted or (c.startswith(FACTOR_PREFIX)
                                                 and "embedding" in names)) and c not in fast]
    if not fast or not rest or len(set(names)) != len(names):
        return pd.read_parquet(path), {}
    pool = pa.default_memory_pool()
    file = pq.ParquetFile(path, read_dictionary=fast)
    categorical = labels == "categorical" or (
        labels == "auto" and file.metadata.num_rows >= CATEGORICAL_ROWS)
    table = pd.read_parquet(path, columns=rest)
    pool.release_unused()  # the read's buffers: the memory pool keeps them otherwise
    codes = {}
    for col in fast:
        column = file.read(columns=[col]).column(col)
        if column.length() != len(table):  # pragma: no cover - one file, one row count
            raise ValueError("columns of different lengths")
        values, codes[col] = _dictionary_column(
            column, decode=col != "connection" and not (
                categorical and col in _CATEGORICAL_COLUMNS and not column.null_count))
        if values is None and col != "connection":  # its categorical, from the codes
            values = pd.Categorical.from_codes(*codes[col])
        elif values is None:  # connection
            conn = _connection_from_codes(*codes.pop(col))
            values = conn if conn is not None else pd.array(column.cast(pa.large_string()),
                                                            dtype="str")
        del column
        table[col] = values
        pool.release_unused()
    return table[[c for c in names if c in table.columns]], codes


def _connection_from_codes(codes: np.ndarray, uniques) -> pd.Categorical | None:
    """Return the connection categorical of these codes (None: a value missing or unknown)."""
    where = {c: i for i, c in enumerate(CONNECTIONS)}
    if (codes.size and codes.min() < 0) or any(u not in where for u in uniques):
        return None
    to = np.asarray([where[u] for u in uniques], dtype=np.int8)
    return pd.Categorical.from_codes(to[codes], categories=list(CONNECTIONS))


def _dictionary_column(col, decode: bool = True) -> tuple:
    """Return a dictionary-encoded Arrow string column as ``str`` and its ``pd.factorize``.

    With ``decode=False`` the array is None (only the codes are wanted).
    """
    import pyarrow as pa

    chunks = col.chunks
    # batches of one row group share its dictionary: the distinct dictionaries, in order
    dicts, which = [], []
    for chunk in chunks:
        if not dicts or not chunk.dictionary.equals(dicts[-1]):
            dicts.append(chunk.dictionary)
        which.append(len(dicts) - 1)
    if dicts:
        merged = pa.chunked_array(dicts, type=dicts[0].type).dictionary_encode()
        merged = merged.combine_chunks()
        values, ids = merged.dictionary, merged.indices.to_numpy()
    else:
        values, ids = pa.array([], type=pa.large_string()), np.zeros(0, dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum([len(d) for d in dicts])]).astype(np.int64)
    codes = np.empty(len(col), dtype=np.int32 if len(col) < 2**31 else np.int64)
    at = 0
    for chunk, j in zip(chunks, which, strict=True):
        local = chunk.indices.fill_null(-1).to_numpy()
        to = np.append(ids[starts[j]:starts[j + 1]], -1).astype(codes.dtype)  # a null: -1
        codes[at:at + len(chunk)] = to[local]
        at += len(chunk)
    # number the values in order of first appearance, as pd.factorize does
    valid = codes >= 0
    if valid.all():
        codes, order = factorize_bounded(codes, len(values))
    else:
        sub, order = factorize_bounded(codes[valid], len(values))
        codes[valid] = sub
    # the smallest integer type (a few classes: one byte a row)
    small = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                 if len(order) <= np.iinfo(t).max)
    codes = codes.astype(small, copy=False)
    uniques = pd.Index(pd.array(values.take(pa.array(order)).cast(pa.large_string()),
                                dtype="str"))
    column = pd.array(_decode(col), dtype="str") if decode else None
    return column, (codes, uniques)


def _decode(col):
    """Return a dictionary-encoded string column as large strings (no all-valid bitmap)."""
    import pyarrow as pa

    out = col.cast(pa.large_string())
    if out.null_count:
        return out
    # as pd.read_parquet gives it: the cast adds an all-valid bitmap
    return pa.chunked_array([pa.Array.from_buffers(c.type, len(c), [None, *c.buffers()[1:]],
                                                   null_count=0, offset=c.offset)
                             for c in out.chunks], type=out.type)


#: Rows from which the command line holds a table's label columns as categoricals
#: (:func:`categorical_labels`).
CATEGORICAL_ROWS = 1_000_000


def categorical_labels(table: pd.DataFrame) -> pd.DataFrame:
    """Turn `table`'s ``str`` label columns into categoricals of the same labels, in place.

    A word's label is then stored once, not once per row: the label columns of a 10M-row
    table take about 80 MB instead of 580 MB of Arrow strings. Categories are in order of
    first appearance (as ``pd.factorize`` numbers them), from the codes the reader kept
    (:func:`read_distance_table`), else from one ``pd.factorize`` per column. Returns `table`.
    """
    for col in _LABEL_COLUMNS:
        if col not in table.columns or table[col].dtype != "str":
            continue
        codes, uniques = known_label_codes(table[col]) or pd.factorize(table[col])
        if codes.size and codes.min() < 0:  # a missing label: left as it is
            continue
        table[col] = pd.Categorical.from_codes(codes, categories=pd.Index(uniques))
    if "pyarrow" in sys.modules:  # the strings' buffers: the memory pool keeps them otherwise
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    return table


#: Output suffixes of :func:`write_distance_table`.
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def check_table_path(path, what: str = "output") -> Path:
    """Refuse a table output whose suffix is not CSV or Parquet, or a bad target."""
    path = check_output(path, what=what)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise OutputPathError(
            f"{what} {path}: unsupported table suffix {path.suffix or '(none)'!r}; "
            f"use {', '.join(TABLE_SUFFIXES)}")
    return path


def write_distance_table(table: pd.DataFrame, path) -> Path:
    """Write `table` as CSV or Parquet (by suffix: ``.csv``, ``.parquet``/``.pq``), atomically."""
    path = check_table_path(path)
    with atomic_path(path) as tmp:
        if path.suffix.lower() in (".parquet", ".pq"):
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False, float_format="%.10g")
    return path


def to_xarray(table: pd.DataFrame) -> xr.Dataset:  # noqa: F821
    """Return the table as a Dataset with dims ``(protected_word, attribute)``.

    Coordinates carry the classes; ``connection`` is a 2-d variable. Pairs absent from the
    table are NaN.
    """
    from .._xarray import xr

    idx = table.set_index(["protected_word", "attribute"])
    if idx.index.has_duplicates:
        raise DistanceTableError("to_xarray needs one row per (protected word, attribute)")
    ds = xr.Dataset.from_dataframe(idx[["cosine_distance", "cosine_similarity"]])
    conn = idx["connection"].astype(str).unstack()
    ds["connection"] = (("protected_word", "attribute"),
                        conn.reindex(index=ds.protected_word.values,
                                     columns=ds.attribute.values).to_numpy())
    pclass = table.groupby("protected_word")["protected_class"].first()
    aclass = table.groupby("attribute")["attribute_class"].first()
    ds = ds.assign_coords(
        protected_class=("protected_word", pclass.reindex(ds.protected_word.values).to_numpy()),
        attribute_class=("attribute", aclass.reindex(ds.attribute.values).to_numpy()),
    )
    ds.attrs.update({k: str(v) for k, v in table.attrs.items()})
    return ds
