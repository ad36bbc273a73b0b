"""Model specs as data: priors and structural choices read from TOML and validated eagerly."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._atomic import shipped_dir
from ..config import CONNECTIONS
from ..errors import ModelSpecError
from .families import FAMILIES
from .families import family as family_of
from .priors import DISTRIBUTIONS

__all__ = [
    "Prior",
    "ModelSpec",
    "load_spec",
    "available_models",
    "LEVELS",
    "RESIDUAL_SDS",
]

LEVELS = ("word", "class")
RESIDUAL_SDS = ("per_connection", "single")
#: Largest depth of ``extends`` chains in spec files.
_MAX_EXTENDS = 8
#: Keys every spec may have; a family adds its own (``SPEC_KEYS`` of its module).
_BASE_KEYS = {"name", "family", "description", "level", "residual_sd", "noncentred", "priors"}


def _family_keys() -> dict[str, str]:
    """Spec keys of single families: key -> the family it belongs to."""
    return {k: f for f in FAMILIES for k in family_of(f).SPEC_KEYS}


def _all_keys() -> set[str]:
    return _BASE_KEYS | set(_family_keys())


def _pooled() -> tuple[str, ...]:
    """Families with pooled cell means (their module sets ``NONCENTRED``)."""
    return tuple(f for f in FAMILIES if family_of(f).NONCENTRED)


def __getattr__(name):
    # FAMILIES and PRIOR_NAMES come from the family modules (imported on first use).
    if name == "FAMILIES":
        return tuple(FAMILIES)
    if name == "PRIOR_NAMES":
        return {f: family_of(f).PRIORS for f in FAMILIES}
    raise AttributeError(name)


def _choice(value, valid, what: str, source: str):
    if value not in valid:
        raise ModelSpecError(f"{source}: {what} must be one of {', '.join(map(str, valid))}, "
                             f"got {value!r}")
    return value


@dataclass(frozen=True)
class Prior:
    """A prior distribution as data: a distribution's name and its parameters.

    The distributions and their parameters are the rows of
    :data:`bayesbias.models.priors.DISTRIBUTIONS`.
    """

    dist: str
    params: tuple[tuple[str, float], ...]

    @classmethod
    def from_dict(cls, d: dict, name: str = "prior", source: str = "spec") -> Prior:
        """Validate a ``{"dist": ..., **params}`` mapping."""
        if not isinstance(d, dict) or "dist" not in d:
            raise ModelSpecError(f"{source}: prior {name!r} must be a table with a 'dist' key, "
                                 f"e.g. {{ dist = \"Normal\", mu = 1.0, sigma = 0.3 }}")
        dist = _choice(d["dist"], tuple(DISTRIBUTIONS), f"prior {name!r} dist", source)
        needed = DISTRIBUTIONS[dist].params
        given = {k: v for k, v in d.items() if k != "dist"}
        if set(given) != set(needed):
            raise ModelSpecError(f"{source}: prior {name!r} ({dist}) needs parameters "
                                 f"{', '.join(needed)}, got {', '.join(sorted(given)) or 'none'}")
        params = []
        for k in needed:
            v = given[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ModelSpecError(f"{source}: prior {name!r} parameter {k} must be a number, "
                                     f"got {v!r}")
            if not np.isfinite(v):
                raise ModelSpecError(f"{source}: prior {name!r} parameter {k} must be finite, "
                                     f"got {v}")
            if k not in DISTRIBUTIONS[dist].real and not v > 0:
                raise ModelSpecError(f"{source}: prior {name!r} parameter {k} must be > 0, got {v}")
            params.append((k, float(v)))
        return cls(dist, tuple(params))

    @property
    def positive(self) -> bool:
        """Whether the distribution's support is the positive reals."""
        return DISTRIBUTIONS[self.dist].positive

    def to_dict(self) -> dict:
        """Return the prior as a plain mapping (round-trips through :meth:`from_dict`)."""
        return {"dist": self.dist, **dict(self.params)}

    def create(self, name: str, **kwargs):
        """Create the PyMC random variable `name` (inside a model context)."""
        import pymc as pm

        return getattr(pm, DISTRIBUTIONS[self.dist].pymc)(name, **dict(self.params), **kwargs)

    def dist_(self):
        """Return the unnamed PyMC distribution (for ``pm.logp``)."""
        import pymc as pm

        return getattr(pm, DISTRIBUTIONS[self.dist].pymc).dist(**dict(self.params))

    def draw(self, rng, size=None):
        """Random draws from the prior with a NumPy generator.

        Hand-written rather than ``pm.draw`` on purpose: ``pm.draw`` compiles a PyTensor
        function per call (measured 7 s for the first call in a process, 0.13 s after),
        while simulation studies draw thousands of times. ``tests/test_models_spec.py``
        checks that both give the same distribution.
        """
        return DISTRIBUTIONS[self.dist].sample(rng, dict(self.params), size)

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.params)
        return f"{self.dist}({args})"


