"""Validators of argument values, in one place.

Each returns the value in its canonical type or raises
:class:`~bayesbias.errors.InvalidArgumentError` naming the argument, the value given
and what is valid. The command line's argparse types (``bayesbias.cli._common``) call
these same functions, so Python and the CLI accept exactly the same values.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Iterable

from .errors import InvalidArgumentError

__all__ = [
    "CI_KINDS",
    "POSTERIOR_CI_KINDS",
    "MAX_SEED",
    "MAX_DRAWS",
    "MAX_CHAINS",
    "MAX_RESAMPLES",
    "validate_ci_prob",
    "validate_ci_kind",
    "validate_choice",
    "validate_int",
    "validate_float",
    "validate_seed",
    "validate_probability",
    "label_codes",
    "empty_label_rows",
    "factorize_bounded",
    "distinct_bounded",
    "count_distinct_bounded",
    "remember_label_codes",
    "known_label_codes",
]

#: Interval kinds a result can carry in ``ci_kind``.
CI_KINDS = ("hdi", "eti", "delong", "bootstrap", "bernstein", "t")

#: Interval kinds a posterior summary can be asked for (``ci_kind=`` / ``--ci-kind``).
POSTERIOR_CI_KINDS = ("hdi", "eti")

#: Largest seed accepted (numpy's SeedSequence takes any non-negative int; PyMC and
#: nutpie take 32-bit seeds).
MAX_SEED = 2**32 - 1

#: Upper limits of counts, far above any useful value but below what exhausts memory
#: or overflows the sampler (``--draws 1e12`` aborted inside nutpie): posterior draws
#: (and tuning steps) per chain, chains, and resamples / replications.
MAX_DRAWS = 1_000_000
MAX_CHAINS = 64
MAX_RESAMPLES = 100_000_000


def _number(value, name: str) -> float:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    if isinstance(value, numbers.Real):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}") from None


def validate_float(value, name: str, *, low: float | None = None, high: float | None = None,
                   low_open: bool = False, high_open: bool = False) -> float:
    """Return `value` as a finite float within the given bounds.

    Parameters
    ----------
    value : float or str
    name : str
        Argument name used in the error message (e.g. ``"--sd"`` or ``"sd"``).
    low, high : float, optional
        Bounds; ``low_open`` / ``high_open`` exclude them.
    """
    x = _number(value, name)
    if not math.isfinite(x):
        raise InvalidArgumentError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise InvalidArgumentError(
            f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise InvalidArgumentError(
            f"{name} must be {'<' if high_open else '<='} {high:g}, got {value!r}")
    return x


def validate_int(value, name: str, *, low: int | None = 1, high: int | None = None) -> int:
    """Return `value` as an int in ``[low, high]``; ``"1e3"`` and ``1000.0`` are accepted."""
    x = _number(value, name)
    if not math.isfinite(x) or x != int(x):
        raise InvalidArgumentError(f"{name} must be a whole number, got {value!r}")
    n = int(x)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        n = int(value)  # exact for huge ints
    if low is not None and n < low:
        raise InvalidArgumentError(f"{name} must be >= {low}, got {value!r}")
    if high is not None and n > high:
        raise InvalidArgumentError(f"{name} must be <= {high:,}, got {value!r}")
    return n


def validate_seed(value, name: str = "seed") -> int:
    """Return a seed in ``[0, 2**32 - 1]``."""
    return validate_int(value, name, low=0, high=MAX_SEED)


def validate_probability(value, name: str) -> float:
    """Return a probability strictly between 0 and 1."""
    return validate_float(value, name, low=0.0, high=1.0, low_open=True, high_open=True)


def validate_ci_prob(ci_prob, name: str = "ci_prob") -> float:
    """Return the interval probability `ci_prob` as a float in (0, 1)."""
    return validate_probability(ci_prob, name)


def validate_choice(value, choices: Iterable[str], name: str) -> str:
    """Return `value` if it is one of `choices`, else raise listing them."""
    choices = tuple(choices)
    if value not in choices:
        raise InvalidArgumentError(
            f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def validate_ci_kind(ci_kind, allowed: Iterable[str] = POSTERIOR_CI_KINDS,
                     name: str = "ci_kind") -> str:
    """Return `ci_kind` if it is one of `allowed` (codes of :data:`CI_KINDS`)."""
    return validate_choice(ci_kind, allowed, name)



def label_codes(values, factorized=None) -> tuple:
    """Codes and distinct labels of a column of labels, by their ``str`` values.

    One hashing pass over the rows (or none, given ``factorized = pd.factorize(values)``);
    every per-value check then runs on the few distinct labels (``labels[codes]`` is the
    column as ``str``). Check for missing values first (:func:`empty_label_rows`): here
    they get the label ``"nan"``.

    Returns
    -------
    codes : ndarray of int, shape (n_rows,)
    labels : ndarray of str (object), in first-appearance order
    """
    import numpy as np
    import pandas as pd

    codes, uniq = pd.factorize(values) if factorized is None else factorized
    if getattr(uniq, "dtype", None) == "str" and not (codes.size and codes.min() < 0):
        # distinct strings already: their str values are themselves and distinct
        return codes, np.asarray(uniq, dtype=object)  # int32 or int64 codes, as given
    as_str = [str(u) for u in np.asarray(uniq, dtype=object)]
    if codes.size and codes.min() < 0:
        as_str.append("nan")  # codes -1 index it
    merged, labels = pd.factorize(np.asarray(as_str, dtype=object), use_na_sentinel=False)
    return merged.astype(np.int64)[codes], np.asarray(labels, dtype=object)


def empty_label_rows(values, factorized=None):
    """Boolean mask of the rows of `values` that are missing or blank (whitespace only).

    The same test as ``values.isna() | (values.astype(str).str.strip() == "")``, run on
    the distinct values only (``factorized = pd.factorize(values)`` if already computed).
    """
    import numpy as np
    import pandas as pd

    if factorized is None and getattr(values, "dtype", None) == "category":
        factorized = (np.asarray(values.cat.codes), values.cat.categories)  # any order will do
    codes, uniq = pd.factorize(values) if factorized is None else factorized
    if getattr(uniq, "dtype", None) != "str":
        uniq = pd.Series(np.asarray(uniq, dtype=object), dtype=object).astype(str)
    blank = (pd.Series(uniq).str.strip() == "").to_numpy(dtype=bool)
    if not blank.any() and not (codes.size and codes.min() < 0):
        return np.zeros(codes.size, dtype=bool)  # the usual case: no pass over the rows
    return (codes < 0) | np.append(blank, False)[codes]


def _dense(bound: int, n: int) -> bool:
    """Whether a table of `bound` entries is cheap beside `n` rows (about 4 bytes a row)."""
    return bound <= 4 * n + 2**16


def distinct_bounded(keys, bound: int):
    """Return the distinct values of non-negative integer `keys` below `bound`, sorted.

    Equals ``np.sort(pd.unique(keys))``; by one scatter into a table of `bound` flags when
    `bound` is not much above the number of keys (no hashing), else by hashing.
    """
    import numpy as np
    import pandas as pd

    keys = np.asarray(keys)
    if not _dense(bound, keys.size):
        return np.sort(pd.unique(keys))
    seen = np.zeros(bound, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen).astype(keys.dtype, copy=False)


def count_distinct_bounded(keys, bound: int) -> int:
    """Return the number of distinct values of non-negative integer `keys` below `bound`.

    ``len(distinct_bounded(keys, bound))`` without listing them.
    """
    import numpy as np
    import pandas as pd

    keys = np.asarray(keys)
    if not _dense(bound, keys.size):
        return int(pd.unique(keys).size)
    seen = np.zeros(bound, dtype=bool)
    seen[keys] = True
    return int(np.count_nonzero(seen))


def factorize_bounded(keys, bound: int) -> tuple:
    """``pd.factorize(keys)`` of non-negative integer `keys` below `bound`.

    Codes number the distinct keys in order of first appearance, as ``pd.factorize`` does;
    when `bound` is not much above the number of keys, from the first row of each key
    (``np.minimum.at``) instead of a hash table.

    Returns
    -------
    codes : ndarray of int32 (int64 from 2**31 rows), shape (n_rows,)
    uniques : ndarray, the distinct keys in first-appearance order
    """
    import numpy as np
    import pandas as pd

    keys = np.asarray(keys)
    n = keys.size
    rows = np.int32 if n < 2**31 - 1 else np.int64
    if not _dense(bound, n):
        codes, uniques = pd.factorize(keys)
        return codes.astype(rows), uniques
    first = np.full(bound, n, dtype=rows)
    np.minimum.at(first, keys, np.arange(n, dtype=rows))
    present = np.flatnonzero(first < n)
    uniques = present[np.argsort(first[present], kind="stable")].astype(keys.dtype)
    if uniques.size == bound and (uniques[1:] > uniques[:-1]).all():
        return keys.astype(rows, copy=False), uniques  # already in first-appearance order
    lookup = np.empty(bound, dtype=rows)
    lookup[uniques] = np.arange(uniques.size, dtype=rows)
    return lookup[keys], uniques


# ``pd.factorize`` of a column of labels as read (distances.read_distance_table), kept for
# the later steps (models.cells) while the column's array lives and is not changed: keyed
# by the id of its pandas array, checked against that array and its Arrow data (immutable;
# an assignment into the column replaces it).
_KNOWN: dict = {}


def remember_label_codes(column, factorized) -> None:
    """Keep ``factorized = pd.factorize(column)`` for :func:`known_label_codes`.

    Only for Arrow-backed columns (the ``str`` dtype), whose data cannot change in place;
    the entry goes when the column's array is freed.
    """
    array = column.array
    arrow = getattr(array, "__arrow_array__", None)
    if arrow is None:
        return
    key = id(array)
    try:
        ref = weakref.ref(array, lambda _, key=key: _KNOWN.pop(key, None))
    except TypeError:  # pragma: no cover - pandas arrays take weak references
        return
    _KNOWN[key] = (ref, arrow(), len(array), factorized)


def known_label_codes(column):
    """``pd.factorize(column)`` if known without hashing the rows, else None.

    Known: kept by :func:`remember_label_codes` for this data, or a categorical whose
    categories are numbered in order of first appearance with none missing (as
    :func:`bayesbias.distances.categorical_labels` makes them): its codes, checked in one
    pass (the uniques are its categories, an Index, not a Categorical).
    """
    array = column.array
    if getattr(array, "dtype", None) == "category":
        return _first_appearance_codes(array)
    hit = _KNOWN.get(id(array))
    if hit is None or hit[0]() is not array or len(array) != hit[2]:
        return None
    if array.__arrow_array__() is not hit[1]:  # set in place since
        return None
    return hit[3]


def _first_appearance_codes(cat):
    """Return a Categorical's ``(codes, categories)`` if ``pd.factorize`` numbers it alike."""
    import numpy as np

    codes = np.asarray(cat.codes)
    k = len(cat.categories)
    if codes.size == 0 or k == 0 or codes[0] != 0:
        return None
    running = np.maximum.accumulate(codes)
    # each code at most one above every code before it, every category used, none missing
    if running[-1] != k - 1 or codes.min() < 0 or ((codes[1:] - running[:-1]) > 1).any():
        return None
    return codes, cat.categories
