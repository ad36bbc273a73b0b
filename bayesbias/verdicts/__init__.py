"""Verdicts from the control groups.

Is a stereotype closer than neutral words *and* than ordinary human attributes?

Dobrzeniecka & Urbaniak's point is that a stereotype counts as evidence of bias only when it
sits closer to its protected words than the controls do. A verdict reads four posterior
contrasts of group-level mean cosine distance (negative = the first connection is closer):

``associated - none``
    stereotypes of the word's own class against neutral words;
``associated - human``
    the same stereotypes against neutral *human* attributes (the control the paper argues
    for);
``associated - different``
    the word's own stereotypes against the stereotypes of the other classes;
``human - none``
    the control's own effect: how much closer any human attribute is than a neutral word.

Rule (:data:`RULE`): each contrast is *below* (stereotypes closer) when its interval lies
entirely below 0 (or below ``-rope`` with a region of practical equivalence), *above* when it
lies entirely above, *equivalent* when it lies inside the ROPE, otherwise *undecided*.
Stereotype-specific association needs both ``associated - none`` and ``associated - human``
below. The verdict's code (:data:`CODES`) is decided by ``associated - none`` and, when that
is below, by ``associated - human``; the other two contrasts qualify it in words.

Monte Carlo precision: the interval ends come from the Rao-Blackwellised Gaussian mixture of
:mod:`bayesbias.models.contrast_mixture` when the model allows it (``hierarchical`` and the
default ``crossed``), else from the draws. An end within :data:`PRECISION_MCSE` Monte Carlo
standard errors of its threshold cannot be put on one side of it: that contrast is
*borderline*, a fact about the posterior (its end sits on the threshold), reported with its
direction and probability ("closer than human attributes with probability 0.95, at the edge
of the 89% HDI"). A borderline deciding contrast gives a ``borderline ...`` code, which is
never counted as a finding.

The array layer (:func:`contrast_evidence`) works on NumPy draws; :func:`verdict_from_draws`
builds a :class:`Verdict`; :func:`verdict_from_fit` reads the draws of a fitted model;
:func:`verdict_changes` says in the same words which verdicts changed between two fits.

This package holds what the posterior says. This module is the rule; the other rooms:
:mod:`.words` (which protected words drive a contrast), :mod:`.precision` (fit for a
verdict, refitting where more draws could settle it), :mod:`.ensemble` (many embeddings),
:mod:`.reconcile` (WEAT beside the verdict), :mod:`.reliability` (frequentist reliability
across embeddings) and :mod:`.recoverability` (is the bias gone from the geometry). A new
verdict rule goes here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._stats import mcse_quantile
from ..config import CONNECTIONS, defaults, validate_ci_prob
from ..display import MUTED, STYLE, escape, frame_html
from ..errors import InputDataError, InvalidArgumentError
from ..intervals import posterior_interval as _interval
from ..models.contrast_mixture import contrast_mixture, mixture_end_mcse, supports
from ..models.word_summaries import mixture_interval
from ..plain import plain_number as num
from ..report.card import CARD_CSS, VerdictCard
from ..validation import validate_ci_kind

__all__ = [
    "VERDICT_CONTRASTS",
    "RULE",
    "CODES",
    "FINDINGS",
    "HEADLINE_CHARS",
    "contrast_evidence",
    "ContrastEvidence",
    "Verdict",
    "verdict_from_draws",
    "verdict_from_evidence",
    "verdict_from_fit",
    "class_contrast_clause",
    "word_drivers",  # noqa: F822 (in .words)
    "verdict_changes",
    "interval_end_mcse",
    "fit_for_verdict",  # noqa: F822 (in .precision, imported on first use)
    "PRECISION_MCSE",
    "UNSURE_MCSE",  # noqa: F822
    "MAX_VERDICT_DRAWS",
]

#: Names defined in this package's modules, imported on first use (PEP 562): the rule is
#: this module; :mod:`.precision` fits and refits a model for it, :mod:`.words` names the
#: words that drive a contrast.
_ROOMS = {"fit_for_verdict": ".precision", "UNSURE_MCSE": ".precision",
          "_needs_draws": ".precision",  # kept for one release (benchmarks import it)
          "word_drivers": ".words", "drivers_sentence": ".words"}


def __getattr__(name: str):
    if name in _ROOMS:
        from importlib import import_module

        value = getattr(import_module(_ROOMS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: An interval end closer than this many Monte Carlo standard errors to its threshold
#: (0 or ±ROPE) cannot be put on one side of it: the contrast is "borderline" (3: a 0.3%
#: chance per end under a Normal MCSE that a decided end is on the other side).
PRECISION_MCSE = 3.0
#: Most draws per chain :func:`fit_for_verdict` takes to settle a verdict (4x the default).
MAX_VERDICT_DRAWS = 4_000
#: Most characters of :attr:`Verdict.headline`.
HEADLINE_CHARS = 140

#: The contrasts a verdict reads, as (minuend, subtrahend) connections.
VERDICT_CONTRASTS = (("associated", "none"), ("associated", "human"),
                     ("associated", "different"), ("human", "none"))

#: The decision rule, in the words the report prints.
RULE = ("Rule: a contrast counts as 'closer' when its whole {iv} lies below 0 (below -ROPE when "
        "a region of practical equivalence is given), 'further' when it lies above 0 (above "
        "+ROPE), 'practically equal' when it lies inside the ROPE, 'borderline' when an end "
        "of its interval lies within 3 Monte Carlo standard errors of its threshold and "
        "crossing it would change the contrast's status (the posterior puts the end on the "
        "threshold; its direction and probability are reported), and 'undecided' otherwise. "
        "The code is decided by `associated - none` and, when that is closer, by "
        "`associated - human`. `associated - none` first: borderline = 'borderline vs "
        "neutral' (whatever `associated - human` says), further = 'further than neutral', "
        "practically equal = 'practically none', undecided = 'not closer than neutral' (the "
        "data cannot tell; not evidence of no association). When it is closer, `associated - "
        "human` closer = 'stereotype-specific' (stereotypes closer than neutral words AND "
        "than neutral human attributes: evidence of stereotype-specific association, the "
        "only finding), further = 'human closer than stereotypes', "
        "borderline = 'borderline vs human', undecided or practically equal = 'no closer "
        "than human' (not evidence that stereotypes are not closer). A missing control group "
        "= 'no data'. Borderline codes are never counted as findings. `associated - "
        "different` and `human - none` qualify the code in words and never change it: "
        "`associated - different` closer = the association is specific to the word's own "
        "class, said in the headline whenever it is credible.")

#: Every verdict code (stable strings for programs) and what it means.
CODES = {
    "stereotype-specific": "`associated - none` and `associated - human` both below: "
                           "stereotypes are closer than neutral words AND than human "
                           "attributes (the only finding of stereotype-specific bias)",
    "human closer than stereotypes": "`associated - none` below, `associated - human` above: "
                                     "human attributes are closer still",
    "no closer than human": "`associated - none` below, `associated - human` undecided or "
                            "inside the ROPE",
    "borderline vs human": "`associated - none` below, `associated - human` borderline: an "
                           "end of its interval sits on its threshold (not a finding)",
    "borderline vs neutral": "`associated - none` borderline: an end of its interval sits on "
                             "its threshold (not a finding)",
    "further than neutral": "`associated - none` above",
    "practically none": "`associated - none` inside the ROPE",
    "not closer than neutral": "`associated - none` undecided",
    "no data": "a control group has no rows (`associated - none` or `associated - human` "
               "cannot be estimated)",
}

#: Codes that are findings of stereotype-specific association (borderline never is).
FINDINGS = ("stereotype-specific",)

#: Status codes of one contrast.
STATUSES = ("below", "above", "equivalent", "undecided", "borderline", "no data")


def contrast_evidence(draws, ci_prob: float | None = None, ci_kind: str | None = None,
                      rope: float | None = None) -> dict[str, np.ndarray]:
    """Posterior evidence about contrasts from their draws (NumPy layer).

    Parameters
    ----------
    draws : array_like, shape (..., n_draws)
        Draws of one or more contrasts; chains flattened into the last axis.
    ci_prob, ci_kind : optional
        Interval probability and kind (``"hdi"`` or ``"eti"``); package defaults.
    rope : float, optional
        Half-width of a region of practical equivalence around 0.

    Returns
    -------
    dict of numpy.ndarray, each of shape ``draws.shape[:-1]``
        ``mean``, ``lower``, ``upper``, ``prob_below_zero`` (share of draws < 0),
        ``share_in_rope`` (share with ``|d| < rope``; NaN without a ROPE) and ``status``
        (``"below"``, ``"above"``, ``"equivalent"`` or ``"undecided"``).
    """
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    ci_kind = defaults.ci_kind if ci_kind is None else ci_kind
    ci_kind = validate_ci_kind(ci_kind)
    if rope is not None and not (np.isfinite(rope) and rope >= 0):
        raise InvalidArgumentError(f"rope must be a finite number >= 0, got {rope!r}")
    d = np.asarray(draws, dtype=float)
    if d.ndim == 0 or d.shape[-1] < 2:
        raise InputDataError("contrast_evidence needs at least two draws on the last axis")
    ci = _interval(d, ci_prob, ci_kind)
    lo, hi = ci[..., 0], ci[..., 1]
    r = 0.0 if rope is None else float(rope)
    status = _status(lo, hi, r)
    return {"mean": d.mean(axis=-1), "lower": lo, "upper": hi,
            "prob_below_zero": (d < 0).mean(axis=-1),
            "share_in_rope": (np.abs(d) < r).mean(axis=-1) if rope is not None
            else np.full(lo.shape, np.nan),
            "status": status}


def _status(lo, hi, r: float) -> np.ndarray:
    """``"below"``, ``"above"``, ``"equivalent"`` or ``"undecided"`` of intervals (lo, hi)."""
    status = np.full(np.shape(lo), "undecided", dtype=object)
    status[hi < -r] = "below"
    status[lo > r] = "above"
    if r > 0:
        status[(lo >= -r) & (hi <= r)] = "equivalent"
    return status


@dataclass(frozen=True)
class ContrastEvidence:
    """One contrast of a verdict: posterior mean, interval, P(< 0), ROPE share, status."""

    contrast: str
    mean: float
    lower: float
    upper: float
    prob_below_zero: float
    share_in_rope: float | None
    status: str
    #: Monte Carlo standard errors of the lower and upper interval ends (NaN if unknown).
    mcse_lower: float = np.nan
    mcse_upper: float = np.nan
    #: Whether this contrast decided the verdict's code.
    decisive: bool = False
    #: ``"mixture"`` (Rao-Blackwellised conditional Gaussian mixture) or ``"draws"``.
    estimator: str = "draws"
    #: Of a borderline contrast: the end on its threshold, ``"lower"`` or ``"upper"``.
    edge: str | None = None

    @property
    def prob_below(self) -> float:
        """Posterior probability that the contrast is below 0 (same as ``prob_below_zero``)."""
        return self.prob_below_zero

    def _words(self) -> tuple[str, str]:
        a, b = self.contrast.split(" - ")
        what = {"associated": "stereotypes", "human": "human attributes"}.get(a, a)
        other = {"none": "neutral words", "human": "neutral human attributes",
                 "different": "other classes' stereotypes"}.get(b, b)
        return what, other

    def leaning(self) -> tuple[str, float]:
        """Of a borderline contrast: ``("closer" | "further", its posterior probability)``.

        The direction the end on the threshold asks about: an upper end on 0 asks whether the
        contrast is below 0 (closer), a lower end whether it is above 0 (further).
        """
        p = float(self.prob_below_zero)
        if self.edge == "lower" or (self.edge is None and p < 0.5):
            return "further", 1.0 - p
        return "closer", p

    def borderline_words(self, iv: str = "interval") -> str:
        """Say a borderline contrast in plain words: direction, probability, edge of `iv`."""
        what, other = self._words()
        way, p = self.leaning()
        return f"{what} are {way} than {other} with probability {p:.2f}, at the edge of the {iv}"

    def phrase(self, iv: str = "interval") -> str:
        """How the first connection sits relative to the second, in words."""
        what, other = self._words()
        if self.status == "undecided" and (self.upper < 0 or self.lower > 0):
            way = "closer" if self.upper < 0 else "further"
            return (f"{what} are {way} than {other}, but not clearly by more than the ROPE")
        if self.status == "borderline":
            return "borderline: " + self.borderline_words(iv)
        return {"below": f"{what} are closer than {other}",
                "above": f"{what} are further than {other}",
                "equivalent": f"{what} are practically as close as {other}",
                "undecided": f"{what} are not credibly closer or further than {other} "
                             "(undecided)",
                "no data": f"no data for {what} vs {other}"}[self.status]


def _fmt(x: float) -> str:
    return f"{x:+.3f}"


@dataclass
class Verdict:
    """The verdict for one word list, built from the control-group contrasts.

    Attributes
    ----------
    name : str
        The word list (or table).
    contrasts : list of ContrastEvidence
        ``associated - none``, ``associated - human``, ``associated - different``,
        ``human - none`` (:data:`VERDICT_CONTRASTS`).
    ci_prob, ci_kind : float, str
        The interval of every contrast.
    rope : float or None
        Half-width of the region of practical equivalence.
    headline : str
        The finding in one sentence of at most :data:`HEADLINE_CHARS` characters.
    details : list of str
        The verdict at length, then one sentence per contrast (interval, P(< 0), Monte Carlo
        errors), then how the interval ends were estimated.
    code : str
        Machine-readable verdict, one of :data:`CODES` (stable strings).
    notes : list of str
        Qualifications (`human - none` against `associated - none`), kept apart from
        `details`.
    """

    name: str
    contrasts: list[ContrastEvidence]
    ci_prob: float
    ci_kind: str
    rope: float | None
    headline: str
    details: list[str]
    code: str
    notes: list[str] = field(default_factory=list)

    @property
    def interval_label(self) -> str:
        """E.g. ``"89% HDI"``."""
        return f"{self.ci_prob:.0%} {self.ci_kind.upper()}"

    @property
    def rule(self) -> str:
        """The decision rule used, in words."""
        return RULE.format(iv=self.interval_label) + (
            f" ROPE = ±{self.rope:g}." if self.rope is not None else " No ROPE.")

    @property
    def finding(self) -> bool:
        """Whether the verdict is a finding of stereotype-specific association."""
        return self.code in FINDINGS

    @property
    def borderline(self) -> bool:
        """Whether a deciding contrast is borderline (the code is a ``borderline`` one)."""
        return self.code.startswith("borderline")

    @property
    def explanation(self) -> str:
        """The verdict at length (the first of :attr:`details`)."""
        return self.details[0] if self.details else self.headline

    @property
    def label(self) -> str:
        """The verdict in a few words, for a table cell.

        Unlike :attr:`code` (kept stable for programs), an undecided contrast never reads as
        evidence of absence: ``"no closer than human"`` becomes ``"undecided vs human"``
        when `associated - human` is undecided, ``"not closer than neutral"``
        ``"undecided vs neutral"``; a borderline code names its direction and probability.
        """
        if self.code == "no closer than human":
            try:
                undecided = self["associated - human"].status == "undecided"
            except KeyError:
                undecided = True
            return ("undecided vs human (not shown closer than human attributes)" if undecided
                    else "as close as human (inside the ROPE)")
        if self.code == "not closer than neutral":
            return "undecided vs neutral (not shown closer than neutral words)"
        if self.code in ("borderline vs human", "borderline vs neutral"):
            c = self["associated - human" if self.code.endswith("human") else
                     "associated - none"]
            way, p = c.leaning()
            return f"{self.code} ({way}, P = {p:.2f})"
        return self.code

    def __getitem__(self, contrast: str) -> ContrastEvidence:
        for c in self.contrasts:
            if c.contrast == contrast:
                return c
        raise KeyError(contrast)

    def to_dict(self) -> dict:
        """Plain JSON data (no NaN: missing values are ``None``).

        ``headline`` (one short sentence) and ``details`` (the rest) apart; per contrast its
        ``status``, ``lower``, ``upper``, ``prob_below`` (= ``prob_below_zero``, posterior
        P(contrast < 0)) and ``decisive`` (it decided the code).
        """
        return {"name": self.name, "code": self.code, "headline": self.headline,
                "label": self.label, "finding": self.finding,
                "details": list(self.details), "notes": list(self.notes), "rule": self.rule,
                "ci_prob": float(self.ci_prob), "ci_kind": self.ci_kind,
                "rope": num(self.rope),
                "contrasts": [{"contrast": c.contrast, "mean": num(c.mean),
                               "lower": num(c.lower), "upper": num(c.upper),
                               "prob_below": num(c.prob_below_zero),
                               "prob_below_zero": num(c.prob_below_zero),
                               "share_in_rope": num(c.share_in_rope), "status": c.status,
                               "decisive": bool(c.decisive),
                               "mcse_lower": num(c.mcse_lower),
                               "mcse_upper": num(c.mcse_upper),
                               "estimator": c.estimator}
                              for c in self.contrasts]}

    def to_frame(self) -> pd.DataFrame:
        """One row per contrast (``contrast, mean, lower, upper, prob_below_zero, ...``)."""
        frame = pd.DataFrame(self.to_dict()["contrasts"])
        frame = frame.drop(columns=["mcse_lower", "mcse_upper", "prob_below", "estimator"])
        if self.rope is None:
            frame = frame.drop(columns="share_in_rope")
        frame.insert(0, "word list", self.name)
        frame.attrs.update(ci_prob=self.ci_prob, ci_kind=self.ci_kind,
                           interval=self.interval_label)
        return frame

    def __str__(self) -> str:
        return "\n".join([f"verdict for {self.name}: {self.headline}",
                          *(f"  - {d}" for d in self.details),
                          *(f"  note: {n}" for n in self.notes)])

    def _repr_html_(self) -> str:
        return _verdict_html(self)

    def __repr__(self) -> str:
        return _verdict_repr(self)


def _detail(c: ContrastEvidence, iv: str) -> str:
    if c.status == "no data":
        return f"`{c.contrast}`: no data on one side; not estimated from the prior alone"
    rope = "" if c.share_in_rope is None or not np.isfinite(c.share_in_rope) else \
        f", {c.share_in_rope:.0%} inside the ROPE"
    if np.isfinite(c.mcse_lower) and np.isfinite(c.mcse_upper):
        rope += f"; Monte Carlo errors of the ends {c.mcse_lower:.1e}, {c.mcse_upper:.1e}"
    return (f"`{c.contrast}` = {_fmt(c.mean)} ({iv} {_fmt(c.lower)} to {_fmt(c.upper)}; "
            f"P(< 0) = {c.prob_below_zero:.2f}{rope}): {c.phrase(iv)}")


def _vs_human(ah) -> str:
    """Return an undecided `associated - human` in the explanation's words."""
    if ah.upper < 0:
        return ("and closer than neutral human attributes, but not clearly by more than the "
                "ROPE (undecided)")
    return "but not credibly closer or further than neutral human attributes (undecided)"


