"""Defaults in one validated place."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["defaults", "Defaults", "validate_ci_prob", "CONNECTIONS"]

#: The four connections of an attribute to a protected word, in reporting order.
CONNECTIONS: tuple[str, ...] = ("associated", "different", "human", "none")


def validate_ci_prob(ci_prob: float) -> float:
    """Return `ci_prob` as a float in (0, 1) or raise ValueError naming it."""
    from .errors import InputDataError

    ci_prob = float(ci_prob)
    if not 0 < ci_prob < 1:
        raise InputDataError(f"ci_prob must be in (0, 1), got {ci_prob}")
    return ci_prob


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

    def __setattr__(self, name, value):
        if name == "ci_prob":
            value = validate_ci_prob(value)
        if name == "ci_kind" and value not in ("hdi", "eti"):
            raise ValueError(f"ci_kind must be 'hdi' or 'eti', got {value!r}")
        super().__setattr__(name, value)


defaults = Defaults()
