"""What the embedding-level summary says: the class-contrast clause, reliability readings."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bayesbias.ensemble import ENSEMBLE_CONTRASTS, EnsembleSummary, class_clause
from bayesbias.reliability import Reliability, cronbach_alpha, read_alpha, read_icc
from bayesbias.verdicts import contrast_evidence


def _evidence(lower, upper, rope=None):
    """Evidence (status by the verdicts rule) of Normal draws, 90% ETI about (lower, upper)."""
    mid, sd = (lower + upper) / 2, (upper - lower) / (2 * 1.6449)
    draws = mid + sd * np.random.default_rng(0).standard_normal(20_000)
    ev = contrast_evidence(draws[None, :], 0.9, "eti", rope)
    first = {k: np.asarray(v).reshape(-1)[0] for k, v in ev.items()}
    return SimpleNamespace(**{k: v if isinstance(v, str) else float(v) for k, v in first.items()})


def _verdict(code, lower, upper, rope=None):
    ev = _evidence(lower, upper, rope)
    other = SimpleNamespace(mean=0.0, lower=-0.1, upper=0.1)

    def get(c):
        if c not in ENSEMBLE_CONTRASTS:
            raise KeyError(c)
        return ev if c == "associated - different" else other

    return SimpleNamespace(code=code, rope=rope, interval_label="89% HDI", label=code, ci_prob=0.89,
                           ci_kind="hdi", to_dict=lambda: {"code": code},
                           __getitem__=get, get=get)


class _V(SimpleNamespace):
    def __getitem__(self, c):
        return self.get(c)


def _v(*a, **k):
    return _V(**vars(_verdict(*a, **k)))


@pytest.mark.parametrize("code, lo, hi, rope, expect", [
    ("undecided at this precision", -0.116, -0.031, None, "closer"),
    ("no closer than human", -0.116, -0.031, None, "closer"),
    ("no closer than human", 0.02, 0.05, None, "further"),
    ("no closer than human", -0.05, 0.01, None, ""),
    ("no closer than human", -0.05, -0.01, 0.02, ""),  # inside the ROPE's reach
    ("stereotype-specific", -0.116, -0.031, None, ""),  # the code already says it
])
def test_class_contrast_clause(code, lo, hi, rope, expect):
    """The ensemble's clause is the verdicts' rule (one function) plus the numbers."""
    v = _v(code, lo, hi, rope)
    clause = class_clause(v)
    if not expect:
        assert clause == ""
    else:
        ev = v["associated - different"]
        assert expect in clause and "`associated - different`" in clause
        assert f"{ev.lower:+.3f}" in clause and f"{ev.upper:+.3f}" in clause


def _summary(verdict, per=None, k=6):
    per = per if per is not None else pd.DataFrame(columns=["embedding", "verdict"])
    var = pd.DataFrame({"quantity": list(ENSEMBLE_CONTRASTS), "embedding_share": 0.5,
                        "lower": 0.2, "upper": 0.8})
    rel = Reliability(test_retest=0.19, inter_rater=0.8, internal=-1.71, embeddings=k,
                      words=10)
    return EnsembleSummary(verdict=verdict, per_embedding=per, variance=var, reliability=rel,
                           weat=pd.DataFrame(columns=["effect_size", "p_value"]),
                           kind="bootstrap", embeddings=k)


def test_headline_names_the_class_contrast_in_its_first_sentence():
    s = _summary(_v("undecided at this precision", -0.116, -0.031))
    head = s.headline()
    assert head.startswith("corpus level (6 embeddings, bootstrap): undecided")
    assert "own-class stereotypes are closer than other classes'" in head
    assert "`associated - different` -0.07" in head
    assert "single embeddings not fitted" in head and not s.single
    assert s.n_embeddings == 6


def test_reliability_numbers_come_with_their_reading():
    rel = Reliability(test_retest=-0.05, inter_rater=0.8, internal=-8.26, embeddings=6,
                      words=10)
    text = str(rel)
    assert text.count(": ") >= 3 and "more than noise would make them" in text
    assert "negative" in rel.to_dict()["reading"]["cronbach_alpha_internal"]
    assert "negative" in read_icc(-0.05, "embeddings", "the words")
    assert "good" in read_icc(0.8, "scoring rules", "the words")
    assert "high" in read_alpha(0.95, "stereotypes")


def test_negative_alpha_is_items_that_covary_negatively():
    """The reading's claim: alpha < 0 exactly when the items' covariances sum below 0."""
    rng = np.random.default_rng(1)
    base = rng.normal(size=50)
    agree = np.stack([base + 0.3 * rng.normal(size=50) for _ in range(4)])
    disagree = agree * np.array([1, -1, 1, -1])[:, None]
    for items in (agree, disagree):
        c = np.cov(items)
        off = c.sum() - np.trace(c)
        assert (cronbach_alpha(items) < 0) == (off < 0)
    assert cronbach_alpha(agree) > 0.9 and cronbach_alpha(disagree) < 0


class _Recorder:
    """A report section that keeps what the builder writes."""

    def __init__(self):
        self.parts = []

    def heading(self, text):
        self.parts.append(text)

    def text(self, text):
        self.parts.append(text)

    def bullets(self, lines, css=""):
        self.parts.extend(lines)

    def table(self, *a, **k):
        pass

    def figure_from(self, *a, **k):
        pass


@pytest.mark.parametrize("single", [True, False])
def test_report_section_leads_with_the_headline_and_reads_every_reliability_number(single):
    from bayesbias.report.sections import ensemble_section

    per = pd.DataFrame({"embedding": ["a", "b"], "corpus_sample": ["s1", "s2"],
                        "verdict": ["no closer than human", "stereotype-specific"],
                        **{f"{c} {k}": 0.0 for c in ENSEMBLE_CONTRASTS
                           for k in ("mean", "lower", "upper")}}) if single else None
    s = _summary(_v("undecided at this precision", -0.116, -0.031), per=per, k=2)
    sec = _Recorder()
    ctx = SimpleNamespace(multi=True, ensemble=s, section=sec, iv="89% HDI", key="w", name="w",
                          verdict=s.verdict, results={},
                          pool=SimpleNamespace(submit=lambda *a, **k: None))
    ensemble_section(ctx)
    assert sec.parts[1] == f"**{s.headline()}.**"  # first after the heading
    assert "own-class stereotypes are closer" in sec.parts[1]
    rel = next(p for p in sec.parts if p.startswith("Reliability"))
    readings = s.reliability.readings()
    assert all(r in rel for r in readings.values())
    assert "more than noise would make them" in rel  # the negative alpha (-1.71) read
    text = " ".join(sec.parts)
    if single:
        assert "single embeddings would have said otherwise" in text
    else:
        assert "Single embeddings not fitted" in text
