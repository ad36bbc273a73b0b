"""Seeded synthetic data for the comparison with Czarnowska et al.'s code (numpy only).

Used by ``czarnowska_reference.py`` (which runs the authors' metric classes on it) and by
``tests/test_generalized.py`` (which runs ours on the same rows).

- :func:`group_data`: 300 rows, 4 disjoint groups of unequal size, binary gold labels,
  positive-class probabilities that depend on the group, predictions at 0.5.
- :func:`counterfactual_data`: 40 source templates x 3 groups; per group and template a
  number of identity terms (variations), each with its own probability; the gold label is
  constant within a template. ``terms`` chooses the number of terms per group:
  ``"one"`` (1: one combination per template), ``"unequal"`` (2 or 3 at random: 8 to 27
  combinations per template) or ``"large"`` (as unequal, but every fifth template has 5 terms
  per group: 125 combinations, above the authors' 100).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

GROUPS = ("g0", "g1", "g2", "g3")
CF_GROUPS = ("g0", "g1", "g2")
TERMS = ("one", "unequal", "large")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def group_data(seed: int = 0, n: int = 300) -> pd.DataFrame:
    """Rows ``y`` (bool), ``prob`` (float), ``pred`` (bool), ``group`` (str)."""
    rng = np.random.default_rng(seed)
    group = rng.choice(len(GROUPS), size=n, p=[0.4, 0.3, 0.2, 0.1])
    y = rng.random(n) < 0.45
    shift = np.array([0.0, 0.4, -0.3, 0.8])[group]
    prob = _sigmoid(np.where(y, 1.0, -1.0) + shift + rng.normal(0, 1.5, n))
    return pd.DataFrame({"y": y, "prob": prob, "pred": prob >= 0.5,
                         "group": np.array(GROUPS)[group]})


def counterfactual_data(terms: str = "unequal", seed: int = 1,
                        n_templates: int = 40) -> pd.DataFrame:
    """Rows ``source``, ``group``, ``term`` (index within the group), ``y``, ``prob``."""
    if terms not in TERMS:
        raise ValueError(f"terms must be one of {TERMS}, got {terms!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(n_templates):
        y = bool(rng.random() < 0.5)
        base = rng.normal(1.0 if y else -1.0, 1.0)
        for g, gname in enumerate(CF_GROUPS):
            if terms == "one":
                k = 1
            elif terms == "large" and j % 5 == 0:
                k = 5
            else:
                k = int(rng.integers(2, 4))
            for t in range(k):
                p = _sigmoid(base + 0.3 * g + rng.normal(0, 0.7))
                rows.append({"source": f"t{j:02d}", "group": gname, "term": t, "y": y,
                             "prob": float(p)})
    return pd.DataFrame(rows)