def class_contrast_clause(code: str, ad: ContrastEvidence | None, short: bool = False) -> str:
    """Return the clause a headline adds for a credible class contrast (issue 50), or ``""``.

    When the control-aware `code` is not ``"stereotype-specific"`` but `associated -
    different` (`ad`) is credibly below or above 0, the headline says so in the same
    sentence: the stereotypes of a word's own class are closer (or further) than the other
    classes' stereotypes, a class contrast that does not rest on the control groups. Used
    by single-embedding verdicts and by the embedding-level verdict. `short`: the compact
    form, for a headline near :data:`HEADLINE_CHARS`.

    Examples
    --------
    >>> class_contrast_clause("no closer than human", ad)  # ad.status == "below"
    "; own-class stereotypes are closer than other classes'"
    """
    if ad is None or code == "stereotype-specific" or ad.status not in ("below", "above"):
        return ""
    way = "closer" if ad.status == "below" else "further"
    if short:
        return f" (own-class stereotypes {way} than others')"
    return f"; own-class stereotypes are {way} than other classes'"


def _short(code: str, an, ah, ad, iv: str) -> str:
    """Return the headline's main clause for `code` (without the class clause)."""
    if code == "stereotype-specific":
        head = ("Stereotypes are closer than neutral words and than human attributes: "
                "stereotype-specific association")
        if ad.status == "below":
            head += ", class-specific too"
        return head
    if code == "human closer than stereotypes":
        return ("No stereotype-specific association: human attributes are closer still than "
                "stereotypes")
    if code == "no closer than human":
        if ah.status == "equivalent":
            return ("Stereotypes are closer than neutral words but practically as close as "
                    "human attributes")
        if ah.upper < 0:
            return ("Stereotypes are closer than neutral words and human attributes, not by "
                    "more than the ROPE")
        return ("Stereotypes are closer than neutral words, not credibly closer than human "
                "attributes")
    if code == "borderline vs human":
        way, p = ah.leaning()
        if way == "closer":
            return (f"Borderline: stereotypes are closer than neutral words, and than human "
                    f"attributes with probability {p:.2f}, at the edge of the {iv}")
        return (f"Borderline: stereotypes are closer than neutral words; human attributes "
                f"closer still with probability {p:.2f}, at the edge of the {iv}")
    if code == "borderline vs neutral":
        way, p = an.leaning()
        return (f"Borderline: stereotypes are {way} than neutral words with probability "
                f"{p:.2f}, at the edge of the {iv}")
    if code == "further than neutral":
        return "Stereotypes are further from the protected words than neutral words"
    if code == "practically none":
        return ("Stereotypes are practically as close as neutral words (inside the ROPE): no "
                "association of practical size")
    if code == "not closer than neutral":
        return ("No evidence of association: stereotypes are not credibly closer or further "
                "than neutral words")
    missing = " and ".join(c.contrast for c in (an, ah) if c.status == "no data")
    return f"No verdict: no rows for {missing} (a control group is missing)"


