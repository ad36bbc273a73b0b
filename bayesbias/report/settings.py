"""The report's settings: every choice that affects a number in it.

:class:`ReportSettings` is recorded in ``results.json`` (:mod:`.reproduce` reads it back) and
run by :mod:`.pipeline`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from ..config import DEFAULT_MODEL, defaults, validate_ci_prob
from ..errors import InvalidArgumentError
from ..validation import validate_ci_kind

__all__ = ["DEFAULT_WORDLISTS", "ReportSettings"]

DEFAULT_WORDLISTS = ("religion", "race", "gender")


@dataclass
class ReportSettings:
    """Every choice that affects a number in the report."""

    embedding: str | None = "default"
    wordlists: tuple[str, ...] = DEFAULT_WORDLISTS
    distances: tuple[str, ...] = ()
    output: str = "bayesbias-report"
    on_missing: str = "drop"
    format: str = "auto"
    trust_pickle: bool = False
    model: str = DEFAULT_MODEL
    ci_prob: float = field(default_factory=lambda: defaults.ci_prob)
    ci_kind: str = field(default_factory=lambda: defaults.ci_kind)
    draws: int = field(default_factory=lambda: defaults.draws)
    tune: int | None = None  # None: each model family's own default
    chains: int = field(default_factory=lambda: defaults.chains)
    seed: int = field(default_factory=lambda: defaults.seed)
    sampler: str = "auto"
    target_accept: float | None = None  # None: each model family's own default
    rope: float | None = None
    n_permutations: int = 100_000
    n_bootstrap: int = 2000
    null_reps: int = 5000
    sd_convention: str = "sample"
    strict: bool = False
    sensitivity: bool = False
    robustness: bool = True
    #: Keep per-word draws in the fits (else above 256 MB of them: per-word summaries).
    keep_word_draws: bool = False

    def __post_init__(self):
        self.ci_prob = validate_ci_prob(self.ci_prob)
        self.ci_kind = validate_ci_kind(self.ci_kind)
        if self.rope is not None and not (0 <= float(self.rope) < float("inf")):
            raise InvalidArgumentError(f"rope must be a finite number >= 0, got {self.rope!r}")

    def to_dict(self) -> dict:
        """Plain JSON data (an encoder source as its own ``to_dict()``)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not self.keep_word_draws:  # recorded only when asked (earlier results.json lack it)
            out.pop("keep_word_draws")
        if not isinstance(self.embedding, (str, type(None))):
            out["embedding"] = self.embedding.to_dict()
        return json.loads(json.dumps(out))
