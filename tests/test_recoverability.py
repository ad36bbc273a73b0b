"""Recoverability tests: values, intervals, null bands, seeds, and the GloVe alignments."""

import numpy as np
import pytest

from bayesbias.errors import InputDataError
from bayesbias.recoverability import (
    RecoverabilityTable,
    classifier_recovery,
    cluster_alignment,
    hidden_or_removed,
    neighbour_bias,
)


def _two_blobs(rng, n=60, dim=8, shift=3.0):
    y = np.repeat(["a", "b"], n)
    x = rng.normal(size=(2 * n, dim))
    x[:, 0] += np.where(y == "a", shift, -shift)
    return x, y


def test_separated_classes_are_recovered_and_noise_is_not():
    rng = np.random.default_rng(0)
    x, y = _two_blobs(rng)
    r = cluster_alignment(x, y, n_boot=30, n_null=200, seed=1)
    assert r.value == 1.0 and r.lower <= 1.0 <= r.upper and r.reading == "recoverable"
    assert 0.5 <= r.null_lower < r.null_upper < 0.7
    noise = rng.normal(size=x.shape)
    r0 = cluster_alignment(noise, y, n_boot=30, n_null=200, seed=1)
    assert r0.reading != "recoverable"
    lin = classifier_recovery(x, y, "linear", n_null=9, seed=0)
    assert lin.value > 0.95 and lin.lower < lin.value <= lin.upper
    assert lin.reading == "recoverable" and lin.null_upper < 0.75
    nb = neighbour_bias(x, y, [f"w{i}" for i in range(len(y))], k=10, n_boot=100,
                        n_null=100, seed=0)
    assert nb.value > 0.9 and nb.reading == "recoverable"
    per = nb.details["per_word"]
    assert len(per) == len(y) and (per["lower"] <= per["share"]).all()
    assert (per["share"] <= per["upper"]).all()
    nb0 = neighbour_bias(noise, y, k=10, n_boot=100, n_null=100, seed=0)
    assert nb0.reading != "recoverable"


def test_same_seed_same_numbers():
    x, y = _two_blobs(np.random.default_rng(3), shift=0.6)
    a = cluster_alignment(x, y, n_boot=20, n_null=50, seed=4).to_dict()
    b = cluster_alignment(x, y, n_boot=20, n_null=50, seed=4).to_dict()
    assert a == b


def test_three_classes_use_the_best_matching():
    rng = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], 30)
    x = rng.normal(size=(90, 5)) * 0.1 + np.eye(5)[y] * 3
    assert cluster_alignment(x, y, n_boot=5, n_null=20).value == 1.0


def test_bad_input_is_named():
    x = np.ones((6, 3))
    with pytest.raises(InputDataError, match="two or more classes"):
        cluster_alignment(x + np.arange(6)[:, None], [0, 0, 0, 0, 0, 1])
    x[2, 1] = np.nan
    with pytest.raises(InputDataError, match="NaN"):
        neighbour_bias(x, [0, 0, 0, 1, 1, 1])
    with pytest.raises(InputDataError, match="fewer words"):
        classifier_recovery(np.random.default_rng(0).normal(size=(6, 3)), [0, 0, 0, 1, 1, 1])


def test_the_sentence_says_hidden_when_weat_is_quiet_but_tests_recover():
    rng = np.random.default_rng(0)
    x, y = _two_blobs(rng)
    table = RecoverabilityTable("e", "gender", 60,
                                [cluster_alignment(x, y, n_boot=10, n_null=50)])
    s = hidden_or_removed("hard", table, False, "stereotype-specific", "practically none")
    assert s.startswith("hard: hidden, not removed") and "cluster alignment" in s
    assert hidden_or_removed("x", table, True).startswith("x: not removed")
    quiet = RecoverabilityTable("e", "gender", 60, [cluster_alignment(
        rng.normal(size=x.shape), y, n_boot=10, n_null=50)])
    assert "removed, as far as" in hidden_or_removed("leace", quiet, False)


@pytest.mark.slow
def test_glove_alignment_of_hard_and_double_hard():
    """Top 100/500/1000 gendered words of the shipped GloVe 50-d (Wang et al.'s check)."""
    from bayesbias.debias import biased_words, double_hard_debias, hard_debias
    from bayesbias.embeddings import load_embedding

    glove = load_embedding("default")
    words, labels = biased_words(glove, "gender", 1000)
    hard, _ = hard_debias(glove, "gender", neutralize="all")
    double, _ = double_hard_debias(glove, "gender")
    for n in (100, 500, 1000):
        idx = np.r_[0:n, 1000:1000 + n]
        sel = [words[i] for i in idx]
        g = cluster_alignment(glove.matrix(sel), labels[idx], n_boot=50, n_null=200)
        h = cluster_alignment(hard.matrix(sel), labels[idx], n_boot=50, n_null=200)
        d = cluster_alignment(double.matrix(sel), labels[idx], n_boot=50, n_null=200)
        assert g.lower <= 1.0 <= g.upper and g.value == 1.0
        assert h.upper < g.lower  # Hard lies below GloVe
        assert d.upper < g.lower


def test_compare_debiasing_options_are_checked_before_any_work(capsys):
    from bayesbias.cli import main

    assert main(["compare", "--a", "published:religion:reddit", "--b",
                 "published:religion:debiased_reddit", "--recoverability"]) == 2
    assert "--wordlist" in capsys.readouterr().err
    assert main(["compare", "--wordlist", "gender", "--a", "default", "--b", "default",
                 "--debias-methods", "hard,soft"]) == 2
    assert "soft" in capsys.readouterr().err
