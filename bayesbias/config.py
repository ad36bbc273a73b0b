"""Defaults in one validated place."""

from __future__ import annotations

from dataclasses import dataclass

from .validation import validate_ci_kind, validate_ci_prob

__all__ = ["defaults", "Defaults", "validate_ci_prob", "CONNECTIONS", "cache_dir",
           "DEFAULT_MODEL", "PAPER_MODEL", "FACTOR_PREFIX"]

#: The model behind every verdict unless another is asked for: the paper's hierarchical
#: model plus crossed attribute-word effects (``models/crossed.toml``).
DEFAULT_MODEL = "crossed"
#: The published model (Dobrzeniecka & Urbaniak), shown beside the default.
PAPER_MODEL = "hierarchical"

#: The four connections of an attribute to a protected word, in reporting order.
CONNECTIONS: tuple[str, ...] = ("associated", "different", "human", "none")
#: Prefix of a multi-embedding table's columns ``factor_<name>``: each corpus sample's level
#: of a factor (decade, language, corpus source).
FACTOR_PREFIX = "factor_"


@dataclass
class Defaults:
    """Package-wide defaults; change them with attribute assignment."""

    ci_prob: float = 0.89
    ci_kind: str = "hdi"
    seed: int = 20240101
    #: Sampler settings of every Bayesian fit (``fit_model``, ``fit``, ``report``, ``compare``).
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    n_permutations: int = 100_000
    exact_permutation_limit: int = 1_000_000
    #: Smaller set size from which a permutation test that cannot enumerate its splits uses
    #: the Normal with the re-partition distribution's exact mean and variance instead of
    #: Monte Carlo splits (``None``: always Monte Carlo). At 500 words per set, on real
    #: association values, the Normal's two-sided p differs from the permutation p by less
    #: than the 100,000-split Monte Carlo error it replaces, as at 1,000 (the previous
    #: threshold): ``benchmarks/weat_normal_threshold.py``.
    normal_permutation_min: int | None = 500

    def __setattr__(self, name, value):
        if name == "ci_prob":
            value = validate_ci_prob(value)
        if name == "ci_kind":
            value = validate_ci_kind(value)
        super().__setattr__(name, value)


defaults = Defaults()


def cache_dir(kind: str):
    """Folder of bayesbias's `kind` cache (``kernels``, ``encoders``, ...).

    ``$BAYESBIAS_CACHE/<kind>``, else ``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/bayesbias/<kind>``.
    """
    import os
    from pathlib import Path

    root = os.environ.get("BAYESBIAS_CACHE")
    if root:
        return Path(root) / kind
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bayesbias" / kind