@dataclass(frozen=True)
class ModelSpec:
    """A validated model specification.

    Attributes
    ----------
    name : str
        Label of the spec (not part of the hash).
    family : str
        A key of :data:`bayesbias.models.families.FAMILIES` (hierarchical, additive, ...).
    level : {"word", "class"}
        Cell means per (protected word, connection) or per (protected class, connection).
    residual_sd : {"per_connection", "single"}
    noncentred : "auto" or tuple of str
        Hierarchical only: connections whose cell means are sampled non-centred. ``"auto"``
        chooses per connection from the data: non-centred where a typical cell's rows carry
        less information about its mean than the spread between cells (sparse cells),
        centred otherwise. The posterior is the same either way.
    priors : dict of {str: Prior}
    description : str
    attribute_sd : {"shared", "per_kind"}
        Crossed family only: one sd of the attribute effects, or one per attribute kind
        (stereotype, human, none).
    """

    name: str
    family: str
    level: str = "word"
    residual_sd: str = "per_connection"
    noncentred: tuple[str, ...] | str = ()
    priors: dict = field(default_factory=dict)
    description: str = ""
    attribute_sd: str = "shared"

    @classmethod
    def from_dict(cls, d: dict, source: str = "spec") -> ModelSpec:
        """Validate a spec mapping (as read from TOML); errors list the valid choices."""
        keys = _all_keys()
        unknown = sorted(set(d) - keys)
        if unknown:
            raise ModelSpecError(f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: "
                                 f"{', '.join(sorted(keys))}")

        family = _choice(d.get("family"), tuple(FAMILIES), "family", source)
        fam = family_of(family)
        level = _choice(d.get("level", "word"), LEVELS, "level", source)
        residual_sd = _choice(d.get("residual_sd", "per_connection"), RESIDUAL_SDS,
                              "residual_sd", source)
        pooled = _pooled()
        noncentred = d.get("noncentred", "auto" if family in pooled else [])
        if noncentred and family not in pooled:
            raise ModelSpecError(f"{source}: noncentred applies to the "
                                 f"{' and '.join(pooled)} families only")
        for key, owner in _family_keys().items():
            if key in d and owner != family:
                raise ModelSpecError(f"{source}: {key} applies to the {owner} family only")
        if noncentred != "auto":
            if isinstance(noncentred, str) or not isinstance(noncentred, (list, tuple)):
                raise ModelSpecError(
                    f"{source}: noncentred must be \"auto\" or a list of connections "
                    f"(subset of {', '.join(CONNECTIONS)}), got {noncentred!r}")
            for c in noncentred:
                _choice(c, CONNECTIONS, "each noncentred entry", source)
        raw = d.get("priors", {})
        needed = fam.PRIORS
        optional = fam.OPTIONAL_PRIORS  # a level the spec may leave out
        extra = sorted(set(raw) - set(needed))
        absent = [p for p in needed if p not in raw and p not in optional]
        if extra or absent:
            raise ModelSpecError(
                f"{source}: the {family} family needs priors {', '.join(needed)}"
                + (f"; unknown: {', '.join(extra)}" if extra else "")
                + (f"; missing: {', '.join(absent)}" if absent else ""))
        priors = {p: Prior.from_dict(raw[p], p, source) for p in needed if p in raw}
        for p in fam.SCALES:
            if p in priors and not priors[p].positive:
                raise ModelSpecError(
                    f"{source}: prior {p!r} is a scale and needs a positive distribution "
                    f"({', '.join(k for k, row in DISTRIBUTIONS.items() if row.positive)}), "
                    f"got {priors[p].dist}")
        name = str(d.get("name", family))
        if noncentred != "auto":
            noncentred = tuple(c for c in CONNECTIONS if c in noncentred)
        spec = cls(name=name, family=family, level=level, residual_sd=residual_sd,
                   noncentred=noncentred, priors=priors,
                   description=str(d.get("description", "")),
                   **{k: d.get(k, default)
                      for k, default in fam.SPEC_KEYS.items()})
        if hasattr(fam, "validate"):
            fam.validate(spec, source)
        return spec

    def to_dict(self) -> dict:
        """Return the spec as a plain mapping (round-trips through :meth:`from_dict`)."""
        d = {"name": self.name, "family": self.family, "description": self.description,
             "level": self.level, "residual_sd": self.residual_sd,
             "priors": {k: v.to_dict() for k, v in self.priors.items()}}

        fam = family_of(self.family)
        if fam.NONCENTRED:
            d["noncentred"] = (self.noncentred if self.noncentred == "auto"
                               else list(self.noncentred))
        for key in fam.SPEC_KEYS:
            d[key] = getattr(self, key)
        return d

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def hash(self) -> str:
        """SHA-256 (first 16 hex digits) of everything that defines the model.

        The name and description are labels and do not enter the hash.
        """
        d = self.to_dict()
        d.pop("name")
        d.pop("description")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def replace(self, **overrides) -> ModelSpec:
        """Return a new validated spec with fields (or priors, ``priors={...}``) replaced.

        Prior overrides may be :class:`Prior` objects or mappings and are merged into the
        existing priors.
        """
        valid = _all_keys() - {"family"}
        unknown = sorted(set(overrides) - valid)
        if unknown:
            raise ModelSpecError(f"unknown spec override(s) {', '.join(unknown)}; valid: "
                                 f"{', '.join(sorted(valid))}")
        d = self.to_dict()
        priors = overrides.pop("priors", None) or {}
        d["priors"].update({k: v.to_dict() if isinstance(v, Prior) else v
                            for k, v in priors.items()})
        d.update(overrides)
        if "noncentred" in overrides and overrides["noncentred"] is None:
            d["noncentred"] = []
        return ModelSpec.from_dict(d, f"spec {self.name!r} with overrides")

    def card(self) -> str:
        """Return a readable model card: likelihood, priors and structural choices."""
        unit = "w" if self.level == "word" else "k"
        unit_name = "protected word" if self.level == "word" else "protected class"
        s = "sigma[c]" if self.residual_sd == "per_connection" else "sigma"
        p = self.priors
        lines = [f"model {self.name!r} (family {self.family}, spec hash {self.hash})"]
        if self.description:
            lines.append(f"  {self.description}")
        lines.append(f"  i: a row; {unit}: its {unit_name}; c: its connection "
                     f"({', '.join(CONNECTIONS)})")

        lines += family_of(self.family).card_lines(self, unit, s)
        lines.append(f"  {s} ~ {p['sigma']}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.card()


def available_models() -> list[str]:
    """Names of the shipped model specs (files ``models/*.toml``)."""
    return sorted(p.stem for p in shipped_dir("models").glob("*.toml"))


def load_spec(model="hierarchical", **overrides) -> ModelSpec:
    """Load and validate a model spec.

    Parameters
    ----------
    model : str, path-like or ModelSpec
        A shipped spec name (see :func:`available_models`), a TOML file, or a spec.
    **overrides
        Fields to replace (``level``, ``residual_sd``, ``noncentred``, ``priors``, ``name``).
    """
    if isinstance(model, ModelSpec):
        spec = model
    else:
        path = _spec_path(model)
        spec = ModelSpec.from_dict(_read_spec(path), str(path))
    overrides = {k: v for k, v in overrides.items() if v is not None}
    return spec.replace(**overrides) if overrides else spec



def _spec_path(model, base: Path | None = None) -> Path:
    path = Path(str(model))
    if path.suffix != ".toml":
        names = available_models()
        if str(model) not in names:
            raise ModelSpecError(f"unknown model {model!r}; shipped models: "
                                 f"{', '.join(names)} (or give a .toml file)")
        path = shipped_dir("models") / f"{model}.toml"
    elif base is not None and not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise ModelSpecError(f"{path}: no such model spec file")
    return path


def _read_spec(path: Path, depth: int = 0) -> dict:
    """Read a spec file, resolving ``extends`` (a shipped name or a .toml path).

    The child's keys replace the base's; its priors are merged into the base's when the
    family is unchanged and replace them otherwise.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ModelSpecError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ModelSpecError(f"{path}: cannot read the model spec: {exc.strerror}") from None
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or depth >= _MAX_EXTENDS:
        raise ModelSpecError(f"{path}: extends must name one spec (a shipped name or a .toml "
                             f"file), at most {_MAX_EXTENDS} levels deep; got {base_name!r}")
    base = _read_spec(_spec_path(base_name, path.parent), depth + 1)
    merged = {**base, **data}
    if data.get("family", base.get("family")) == base.get("family"):
        merged["priors"] = {**base.get("priors", {}), **data.get("priors", {})}
    return merged
