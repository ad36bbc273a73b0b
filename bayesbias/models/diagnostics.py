"""Convergence diagnostics of a fit: r-hat, bulk and tail ESS, divergences, tree depth, E-BFMI."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._stats import bfmi as _bfmi
from .._xarray import xr
from ..errors import DiagnosticsError
from ._rank_diagnostics import covered, rank_diagnostics

__all__ = ["Diagnostics", "SamplerWarning", "diagnose", "check", "RHAT_MAX",
           "ESS_PER_CHAIN_MIN", "BFMI_MIN", "HELPERS"]

log = logging.getLogger(__name__)


#: Largest acceptable rank-normalised split r-hat.
RHAT_MAX = 1.01


#: Smallest acceptable bulk and tail ESS per chain (so 400 for 4 chains).
ESS_PER_CHAIN_MIN = 100


#: Posterior variables that are the sampler's helpers, not model parameters: kept last.
HELPERS = ("mu_z", "mu_centred", "w", "attribute_z")


class SamplerWarning(UserWarning):
    """Sampler diagnostics failed (r-hat, ESS or divergences); the message names parameters."""


@dataclass
class Diagnostics:
    """Convergence diagnostics of a fit.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per scalar parameter: ``parameter, rhat, ess_bulk, ess_tail``.
    divergences : int
    chains, draws : int
    max_treedepth_hits : int
        Transitions that hit NUTS's maximum tree depth.
    min_bfmi : float or None
        Smallest E-BFMI over chains (below 0.3 is a problem).
    problems : list of str
        Human-readable failures, each naming the parameters at fault (empty when ok).
    """

    table: pd.DataFrame
    divergences: int
    chains: int
    draws: int
    problems: list[str] = field(default_factory=list)
    max_treedepth_hits: int = 0
    min_bfmi: float | None = None

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.problems

    def to_dict(self) -> dict:
        """Plain summary for JSON."""
        t = self.table
        return {"ok": self.ok, "problems": self.problems, "divergences": self.divergences,
                "max_treedepth_hits": self.max_treedepth_hits, "min_bfmi": self.min_bfmi,
                "chains": self.chains, "draws": self.draws,
                "max_rhat": float(t["rhat"].max()), "min_ess_bulk": float(t["ess_bulk"].min()),
                "min_ess_tail": float(t["ess_tail"].min())}

    def __str__(self) -> str:
        d = self.to_dict()
        head = (f"diagnostics: max r-hat {d['max_rhat']:.3f}, min bulk ESS "
                f"{d['min_ess_bulk']:.0f}, min tail ESS {d['min_ess_tail']:.0f}, "
                f"{self.divergences} divergence(s) ({self.chains} chains x {self.draws} draws)")
        return head + ("" if self.ok else "\n  " + "\n  ".join(self.problems))


def _flat_names(da: xr.DataArray) -> list[str]:
    if da.ndim == 0:
        return [str(da.name)]
    idx = pd.MultiIndex.from_product([da[d].values for d in da.dims]) if da.ndim > 1 else \
        [(v,) for v in da[da.dims[0]].values]
    return [f"{da.name}[{', '.join(map(str, i))}]" for i in idx]


def _stacked(posterior: xr.Dataset) -> tuple[list[str], list[np.ndarray]]:
    """Parameter names, and each variable's draws as (chain, draw, n) blocks of one dtype."""
    names, blocks = [], []
    for name, da in posterior.data_vars.items():
        da = da.transpose("chain", "draw", ...)
        names += _flat_names(da.isel(chain=0, draw=0, drop=True).rename(name))
        blocks.append(da.values.reshape(da.shape[0], da.shape[1], int(np.prod(da.shape[2:]))))
    return names, blocks