def _code(an, ah) -> str:
    """Return the verdict's code from the two deciding contrasts (:data:`RULE`)."""
    if an.status == "no data" or ah.status == "no data":
        return "no data"
    if an.status == "borderline":
        return "borderline vs neutral"
    if an.status == "below":
        return {"below": "stereotype-specific", "above": "human closer than stereotypes",
                "borderline": "borderline vs human"}.get(ah.status, "no closer than human")
    return {"above": "further than neutral", "equivalent": "practically none"}.get(
        an.status, "not closer than neutral")


def _headline(an, ah, ad, hn, iv: str = "interval") -> tuple[str, str, str, list[str]]:
    """Return (headline, explanation, code, notes) of the four contrasts."""
    notes = []
    code = _code(an, ah)
    head = _short(code, an, ah, ad, iv)
    clause = class_contrast_clause(code, ad)
    if len(head) + len(clause) + 1 > HEADLINE_CHARS:
        clause = class_contrast_clause(code, ad, short=True)
    head = head + clause + "."
    if len(head) > HEADLINE_CHARS:  # never on the shipped words; a guard for the contract
        head = head[:HEADLINE_CHARS - 1].rstrip() + "…"
    if code == "no data":
        missing = " and ".join(c.contrast for c in (an, ah) if c.status == "no data")
        long = ("no verdict: the table lacks rows for " + missing
                + " (a control group is missing)")
    elif code == "stereotype-specific":
        long = ("evidence of stereotype-specific association: stereotypes are closer to the "
                "protected words than neutral words AND than neutral human attributes")
        if ad.status == "below":
            long += ", and closer than the other classes' stereotypes (class-specific)"
        elif ad.status == "borderline":
            long += (", and at the edge of being class-specific: "
                     + ad.borderline_words(iv))
        elif ad.status == "no data":
            long += " (no other class to compare with)"
        else:
            long += (", but not credibly closer than the other classes' stereotypes (the "
                     "association is not specific to the word's own class)")
    elif code == "human closer than stereotypes":
        long = ("no stereotype-specific association: stereotypes are closer than neutral "
                "words, but ordinary human attributes are closer still, so the gap to neutral "
                "words is a human-attribute effect, not a stereotype effect")
    elif code == "no closer than human":
        long = (f"stereotypes are closer than neutral words, {_vs_human(ah)}: the data "
                "do not show stereotype-specific association" if ah.status == "undecided" else
                "stereotypes are closer than neutral words, but practically as close as "
                "neutral human attributes: the data do not show stereotype-specific "
                "association")
    elif code in ("borderline vs human", "borderline vs neutral"):
        c = ah if code == "borderline vs human" else an
        end = c.upper if c.edge == "upper" else c.lower
        m = c.mcse_upper if c.edge == "upper" else c.mcse_lower
        long = (("stereotypes are closer than neutral words; " if c is ah else "")
                + f"borderline: {c.borderline_words(iv)}. The {c.edge} end of its interval "
                f"({end:+.4f}) lies within {PRECISION_MCSE:g} Monte Carlo standard errors "
                f"({m:.1e}) of its threshold: the posterior puts that end on the threshold, "
                "so this is not counted as a finding either way")
    elif code == "further than neutral":
        long = "stereotypes are further from the protected words than neutral words"
    elif code == "practically none":
        long = ("stereotypes are practically as close as neutral words (inside the ROPE): no "
                "association of practical size")
    else:
        long = ("no evidence of association: stereotypes are not credibly closer or further "
                "than neutral words (undecided)")
    clause = class_contrast_clause(code, ad)
    if clause:
        long += clause + f" (`associated - different` {_fmt(ad.mean)})"
    if ad.status == "borderline" and code != "stereotype-specific":
        notes.append(f"`{ad.contrast}` is borderline: {ad.borderline_words(iv)}")
    if hn.status == "borderline":
        notes.append(f"`{hn.contrast}` is borderline: {hn.borderline_words(iv)}")
    elif hn.status == "below" and hn.mean < an.mean:
        notes.append(f"the control's own effect `human - none` ({_fmt(hn.mean)}) is larger "
                     f"than `associated - none` ({_fmt(an.mean)}): ordinary human attributes "
                     "are closer to these protected words than their stereotypes are")
    elif hn.status == "below":
        notes.append(f"human attributes are also closer than neutral words (`human - none` "
                     f"{_fmt(hn.mean)}), so `associated - none` alone overstates the bias")
    return head, long, code, notes


