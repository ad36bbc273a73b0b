"""Classifier score tables: validation, and identity groups recovered from templated text.

A classifier table has one row per example with a gold label, a score or a predicted label,
and one or more group columns. Groups are either boolean identity flags (which may overlap,
e.g. a sentence can mention two identities) or a single categorical column.

Identity terms of templated data (:func:`identity_terms`)
---------------------------------------------------------
The madlibs sentences are templates filled with words. The identity terms are not shipped
separately; they are recovered from the phrases themselves:

1. For every template, the tokens all its phrases share at the start and at the end are
   dropped; what remains of a phrase is its *filler* (e.g. ``"I am {filler}"``).
2. A set of fillers that is identical for two or more templates is a *vocabulary* (the same
   slot filled in different sentences: ``"I am X"``, ``"I hate X people"``). Sets seen in one
   template only mix a slot with template-specific words (adjectives) and are ignored.
3. A vocabulary is *composite* when each of its fillers splits into two parts at least one
   of which is a filler of one other vocabulary (``"white trans"`` = ``"white"`` +
   ``"trans"``; ``"best white trans"`` = ``"best"`` + ``"white trans"``); composite
   vocabularies come from templates with several slots. The identity terms are the union of the
   non-composite vocabularies.

On the shipped madlibs this yields 51 terms; 32 of them (17 ethnicity, 6 gender and 9
sexual-orientation terms) also fill the two-slot templates.
:func:`identity_groups` then flags the terms in each phrase. ``match="longest"`` (default)
reads a phrase left to right taking the longest term at each word, so ``"african american"``
is one term and not also ``"african"`` and ``"american"``; ``match="word"`` flags every term
that occurs as whole words (the rule of the published madlibs analysis, where ``"american"``
also matches ``"african american"``). For the 12 terms of the published tables both rules agree.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputDataError, InvalidArgumentError
from ..inputs.datasets import madlibs

__all__ = [
    "ClassifierData",
    "validate_classifier_data",
    "identity_terms",
    "identity_groups",
    "intersect_groups",
    "counterfactual_frames",
    "madlibs_data",
    "madlibs_terms",
    "MADLIBS_TERM_CATEGORIES",
    "MADLIBS_REFERENCE_TERMS",
]

log = logging.getLogger(__name__)

#: The 12 identity terms of the published unitary madlibs table (Borkan et al. 2019 code).
MADLIBS_REFERENCE_TERMS: tuple[str, ...] = (
    "lesbian", "gay", "queer", "straight", "bisexual", "homosexual", "heterosexual", "cis",
    "trans", "nonbinary", "black", "white",
)


#: The group of each of the 51 madlibs identity terms. Ethnicity, gender and sexual
#: orientation are the three vocabularies of the two-slot templates (``*_eth_gen*``,
#: ``*_eth_sex*``: 17, 6 and 9 terms); religion, age and disability are this package's labels
#: of the remaining 19 terms.
MADLIBS_TERM_CATEGORIES: dict[str, tuple[str, ...]] = {
    "ethnicity": ("african", "african american", "american", "asian", "black", "canadian",
                  "chinese", "european", "hispanic", "indian", "japanese", "latina", "latino",
                  "latinx", "mexican", "middle eastern", "white"),
    "gender": ("cis", "female", "male", "nonbinary", "trans", "transgender"),
    "sexual orientation": ("bisexual", "gay", "heterosexual", "homosexual", "lesbian", "lgbt",
                           "lgbtq", "queer", "straight"),
    "religion": ("buddhist", "catholic", "christian", "jewish", "muslim", "protestant", "sikh",
                 "taoist"),
    "age": ("elderly", "middle aged", "millenial", "old", "older", "teenage", "young",
            "younger"),
    "disability": ("blind", "deaf", "paralyzed"),
}


@dataclass(frozen=True)
class ClassifierData:
    """Validated arrays of a classifier table.

    Attributes
    ----------
    y : ndarray of bool, shape (n,)
        Gold label (True = positive class).
    score : ndarray of float or None
        Predicted score (higher = more positive), if given.
    pred : ndarray of bool or None
        Predicted label, if given or derived from `score` with a threshold.
    groups : DataFrame of bool, shape (n, n_groups)
        One column per group; rows may belong to several groups or none.
    label_column, score_column : str
        Names in the source table, for reporting.
    """

    y: np.ndarray
    score: np.ndarray | None
    pred: np.ndarray | None
    groups: pd.DataFrame
    label_column: str = "label"
    score_column: str | None = None
    threshold: float | None = None

    @property
    def n(self) -> int:
        """Number of examples."""
        return len(self.y)

    @property
    def group_names(self) -> list[str]:
        """Group names in column order."""
        return [str(c) for c in self.groups.columns]


def check_boolean_flags(groups: pd.DataFrame) -> pd.DataFrame:
    """Return `groups` as booleans; raise InputDataError for missing or non-0/1 values."""
    for c in groups.columns:
        v = groups[c]
        if v.isna().any():
            raise InputDataError(f"group column {c!r} has missing values")
        if v.dtype != bool and not set(pd.unique(v).tolist()) <= {0, 1}:
            raise InputDataError(f"group column {c!r} must be boolean (True/False or 0/1)")
    return groups.astype(bool)


def _require_columns(data: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise InputDataError(
            f"column(s) {', '.join(map(repr, missing))} not in the table; "
            f"available: {', '.join(map(str, data.columns))}")


def _binary_labels(values: pd.Series, column: str, positive=None) -> np.ndarray:
    if values.isna().any():
        rows = np.flatnonzero(values.isna().to_numpy())[:5].tolist()
        raise InputDataError(f"column {column!r} has missing labels (rows {rows} ...)")
    if positive is not None:
        uniq = pd.unique(values)
        if positive not in set(uniq.tolist()):
            # allow '1' vs 1 style mismatch
            as_str = values.astype(str)
            if str(positive) not in set(as_str.unique().tolist()):
                raise InputDataError(
                    f"positive label {positive!r} does not occur in column {column!r} "
                    f"(values: {', '.join(map(str, uniq[:10]))})")
            values = as_str
            positive = str(positive)
        if len(uniq) > 2:
            raise InputDataError(
                f"column {column!r} must be binary, found {len(uniq)} values: "
                f"{', '.join(map(str, uniq[:10]))}")
        return (values == positive).to_numpy(dtype=bool)
    if values.dtype == bool:
        return values.to_numpy(dtype=bool)
    uniq = set(pd.unique(values).tolist())
    if uniq <= {0, 1} or uniq <= {0.0, 1.0} or uniq <= {True, False}:
        return values.astype(float).to_numpy() == 1.0
    raise InputDataError(
        f"column {column!r} must be binary (0/1 or True/False) or name the positive label; "
        f"found values {', '.join(map(str, sorted(map(str, uniq))[:10]))}")


def validate_classifier_data(
    data: pd.DataFrame,
    label: str,
    *,
    score: str | None = None,
    pred: str | None = None,
    groups: Sequence[str] | str | None = None,
    group_column: str | None = None,
    positive=None,
    threshold: float | None = None,
) -> ClassifierData:
    """Check a classifier table and return its arrays.

    Parameters
    ----------
    data : DataFrame
        One row per example.
    label : str
        Gold-label column (binary; name the positive value with `positive` unless 0/1 or bool).
    score : str, optional
        Predicted score column (finite numbers; higher means more positive).
    pred : str, optional
        Predicted label column (binary, same `positive` value as `label`).
    groups : list of str, optional
        Boolean group columns (may overlap).
    group_column : str, optional
        One categorical column; each value becomes a group.
    positive : optional
        Value of `label` (and `pred`) that is the positive class.
    threshold : float, optional
        Predicted label = ``score >= threshold`` when `pred` is not given.

    Raises
    ------
    InputDataError
        Missing columns, missing or non-finite scores, non-binary labels, no groups.
    """
    if not isinstance(data, pd.DataFrame):
        raise InputDataError(f"expected a pandas DataFrame, got {type(data).__name__}")
    if isinstance(groups, str):
        groups = [groups]
    needed = [label] + [c for c in (score, pred, group_column) if c] + list(groups or [])
    _require_columns(data, needed)
    if len(data) == 0:
        raise InputDataError("the table has no rows")
    y = _binary_labels(data[label], label, positive)
    s = None
    if score is not None:
        try:
            s = pd.to_numeric(data[score], errors="raise").to_numpy(dtype=float)
        except (ValueError, TypeError) as exc:
            raise InputDataError(f"column {score!r} must be numeric scores: {exc}") from None
        bad = ~np.isfinite(s)
        if bad.any():
            rows = np.flatnonzero(bad)[:5].tolist()
            raise InputDataError(
                f"column {score!r} has {int(bad.sum())} missing or non-finite score(s) "
                f"(rows {rows} ...); drop or fill them first")
    p = None
    if pred is not None:
        p = _binary_labels(data[pred], pred, positive if positive is not None
                           and positive in set(data[pred].tolist()) else None)
    elif threshold is not None:
        if s is None:
            raise InputDataError("a threshold needs a score column")
        p = s >= float(threshold)
    if group_column is not None:
        col = data[group_column]
        if col.isna().any():
            raise InputDataError(f"column {group_column!r} has missing group values")
        g = pd.get_dummies(col.astype(str), dtype=bool)
        g.index = data.index
    elif groups:
        cols = {}
        for c in groups:
            v = data[c]
            if v.isna().any():
                raise InputDataError(f"group column {c!r} has missing values")
            if v.dtype != bool:
                u = set(pd.unique(v).tolist())
                if not (u <= {0, 1} or u <= {True, False}):
                    raise InputDataError(
                        f"group column {c!r} must be boolean (True/False or 0/1); use "
                        "group_column= for a categorical column")
                v = v.astype(bool)
            cols[str(c)] = v.to_numpy(dtype=bool)
        g = pd.DataFrame(cols, index=data.index)
    else:
        raise InputDataError("give boolean group columns (groups=) or a categorical "
                             "group column (group_column=)")
    _check_shape(y, g, label)
    return ClassifierData(y=y, score=s, pred=p, groups=g, label_column=label,
                          score_column=score, threshold=threshold)


def _check_shape(y: np.ndarray, g: pd.DataFrame, label: str) -> None:
    """Refuse tables on which every group metric is undefined; warn on one label class."""
    if len(y) < 2:
        raise InputDataError(f"the table has {len(y)} row(s); group metrics need at least two")
    if g.shape[1] == 0:
        raise InputDataError("no groups")
    sizes = g.sum(axis=0)
    empty = [str(c) for c in sizes.index[sizes == 0]]
    if empty:
        raise InputDataError(f"group(s) {', '.join(empty)} have no rows; drop them or check "
                             "the group column / terms")
    full = [str(c) for c in sizes.index[sizes == len(y)]]
    if full:
        raise InputDataError(f"group(s) {', '.join(full)} contain every row: there is no "
                             "background to compare them with")
    if y.all() or not y.any():
        log.warning("label column %r has one class only (%s): AUCs, rates conditioned on the "
                    "missing class and the metrics built on them are undefined (NaN)",
                    label, "all positive" if y.all() else "all negative")


def _tokens(text: str) -> list[str]:
    return text.lower().split()


def _fillers(phrases: Sequence[str]) -> list[str]:
    toks = [_tokens(p) for p in phrases]
    pre = len(os.path.commonprefix(toks))
    suf = len(os.path.commonprefix([t[::-1] for t in toks]))
    if len(toks) < 2:
        return [" ".join(t) for t in toks]
    return [" ".join(t[pre:len(t) - suf]) for t in toks]


def _splits_with(filler: str, vocabulary: frozenset) -> bool:
    toks = filler.split()
    return any(" ".join(toks[:k]) in vocabulary or " ".join(toks[k:]) in vocabulary
               for k in range(1, len(toks)))


def identity_terms(data: pd.DataFrame, text: str = "phrase",
                   template: str = "template") -> list[str]:
    """Recover the identity terms a templated data set was filled with.

    See the module docstring for the method (shared fillers of templates, minus
    vocabularies that are pairs of other fillers).

    Parameters
    ----------
    data : DataFrame
        Templated sentences with a text column and a template-id column.
    text, template : str
        Column names.

    Returns
    -------
    list of str
        Sorted terms (lower case).
    """
    _require_columns(data, [text, template])
    vocab: dict[frozenset, list[str]] = {}
    for name, g in data.groupby(template, sort=False):
        fill = frozenset(_fillers(g[text].astype(str).tolist()))
        if "" in fill or len(fill) < 2:
            continue
        vocab.setdefault(fill, []).append(str(name))
    shared = [v for v, names in vocab.items() if len(names) >= 2]

    def composite(v, others):
        for o in others:
            if o is v:
                continue
            if all(_splits_with(f, o) for f in v):
                return True
        return False

    atoms = [v for v in shared if not composite(v, shared)]
    terms = sorted(set().union(*atoms)) if atoms else []
    if not terms:
        raise InputDataError(
            f"could not recover identity terms from {text!r}/{template!r}: no filler set is "
            "shared by two templates; pass the terms explicitly")
    log.info("recovered %d identity terms from %d templates", len(terms),
             data[template].nunique())
    return terms


def identity_groups(data: pd.DataFrame, terms: Sequence[str] | None = None, *,
                    text: str = "phrase", template: str = "template",
                    match: str = "longest") -> pd.DataFrame:
    """Boolean group columns, one per identity term found in each phrase.

    Parameters
    ----------
    data : DataFrame
        Table with a text column.
    terms : list of str, optional
        Identity terms; recovered with :func:`identity_terms` when omitted.
    text, template : str
        Column names.
    match : {"longest", "word"}
        ``"longest"``: scan each phrase left to right, taking the longest term at each word
        (multi-word terms win over their parts). ``"word"``: flag every term that occurs as
        whole words (the rule of the published madlibs tables).

    Returns
    -------
    DataFrame of bool
        Same index as `data`, one column per term (in the order of `terms`).
    """
    if match not in ("longest", "word"):
        raise InvalidArgumentError(f"match must be 'longest' or 'word', got {match!r}")
    _require_columns(data, [text])
    if terms is None:
        terms = identity_terms(data, text=text, template=template)
    terms = [str(t).lower() for t in terms]
    phrases = data[text].astype(str)
    if match == "word":
        cols = {t: phrases.str.contains(r"\b" + re.escape(t) + r"\b", case=False,
                                        regex=True).to_numpy(dtype=bool) for t in terms}
        return pd.DataFrame(cols, index=data.index)
    by_first: dict[str, list[list[str]]] = {}
    for t in terms:
        tt = t.split()
        by_first.setdefault(tt[0], []).append(tt)
    for v in by_first.values():
        v.sort(key=len, reverse=True)
    index = {t: i for i, t in enumerate(terms)}
    out = np.zeros((len(data), len(terms)), dtype=bool)
    cache: dict[str, list[int]] = {}
    for row, phrase in enumerate(phrases):
        hits = cache.get(phrase)
        if hits is None:
            toks = re.findall(r"[\w'-]+", phrase.lower())
            hits, i = [], 0
            while i < len(toks):
                for cand in by_first.get(toks[i], ()):
                    if toks[i:i + len(cand)] == cand:
                        hits.append(index[" ".join(cand)])
                        i += len(cand)
                        break
                else:
                    i += 1
            cache[phrase] = hits
        out[row, hits] = True
    return pd.DataFrame(out, index=data.index, columns=terms)


def intersect_groups(groups: pd.DataFrame, first: Sequence[str],
                     second: Sequence[str]) -> pd.DataFrame:
    """Intersectional groups ``"a b"`` = rows in group `a` and in group `b`."""
    _require_columns(groups, list(first) + list(second))
    return pd.DataFrame({f"{a} {b}": groups[a].to_numpy() & groups[b].to_numpy()
                         for a in first for b in second}, index=groups.index)


def counterfactual_frames(data: pd.DataFrame, groups: pd.DataFrame, *,
                          text: str = "phrase", template: str = "template") -> pd.Series:
    """Source-example id of each row: its template and phrase with the identity term masked.

    Rows whose phrases differ only in the identity term get the same id, so they are
    counterfactual variations of one source example. Rows with no or several identity
    terms get ``<NA>``.
    """
    _require_columns(data, [text, template])
    out = pd.Series(pd.NA, index=data.index, dtype="object")
    member = groups.to_numpy(dtype=bool)
    single = member.sum(axis=1) == 1
    names = np.asarray(groups.columns, dtype=object)
    which = np.where(single, member.argmax(axis=1), -1)
    phrases = data[text].astype(str).to_numpy()
    temps = data[template].astype(str).to_numpy()
    for i in np.flatnonzero(single):
        term = names[which[i]]
        masked = re.sub(r"\b" + re.escape(term) + r"\b", "{identity}", phrases[i].lower(), count=1)
        out.iloc[i] = f"{temps[i]}::{masked}"
    return out


def madlibs_data(score: str = "TOXICITY@1", *, terms: Sequence[str] | None = None,
                 match: str = "longest", threshold: float | None = 0.5,
                 data: pd.DataFrame | None = None) -> tuple[ClassifierData, pd.DataFrame]:
    """Load the shipped madlibs as validated classifier data with identity groups.

    Parameters
    ----------
    score : {"TOXICITY@1", "TOXICITY@6"}
        Classifier version.
    terms : list of str, optional
        Identity terms to use as groups (default: all recovered terms).
    match : {"longest", "word"}
        See :func:`identity_groups`.
    threshold : float, optional
        Predicted label = score >= threshold (for the threshold-based metrics).
    data : DataFrame, optional
        Use this copy of the madlibs table instead of loading it.

    Returns
    -------
    (ClassifierData, DataFrame)
        The validated data and the table with the group columns appended.
    """
    table = madlibs() if data is None else data
    groups = identity_groups(table, terms, match=match)
    full = pd.concat([table, groups.add_prefix("group:")], axis=1)
    cd = validate_classifier_data(full, "toxicity", score=score, positive="toxic",
                                  groups=[f"group:{t}" for t in groups.columns],
                                  threshold=threshold)
    cd.groups.columns = list(groups.columns)
    return cd, full


def madlibs_terms(data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Return the madlibs sentences with one identity term, with its term and category.

    Templates ``*identity*``; columns ``term`` and ``category``
    (:data:`MADLIBS_TERM_CATEGORIES`) added. 3,366 rows: 51 terms x 66 sentences (33 toxic,
    33 non-toxic), for terms nested in groups (``bayesbias groups TABLE --sensitive category
    --term term``).
    """
    table = madlibs() if data is None else data
    one = table[table["template"].astype(str).str.contains("identity")].reset_index(drop=True)
    terms = [t for ts in MADLIBS_TERM_CATEGORIES.values() for t in ts]
    flags = identity_groups(one, terms)
    count = flags.sum(axis=1).to_numpy()
    if np.any(count != 1):
        raise InputDataError(f"madlibs: {int(np.sum(count != 1))} single-identity sentences do "
                             "not hold exactly one identity term")
    category = {t: c for c, ts in MADLIBS_TERM_CATEGORIES.items() for t in ts}
    term = flags.columns.to_numpy()[flags.to_numpy().argmax(axis=1)]
    return one.assign(term=term, category=[category[t] for t in term])