def _chain_draw_stats(blocks: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Rank-normalised r-hat, bulk and tail ESS of every column of `blocks`, in order.

    One call of ``arviz_stats``' array functions per dtype, with the arguments that
    ``arviz_stats.rhat`` / ``ess`` use on a Dataset (tail ESS at ``rcParams["stats.ci_prob"]``).
    """
    from arviz_base import rcParams

    sizes = [b.shape[2] for b in blocks]
    out = {k: np.empty(sum(sizes)) for k in ("rhat", "ess_bulk", "ess_tail")}
    offsets = np.cumsum([0] + sizes)
    by_dtype: dict = {}
    for i, b in enumerate(blocks):
        by_dtype.setdefault(b.dtype, []).append(i)
    for members in by_dtype.values():
        ary = np.concatenate([blocks[i] for i in members], axis=2)
        where = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in members])
        if covered(ary):  # the same numbers, all parameters at once
            for k, v in rank_diagnostics(ary, rcParams["stats.ci_prob"]).items():
                out[k][where] = v
            continue
        from arviz_stats.base import array_stats  # 1.9 s of imports: only when needed

        out["rhat"][where] = array_stats.rhat(ary, chain_axis=0, draw_axis=1, method="rank")
        out["ess_bulk"][where] = array_stats.ess(ary, chain_axis=0, draw_axis=1, method="bulk")
        out["ess_tail"][where] = array_stats.ess(ary, chain_axis=0, draw_axis=1, method="tail",
                                                 prob=rcParams["stats.ci_prob"])
    return out


#: E-BFMI below this in a chain is a problem (ArviZ's threshold).
BFMI_MIN = 0.3


def _sampler_checks(sample_stats: xr.Dataset | None) -> tuple[int, int, np.ndarray | None,
                                                               list]:
    """Divergences, maximum-tree-depth hits, E-BFMI per chain and the chains below 0.3.

    The definitions of ``arviz_stats.diagnose``: sums over all transitions, and
    ``arviz_stats``' E-BFMI of the ``energy`` per chain.
    """
    if sample_stats is None:
        return 0, 0, None, []

    def _count(*names) -> int:
        for v in names:
            if v in sample_stats:
                return int(sample_stats[v].values.sum())
        return 0

    div = _count("diverging")
    maxdepth = _count("reached_max_treedepth", "maxdepth_reached")
    if "energy" not in sample_stats:
        return div, maxdepth, None, []
    energy = sample_stats["energy"].transpose("chain", "draw")
    bfmi = _bfmi(energy.values)
    chain_ids = energy["chain"].values if "chain" in energy.coords else np.arange(len(bfmi))
    return div, maxdepth, bfmi, chain_ids[bfmi < BFMI_MIN].tolist()


def diagnose(posterior: xr.Dataset, sample_stats: xr.Dataset | None,
             rhat_max: float = RHAT_MAX, ess_per_chain_min: float = ESS_PER_CHAIN_MIN) \
        -> Diagnostics:
    """r-hat, bulk/tail ESS of every posterior variable; divergences, tree depth and E-BFMI.

    The numbers ``arviz_stats.rhat`` / ``ess`` give on the posterior Dataset (rank-normalised,
    per scalar parameter) and the sampler checks of ``arviz_stats.diagnose`` (divergences,
    maximum tree depth, E-BFMI < 0.3).
    """
    posterior = posterior[[v for v in posterior.data_vars if v not in HELPERS]]
    names, blocks = _stacked(posterior)
    table = pd.DataFrame({"parameter": names, **_chain_draw_stats(blocks)})
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    div, maxdepth, bfmi_values, failed_chains = _sampler_checks(sample_stats)
    problems = []
    ess_min = ess_per_chain_min * chains

    def _names(mask) -> str:
        bad = table.loc[mask, "parameter"].tolist()
        return ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")

    # NaN r-hat (a constant parameter) counts as a failure only with more than one chain.
    bad_rhat = (table["rhat"] > rhat_max) | (table["rhat"].isna() & (chains > 1))
    if bad_rhat.any():
        problems.append(f"r-hat > {rhat_max} for {_names(bad_rhat)} (max "
                        f"{table['rhat'].max():.3f})")
    for col, label in (("ess_bulk", "bulk"), ("ess_tail", "tail")):
        bad = table[col] < ess_min
        if bad.any():
            problems.append(f"{label} ESS < {ess_min:.0f} for {_names(bad)} (min "
                            f"{table[col].min():.0f})")
    if div:
        problems.append(f"{div} divergent transition(s): the posterior geometry is hard for "
                        "NUTS; raise the target acceptance rate (--target-accept 0.95) or tune "
                        "longer (--tune)")
    if maxdepth:
        problems.append(f"{maxdepth} transition(s) hit the maximum tree depth: sampling was "
                        "inefficient; tune longer (--tune)")
    if failed_chains:
        vals = ", ".join(f"{v:.2f}" for v in np.ravel(bfmi_values))
        problems.append(f"E-BFMI below {BFMI_MIN} in chain(s) "
                        f"{', '.join(map(str, failed_chains))} ({vals}): the sampler "
                        "explores the energy poorly; tune longer (--tune)")
    bfmi_min = float(np.min(bfmi_values)) if bfmi_values is not None and len(bfmi_values) \
        else None
    return Diagnostics(table=table, divergences=div, chains=chains, draws=draws,
                       problems=problems, max_treedepth_hits=maxdepth, min_bfmi=bfmi_min)


def check(fit, strict: bool = False) -> Diagnostics:
    """Run the diagnostics; warn naming the parameters at fault, or raise if `strict`."""
    diag = fit.diagnostics()
    if not diag.ok:
        msg = f"model {fit.spec.name!r}: " + "; ".join(diag.problems)
        if strict:
            raise DiagnosticsError(msg)
        warnings.warn(msg, SamplerWarning, stacklevel=3)
        log.warning("%s", msg)
    return diag