def _borderline(status: str, lo: float, hi: float, m_lo: float, m_hi: float,
                r: float) -> tuple[str, str | None]:
    """Return (status, edge), "borderline" where an end could change the status.

    Borderline: an end within :data:`PRECISION_MCSE` Monte Carlo errors of a threshold whose
    crossing would change the status; `edge` names that end.
    """
    if status == "no data":
        return status, None
    k = PRECISION_MCSE
    best = None
    for edge, end, m in (("lower", lo, m_lo), ("upper", hi, m_hi)):
        if not np.isfinite(m) or m <= 0:
            continue
        for shift in (-k * m, k * m):
            a, b = (end + shift, hi) if edge == "lower" else (lo, end + shift)
            if str(_status(np.array([a]), np.array([b]), r)[0]) != status:
                gap = min(abs(end - t) for t in {-r, r})
                if best is None or gap < best[0]:
                    best = (gap, edge)
    return ("borderline", best[1]) if best is not None else (status, None)


def verdict_from_evidence(name: str, items: list[ContrastEvidence], ci_prob: float,
                          ci_kind: str, rope: float | None = None) -> Verdict:
    """Build a :class:`Verdict` from the four contrasts' evidence (statuses already set).

    `items` in the order of :data:`VERDICT_CONTRASTS`.
    """
    from dataclasses import replace

    iv = f"{ci_prob:.0%} {ci_kind.upper()}"
    an, ah, ad, hn = items
    head, long, code, notes = _headline(an, ah, ad, hn, iv)
    deciding = {"associated - none"} if code == "no data" or an.status != "below" else \
        {"associated - none", "associated - human"}
    if code == "no data":
        deciding = {c.contrast for c in (an, ah) if c.status == "no data"}
    items = [replace(c, decisive=c.contrast in deciding) for c in items]
    how = _estimator_detail(items, iv)
    return Verdict(name=name, contrasts=items, ci_prob=ci_prob, ci_kind=ci_kind, rope=rope,
                   headline=head, details=[long] + [_detail(c, iv) for c in items]
                   + ([how] if how else []), code=code, notes=notes)


