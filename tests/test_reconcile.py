"""WEAT next to the verdict: p-values as bounds with their sidedness, one reconciling sentence."""

import numpy as np
import pytest

from bayesbias.comparators.weat import weat_from_similarities
from bayesbias.reconcile import format_p, p_text, weat_change_sentence, weat_sentence
from bayesbias.verdicts import verdict_from_draws


def _draws(an, ah, ad, hn, sd=0.01, n=20_000):
    rng = np.random.default_rng(0)
    return {k: rng.normal(m, sd, n) for k, m in zip(
        ("associated - none", "associated - human", "associated - different", "human - none"),
        (an, ah, ad, hn), strict=True)}


def test_p_values_print_as_bounds_never_zero():
    assert format_p(0.0) == "< 1e-300"
    assert format_p(1e-320) == "< 1e-300"
    assert format_p(2e-7) == "< 0.001"
    assert format_p(0.0123456) == "0.0123"
    assert format_p(float("nan")) == "n/a"
    # a Monte Carlo p at its floor 1 / (1 + n) is a bound
    assert format_p(1 / 100, floor=1 / 100) == "<= 0.01"
    assert format_p(1 / 100_001, floor=1 / 100_001) == "< 0.001"


def _weat(shift, alternative="two-sided", n=10, seed=0):
    rng = np.random.default_rng(seed)
    xa = rng.normal(0.3 + shift, 0.05, (n, 5))
    xb = rng.normal(0.3, 0.05, (n, 5))
    ya = rng.normal(0.3, 0.05, (n, 5))
    yb = rng.normal(0.3 + shift, 0.05, (n, 5))
    return weat_from_similarities(xa, xb, ya, yb, alternative=alternative, seed=1,
                                  exact_limit=0, n_permutations=9999)


def test_p_text_names_the_sidedness_and_the_output_has_no_zero_p():
    r = _weat(0.3)
    assert p_text(r) == "p < 0.001 (two-sided)"
    assert "p < 0.001 (two-sided)" in str(r) and "p = 0 " not in str(r)
    assert r.to_dict()["p_text"] == "p < 0.001 (two-sided)"
    assert p_text(_weat(0.3, "greater")).endswith("(one-sided, greater)")


def test_weat_sentence_names_the_question_and_whether_the_model_agrees():
    weats = [(("x", "y"), _weat(0.3))]
    undecided = verdict_from_draws("t", _draws(-0.1, -0.01, -0.01, -0.05, sd=0.03))
    text = weat_sentence(undecided, weats)
    assert "`associated - different`, no control group" in text
    assert "answers yes" in text and "disagrees" in text
    assert "`associated - human`: undecided" in text
    assert text.count(". ") == 0  # one sentence
    below = verdict_from_draws("t", _draws(-0.1, -0.05, -0.08, -0.05))
    assert "agrees" in weat_sentence(below, weats) and \
        "disagrees" not in weat_sentence(below, weats)
    none = [(("x", "y"), _weat(0.0))]
    assert " agrees" in weat_sentence(undecided, none)
    assert "not run" in weat_sentence(undecided, [])


def test_weat_change_sentence_says_the_verdict_did_not_follow_weat():
    a = verdict_from_draws("a", _draws(-0.1, -0.01, -0.08, -0.05, sd=0.03))
    b = verdict_from_draws("b", _draws(-0.1, -0.01, 0.0, -0.05, sd=0.03))
    text = weat_change_sentence([(("x", "y"), _weat(0.3))], [(("x", "y"), _weat(0.0))], a, b,
                                ("orig", "debiased"))
    assert "orig -> debiased" in text and "is unchanged" in text
    assert "a smaller WEAT gap does not mean" in text


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_one_sided_weat_answers_only_in_its_direction(alternative):
    from bayesbias.reconcile import weat_answer

    r = _weat(0.3, alternative)
    assert weat_answer(r) == ("closer" if alternative == "greater" else "no difference shown")
