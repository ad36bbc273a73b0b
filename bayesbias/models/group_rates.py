"""The group-rates family: Binomial cell rates of a classifier, pooled across groups.

A cell is one combination of the levels of the sensitive features (race x sex x age band).
For each cell ``c`` and metric ``m`` (TPR, FPR, selection rate, 0-1 error, ...) the data are
two counts, ``n`` (rows in the metric's denominator) and ``k`` (successes among them), so a fit
costs the same for 10**3 rows as for 10**7 (memory and time grow with cells, not rows)::

    k[m, c] ~ Binomial(n[m, c], p[m, c])
    logit p[m, c] = intercept[m] + sum_S sd[m, |S|] * z[m, S, c_S],    z ~ Normal(0, 1)

where ``S`` runs over the non-empty subsets of the attributes (main effects, two-way, ...,
the top-order interaction, which is one value per cell) and every order has its own sd.
Structures: ``full`` (every order, the default), ``additive`` (order 1 only) and
``independent`` (no pooling: ``p ~ Beta(alpha, beta)``, conjugate and exact, no sampling).

With terms nested in the cells (identity terms within a group), the counts are per term j
and ``logit p[m, j] = logit p[m, c(j)] + sd_term[m] * u[m, j]``, ``u ~ Normal(0, 1)``.

NUTS (nutpie) calls the numba-compiled log-density and expansion
(:mod:`bayesbias.models._group_rates_numba`) as C functions from its own threads
(:data:`DRIVER`).

The spec (priors and default structure) is ``models/groups/group_rates.toml``; priors are rows
of :data:`bayesbias.models.priors.DISTRIBUTIONS` read through
:class:`~bayesbias.models.spec.Prior`. This family models classifier counts, not distance
tables, so it is not one of :data:`bayesbias.models.families.FAMILIES` (``bayesbias fit``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._atomic import shipped_dir
from ..errors import InvalidArgumentError, ModelSpecError
from ._group_rates_layout import _H, _HEAD
from .spec import Prior

__all__ = ["METRICS", "METRIC_ALIASES", "STRUCTURES", "GroupSpec", "load_group_spec",
           "cell_counts", "model_terms", "exact_posterior", "fit_counts", "build_model"]

log = logging.getLogger(__name__)

STRUCTURES = ("independent", "additive", "full")
PRIORS = ("intercept", "sd_main", "sd_interaction")
#: Priors a spec may leave out: ``sd_term``, the sd of the terms within a cell (only needed
#: when the table has a term column).
OPTIONAL_PRIORS = ("sd_term",)
SCALES = ("sd_main", "sd_interaction", "sd_term")

#: metric -> (denominator, success) over y (truth) and p (prediction), both 0/1:
#: "all", "y1", "y0", "p1" select the denominator rows; the success is a condition on them.
METRICS = {
    "selection_rate": ("all", "p1"),
    "tpr": ("y1", "p1"),
    "fnr": ("y1", "p0"),
    "fpr": ("y0", "p1"),
    "tnr": ("y0", "p0"),
    "error_rate": ("all", "wrong"),
    "accuracy": ("all", "right"),
    "precision": ("p1", "y1"),
    "base_rate": ("all", "y1"),
}
#: fairlearn / scikit-learn names accepted for the metrics above.
METRIC_ALIASES = {
    "true_positive_rate": "tpr", "recall": "tpr", "sensitivity": "tpr",
    "false_positive_rate": "fpr", "false_negative_rate": "fnr",
    "true_negative_rate": "tnr", "specificity": "tnr", "zero_one_loss": "error_rate",
    "error": "error_rate", "0-1": "error_rate", "accuracy_score": "accuracy",
    "ppv": "precision", "precision_score": "precision", "prevalence": "base_rate",
}
#: What each metric's denominator is, in words (for "no rows" notes).
DENOMINATORS = {"all": "rows", "y1": "rows with y_true = 1", "y0": "rows with y_true = 0",
                "p1": "rows with y_pred = 1"}


def metric_name(name: str) -> str:
    """Return the canonical metric name of `name` (an alias or a name of :data:`METRICS`)."""
    key = str(name).strip().lower()
    key = METRIC_ALIASES.get(key, key)
    if key not in METRICS:
        raise InvalidArgumentError(f"unknown metric {name!r}; choose from "
                                   f"{', '.join(METRICS)} (or {', '.join(METRIC_ALIASES)})")
    return key


def _condition(kind: str, y: np.ndarray, p: np.ndarray) -> np.ndarray | None:
    return {"all": None, "y1": y, "y0": ~y, "p1": p, "p0": ~p,
            "wrong": y != p, "right": y == p}[kind]


def cell_counts(y_true, y_pred, cell, n_cells: int, metrics) -> tuple[np.ndarray, np.ndarray]:
    """Count successes ``k`` and trials ``n`` per metric and cell (sufficient statistics).

    Parameters
    ----------
    y_true, y_pred : array of bool, shape (rows,)
    cell : array of int, shape (rows,)
        Each row's cell index in ``[0, n_cells)``.
    n_cells : int
    metrics : sequence of str
        Names of :data:`METRICS`.

    Returns
    -------
    k, n : arrays of int64, shape (metrics, cells)
    """
    y = np.asarray(y_true, dtype=bool)
    p = np.asarray(y_pred, dtype=bool)
    cell = np.asarray(cell, dtype=np.intp)
    k = np.zeros((len(metrics), n_cells), dtype=np.int64)
    n = np.zeros_like(k)
    for i, m in enumerate(metrics):
        den, suc = METRICS[m]
        d = _condition(den, y, p)
        s = _condition(suc, y, p)
        n[i] = (np.bincount(cell, minlength=n_cells) if d is None
                else np.bincount(cell, weights=d, minlength=n_cells).astype(np.int64))
        both = s if d is None else (s & d)
        k[i] = np.bincount(cell, weights=both, minlength=n_cells).astype(np.int64)
    return k, n


@dataclass(frozen=True)
class GroupSpec:
    """A validated group-rates spec: structure, priors, Beta prior of ``independent``."""

    name: str = "group_rates"
    structure: str = "full"
    priors: dict = field(default_factory=dict)
    alpha: float = 1.0
    beta: float = 1.0
    description: str = ""

    def __post_init__(self):
        if self.structure not in STRUCTURES:
            raise ModelSpecError(f"structure must be one of {', '.join(STRUCTURES)}, "
                                 f"got {self.structure!r}")
        missing = [p for p in PRIORS if p not in self.priors]
        if missing:
            raise ModelSpecError(f"group_rates spec: priors {', '.join(missing)} missing")
        for s in SCALES:
            if s in self.priors and not self.priors[s].positive:
                raise ModelSpecError(f"group_rates spec: prior {s!r} must have positive "
                                     f"support, got {self.priors[s]}")
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    np.isfinite(v) and v > 0):
                raise ModelSpecError(f"group_rates spec: independent.{name} must be a number "
                                     f"> 0, got {v!r}")

    @classmethod
    def from_dict(cls, d: dict, source: str = "spec") -> GroupSpec:
        """Validate a spec mapping (the TOML file's content)."""
        known = {"name", "family", "description", "structure", "priors", "independent"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ModelSpecError(f"{source}: unknown keys {', '.join(unknown)}; known: "
                                 f"{', '.join(sorted(known))}")
        if d.get("family", "group_rates") != "group_rates":
            raise ModelSpecError(f"{source}: family must be 'group_rates', got {d['family']!r}")
        priors = {k: Prior.from_dict(v, k, source) for k, v in d.get("priors", {}).items()}
        extra = sorted(set(priors) - set(PRIORS) - set(OPTIONAL_PRIORS))
        if extra:
            raise ModelSpecError(f"{source}: unknown priors {', '.join(extra)}; the family's "
                                 f"priors are {', '.join(PRIORS)}")
        ind = d.get("independent", {})
        return cls(name=d.get("name", "group_rates"), structure=d.get("structure", "full"),
                   priors=priors, alpha=ind.get("alpha", 1.0), beta=ind.get("beta", 1.0),
                   description=d.get("description", ""))

    def to_dict(self) -> dict:
        """Return the spec as plain data (round-trips through :meth:`from_dict`)."""
        return {"name": self.name, "family": "group_rates", "description": self.description,
                "structure": self.structure,
                "priors": {k: self.priors[k].to_dict() for k in (*PRIORS, *OPTIONAL_PRIORS)
                           if k in self.priors},
                "independent": {"alpha": float(self.alpha), "beta": float(self.beta)}}

    @property
    def hash(self) -> str:
        """Short hash of everything that changes a number (not the name or description)."""
        d = self.to_dict()
        d.pop("name"), d.pop("description")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    def replace(self, **changes) -> GroupSpec:
        """Return a copy with fields replaced (validated again)."""
        d = {"name": self.name, "structure": self.structure, "priors": dict(self.priors),
             "alpha": self.alpha, "beta": self.beta, "description": self.description}
        d.update({k: v for k, v in changes.items() if v is not None})
        return GroupSpec(**d)

    def card(self) -> str:
        """Return a readable model card."""
        p = self.priors
        lines = [f"model {self.name!r} (family group_rates, structure {self.structure}, "
                 f"spec hash {self.hash})",
                 "  c: a cell (one level of every sensitive feature); m: a metric",
                 "  k[m, c] ~ Binomial(n[m, c], p[m, c])"]
        if self.structure == "independent":
            lines.append(f"  p[m, c] ~ Beta({self.alpha:g}, {self.beta:g})   (conjugate, exact)")
        else:
            top = "1" if self.structure == "additive" else "1..A"
            lines += [f"  logit p[m, c] = intercept[m] + sum over attribute sets S, |S| = {top}: "
                      "sd[m, |S|] * z[m, S, c_S]",
                      "  z ~ Normal(0, 1)   (non-centred)",
                      f"  intercept[m] ~ {p['intercept']}",
                      f"  sd[m, 1] ~ {p['sd_main']}"]
            if self.structure == "full":
                lines.append(f"  sd[m, o] ~ {p['sd_interaction']}   (o = 2..A, one per order)")
        if "sd_term" in p:
            lines += ["  with a term column (terms j nested in cells c(j)):",
                      "  k[m, j] ~ Binomial(n[m, j], p[m, j]),  logit p[m, j] = logit p[m, c(j)]"
                      " + sd_term[m] * u[m, j],  u ~ Normal(0, 1)",
                      f"  sd_term[m] ~ {p['sd_term']}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.card()


def load_group_spec(model=None, **overrides) -> GroupSpec:
    """Load the shipped group-rates spec (or a TOML file, or a :class:`GroupSpec`).

    `overrides`: ``structure``, ``alpha``, ``beta``, ``priors``, ``name``.
    """
    if isinstance(model, GroupSpec):
        spec = model
    else:
        path = (shipped_dir("models") / "groups" / "group_rates.toml" if model is None
                else Path(str(model)))
        if not path.is_file():
            raise ModelSpecError(f"{path}: no such model spec file")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ModelSpecError(f"{path}: not valid TOML: {exc}") from None
        spec = GroupSpec.from_dict(data, str(path))
    return spec.replace(**overrides) if overrides else spec


# --------------------------------------------------------------------------------------
# the design: which effects enter each cell's logit

@dataclass(frozen=True)
class Term:
    """One effect table: the attributes it crosses, its order and each cell's entry."""

    attributes: tuple[int, ...]
    order: int
    size: int
    index: np.ndarray  # (cells,) entry of each cell in the table


def model_terms(shape: tuple[int, ...], structure: str) -> list[Term]:
    """Effect tables of a grid of cells with `shape` (levels per attribute).

    Attributes with one level are absorbed by the intercept. ``additive`` keeps order 1,
    ``full`` every order (the top order is one value per cell).
    """
    grid = np.indices(shape).reshape(len(shape), -1)  # (attributes, cells), C order
    active = [a for a, s in enumerate(shape) if s > 1]
    top = 1 if structure == "additive" else len(active)
    terms = []
    for order in range(1, top + 1):
        for attrs in itertools.combinations(active, order):
            sub = tuple(shape[a] for a in attrs)
            index = np.ravel_multi_index(tuple(grid[a] for a in attrs), sub)
            terms.append(Term(attrs, order, int(np.prod(sub)), index.astype(np.int64)))
    return terms


def exact_posterior(k, n, alpha: float = 1.0, beta: float = 1.0):
    """Parameters of the conjugate posterior ``Beta(alpha + k, beta + n - k)`` per cell."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    return alpha + k, beta + n - k


# --------------------------------------------------------------------------------------
# the PyMC model and its sampling

def build_model(k, n, shape, spec: GroupSpec, terms=None):
    """Return the PyMC model of the counts ``k``, ``n`` (metrics x cells) on a grid `shape`.

    With `terms` (``(term_cell, k, n)``, as :class:`Kernel`) the likelihood is the terms':
    ``logit p[m, j] = eta[m, term_cell[j]] + sd_term[m] * z_term[m, j]``.

    Data enter as ``pm.Data`` (``k``, ``n``, ``w``: each cell's weight in the between-cell
    variances, 1/#cells with rows per metric), so a compiled model can take new counts of
    the same shape (``nutpie``'s ``with_data``).
    """
    import pymc as pm
    import pytensor.tensor as pt

    term_counts = terms
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    n_metrics, n_cells = k.shape
    terms = model_terms(tuple(shape), spec.structure)
    orders = sorted({t.order for t in terms})
    with pm.Model() as model:
        kd = pm.Data("k", k)
        nd = pm.Data("n", n)
        wd = pm.Data("w", _variance_weights(n))
        intercept = spec.priors["intercept"].create("intercept", shape=(n_metrics,))
        eta = pt.broadcast_to(intercept[:, None], (n_metrics, n_cells))
        parts = []
        if terms:
            sd_cols = []
            for o in orders:
                prior = spec.priors["sd_main" if o == 1 else "sd_interaction"]
                sd_cols.append(prior.create(f"sd_{o}", shape=(n_metrics,)))
            sd = pt.stack(sd_cols, axis=1)  # (metrics, orders)
            per_order = {o: 0 for o in orders}
            top_cell = spec.structure == "full" and terms[-1].size == n_cells
            for j, t in enumerate(terms):
                sd_t = sd[:, orders.index(t.order)][:, None]
                if top_cell and j == len(terms) - 1:
                    # the top order of "full" is one effect per cell: Normal(0, sd_top)
                    z = pm.Normal("z_cell", 0.0, 1.0, shape=(n_metrics, n_cells))
                    per_order[t.order] = per_order[t.order] + z[:, t.index] * sd_t
                    continue
                # zero-sum effects (each axis sums to 0): the intercept and the lower orders
                # are identified, no ridge for the sampler; non-centred (z * sd)
                sub = tuple(shape[a] for a in t.attributes)
                z = pm.ZeroSumNormal(f"z_{j}", sigma=1.0, shape=(n_metrics, *sub),
                                     n_zerosum_axes=len(sub))
                eff = z.reshape((n_metrics, t.size)) * sd_t
                per_order[t.order] = per_order[t.order] + eff[:, t.index]
            for o in orders:
                parts.append(per_order[o])
                eta = eta + per_order[o]
            # finite-population sd of each order's contribution over the cells with rows
            fsd = []
            for part in parts:
                mean = (part * wd).sum(axis=1, keepdims=True)
                fsd.append(pt.sqrt(((part - mean) ** 2 * wd).sum(axis=1) + 1e-300))
            pm.Deterministic("order_sd", pt.stack(fsd, axis=1))
        pm.Deterministic("p", pm.math.invlogit(eta))
        if term_counts is None:
            pm.Binomial("obs", n=nd, logit_p=eta, observed=kd)
        else:
            tc, tk, tn = (np.asarray(a) for a in term_counts)
            sd_term = spec.priors["sd_term"].create("sd_term", shape=(n_metrics,))
            z_term = pm.Normal("z_term", 0.0, 1.0, shape=(n_metrics, tc.size))
            eta_t = eta[:, tc] + sd_term[:, None] * z_term
            pm.Deterministic("p_term", pm.math.invlogit(eta_t))
            pm.Binomial("obs_term", n=np.asarray(tn, dtype=np.int64), logit_p=eta_t,
                        observed=np.asarray(tk, dtype=np.int64))
    return model


def _variance_weights(n: np.ndarray) -> np.ndarray:
    has = (np.asarray(n) > 0).astype(float)
    count = has.sum(axis=1, keepdims=True)
    return np.where(count > 0, has / np.maximum(count, 1), 0.0)


# --------------------------------------------------------------------------------------
# the sampler's own density: NumPy log-density and gradient, driven by nutpie

#: Priors whose log-density gradient is written out below (value -> (logp, dlogp/dvalue)).
def _prior_logp(prior: Prior, v: np.ndarray):
    d = dict(prior.params)
    if prior.dist == "Normal":
        z = (v - d["mu"]) / d["sigma"]
        return -0.5 * z**2, -z / d["sigma"]
    if prior.dist == "HalfNormal":
        return -0.5 * (v / d["sigma"]) ** 2, -v / d["sigma"] ** 2
    if prior.dist == "HalfCauchy":
        b = d["beta"]
        return -np.log1p((v / b) ** 2), -2 * v / (b**2 + v**2)
    if prior.dist == "Exponential":
        return -d["lam"] * v, -d["lam"] * np.ones_like(v)
    raise ModelSpecError(f"group_rates: prior {prior} is not supported by the sampler; use "
                         "Normal for intercept and HalfNormal, HalfCauchy or Exponential for "
                         "the sds")


def _zero_sum_basis(levels: int) -> np.ndarray:
    """Orthonormal basis (levels x levels-1) of the vectors that sum to zero."""
    h = np.eye(levels) - 1.0 / levels
    q, _ = np.linalg.qr(h[:, :-1])
    return q


class Kernel:
    """Log-density and gradient of the pooled model on the counts (NumPy and numba).

    Parameters (one flat vector): ``intercept`` (metrics), ``log sd`` (metrics x orders), then
    per metric the coordinates of the lower-order effects in an orthonormal basis of the
    zero-sum tables (each axis sums to 0: the intercept and lower orders are identified), so a
    coordinate of order o is Normal(0, sd_o) exactly as ``pm.ZeroSumNormal``; and, under
    ``full``, one value per cell for the top order: the cell's logit ``eta ~ Normal(lower,
    sd_top)``, non-centred (``lower + sd_top * z``). A cell may instead be sampled centred (as
    its logit) where its Fisher information ``n p (1 - p)`` exceeds :attr:`CENTRED_INFO`; the
    default is infinity (never): on the shipped adult_llama table centring the informed cells
    (threshold 4, 100 or 1000) gave 127-850 divergent transitions per fit against 7 with
    everything non-centred (docs/groups.md). The lower-order coordinates are non-centred
    under ``full`` and, under ``additive``, centred where their information exceeds 4.

    Partial centring (Papaspiliopoulos, Roberts and Skold 2007): with :attr:`PARTIAL_SD` set,
    a cell of information ``I`` is sampled as ``u ~ Normal(w * lower, sd_top ** w)``, ``eta =
    lower + sd_top ** (1 - w) * (u - w * lower)``, ``w = I s^2 / (1 + I s^2)`` for the plug-in
    sd ``s`` (``w = 0`` is non-centred, ``w = 1`` centred); with :attr:`PARTIAL_LOWER` the
    lower-order coordinates too, by the information the cells pass them. The posterior is
    the same whatever the weights; only the sampler's geometry changes.
    Effects are gathered by index, so a gradient costs O(cells x terms + table sizes x table
    ranks), not O(cells^2).
    """

    #: Whether the numba kernel computes two-way effect tables from their two Kronecker
    #: factors where that halves the products or better (10 x 10 levels: 1,710 products
    #: instead of 8,100; 5 x 3 or smaller keep the dense product). The same log-density to
    #: rounding (1e-16 relative), so not bitwise the same draws as ``False``.
    KRONECKER = True
    CENTRED_INFO = np.inf
    LOWER_CENTRED_INFO = 4.0
    #: Plug-in top-order sd of the partial centring (None: each cell centred or not by
    #: :attr:`CENTRED_INFO`).
    PARTIAL_SD: float | None = None
    #: Whether the lower-order coordinates of ``full`` are partly centred too (with
    #: :attr:`PARTIAL_SD` as the plug-in sd of their order).
    PARTIAL_LOWER = False

    def __init__(self, k, n, shape, spec: GroupSpec, terms=None):
        self.k = np.asarray(k, dtype=float)
        self.n = np.asarray(n, dtype=float)
        self.M, self.C = self.k.shape
        self.spec = spec
        self._set_terms(terms)
        terms = model_terms(tuple(shape), spec.structure)
        self.orders = sorted({t.order for t in terms})
        self.n_ord = len(self.orders)
        # under "full" the top order is one value per cell: sampled as the cells' logits
        self.top_cell = bool(terms) and spec.structure == "full" and terms[-1].size == self.C
        lower = terms[:-1] if self.top_cell else terms
        self.lower = lower
        bases, col_order, starts = [], [], [0]
        for t in lower:
            basis = np.ones((1, 1))
            for a in t.attributes:
                basis = np.kron(basis, _zero_sum_basis(shape[a]))
            bases.append(basis)
            col_order += [self.orders.index(t.order)] * basis.shape[1]
            starts.append(starts[-1] + basis.shape[1])
        self.bases = bases
        self.D_low = starts[-1]
        self.D = self.D_low + (self.C if self.top_cell else 0)
        self.col_order = np.asarray(col_order, dtype=np.int64)
        # flat layout for numba: term t has basis rows B_flat[b_off[t]:...] (size x rank)
        self.t_size = np.array([b.shape[0] for b in bases], dtype=np.int64)
        self.t_rank = np.array([b.shape[1] for b in bases], dtype=np.int64)
        self.t_coord = np.asarray(starts[:-1], dtype=np.int64)
        self.t_order = np.array([self.orders.index(t.order) for t in lower], dtype=np.int64)
        self.b_off = np.concatenate([[0], np.cumsum(self.t_size * self.t_rank)]).astype(np.int64)
        self.B_flat = (np.concatenate([b.ravel() for b in bases]) if bases else np.zeros(0))
        # the same tables transposed (rank x size), for the effect tables' contiguous loop
        self.BT_flat = (np.concatenate([b.T.ravel() for b in bases]) if bases else np.zeros(0))
        self.index = (np.stack([t.index for t in lower]) if lower
                      else np.zeros((0, self.C), dtype=np.int64))
        # two-way tables also by their Kronecker factors (the numba kernel's fast path),
        # where that takes less than half the products of the dense basis:
        # row t = [factored, offset of Ba in F, La, Ra, offset of Bb, Lb, Rb]
        self.t_fac = np.zeros((len(lower), 7), dtype=np.int64)
        factors, off = [], 0
        for j, t in enumerate(lower):
            if not (self.KRONECKER and len(t.attributes) == 2):
                continue
            la, lb = (shape[a] for a in t.attributes)
            if 2 * ((la - 1) * (lb - 1) * lb + la * (la - 1) * lb) < la * lb * (la - 1) * (lb - 1):
                ba, bb = (_zero_sum_basis(shape[a]) for a in t.attributes)
                self.t_fac[j] = [1, off, *ba.shape, off + ba.size, *bb.shape]
                factors += [ba.ravel(), bb.ravel()]
                off += ba.size + bb.size
        self.F_flat = np.concatenate(factors) if factors else np.zeros(0)
        pbar = (self.k + 0.5) / (self.n + 1.0)
        cell_info = self.n * pbar * (1 - pbar)  # (M, C)
        low_info = np.zeros((self.M, self.D_low))
        for t, s in enumerate(starts[:-1]):
            b = bases[t]
            low_info[:, s:s + b.shape[1]] = cell_info @ (b[lower[t].index] ** 2)
        if self.top_cell:
            # lower orders non-centred (they see the data only through the cells' logits)
            centred_low = np.zeros((self.M, self.D_low), dtype=bool)
            self.centred = np.concatenate([centred_low, cell_info > self.CENTRED_INFO], axis=1)
        else:
            self.centred = low_info > self.LOWER_CENTRED_INFO
        # the top-order cells' centring weight w in [0, 1] (0 non-centred, 1 centred):
        # eta = lower + sd ** (1 - w) * (u - w * lower), u ~ Normal(w * lower, sd ** w)
        if self.top_cell and self.PARTIAL_SD is not None:
            ratio = cell_info * self.PARTIAL_SD ** 2
            self.top_weight = ratio / (1.0 + ratio)
        else:
            self.top_weight = self.centred[:, self.D_low:].astype(float)
        # the lower-order coordinates' weight, likewise: coef = sd ** (1 - w) * u,
        # u ~ Normal(0, sd ** w); partly centred by the information reaching them through
        # the cells (each cell's passes the top-order effect of sd PARTIAL_SD)
        if self.top_cell and self.PARTIAL_LOWER and self.PARTIAL_SD is not None:
            through = 1.0 / (1.0 / np.maximum(cell_info, 1e-12) + self.PARTIAL_SD ** 2)
            info = np.zeros((self.M, self.D_low))
            for t, s in enumerate(starts[:-1]):
                b = bases[t]
                info[:, s:s + b.shape[1]] = through @ (b[lower[t].index] ** 2)
            ratio = info * self.PARTIAL_SD ** 2
            self.low_weight = ratio / (1.0 + ratio)
        else:
            self.low_weight = self.centred[:, :self.D_low].astype(float)
        self.ndim = self.M * (1 + self.n_ord + self.D)
        self.off_term = self.ndim  # log sd_term (M), then u (M, NT), after the cells' part
        if self.has_terms:
            self.ndim += self.M * (1 + self.NT)
            self.pri_term = np.array(_prior_row(spec.priors["sd_term"]))
        else:
            self.pri_term = np.zeros(3)
        self.pri_mu = np.array(_prior_row(spec.priors["intercept"]))
        self.pri_sd = np.array([_prior_row(spec.priors["sd_main" if o == 1 else
                                                       "sd_interaction"])
                                for o in self.orders]).reshape(self.n_ord, 3)
        self.w = _variance_weights(self.n)
        self.raw_logit = np.log(pbar / (1 - pbar))

    def _set_terms(self, terms) -> None:
        """Terms nested in cells: ``(term_cell (NT,), k (M, NT), n (M, NT))``, sorted by cell.

        The likelihood is then the terms' (a term's logit is its cell's plus ``sd_term * u``);
        the cells' own ``k``, ``n`` (the sums over their terms) only set the centring.
        """
        self.has_terms = terms is not None
        if not self.has_terms:
            self.NT = 0
            self.term_cell = np.zeros(0, dtype=np.int64)
            self.term_k = self.term_n = np.zeros((self.M, 0))
            self.term_ptr = np.zeros(self.C + 1, dtype=np.int64)
            return
        if "sd_term" not in self.spec.priors:
            raise ModelSpecError("group_rates spec: a term column needs the prior sd_term "
                                 "(add it under [priors], as in models/groups/group_rates.toml)")
        tc, tk, tn = terms
        self.term_cell = np.asarray(tc, dtype=np.int64)
        self.term_k = np.ascontiguousarray(tk, dtype=float)
        self.term_n = np.ascontiguousarray(tn, dtype=float)
        self.NT = self.term_cell.size
        if self.term_k.shape != (self.M, self.NT) or self.term_n.shape != (self.M, self.NT):
            raise InvalidArgumentError("terms: k and n must be (metrics, terms)")
        if np.any(np.diff(self.term_cell) < 0) or (self.NT and (
                self.term_cell[0] < 0 or self.term_cell[-1] >= self.C)):
            raise InvalidArgumentError("terms: term_cell must be sorted cell indices")
        self.term_ptr = np.searchsorted(self.term_cell, np.arange(self.C + 1)).astype(np.int64)

    def split_terms(self, x):
        """Return log sd_term (M,) and the terms' standardised deviations u (M, NT)."""
        o = self.off_term
        return x[o:o + self.M], x[o + self.M:o + self.M * (1 + self.NT)].reshape(self.M, self.NT)

    def split(self, x):
        """Return intercept (M,), log sd (M, n_ord), coordinates (M, D)."""
        M, n_ord = self.M, self.n_ord
        return (x[:M], x[M:M + M * n_ord].reshape(M, n_ord),
                x[M + M * n_ord:M * (1 + n_ord + self.D)].reshape(M, self.D))

    def _tables(self, coef_m):
        """Each lower term's effect table for one metric's coefficients."""
        return [b @ coef_m[s:s + b.shape[1]] for b, s in zip(self.bases, self.t_coord, strict=True)]

    def parts(self, x):
        """Return intercept, sd, and each order's contribution to the logits (M, n_ord, C)."""
        mu, logsd, z = self.split(x)
        sd = np.exp(logsd)
        out = np.zeros((self.M, self.n_ord, self.C))
        for m in range(self.M):
            zl = z[m, :self.D_low]
            sdcol = sd[m, self.col_order]
            coef = sdcol ** (1 - self.low_weight[m]) * zl
            for t, tab in enumerate(self._tables(coef)):
                out[m, self.t_order[t]] += tab[self.index[t]]
            if self.top_cell:
                zc = z[m, self.D_low:]
                w = self.top_weight[m]
                lower = mu[m] + out[m].sum(axis=0)
                out[m, -1] = sd[m, -1] ** (1 - w) * (zc - w * lower)
        return mu, sd, out

    def logp(self, x):
        """Return the log-density (up to a constant) and its gradient at `x` (NumPy)."""
        mu, logsd, z = self.split(x)
        sd = np.exp(logsd)
        g_mu = np.zeros(self.M)
        g_logsd = np.zeros_like(logsd)
        g_z = np.zeros_like(z)
        g_lst = np.zeros(self.M)
        g_term = np.zeros((self.M, self.NT))
        lp = 0.0
        for m in range(self.M):
            zl = z[m, :self.D_low]
            wl = self.low_weight[m]
            sdcol = sd[m, self.col_order]
            swl = sdcol ** wl
            el = zl / swl
            coef = sdcol * el
            lp += float(np.sum(-0.5 * el**2 - wl * np.log(sdcol)))
            lower = np.full(self.C, mu[m])
            for t, tab in enumerate(self._tables(coef)):
                lower += tab[self.index[t]]
            if self.top_cell:
                s = sd[m, -1]
                zc = z[m, self.D_low:]
                w = self.top_weight[m]
                sw = s ** w
                e = (zc - w * lower) / sw  # the standardised top-order effect
                eta = lower + s * e
                lp += float(np.sum(-0.5 * e**2 - w * logsd[m, -1]))
            else:
                eta = lower
            if self.has_terms:
                lst, u = self.split_terms(x)
                st = np.exp(lst[m])
                et = eta[self.term_cell] + st * u[m]
                soft = np.logaddexp(0.0, et)
                lp += float(np.sum(self.term_k[m] * et - self.term_n[m] * soft - 0.5 * u[m]**2))
                rt = self.term_k[m] - self.term_n[m] * np.exp(et - soft)
                g_term[m] = rt * st - u[m]
                g_lst[m] = np.sum(rt * st * u[m])
                r = np.bincount(self.term_cell, weights=rt, minlength=self.C)
            else:
                soft = np.logaddexp(0.0, eta)
                lp += float(np.sum(self.k[m] * eta - self.n[m] * soft))
                r = self.k[m] - self.n[m] * np.exp(eta - soft)
            if self.top_cell:
                g_z[m, self.D_low:] = r * s / sw - e / sw
                g_lower = r * (1.0 - w * s / sw) + w * e / sw
                g_logsd[m, -1] += np.sum(r * (1.0 - w) * s * e + w * (e**2 - 1.0))
            else:
                g_lower = r
            g_mu[m] = g_lower.sum()
            g_coef = np.zeros(self.D_low)
            for t, (b, st) in enumerate(zip(self.bases, self.t_coord, strict=True)):
                g_tab = np.bincount(self.index[t], weights=g_lower, minlength=b.shape[0])
                g_coef[st:st + b.shape[1]] = b.T @ g_tab
            g_z[m, :self.D_low] = (g_coef * sdcol - el) / swl
            per_col = g_coef * (1.0 - wl) * coef + wl * (el**2 - 1.0)
            for j in range(self.n_ord):
                g_logsd[m, j] += per_col[self.col_order == j].sum()
        lpm, gmu = _prior_logp(self.spec.priors["intercept"], mu)
        lp += float(lpm.sum())
        g_mu += gmu
        for j, o in enumerate(self.orders):
            prior = self.spec.priors["sd_main" if o == 1 else "sd_interaction"]
            lps, gs = _prior_logp(prior, sd[:, j])
            lp += float(lps.sum() + logsd[:, j].sum())  # + log-Jacobian of sd = exp(log sd)
            g_logsd[:, j] += gs * sd[:, j] + 1.0
        parts = [g_mu, g_logsd.ravel(), g_z.ravel()]
        if self.has_terms:
            lst, _ = self.split_terms(x)
            lps, gs = _prior_logp(self.spec.priors["sd_term"], np.exp(lst))
            lp += float(lps.sum() + lst.sum())
            parts += [g_lst + gs * np.exp(lst) + 1.0, g_term.ravel()]
        if not np.isfinite(lp):
            return -np.inf, np.zeros_like(x)
        return lp, np.concatenate(parts)

    def expand(self, x) -> dict:
        """Cell rates, sds and the finite-population sd of every order at `x`."""
        mu, sd, parts = self.parts(x)
        eta = mu[:, None] + parts.sum(axis=1)
        mean = (parts * self.w[:, None, :]).sum(axis=2, keepdims=True)
        fsd = np.sqrt(((parts - mean) ** 2 * self.w[:, None, :]).sum(axis=2))
        out = {"p": 1.0 / (1.0 + np.exp(-eta)), "sd": sd, "order_sd": fsd, "intercept": mu}
        if self.has_terms:
            lst, u = self.split_terms(x)
            et = eta[:, self.term_cell] + np.exp(lst)[:, None] * u
            out.update(p_term=1.0 / (1.0 + np.exp(-et)), sd_term=np.exp(lst))
        return out

    def numba_args(self) -> tuple:
        """Return the arrays that :func:`_numba_logp`'s function takes after ``x``."""
        return (self.k, self.n, self.B_flat, self.BT_flat, self.b_off, self.t_size, self.t_rank,
                self.t_coord, self.t_order, np.ascontiguousarray(self.index), self.col_order,
                np.ascontiguousarray(self.low_weight), np.ascontiguousarray(self.top_weight),
                self.M, self.n_ord, self.D_low, int(self.top_cell), self.pri_mu, self.pri_sd,
                int(self.has_terms), self.term_ptr, self.term_k, self.term_n, self.pri_term,
                self.off_term, self.t_fac, self.F_flat)

    def expanded(self) -> tuple[list[str], list[tuple[int, ...]]]:
        """Names and shapes of what :meth:`expand` (and the native expansion) returns."""
        M, C, n_ord = self.M, self.C, self.n_ord
        names = ["p", "sd", "order_sd", "intercept"] if n_ord else ["p", "intercept"]
        shapes = [(M, C), (M, n_ord), (M, n_ord), (M,)] if n_ord else [(M, C), (M,)]
        if self.has_terms:
            names += ["p_term", "sd_term"]
            shapes += [(M, self.NT), (M,)]
        return names, shapes

    def native_data(self) -> np.ndarray:
        """Return the kernel as one float64 buffer for :func:`_numba_native`'s C functions.

        A header of int64 words (:data:`_HEAD`: sizes, then each array's word offset), then
        the arrays (float64, or int64 stored bit for bit).
        """
        f, i = np.float64, np.int64
        arrays = [("k", self.k, f), ("n", self.n, f), ("B", self.B_flat, f),
                  ("b_off", self.b_off, i), ("t_size", self.t_size, i),
                  ("t_rank", self.t_rank, i), ("t_coord", self.t_coord, i),
                  ("t_order", self.t_order, i), ("index", self.index, i),
                  ("col_order", self.col_order, i), ("low_weight", self.low_weight, f),
                  ("top_weight", self.top_weight, f), ("pri_mu", self.pri_mu, f),
                  ("pri_sd", self.pri_sd, f), ("term_ptr", self.term_ptr, i),
                  ("term_k", self.term_k, f), ("term_n", self.term_n, f),
                  ("pri_term", self.pri_term, f), ("w", self.w, f), ("BT", self.BT_flat, f),
                  ("t_fac", self.t_fac, i), ("F", self.F_flat, f)]
        head = np.zeros(len(_HEAD), dtype=np.int64)
        chunks, words = [], len(_HEAD)
        for name, arr, kind in arrays:
            a = np.ascontiguousarray(arr, dtype=kind).ravel()
            head[_H[name]] = words
            chunks.append(a.view(np.float64))
            words += a.size
        names, shapes = self.expanded()
        head[_H["total"]] = words
        head[_H["ndim"]] = self.ndim
        head[_H["n_expanded"]] = sum(int(np.prod(s)) for s in shapes)
        for key, val in (("M", self.M), ("C", self.C), ("T", len(self.lower)),
                         ("n_ord", self.n_ord), ("D_low", self.D_low),
                         ("top_cell", int(self.top_cell)), ("has_terms", int(self.has_terms)),
                         ("NT", self.NT), ("off_term", self.off_term),
                         ("B_len", self.B_flat.size), ("F_len", self.F_flat.size)):
            head[_H[key]] = val
        return np.concatenate([head.view(np.float64), *chunks])

    def prior_draw(self, rng) -> tuple[np.ndarray, np.ndarray]:
        """One draw of (intercept, cell logits) from the prior, for simulation-based checks."""
        def draw(prior, size):
            d = dict(prior.params)
            if prior.dist == "Normal":
                return rng.normal(d["mu"], d["sigma"], size)
            if prior.dist == "HalfNormal":
                return np.abs(rng.normal(0, d["sigma"], size))
            if prior.dist == "HalfCauchy":
                return np.abs(d["beta"] * rng.standard_cauchy(size))
            return rng.exponential(1 / d["lam"], size)

        mu = draw(self.spec.priors["intercept"], self.M)
        sd = np.stack([draw(self.spec.priors["sd_main" if o == 1 else "sd_interaction"],
                            self.M) for o in self.orders], axis=1) if self.n_ord else None
        eta = np.repeat(mu[:, None], self.C, axis=1)
        for m in range(self.M):
            coef = rng.normal(size=self.D_low) * (sd[m, self.col_order] if self.D_low else 1)
            for t, tab in enumerate(self._tables(coef)):
                eta[m] += tab[self.index[t]]
            if self.top_cell:
                eta[m] += sd[m, -1] * rng.normal(size=self.C)
        return mu, eta


_PRIOR_CODES = {"Normal": 0, "HalfNormal": 1, "HalfCauchy": 2, "Exponential": 3}


def _prior_row(prior: Prior) -> tuple[float, float, float]:
    _prior_logp(prior, np.zeros(1))  # refuses an unsupported prior
    d = dict(prior.params)
    code = _PRIOR_CODES[prior.dist]
    if code == 0:
        return (0.0, d["mu"], d["sigma"])
    return (float(code), d.get("sigma", d.get("beta", d.get("lam"))), 0.0)


def _numba_logp():
    """Return :meth:`Kernel.logp` compiled with numba (cached on disk).

    Called as ``f(x, *kernel.numba_args(), grad)``; returns the log-density and fills `grad`.
    """
    from ._group_rates_numba import logp

    return logp


def _numba_native():
    """Return the log-density and expansion as C functions for nutpie (numba ``cfunc``).

    ``logp(dim, x, grad, logp, data)`` and ``expand(dim, expanded, x, out, data)`` read the
    kernel from one float64 buffer (:meth:`Kernel.native_data`), so nutpie's threads call
    them without Python (no GIL); compiled once per machine, then cached. Returns
    ``(c_logp, c_expand, expand)``, the last the njit expansion.
    """
    from ._group_rates_numba import c_expand, c_logp, expand

    return c_logp, c_expand, expand


def _initial(kern: Kernel, seed) -> np.ndarray:
    """Return a chain's start: intercepts near the pooled logit, log sds near log 0.5."""
    M, n_ord = kern.M, kern.n_ord
    r = np.random.default_rng(seed)
    x = r.uniform(-0.5, 0.5, kern.ndim)
    pbar = (kern.k.sum(1) + 0.5) / (kern.n.sum(1) + 1)
    x[:M] = np.log(pbar / (1 - pbar)) + r.uniform(-0.2, 0.2, M)
    x[M:M + M * n_ord] = np.log(0.5) + r.uniform(-0.5, 0.5, M * n_ord)
    # a centred cell's coordinate is its logit (a partly centred one, w times it): start
    # it near the raw rate's
    z = x[M + M * n_ord:M * (1 + n_ord + kern.D)].reshape(M, kern.D)
    if kern.top_cell:
        w = kern.top_weight
        z[:, kern.D_low:] = w * kern.raw_logit + (1 - 0.9 * w) * z[:, kern.D_low:]
    if kern.has_terms:
        x[kern.off_term:kern.off_term + M] = np.log(0.5) + r.uniform(-0.5, 0.5, M)
    return x


@dataclass
class _NativeModel:
    """What :func:`bayesbias.models._nutpie.run` samples: the kernel's C functions and data."""

    names: list
    shapes: list
    data: np.ndarray
    logp: object
    expand: object
    dim: int
    expanded_dim: int
    dims: dict = field(default_factory=dict)
    coords: dict | None = None
    adaptation: str = "diag"


def _sample_native(kern: Kernel, draws, tune, chains, seed, cores, target_accept):
    """NUTS on the kernel's numba C functions, by nutpie's core (no Python per gradient)."""
    from ._nutpie import run

    c_logp, c_expand, _ = _numba_native()
    names, shapes = kern.expanded()
    model = _NativeModel(names=names, shapes=shapes, data=kern.native_data(), logp=c_logp,
                         expand=c_expand, dim=kern.ndim,
                         expanded_dim=sum(int(np.prod(s)) for s in shapes))
    return run(model, lambda s: _initial(kern, s), "sampling group rates", draws, tune,
               chains, cores, seed, target_accept)


def _sample_kernel(kern: Kernel, draws, tune, chains, seed, cores, target_accept):
    """NUTS through nutpie's public ``from_pyfunc``: a Python callback per gradient.

    The driver before the native one (:func:`_sample_native`), kept to check that both give
    the same draws (``DRIVER = "python"``). Returns ``(posterior, sample_stats)``.
    """
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    names, shapes = kern.expanded()
    fast = _numba_logp()
    args = kern.numba_args()

    def make_logp():
        def logp(x):
            grad = np.empty(kern.ndim)
            lp = fast(np.asarray(x, dtype=np.float64), *args, grad)
            if not np.isfinite(lp):
                return -np.inf, np.zeros(kern.ndim)
            return lp, grad
        return logp

    def make_expand(seed1, seed2, chain):
        return lambda x: {k: v for k, v in kern.expand(x).items() if k in names}

    model = from_pyfunc(kern.ndim, make_logp, make_expand, [np.dtype("float64")] * len(names),
                        shapes, names, make_initial_point_fn=lambda s: _initial(kern, s))
    trace = nutpie.sample(model, draws=draws, tune=tune, chains=chains, seed=seed,
                          cores=cores, target_accept=target_accept, progress_bar=False)
    return trace.posterior.to_dataset(), trace.sample_stats.to_dataset()


#: How the sampler calls the log-density: ``"native"`` (numba C functions called by nutpie's
#: threads, no Python and no GIL per gradient) or ``"python"`` (nutpie's ``from_pyfunc``, a
#: Python callback per gradient; same draws, slower).
DRIVER = "native"


#: NUTS' target acceptance for this family. 0.95, not the library's usual 0.9: on the shipped
#: adult_llama table (4 x 1000 draws, seeds 1 and 2) 0.9 left 7 and 7 divergent transitions
#: and r-hat 1.010 / 1.012; 0.95 left 3 and 0, r-hat 1.008 / 1.005, bulk ESS 786 / 744 at
#: about the same time per fit (benchmarks/groups_mixing.py, docs/groups.md).
TARGET_ACCEPT = 0.95


#: With ``DRIVER = "python"``: chains sampled side by side when the model has at least this
#: many dimensions, one at a time below it (the native driver always runs them side by
#: side: no GIL). The log-density is a Python callback around a numba function compiled with
#: ``nogil=True``: a large model's gradient (0.21 ms at 3,822 dimensions) outweighs the GIL's
#: hand-over, a small one's (6 us at 165) does not. Idle 2-core machine, same draws either way
#: (chains are seeded by their index): 10**6 rows x 1,000 cells, 2 chains x 300 draws, 13.1 s
#: wall with two threads against 21.7 s with one; ``bayesbias groups --example adult_llama
#: --metric tpr,fpr,error_rate`` 118 s wall (84 system CPU-s of lock hand-over) with two
#: against 56 s with one.
PARALLEL_MIN_DIM = 1000


def fit_counts(k, n, shape, spec: GroupSpec, *, draws: int = 1000, tune: int = 1000,
               chains: int = 4, seed: int = 0, cores: int | None = None,
               target_accept: float = TARGET_ACCEPT, terms=None) -> dict:
    """Posterior draws of every cell's rate (and of the order sds) from the counts.

    `terms`: ``(term_cell, k, n)`` of terms nested in the cells (:class:`Kernel`); the
    likelihood is then the terms'.

    Returns
    -------
    dict
        ``p``: (chain, draw, metric, cell); ``order_sd``: (chain, draw, metric, order) or
        None; ``orders``: the orders; ``divergences``, ``rhat_max``, ``ess_min``, ``seconds``.
        With terms also ``p_term`` (chain, draw, metric, term) and ``sd_term`` (chain, draw,
        metric); then ``p`` is the rate of a cell's logit (a term with deviation 0).
        With ``structure = "independent"`` the draws come from the exact Beta posterior.
    """
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    if spec.structure == "independent":
        a, b = exact_posterior(k, n, spec.alpha, spec.beta)
        p = rng.beta(a, b, size=(chains, draws, *k.shape))
        out = {"p": p, "order_sd": None, "orders": (), "divergences": 0, "rhat_max": None,
               "ess_min": None, "seconds": time.perf_counter() - t0, "sampler": "exact"}
        if terms is not None:  # every term its own Beta posterior (no pooling)
            at, bt = exact_posterior(terms[1], terms[2], spec.alpha, spec.beta)
            out["p_term"] = rng.beta(at, bt, size=(chains, draws, *at.shape))
            out["sd_term"] = None
        return out
    kern = Kernel(k, n, shape, spec, terms=terms)
    if kern.D == 0 and spec.structure != "independent":
        log.info("one group only: the pooled model is the intercept alone")
    if cores is None:
        if DRIVER == "native":
            from ..parallel import usable_cores

            cores = usable_cores()
        else:
            cores = 2 if kern.ndim >= PARALLEL_MIN_DIM else 1
    sampler = _sample_native if DRIVER == "native" else _sample_kernel
    post, stats = sampler(kern, draws, tune, chains, int(rng.integers(2**31)),
                          min(cores, chains), target_accept)
    p = np.asarray(post["p"].values)
    order_sd = np.asarray(post["order_sd"].values) if "order_sd" in post else None
    sd = np.asarray(post["sd"].values) if "sd" in post else None
    orders = tuple(kern.orders)
    div = int(np.asarray(stats["diverging"].values).sum())
    rhat_max, ess_min = _diagnostics(post, [v for v in ("intercept", "sd", "sd_term")
                                            if v in post])
    if div:
        log.warning("%d divergent transitions in the group-rates fit; the intervals may be "
                    "off (raise target_accept, or check for cells of extreme rates)", div)
    out = {"p": p, "order_sd": order_sd, "sd": sd, "orders": orders, "divergences": div,
           "rhat_max": rhat_max, "ess_min": ess_min,
           "seconds": time.perf_counter() - t0, "sampler": "nutpie"}
    if kern.has_terms:
        out["p_term"] = np.asarray(post["p_term"].values)
        out["sd_term"] = np.asarray(post["sd_term"].values)
    return out


def _diagnostics(post, names) -> tuple[float | None, float | None]:
    """Largest rank r-hat (None with one chain) and smallest bulk ESS of `names`' values."""
    try:
        ary = np.concatenate([np.asarray(post[v].values, dtype=np.float64).reshape(
            *post[v].shape[:2], -1) for v in names], axis=2)
        from ._rank_diagnostics import covered, rank_diagnostics

        if covered(ary):
            d = rank_diagnostics(ary, 0.05)
            return float(np.nanmax(d["rhat"])), float(np.nanmin(d["ess_bulk"]))
        from arviz_stats.base import array_stats

        ess = array_stats.ess(ary, chain_axis=0, draw_axis=1, method="bulk")
        return None, float(np.nanmin(ess))
    except Exception as exc:  # diagnostics are a report, not a condition of the result
        log.warning("convergence diagnostics failed: %s", exc)
        return None, None