def _estimator_detail(items, iv: str) -> str:
    m = [max(c.mcse_lower, c.mcse_upper) for c in items
         if np.isfinite(c.mcse_lower) and np.isfinite(c.mcse_upper)]
    if not m:
        return ""
    kind = {c.estimator for c in items if c.status != "no data"}
    how = ("the conditional Gaussian mixture of the group means given the scale parameters "
           "(Rao-Blackwellised)" if kind == {"mixture"} else "the posterior draws")
    return (f"{iv} ends from {how}; largest Monte Carlo standard error of an end "
            f"{max(m):.1e}; an end within {PRECISION_MCSE:g} of them from its threshold "
            "is borderline")


def _evidence_items(ev: dict, labels, has_data, mcse, rope, estimator="draws"):
    r = 0.0 if rope is None else float(rope)
    items = []
    for i, lab in enumerate(labels):
        ok = bool(has_data.get(lab, True))
        m_lo, m_hi = mcse.get(lab, (np.nan, np.nan))
        status, edge = str(ev["status"][i]) if ok else "no data", None
        if ok:
            status, edge = _borderline(status, float(ev["lower"][i]), float(ev["upper"][i]),
                                       float(m_lo), float(m_hi), r)
        items.append(ContrastEvidence(
            contrast=lab, mean=float(ev["mean"][i]) if ok else np.nan,
            lower=float(ev["lower"][i]) if ok else np.nan,
            upper=float(ev["upper"][i]) if ok else np.nan,
            prob_below_zero=float(ev["prob_below_zero"][i]) if ok else np.nan,
            share_in_rope=(float(ev["share_in_rope"][i]) if ok else np.nan)
            if rope is not None else None,
            status=status, mcse_lower=float(m_lo), mcse_upper=float(m_hi),
            estimator=estimator, edge=edge))
    return items


