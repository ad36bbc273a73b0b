"""Monte Carlo precision of a verdict: fit for it, refitting where more draws could settle it.

:func:`fit_for_verdict` fits a model and reads its verdict (:mod:`bayesbias.verdicts`, the
rule); while an interval end that decides the verdict sits near the edge of the borderline
band, it refits with four times the draws (:data:`UNSURE_MCSE`). The precision of each end
itself is :func:`bayesbias.verdicts.interval_end_mcse`.
"""

from __future__ import annotations

import numpy as np

from .. import models
from .. import verdicts as rule
from ..config import DEFAULT_MODEL
from ..models import sampling
from ..progress import progress
from . import MAX_VERDICT_DRAWS, PRECISION_MCSE, Verdict

__all__ = ["fit_for_verdict", "UNSURE_MCSE"]


#: :func:`fit_for_verdict` refits when a deciding interval end lies between
#: ``PRECISION_MCSE - UNSURE_MCSE`` and ``PRECISION_MCSE + UNSURE_MCSE`` Monte Carlo standard
#: errors from its threshold: there the borderline call itself could go either way with
#: another seed, and four times the draws halve the error and settle it.
UNSURE_MCSE = 2.0


def _needs_draws(verdict: Verdict) -> bool:
    """Whether more draws could settle `verdict`'s code.

    True when a deciding contrast read from draws is borderline, or when an end of a
    deciding contrast lies within :data:`UNSURE_MCSE` Monte Carlo standard errors of the
    edge of the borderline band (:data:`PRECISION_MCSE` errors from its threshold). An end
    on its threshold (well inside the band) needs no more draws: it stays borderline.
    """
    r = 0.0 if verdict.rope is None else float(verdict.rope)
    for c in verdict.contrasts:
        if not c.decisive or c.status == "no data":
            continue
        if c.status == "borderline" and c.estimator == "draws":
            return True
        for end, m in ((c.lower, c.mcse_lower), (c.upper, c.mcse_upper)):
            if not (np.isfinite(m) and m > 0):
                continue
            z = min(abs(end - t) for t in {-r, r}) / m
            if abs(z - PRECISION_MCSE) < UNSURE_MCSE:
                return True
    return False


def fit_for_verdict(table, model=None, *, draws: int | None = None,
                    max_draws: int = MAX_VERDICT_DRAWS, ci_prob: float | None = None,
                    ci_kind: str | None = None, rope: float | None = None,
                    checked: bool = True, **fit_kwargs):
    """Fit `model` for a verdict; refit only where more draws could settle it.

    A refit with four times the draws per chain (same seed), up to `max_draws`, while
    :func:`_needs_draws`: a deciding end sits near the edge of the borderline band (where
    another seed could say borderline or not), or a deciding contrast read from draws (no
    Rao-Blackwellised estimator) is borderline. An end on its threshold stays borderline
    without refits: more draws cannot move it. The fit returned has had its diagnostics
    and model checks run (``warn_checks``), unless `checked` is False (the caller runs them).
    """
    # the fit, the verdict and the checks are looked up where they live at each call, so a
    # stand-in put there (the tests' plumbing) is the one used
    fit_model, warn_checks = models.fit_model, sampling.warn_checks
    verdict_from_fit = rule.verdict_from_fit
    model = DEFAULT_MODEL if model is None else model
    draws = sampling.default_draws(model) if draws is None else int(draws)
    # diagnostics and model checks run once, on the fit returned (not on a fit refitted)
    fit = fit_model(table, model, draws=draws, checked=False, **fit_kwargs)
    while draws < max_draws and _needs_draws(verdict_from_fit(fit, "", ci_prob, ci_kind,
                                                              rope)):
        draws = min(4 * draws, max_draws)
        progress.info("an interval end lies within Monte Carlo error of its threshold: "
                      "refitting with %d draws per chain", draws)
        fit = fit_model(table, model, draws=draws, checked=False, **fit_kwargs)
    return warn_checks(fit, bool(fit_kwargs.get("strict", False))) if checked else fit
