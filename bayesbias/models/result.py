"""The result of a fit: :class:`Fit` (draws, spec and data) and its model checks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._atomic import atomic_write_bytes
from .._stats import hdi_sorted
from .._xarray import _no_distributed_probe, xr
from ..config import CONNECTIONS, defaults
from ..display import card
from ..errors import ModelSpecError
from ..provenance import fit_provenance
from ..verdicts import verdict_from_fit
from . import checks as _checks_mod
from .cells import Cells, normal_logp_rows
from .checks import (
    ATTRIBUTE_ALPHA,
    _row_mean_and_sds,
    _row_moments,
    attribute_dependence,
    check_rows,
    coverage_tolerance,
    loo_coverage,
    loo_skip_reason,
    thinned_draws,
)
from .contrasts import CONTRASTS, contrast_label, contrast_pairs, differences
from .diagnostics import ESS_PER_CHAIN_MIN, RHAT_MAX, Diagnostics, diagnose
from .families import family
from .plots import plot_fit_forest
from .spec import ModelSpec
from .summaries import SAMPLE_DIMS, interval, resolve_ci, summarise, to_frame
from .word_summaries import (
    cell_summaries,
    chunks,
    drawn_summaries,
    fit_moments,
    fit_shift,
    refuse,
    row_intervals,
)

__all__ = ["Fit", "Check", "PPC_TOLERANCE", "ppc_heading", "ppc_rows_note"]


#: A fit warns when its 89% posterior predictive interval holds a share of the rows
#: farther than this from 0.89.
PPC_TOLERANCE = 0.05


#: Elements (draws x rows) of one block of :func:`_replicates_by_row` (1 MB of float64).
REPLICATE_BLOCK = 131_072


def _replicates_by_row(rng: np.random.Generator, mean: np.ndarray, sig: np.ndarray,
                       conn: np.ndarray) -> np.ndarray:
    """One predictive replicate per draw and row, as rows (rows, draws), C-contiguous.

    ``(mean + sd * rng.standard_normal(mean.shape)).T`` with ``sd = sig[:, conn]``
    (`mean` (draws, rows), `sig` (draws, connection), `conn` each row's connection): the
    very numbers (the same normals in the same order, as the generator's stream does not
    depend on how its calls are cut; the same product and sum), made a cache-sized block
    of draws at a time and written to each row's contiguous draws: no full-size
    temporaries, no gather of the sds and no transposing copy. On the race list's crossed
    fit (3,250 rows x 1000 draws) ``Fit.ppc`` peaks at 55 MB instead of 78 MB; its time
    hardly changes (0.069-0.071 against 0.072-0.074 CPU-s, ``benchmarks/bench_fit_checks.py``): the
    normals themselves, about 30 ms, are most of it, and a cheaper generator would change
    the replicates.
    """
    n_draw, n_row = mean.shape
    out = np.empty((n_row, n_draw))
    step = max(1, REPLICATE_BLOCK // max(n_row, 1))
    buf = np.empty((min(step, n_draw), n_row))
    sd = np.empty_like(buf)
    for lo in range(0, n_draw, step):
        hi = min(lo + step, n_draw)
        b = buf[:hi - lo]
        rng.standard_normal(out=b)
        b *= np.take(sig[lo:hi], conn, axis=1, out=sd[:hi - lo])
        b += mean[lo:hi]  # mean + sd * z, in place
        out[:, lo:hi] = b.T
    return out


def ppc_rows_note(frame: pd.DataFrame) -> str:
    """``"; on a fixed random subset of k of the n rows"`` for a subsampled :meth:`Fit.ppc`."""
    checked, total = frame.attrs.get("rows_checked"), frame.attrs.get("rows_total")
    if checked is None or total is None or checked >= total:
        return ""
    return f"; on a fixed random subset of {checked:,} of the {total:,} rows"


def ppc_heading(frame: pd.DataFrame) -> str:
    """Return the heading of a :meth:`Fit.ppc` table: what it shares, and on which rows."""
    return (f"posterior predictive check (share of observed distances inside the predictive "
            f"{frame.attrs.get('ci_kind', 'hdi').upper()}{ppc_rows_note(frame)}):")


@dataclass(frozen=True)
class Check:
    """One model check: ``code`` (e.g. ``"ppc_coverage"``), ``ok`` and a plain message."""

    code: str
    ok: bool
    message: str
    value: float | None = None

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        return {"code": self.code, "ok": self.ok, "message": self.message, "value": self.value}

    def __str__(self) -> str:
        return ("ok: " if self.ok else "warning: ") + self.message


def _model_checks(fit) -> list[Check]:
    out = []
    rows = fit.cells.n.sum(axis=0)
    for a, b in CONTRASTS:
        empty = [c for c in (a, b) if rows[CONNECTIONS.index(c)] == 0]
        if empty:
            out.append(Check("contrast_no_data", False,
                             f"{contrast_label(a, b)}: no data (no {' or '.join(empty)} rows); "
                             "its interval comes from the prior alone and is not a finding"))

    spec = fit.spec
    fit = _row_view(fit)
    skip = loo_skip_reason(fit)
    if skip is not None:
        out.append(Check("ppc_coverage_skipped", False, skip))
    else:
        out.append(_coverage_check(*loo_coverage(fit)))
    p = attribute_dependence(fit)
    if p is not None and p < ATTRIBUTE_ALPHA:
        # a model with attribute effects of its own: the shift is one it lacks beyond them
        has_own = family(spec.family).ATTRIBUTE_EFFECTS or family(spec.family).EMBEDDINGS
        out.append(Check("attribute_dependence", False,
                         f"rows that share an attribute word share a shift this model does not "
                         f"have (attribute-dependence check p = {p:.2g}): its group-level "
                         "intervals treat the listed attributes as fixed and are likely too "
                         "narrow" + ("" if has_own else "; use the crossed model (the default)"),
                         p))
    elif p is not None:
        out.append(Check("attribute_dependence", True,
                         f"no sign of attribute-word effects beyond the model's "
                         f"(attribute-dependence check p = {p:.2g})", p))
    return out


def _coverage_check(share: float, se: float) -> Check:
    """Return the ``ppc_coverage`` check of LOO coverage `share` (cluster standard error `se`)."""
    tol = coverage_tolerance(se)
    msg = (f"{share:.1%} of the observed distances lie inside their 89% leave-one-out "
           f"predictive interval (expected 89% ± {tol:.1%})")
    if not abs(share - 0.89) > tol:  # (as before: a NaN share is not flagged)
        return Check("ppc_coverage", True, msg, share)
    what = ("too narrow: the model understates the spread of the distances, so its "
            "intervals are likely too narrow (overconfident); prefer a model whose checks "
            "pass before reading them" if share < 0.89 else
            "too wide: the model overstates the spread of the distances, so its intervals "
            "are likely conservative")
    return Check("ppc_coverage", False, f"{msg}: the predictive intervals are {what}", share)


def _row_view(fit):
    """Return the fit as the model checks read it, with each row's predictive sd as ``sigma``.

    The same fit unless its family has a ``row_sd`` hook (context: the context effect
    integrated out, ``sqrt(sigma² + tau_context²)``).
    """
    from types import SimpleNamespace

    hook = getattr(family(fit.spec.family), "row_sd", None)
    if hook is None:
        return fit
    post = fit.posterior
    return SimpleNamespace(cells=fit.cells, posterior=post.assign(sigma=hook(post)),
                           spec=fit.spec, idata=fit.idata, word_draws=fit.word_draws,
                           _word_moments=fit._word_moments)


class Fit:
    """A fitted model: posterior draws (``idata``, an ArviZ DataTree), its spec and data.

    Create with :func:`fit_model` or :func:`load_fit`.
    """

    def __init__(self, idata, spec: ModelSpec, cells: Cells):
        self.idata = idata
        self.spec = spec
        self.cells = cells

    def __repr__(self) -> str:
        s = self.cells.summary()
        p = self.idata.posterior
        return (f"<Fit {self.spec.name!r} ({self.spec.family}, hash {self.spec.hash}) on "
                f"{s['rows']} rows, {s['units']} {self.cells.unit_dim.replace('_', ' ')}s; "
                f"{p.sizes['chain']} chains x {p.sizes['draw']} draws>")

    def __str__(self) -> str:
        return _fit_text(self)

    def _repr_html_(self) -> str:
        return _fit_html(self)

    # -- posterior quantities -------------------------------------------------------------
    @property
    def posterior(self) -> xr.Dataset:
        """The posterior group as a Dataset."""
        return self.idata.posterior.to_dataset()

    @property
    def unit_dim(self) -> str:
        """``"protected_word"`` or ``"protected_class"``."""
        return self.cells.unit_dim

    @property
    def word_draws(self) -> bool:
        """Whether the fit keeps per-word draws.

        Else its per-word summaries come from the hyper-parameter draws
        (:mod:`~bayesbias.models.word_summaries`).
        """
        return "mu" in self.idata.posterior.data_vars

    def _word_moments(self):
        """``moments(keep, sl)`` of the flat cells of a fit without per-word draws (cached)."""
        cache = self.__dict__.setdefault("_cache", {})
        if "word_moments" not in cache:
            own = getattr(family(self.spec.family), "cell_moments", None)
            # a family whose cell means need more than M, T, S (embedding_level): its own
            cache["word_moments"] = (own(self), None) if own is not None else fit_moments(self)
        return cache["word_moments"]

    def _n_draws(self) -> int:
        p = self.idata.posterior
        return p.sizes["chain"] * p.sizes["draw"]

    def _n(self) -> xr.DataArray:
        return xr.DataArray(self.cells.n, dims=(self.unit_dim, "connection"),
                            coords={self.unit_dim: self.cells.units.tolist(),
                                    "connection": list(CONNECTIONS)})

    def group_mean_draws(self) -> xr.DataArray:
        """Draws of the group-level mean distance per connection.

        ``mu_bar`` for the hierarchical families; for the others the average of the cell
        means over the units that have rows in that connection.
        """
        post = self.posterior
        var = family(self.spec.family).GROUP_MEAN
        if var is not None:
            out = post[var]
        elif not self.word_draws:
            out = self._group_average_draws()
        else:
            has = self._n() > 0
            out = post["mu"].where(has).sum(self.unit_dim) / has.sum(self.unit_dim)
        return out.rename("group_mean")

    def _group_average_draws(self) -> xr.DataArray:
        """Return draws of the average cell mean per connection without per-word draws.

        Given the parameters it is an average of independent Normals: drawn once per draw
        (seeded).
        """
        moments, _ = self._word_moments()
        n = self.cells.n.reshape(-1)
        nc = len(CONNECTIONS)
        tot_m = np.zeros((self._n_draws(), nc))
        tot_v = np.zeros((self._n_draws(), nc))

        conn = np.tile(np.arange(nc), self.cells.n.shape[0])
        for sl in chunks(n.size, self._n_draws()):
            m, sd = moments(None, sl)
            has = n[sl] > 0
            for j in range(nc):
                pick = has & (conn[sl] == j)
                tot_m[:, j] += m[:, pick].sum(axis=1)
                tot_v[:, j] += (sd[:, pick] ** 2).sum(axis=1)
        k = np.maximum((self.cells.n > 0).sum(axis=0), 1)
        rng = np.random.default_rng([int(self.idata.attrs.get("seed", 0)), 20240102])
        val = tot_m / k + np.sqrt(tot_v) / k * rng.standard_normal(tot_m.shape)
        post = self.idata.posterior
        return xr.DataArray(val.reshape(post.sizes["chain"], post.sizes["draw"], nc),
                            dims=("chain", "draw", "connection"),
                            coords={"chain": post["chain"].values, "draw": post["draw"].values,
                                    "connection": list(CONNECTIONS)})

    def contrast_draws(self, contrasts=CONTRASTS) -> xr.DataArray:
        """Draws of differences between group-level means, dim ``contrast``.

        `contrasts`: pairs, ``"a - b"`` labels or ``"all"`` (see :func:`contrast_pairs`).
        """
        return differences(self.group_mean_draws(), contrast_pairs(contrasts))

    def word_mean_draws(self) -> xr.DataArray:
        """Draws of the cell means ``mu`` (dims ``chain, draw, unit, connection``).

        Raises :class:`~bayesbias.models.word_summaries.WordDrawsError` on a fit without
        per-word draws (see :attr:`word_draws`).
        """
        if not self.word_draws:
            raise refuse("per-word draws (Fit.word_mean_draws)")
        return self.posterior["mu"].rename("mean")

    def word_contrast_draws(self, contrasts=CONTRASTS) -> xr.DataArray:
        """Per-unit differences between connections, dims ``(..., unit, contrast)``."""
        return differences(self.word_mean_draws(), contrast_pairs(contrasts))

    # -- tables ---------------------------------------------------------------------------
    def group_means(self, ci_prob=None, ci_kind=None, as_xarray: bool = False):
        """Group-level mean distance per connection with its interval.

        Returns a DataFrame (``connection, mean, sd, lower, upper, rows``) or, with
        `as_xarray`, the Dataset of :func:`~bayesbias.models.summaries.summarise`.
        """
        ds = summarise(self.group_mean_draws(), ci_prob, ci_kind)
        ds["rows"] = ("connection", self.cells.n.sum(axis=0))
        return ds if as_xarray else to_frame(ds)

    def contrasts(self, ci_prob=None, ci_kind=None, as_xarray: bool = False,
                  contrasts=None):
        """Differences between group-level means (associated - none, ...), with intervals.

        `contrasts`: ``None`` for :data:`CONTRASTS` (the four verdict contrasts first, then
        ``different - none``), ``"all"`` for the six pairwise ones, or any pairs / ``"a - b"``
        labels. ``excludes_zero`` says whether the interval lies entirely on one side of 0;
        ``prob_below_zero`` is the posterior probability that the contrast is below 0;
        ``has_data`` is False when one side of the contrast has no rows (the interval is
        then the prior's and ``excludes_zero`` is False; see :attr:`checks`).
        """
        pairs = contrast_pairs(contrasts)
        draws = self.contrast_draws(pairs)
        ds = summarise(draws, ci_prob, ci_kind, zero_check=True)
        ds["prob_below_zero"] = (draws < 0).mean(SAMPLE_DIMS)
        rows = self.cells.n.sum(axis=0)
        has = {c: rows[i] > 0 for i, c in enumerate(CONNECTIONS)}
        ok = [bool(has[a] and has[b]) for a, b in pairs]
        ds["has_data"] = ("contrast", ok)
        # A contrast with no rows on one side is the prior's, not a finding.
        ds["excludes_zero"] = ds["excludes_zero"] & ds["has_data"]
        return ds if as_xarray else to_frame(ds)

    def _word_summary(self, kind: str, ci_prob, ci_kind, contrasts=None,
                      rope: float | None = None) -> dict:
        """Return mixture summaries without per-word draws.

        Of the cell means (``kind="means"``, flat cells) or of per-word contrasts
        (``"contrasts"``, (unit, contrast) flattened).
        """
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        pairs = contrast_pairs(contrasts) if kind == "contrasts" else None
        key = ("word_summary", kind, ci_prob, ci_kind, tuple(pairs or ()), rope)
        cache = self.__dict__.setdefault("_cache", {})
        if key in cache:
            return cache[key]
        moments, mts = self._word_moments()
        if mts is None:  # the family's own conditional moments: over thinned draws
            cache[key] = drawn_summaries(moments, self.cells.n.shape, self._n_draws(),
                                         ci_prob, ci_kind, pairs and [
                                             (CONNECTIONS.index(a), CONNECTIONS.index(b))
                                             for a, b in pairs], rope,
                                         int(self.idata.attrs.get("seed", 0)))
            return cache[key]
        _, (m, t, sd) = moments, mts
        idx = None if pairs is None else [(CONNECTIONS.index(a), CONNECTIONS.index(b))
                                          for a, b in pairs]
        cache[key] = cell_summaries(m, t, sd, self.cells.n, self.cells.mean, ci_prob, ci_kind,
                                    idx, rope, shift=fit_shift(self))
        return cache[key]

    def _summary_dataset(self, got: dict, dims, coords, ci_prob, ci_kind, name: str,
                         zero_check: bool = False) -> xr.Dataset:
        """Return a :func:`summarise`-shaped Dataset from :meth:`_word_summary` arrays."""
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        shape = tuple(len(coords[d]) for d in dims)
        bound = xr.DataArray(["lower", "upper"], dims=["ci_bound"],
                             attrs={"ci_kind": ci_kind, "ci_prob": ci_prob})
        ci = xr.DataArray(got["ci"].reshape(shape + (2,)), dims=(*dims, "ci_bound"),
                          coords={**coords, "ci_bound": bound},
                          attrs={"ci_prob": ci_prob, "ci_kind": ci_kind})
        ds = xr.Dataset({"mean": (dims, got["mean"].reshape(shape)),
                         "sd": (dims, got["sd"].reshape(shape)), "ci": ci}, coords=coords)
        if zero_check:
            lo, hi = ci.sel(ci_bound="lower"), ci.sel(ci_bound="upper")
            ds["excludes_zero"] = (lo > 0) | (hi < 0)
        ds.attrs.update(ci.attrs, name=name, word_summaries="Rao-Blackwellised over the "
                        "hyper-parameter draws (no per-word draws kept)")
        return ds

    def word_means(self, ci_prob=None, ci_kind=None, as_xarray: bool = False):
        """Mean distance per (protected word or class, connection), for cells with rows.

        On a fit without per-word draws (:attr:`word_draws`) the means, sds and intervals
        are those of each cell mean's Normal mixture over the hyper-parameter draws
        (:mod:`~bayesbias.models.word_summaries`).
        """
        if self.word_draws:
            ds = summarise(self.word_mean_draws(), ci_prob, ci_kind)
        else:
            ds = self._summary_dataset(
                self._word_summary("means", ci_prob, ci_kind), (self.unit_dim, "connection"),
                {self.unit_dim: self.cells.units.tolist(), "connection": list(CONNECTIONS)},
                ci_prob, ci_kind, "mean")
        ds["rows"] = self._n()
        ds = ds.assign_coords(protected_class_of=(self.unit_dim, self.cells.unit_class.tolist()))
        if as_xarray:
            return ds
        frame = to_frame(ds)
        frame = frame.loc[frame["rows"] > 0].reset_index(drop=True)
        if self.unit_dim == "protected_word":
            frame.insert(1, "protected_class", frame.pop("protected_class_of"))
        else:
            frame = frame.drop(columns="protected_class_of")
        return frame

    def word_contrasts(self, ci_prob=None, ci_kind=None, as_xarray: bool = False,
                       contrasts=None):
        """Per-unit contrasts (e.g. associated - none for each protected word).

        Mixture summaries on a fit without per-word draws, as :meth:`word_means`.
        """
        if self.word_draws:
            ds = summarise(self.word_contrast_draws(contrasts), ci_prob, ci_kind,
                           zero_check=True)
        else:
            pairs = contrast_pairs(contrasts)
            ds = self._summary_dataset(
                self._word_summary("contrasts", ci_prob, ci_kind, contrasts),
                (self.unit_dim, "contrast"),
                {self.unit_dim: self.cells.units.tolist(),
                 "contrast": [contrast_label(a, b) for a, b in pairs]},
                ci_prob, ci_kind, "mean", zero_check=True)
            ds = ds.transpose("contrast", self.unit_dim, ...)  # as the draws' summary
        if as_xarray:
            return ds
        frame = to_frame(ds)
        # rows whose unit has rows in both connections of the contrast (one lookup per
        # row into the cells' counts, not an xarray selection each: 50 s at 77,640 rows)
        unit = pd.Index(self.cells.units.tolist()).get_indexer(frame[self.unit_dim])
        sides = frame["contrast"].astype(str).str.split(" - ", n=1, expand=True)
        conn = pd.Index(list(CONNECTIONS))
        n = self.cells.n
        ok = (n[unit, conn.get_indexer(sides[0])] > 0) & (n[unit, conn.get_indexer(sides[1])] > 0)
        return frame.loc[ok].reset_index(drop=True)

    def parameters(self, ci_prob=None, ci_kind=None) -> pd.DataFrame:
        """Every named model parameter (not the sampler's auxiliary ones) with intervals."""
        post = self.posterior
        names = family(self.spec.family).PARAMETERS
        frames = []
        for v in names:
            if v not in post:  # an optional level the spec leaves out
                continue
            f = to_frame(summarise(post[v], ci_prob, ci_kind))
            dims = [d for d in post[v].dims if d not in SAMPLE_DIMS]
            f.insert(0, "parameter", [f"{v}[{', '.join(str(r[d]) for d in dims)}]" if dims
                                      else v for _, r in f.iterrows()])
            frames.append(f.drop(columns=dims))
        out = pd.concat(frames, ignore_index=True)
        out.attrs = frames[0].attrs
        return out

    # -- checks ---------------------------------------------------------------------------
    def diagnostics(self, rhat_max: float = RHAT_MAX,
                    ess_per_chain_min: float = ESS_PER_CHAIN_MIN) -> Diagnostics:
        """r-hat, bulk/tail ESS and divergences (see :func:`diagnose`)."""
        cache = self.__dict__.setdefault("_cache", {})
        key = ("diagnostics", rhat_max, ess_per_chain_min)
        if key not in cache:  # computed once per fit (fit_model, summary, report all ask)
            ss = self.idata["sample_stats"].to_dataset() if "sample_stats" in self.idata \
                else None
            cache[key] = diagnose(self.posterior, ss, rhat_max, ess_per_chain_min)
        return cache[key]

    def run_checks(self, seed: int | None = None) -> dict:
        """Compute the diagnostics, the model checks and the predictive check (at `seed`).

        Returns them as :meth:`take_checks` takes them: so a worker process can compute
        them on a copy of this fit (the same numbers) while this process goes on.
        """
        self.diagnostics()
        with _checks_mod.shared_row_moments(self):  # the rows' moments once for all checks
            self.ppc(seed=seed)
            checks = self.checks
        cache = self.__dict__["_cache"]
        return {"checks": checks,
                "cache": {k: v for k, v in cache.items() if k[0] in ("diagnostics", "ppc")}}

    def take_checks(self, done: dict) -> None:
        """Take the result of :meth:`run_checks` on a copy of this fit as this fit's own."""
        self.__dict__.setdefault("_cache", {}).update(done["cache"])
        self._checks = done["checks"]

    @property
    def checks(self) -> list[Check]:
        """Model checks a reader must see: contrasts without data, predictive coverage.

        Each :class:`Check` has a ``code``, an ``ok`` flag and a ``message`` saying what it
        means for the intervals. Computed once per fit.
        """
        if getattr(self, "_checks", None) is None:
            self._checks = _model_checks(self)
        return self._checks

    def to_dict(self, ci_prob=None, ci_kind=None) -> dict:
        """:meth:`summary` as plain JSON data (tables as lists of records)."""
        out = {}
        for k, v in self.summary(ci_prob, ci_kind).items():
            if isinstance(v, pd.DataFrame):
                v = json.loads(v.to_json(orient="records"))
            out[k] = v
        return out

    def _draws_flat(self, da: xr.DataArray) -> np.ndarray:
        return da.transpose(*SAMPLE_DIMS, ...).values

    def _cell_sigma(self) -> np.ndarray:
        hook = getattr(family(self.spec.family), "row_sd", None)
        sig = self._draws_flat(self.posterior["sigma"] if hook is None
                               else hook(self.posterior))
        if sig.ndim == 2:  # single residual sd
            sig = np.repeat(sig[..., None], len(CONNECTIONS), axis=-1)
        return sig  # (chain, draw, connection)

    def _attribute_effects(self) -> np.ndarray | None:
        """Draws of the attribute effects (chain, draw, attribute), or None."""
        if "attribute_effect" not in self.posterior:
            return None
        return self._draws_flat(self.posterior["attribute_effect"])

    def log_likelihood(self, dtype=np.float64) -> xr.DataArray:
        """Pointwise log-likelihood of every row (dims ``chain, draw, row``).

        Computed from the posterior draws after sampling; the sufficient-statistic fit has
        none of its own. A family with its own likelihood (context: the rows of a context
        draw share its effect) has no pointwise log-likelihood per row and raises
        :class:`~bayesbias.errors.ModelSpecError`.
        """
        if getattr(family(self.spec.family), "likelihood", None) is not None:
            raise ModelSpecError(
                f"model {self.spec.name!r}: the rows of one (word, context) cell share its "
                "context effect, so there is no log-likelihood per row; PSIS-LOO (--loo) "
                "does not apply to this family")
        if not self.word_draws:
            raise refuse("the pointwise log-likelihood (PSIS-LOO, --loo)")
        c = self.cells
        mu = self._draws_flat(self.posterior["mu"])
        sig = self._cell_sigma()
        effect = self._attribute_effects()
        out = np.empty(mu.shape[:2] + (c.n_rows,), dtype=dtype)
        step = max(1, 2_000_000 // max(mu.shape[0] * mu.shape[1], 1))
        for start in range(0, c.n_rows, step):
            sl = slice(start, start + step)
            mean = mu[..., c.unit_idx[sl], c.conn_idx[sl]]
            if effect is not None:
                mean = mean + effect[..., c.attr_idx[sl]]
            out[..., sl] = normal_logp_rows(c.y[sl], mean, sig[..., c.conn_idx[sl]])
        post = self.idata.posterior
        return xr.DataArray(out, dims=("chain", "draw", "row"),
                            coords={"chain": post["chain"].values, "draw": post["draw"].values,
                                    "row": np.arange(c.n_rows)}, name="cosine_distance")

    def with_log_likelihood(self):
        """Return ``idata`` plus a ``log_likelihood`` group (for ``az.loo`` / ``az.compare``)."""
        tree = self.idata.copy()
        tree["log_likelihood"] = xr.DataTree(self.log_likelihood().to_dataset())
        return tree

    def loo(self):
        """PSIS-LOO of the rows through ``arviz.loo``."""
        import arviz as az

        return az.loo(self.with_log_likelihood())

    def ppc(self, probs=(0.89, 0.5), ci_kind: str = "hdi", seed: int | None = None) \
            -> pd.DataFrame:
        """Posterior predictive check: share of observed distances inside predictive intervals.

        The predictive distribution of a row depends only on its cell, so one replicate per
        draw and cell gives every row's predictive interval. A table of more than
        :data:`~bayesbias.models.checks.LOO_ROWS` rows is checked on the fixed random subset
        of rows the coverage check uses (``attrs["rows_checked"]``).

        Returns
        -------
        pandas.DataFrame
            One row per connection plus ``all``: ``rows`` and, for each probability p,
            ``inside_<p>`` (share of rows inside the p predictive interval; ideally about p).
            ``attrs``: ``ci_kind``, ``probs``, ``rows_checked`` and ``rows_total``.
        """
        _, ci_kind = resolve_ci(None, ci_kind)
        seed = defaults.seed if seed is None else seed
        cache = self.__dict__.setdefault("_cache", {})
        key = ("ppc", tuple(probs), ci_kind, seed)
        if key not in cache:
            cache[key] = self._ppc(probs, ci_kind, seed)
        return cache[key].copy()

    def _ppc(self, probs, ci_kind, seed) -> pd.DataFrame:
        c = self.cells
        rng = np.random.default_rng(seed)
        # a big table: the fixed random subset of rows the coverage check uses
        subset = check_rows(self)
        sel = slice(None) if subset is None else subset
        n_sel = c.n_rows if subset is None else subset.size
        own = getattr(family(self.spec.family), "cell_moments", None) is not None
        if "attribute_effect" in self.posterior and (self.word_draws or own):
            # each row has its own mean (attribute effects): replicate rows on thinned draws,
            # in chunks of rows on a big table (at most CHECK_ELEMENTS draws x rows at once)
            keep = thinned_draws(self)
            step = max(1, _checks_mod.CHECK_ELEMENTS // keep.size)
            parts = {p: [] for p in probs}
            for start in range(0, n_sel, step):
                part = (slice(start, start + step) if subset is None
                        else subset[start:start + step])
                if ci_kind == "hdi":  # one sort for every probability
                    ranked = _replicates_by_row(rng, *_row_mean_and_sds(self, keep, part))
                    ranked.sort(axis=-1)
                    for p in probs:
                        parts[p].append(hdi_sorted(ranked, p))
                    continue
                mean, sd = _row_moments(self, keep, part)
                rep = rng.standard_normal(mean.shape)                   # (draws, rows)
                rep *= sd
                rep += mean  # mean + sd * z, in place
                del sd
                rep = xr.DataArray(rep[None], dims=("chain", "draw", "row"))
                for p in probs:
                    parts[p].append(interval(rep, p, ci_kind).transpose("row", "ci_bound").values)

            def bounds(p):
                return np.concatenate(parts[p])
        elif not self.word_draws:  # a cell's predictive given the parameters is Normal
            bounds = self._ppc_mixture(probs, ci_kind, subset)
        else:  # a row's predictive depends only on its cell: one replicate per draw and cell
            mu = self._draws_flat(self.posterior["mu"])
            sig = self._cell_sigma()[:, :, None, :]
            rep = xr.DataArray(mu + sig * rng.standard_normal(mu.shape),
                               dims=("chain", "draw", "unit", "connection"))

            def bounds(p):
                ci = interval(rep, p, ci_kind).transpose("unit", "connection", "ci_bound")
                return ci.values[c.unit_idx[sel], c.conn_idx[sel]]
        y, conn = c.y[sel], c.conn_idx[sel]
        checked = np.bincount(conn, minlength=len(CONNECTIONS))
        rows = {"connection": list(CONNECTIONS) + ["all"],
                "rows": list(c.n.sum(axis=0)) + [c.n_rows]}
        for p in probs:
            ci = bounds(p)
            inside = (y >= ci[:, 0]) & (y <= ci[:, 1])
            per = np.bincount(conn, weights=inside, minlength=len(CONNECTIONS))
            with np.errstate(invalid="ignore", divide="ignore"):
                share = per / checked
            rows[f"inside_{p:g}"] = list(share) + [float(inside.mean())]
        frame = pd.DataFrame(rows)
        frame.attrs.update(ci_kind=ci_kind, probs=list(probs), rows_checked=int(n_sel),
                           rows_total=int(c.n_rows))
        return frame

    def _ppc_mixture(self, probs, ci_kind, subset=None):
        """Return the predictive intervals of each row (or of `subset`) from its cell's mixture.

        For fits without per-word draws: Normal given the parameters (conditional mean, sd
        ``sqrt(conditional var + sigma^2)``), over thinned draws; with attribute effects each
        row's (:func:`~bayesbias.models.word_summaries.row_intervals`).
        """
        _, (m, t, sd) = self._word_moments()
        c = self.cells
        nc = len(CONNECTIONS)
        sig = self._cell_sigma().reshape(-1, nc)
        shift = fit_shift(self)
        if shift is not None:  # attribute effects: each row's own predictive

            v = self._attribute_effects()
            v = v.reshape(-1, v.shape[-1])
            rows = dict(zip(probs, row_intervals(m, t, sd, sig, c, shift, v, probs, ci_kind,
                                                 subset), strict=True))
            return rows.__getitem__
        out = {p: cell_summaries(m, t, sd, c.n, c.mean, p, ci_kind, extra_sd=sig)["ci"]
               for p in probs}
        sel = slice(None) if subset is None else subset

        def bounds(p):
            return out[p][c.unit_idx[sel].astype(np.int64) * nc + c.conn_idx[sel]]
        return bounds

    # -- output ---------------------------------------------------------------------------
    def plot_forest(self, path=None, ci_prob=None, ci_kind=None):
        """Forest plots per protected word and per connection: saved at `path`, or returned.

        Without `path` the :class:`matplotlib.figure.Figure` is returned (it shows in Jupyter).
        """
        return plot_fit_forest(self, path, ci_prob, ci_kind)

    def to_text(self, ci_prob=None, ci_kind=None, ppc: bool = True) -> str:
        """Return a plain-text report: model card, data, diagnostics, means, contrasts, PPC."""
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        groups = self.group_means(ci_prob, ci_kind)
        contrasts = self.contrasts(ci_prob, ci_kind)
        iv = groups.attrs["interval"]
        cols = ["mean", "sd", "lower", "upper"]
        a = self.idata.attrs
        post = self.idata.posterior
        lines = [self.spec.card(), "",
                 f"data: {self.cells.n_rows} rows, {self.cells.units.size} "
                 f"{self.unit_dim.replace('_', ' ')}s; sampler {a.get('sampler')}, "
                 f"{post.sizes['chain']} chains x {post.sizes['draw']} draws, seed "
                 f"{a.get('seed')}, {float(a.get('wall_time_s', np.nan)):.1f} s",
                 str(self.diagnostics()),
                 *[f"warning: {c.message}" for c in self.checks if not c.ok], "",
                 f"group-level mean cosine distance per connection ({iv}):",
                 groups.set_index("connection")[cols + ["rows"]].round(4).to_string(), "",
                 f"contrasts ({iv}):",
                 contrasts.set_index("contrast")[cols + ["prob_below_zero", "excludes_zero"]]
                 .round(4).to_string()]
        if ppc:
            frame = self.ppc()
            lines += ["", ppc_heading(frame), frame.set_index("connection").round(3).to_string()]
        return "\n".join(lines)

    def summary(self, ci_prob=None, ci_kind=None) -> dict:
        """Everything a report needs, as plain data (for JSON)."""
        ci_prob, ci_kind = resolve_ci(ci_prob, ci_kind)
        return {
            "model": self.spec.name, "family": self.spec.family, "spec_hash": self.spec.hash,
            "spec": self.spec.to_dict(), "data": self.cells.summary(),
            "ci_prob": ci_prob, "ci_kind": ci_kind,
            "sampler": self.idata.attrs.get("sampler"),
            "diagnostics": self.diagnostics().to_dict(),
            "group_means": self.group_means(ci_prob, ci_kind),
            "contrasts": self.contrasts(ci_prob, ci_kind),
            "word_means": self.word_means(ci_prob, ci_kind),
            "parameters": self.parameters(ci_prob, ci_kind),
            "checks": [c.to_dict() for c in self.checks],
        }

    def save(self, path, loo: bool = False, provenance: dict | None = None) -> Path:
        """Write the fit (posterior, data, spec, spec hash, version) to netCDF, atomically.

        With `loo`, also the pointwise ``log_likelihood`` group, so that ``arviz.loo`` works
        on the loaded file (one value per row and draw: large for big tables). The
        ``provenance`` attribute (JSON) holds `provenance`, by default
        :func:`bayesbias.provenance.fit_provenance` (versions, date, command line, digests).
        """
        path = Path(path)
        tree = self.with_log_likelihood() if loo else self.idata.copy()
        tree.attrs["provenance"] = json.dumps(provenance if provenance is not None
                                              else fit_provenance(self), default=str)
        if "sample_stats" in tree:  # object-typed messages do not serialise
            ss = tree["sample_stats"].to_dataset()
            ss = ss.drop_vars([v for v in ss.data_vars if ss[v].dtype == object])
            tree["sample_stats"] = xr.DataTree(ss)
        with _no_distributed_probe():  # in memory: h5py crashes on a disk that fills up
            data = tree.to_netcdf(engine="h5netcdf")
        atomic_write_bytes(path, data, suffix=".nc")
        return path


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _fit_text(fit) -> str:
    """Plain-text summary of a :class:`~bayesbias.models.Fit` (its ``__str__``).

    The model, the data, the diagnostics, the verdict and the contrast table; the full
    report is :meth:`~bayesbias.models.Fit.to_text`.
    """
    contrasts = fit.contrasts()
    iv = contrasts.attrs.get("interval", "")
    v = verdict_from_fit(fit)
    cols = ["contrast", "mean", "lower", "upper", "prob_below_zero"]
    return "\n".join([repr(fit), str(fit.diagnostics()), f"verdict: {v.headline}",
                      f"contrasts ({iv}):",
                      contrasts[cols].round(4).to_string(index=False)])


def _fit_html(fit) -> str:
    """HTML card of a :class:`~bayesbias.models.Fit` (its ``_repr_html_``)."""
    groups = fit.group_means()
    contrasts = fit.contrasts()
    iv = groups.attrs.get("interval", "")
    s = fit.cells.summary()
    post = fit.idata.posterior
    v = verdict_from_fit(fit)
    d = fit.diagnostics()
    unit = fit.unit_dim.replace("_", " ")
    return card(f"Fit: {fit.spec.name} model", f"{fit.spec.family}, hash {fit.spec.hash}",
                f"Verdict: {v.headline}",
                [f"data: {s['rows']} rows, {s['units']} {unit}s",
                 f"sampler {fit.idata.attrs.get('sampler')}: {post.sizes['chain']} chains x "
                 f"{post.sizes['draw']} draws, seed {fit.idata.attrs.get('seed')}",
                 str(d).splitlines()[0] if str(d) else ""],
                tables=[(f"contrasts ({iv})", contrasts.drop(columns=[
                    k for k in ("sd",) if k in contrasts])),
                        (f"group-level mean cosine distance per connection ({iv})", groups),
                        (f"per-{unit} means ({iv})", fit.word_means())],
                notes=[f"warning: {c.message}" for c in fit.checks if not c.ok] + [v.rule])