def verdict_from_draws(name: str, draws: dict, ci_prob: float | None = None,
                       ci_kind: str | None = None, rope: float | None = None,
                       has_data: dict | None = None, mcse: dict | None = None) -> Verdict:
    """Build a :class:`Verdict` from draws of the four contrasts.

    Parameters
    ----------
    draws : dict
        ``{"associated - none": array, ...}`` for the labels of :data:`VERDICT_CONTRASTS`;
        each a flat array of posterior draws.
    has_data : dict, optional
        ``{label: bool}``; False marks a contrast with no rows on one side ("no data", not
        read from the prior).
    mcse : dict, optional
        ``{label: (mcse of lower end, mcse of upper end)}``; a contrast with an end within
        :data:`PRECISION_MCSE` of them from its threshold, where crossing it would change
        the contrast's status, is ``"borderline"``.
    """
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    ci_kind = defaults.ci_kind if ci_kind is None else ci_kind
    labels = [f"{a} - {b}" for a, b in VERDICT_CONTRASTS]
    missing = [lab for lab in labels if lab not in draws]
    if missing:
        raise InputDataError(f"verdict needs draws of {', '.join(missing)}")
    stacked = np.stack([np.ravel(np.asarray(draws[lab], dtype=float)) for lab in labels])
    ev = contrast_evidence(stacked, ci_prob, ci_kind, rope)
    items = _evidence_items(ev, labels, has_data or {}, mcse or {}, rope)
    return verdict_from_evidence(name, items, ci_prob, ci_kind, rope)


