"""What WEAT answers, next to the verdict: p-values as bounds and one reconciling sentence.

WEAT asks whether each class's protected words are closer to their own stereotypes than to
the other class's: the question of the model's ``associated - different`` contrast, with no
control group and with the words held fixed. The verdict reads ``associated - none`` and
``associated - human`` (stereotypes against neutral words and neutral human attributes),
which WEAT cannot see. :func:`weat_sentence` says this in one sentence per word list, and
whether WEAT's answer to its own question agrees with the model's; :func:`weat_change_sentence`
does the same for two embeddings (``compare``). :func:`format_p` prints a p-value as a bound
where the method cannot resolve it (``< 0.001``, ``< 1e-300``), never as ``0``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ALPHA", "format_p", "sidedness", "p_bound", "p_text", "weat_answer", "weat_sentence",
           "weat_change_sentence"]

#: Level at which a WEAT permutation p counts as "significant" in the reconciling sentence.
ALPHA = 0.05


def format_p(p, *, floor: float | None = None) -> str:
    """Return a p-value as printed: a bound below what the method resolves, else 3 digits.

    Parameters
    ----------
    p : float
    floor : float, optional
        The smallest p the method can give (``1 / (1 + n)`` for a Monte Carlo test of n
        random splits); a p at the floor is printed as ``<= floor`` when the floor is at
        least 0.001.

    Returns
    -------
    str
        ``"n/a"`` for a missing p, ``"< 1e-300"`` for an underflow (p of 0 from a normal
        tail), ``"< 0.001"`` below 0.001, else e.g. ``"0.0123"``.
    """
    if p is None or not np.isfinite(p):
        return "n/a"
    p = float(p)
    if p < 1e-300:
        return "< 1e-300"
    if floor is not None and floor >= 0.001 and p <= floor * (1 + 1e-9):
        return f"<= {floor:.2g}"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3g}"


def sidedness(alternative: str) -> str:
    """``"two-sided"``, ``"one-sided, greater"`` or ``"one-sided, less"``."""
    return "two-sided" if alternative == "two-sided" else f"one-sided, {alternative}"


def _floor(result) -> float | None:
    if getattr(result, "permutation", "") == "monte-carlo":
        return 1.0 / (1 + int(result.n_permutations))
    return None


def p_bound(result) -> str:
    """Return the p-value of a WEAT-like result as :func:`format_p` prints it."""
    return format_p(result.p_value, floor=_floor(result))


def p_text(result) -> str:
    """E.g. ``"p < 0.001 (two-sided)"`` for a :class:`~bayesbias.comparators.weat.WeatResult`."""
    return (f"p {_with_op(p_bound(result))} "
            f"({sidedness(result.alternative)})")


def _with_op(text: str) -> str:
    return text if text[:1] in "<>" or text == "n/a" else f"= {text}"


def weat_answer(result, alpha: float = ALPHA) -> str:
    """``"closer"``, ``"further"`` or ``"no difference shown"``: WEAT's answer at `alpha`.

    A one-sided test only answers in its own direction.
    """
    p, d = result.p_value, result.effect_size
    if not (np.isfinite(p) and p < alpha and np.isfinite(d) and d != 0):
        return "no difference shown"
    way = "closer" if d > 0 else "further"
    if (result.alternative == "greater" and d < 0) or (result.alternative == "less" and d > 0):
        return "no difference shown"
    return way


_MODEL = {"below": "closer", "above": "further", "undecided": "no difference shown",
          "equivalent": "no difference shown"}


def _pair_text(x, y, r) -> str:
    return f"{x} vs {y}: d = {r.effect_size:.2f}, {p_text(r)}"


def weat_sentence(verdict, weats, alpha: float = ALPHA) -> str:
    """One sentence: which question WEAT answers and whether its answer agrees with the model.

    Parameters
    ----------
    verdict : bayesbias.verdicts.Verdict
    weats : list of ((x, y), WeatResult)
        WEAT per pair of classes (:func:`~bayesbias.comparators.weat.weat_class_pairs`).
    alpha : float
        Level at which WEAT's permutation p counts as showing a difference.
    """
    ad, ah = verdict["associated - different"], verdict["associated - human"]
    if not weats:
        return ("WEAT needs two protected classes with stereotypes, so it was not run; the "
                "verdict rests on the control groups alone.")
    answers = [weat_answer(r, alpha) for _, r in weats]
    pairs = "; ".join(_pair_text(x, y, r) for (x, y), r in weats)
    n, closer = len(answers), answers.count("closer")
    further = answers.count("further")
    if n == 1:
        said = {"closer": "yes", "further": "the reverse (own stereotypes further)",
                "no difference shown": f"no difference at p < {alpha:g}"}[answers[0]]
    elif closer == further == 0:
        said = f"no difference at p < {alpha:g} for any of the {n} pairs"
    else:
        said = (f"yes for {closer} of {n} pairs" + (f", the reverse for {further}"
                                                    if further else "")
                + f" at p < {alpha:g}")
    model = _MODEL.get(ad.status)
    if ad.status == "no data" or model is None:
        agree = "the model has no `associated - different` contrast to compare it with"
    else:
        if set(answers) == {model}:
            verb = "agrees"
        elif model in answers:
            verb = "agrees only in part"
        else:
            verb = "disagrees"
        agree = (f"the model's `associated - different` over all words ({ad.mean:+.3f}, "
                 f"P(< 0) = {ad.prob_below_zero:.2f}: {ad.status}) {verb}"
                 + (" (WEAT's p holds these words fixed; the model's interval also counts "
                    "the variation between words)" if verb != "agrees" and
                    model == "no difference shown" else ""))
    return (f"WEAT ({pairs}) asks only whether protected words are closer to their own "
            f"class's stereotypes than to another class's (`associated - different`, no "
            f"control group) and answers {said}; {agree}; neither says whether stereotypes "
            f"are closer than neutral human attributes, the contrast that decides the "
            f"verdict (`associated - human`: {ah.status}).")


def weat_change_sentence(weats_a, weats_b, verdict_a, verdict_b,
                         labels: tuple[str, str] = ("a", "b")) -> str:
    """One sentence on how WEAT d and the verdict moved between two embeddings."""
    if not weats_a or not weats_b:
        return "WEAT was not run on both sides (it needs two classes with stereotypes)."
    db = {xy: r for xy, r in weats_b}
    moves = "; ".join(f"{x} vs {y} d {r.effect_size:.2f} -> {db[(x, y)].effect_size:.2f}"
                      for (x, y), r in weats_a if (x, y) in db)
    ad_a, ad_b = verdict_a["associated - different"], verdict_b["associated - different"]
    same = verdict_a.code == verdict_b.code
    gap = (f"`associated - different` went from {ad_a.mean:+.3f} to {ad_b.mean:+.3f} "
           f"({ad_a.status} -> {ad_b.status})")
    return (f"WEAT ({moves}, {labels[0]} -> {labels[1]}) measures only the gap between the "
            f"classes' own and other stereotypes, {gap}; the verdict, which reads the "
            f"stereotypes against neutral words and neutral human attributes, "
            + ("is unchanged" if same else
               f"changed ({verdict_a.code} -> {verdict_b.code})")
            + (": a smaller WEAT gap does not mean the stereotypes moved away from the "
               "protected words relative to the controls." if same and
               any(abs(db[xy].effect_size) < abs(r.effect_size) for xy, r in weats_a
                   if xy in db) else "."))