def _rows_per_connection(fit) -> dict[str, int]:
    n = np.asarray(fit.cells.n).sum(axis=0)
    return {c: int(n[i]) for i, c in enumerate(CONNECTIONS)}


def mixture_evidence(fit, ci_prob: float, ci_kind: str, rope: float | None = None,
                     contrasts=VERDICT_CONTRASTS) -> tuple[dict, dict]:
    """Evidence about `contrasts` from the Rao-Blackwellised mixture of `fit`.

    Returns ``(ev, mcse)`` as :func:`contrast_evidence` and ``{label: (lower, upper)}``
    Monte Carlo standard errors (:mod:`bayesbias.models.contrast_mixture`).
    """
    from scipy.special import ndtr

    m, sd = contrast_mixture(fit, contrasts)  # (chain, draw, contrast)
    sd = np.maximum(sd, 1e-300)
    flat_m = m.reshape(-1, m.shape[-1])
    flat_s = sd.reshape(-1, sd.shape[-1])
    ci = mixture_interval(flat_m, flat_s, ci_prob, ci_kind)
    lo, hi = ci[..., 0], ci[..., 1]
    r = 0.0 if rope is None else float(rope)
    ev = {"mean": flat_m.mean(axis=0), "lower": lo, "upper": hi,
          "prob_below_zero": ndtr(-flat_m / flat_s).mean(axis=0),
          "share_in_rope": (ndtr((r - flat_m) / flat_s) - ndtr((-r - flat_m) / flat_s)
                            ).mean(axis=0) if rope is not None else np.full(lo.shape, np.nan),
          "status": _status(lo, hi, r)}
    mcse = {}
    for i, (a, b) in enumerate(contrasts):
        mcse[f"{a} - {b}"] = mixture_end_mcse(m[..., i], sd[..., i], (lo[i], hi[i]),
                                              ci_prob, ci_kind)
    return ev, mcse


def verdict_from_fit(fit, name: str = "", ci_prob: float | None = None,
                     ci_kind: str | None = None, rope: float | None = None) -> Verdict:
    """Return the :class:`Verdict` of a fitted model (:class:`~bayesbias.models.Fit`).

    A contrast whose connections lack rows in the table is marked "no data" rather than
    read from the prior. Interval ends come from the Rao-Blackwellised mixture when the
    model allows it (:func:`bayesbias.models.contrast_mixture.supports`), else from the
    draws (with :func:`interval_end_mcse`).
    """
    rows = _rows_per_connection(fit)
    ci_prob = validate_ci_prob(defaults.ci_prob if ci_prob is None else ci_prob)
    ci_kind = validate_ci_kind(defaults.ci_kind if ci_kind is None else ci_kind)
    labels = [f"{a} - {b}" for a, b in VERDICT_CONTRASTS]
    has = {f"{a} - {b}": rows[a] > 0 and rows[b] > 0 for a, b in VERDICT_CONTRASTS}
    if supports(fit):
        ev, mcse = mixture_evidence(fit, ci_prob, ci_kind, rope)
        items = _evidence_items(ev, labels, has, mcse, rope, estimator="mixture")
        return verdict_from_evidence(name, items, ci_prob, ci_kind, rope)
    da = fit.contrast_draws(VERDICT_CONTRASTS)
    draws, mcse = {}, {}
    for lab in labels:
        cd = da.sel(contrast=lab).transpose("chain", "draw").values
        draws[lab] = np.ravel(cd)
        ends = _interval(draws[lab], ci_prob, ci_kind)
        mcse[lab] = interval_end_mcse(cd, ends, ci_prob, ci_kind)
    return verdict_from_draws(name, draws, ci_prob, ci_kind, rope, has, mcse)


def interval_end_mcse(draws: np.ndarray, ends, ci_prob: float | None = None,
                      ci_kind: str | None = None) -> tuple[float, ...]:
    """Monte Carlo standard error of each interval end, from draws shaped (chain, draw).

    An end e is read as the quantile at p = P(draw <= e); its MCSE is ArviZ's quantile
    MCSE at p (from the effective sample size of the indicator ``draw <= e``). That is the
    MCSE of an equal-tailed end. An HDI end (``ci_kind="hdi"`` with `ci_prob`) moves more:
    the shortest interval's position converges at rate n^(-1/3), not n^(-1/2). Its MCSE is
    the larger of the quantile MCSE and the spread of the HDI ends of batches (a quarter of
    each chain from 400 draws per chain, else halves), scaled to all draws by that rate
    (religion/Reddit, `associated - none`, 8 seeds at 4 x 1,000 draws: upper end sd 0.0046
    over seeds, quantile MCSE 0.0029; on a skewed posterior the batch estimate is 0.9-1.3x
    the spread over seeds, with a coefficient of variation of 0.19).
    """
    d = np.asarray(draws, dtype=float)
    if d.ndim != 2 or d.shape[1] < 4:
        return tuple(np.nan for _ in ends)
    flat = d.ravel()
    out = []
    for e in ends:
        p = float(np.clip(np.mean(flat <= e), 1.0 / flat.size, 1 - 1.0 / flat.size))
        out.append(mcse_quantile(d, p))
    if ci_kind == "hdi" and ci_prob is not None and d.shape[1] >= 40 and \
            np.isfinite(flat).all():
        k = 4 if d.shape[1] >= 400 else 2  # batches per chain, of >= 20 draws each
        size = d.shape[1] // k
        parts = d[:, :k * size].reshape(k * d.shape[0], size)
        batch = np.asarray([_interval(x, ci_prob, "hdi") for x in parts], dtype=float)
        scale = (size / flat.size) ** (1.0 / 3.0)
        spread = batch.std(axis=0, ddof=1) * scale
        out = [max(q, float(b)) for q, b in zip(out, spread, strict=True)]
    return tuple(out)


def verdict_changes(a: Verdict, b: Verdict, labels: tuple[str, str] = ("a", "b")) -> list[str]:
    """Sentences saying which parts of the verdict changed from `a` to `b` (same words)."""
    out = []
    if a.code != b.code:
        out.append(f"verdict changed: {labels[0]}: {a.headline}; {labels[1]}: {b.headline}")
    else:
        out.append(f"verdict unchanged ({a.code}): {b.headline}")
    for ca in a.contrasts:
        cb = b[ca.contrast]
        if ca.status != cb.status:
            out.append(f"`{ca.contrast}` changed: {labels[0]}: {ca.phrase()} "
                       f"({_fmt(ca.mean)}, P(< 0) = {ca.prob_below_zero:.2f}); {labels[1]}: "
                       f"{cb.phrase()} ({_fmt(cb.mean)}, P(< 0) = {cb.prob_below_zero:.2f})")
    if len(out) == 1:
        out.append("no contrast changed status (closer / further / undecided)")
    return out


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _verdict_html(v) -> str:
    """HTML card of a :class:`~bayesbias.verdicts.Verdict`: the report's verdict card.

    Headline, badge and the figure of the four contrasts (:mod:`bayesbias.report.card`),
    then the contrast table and the rule.
    """
    frame = v.to_frame().drop(columns="word list")
    return "\n".join([f"<style>{CARD_CSS}</style>",
                      f'<div class="bayesbias-result" style="{STYLE}">',
                      VerdictCard.from_verdict(v).html(),
                      frame_html(frame, f"contrasts ({v.interval_label})"),
                      f'<div style="{MUTED}; font-size: 12px">{escape(v.rule)}</div>', "</div>"])


def _verdict_repr(v) -> str:
    """Short repr of a Verdict."""
    return f"<Verdict {v.name!r}: {v.code} ({v.interval_label})>"
