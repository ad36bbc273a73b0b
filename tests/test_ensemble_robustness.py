"""Leave-one-embedding-out robustness of the corpus-level verdict.

:func:`bayesbias.ensemble.leave_one_embedding_out`.
"""

import json
import logging

import numpy as np
import pytest

from bayesbias.ensemble import (
    ENSEMBLE_CONTRASTS,
    _canonical_labels,
    leave_one_embedding_out,
    simulate_ensemble_table,
)
from bayesbias.errors import InputDataError
from bayesbias.models import load_spec
from bayesbias.models.embedding_level import cells, structure_key

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")


def _table(kind="bootstrap", n=4, seed=5):
    return simulate_ensemble_table(kind=kind, n_embeddings=n, seed=seed, words_per_class=3,
                                   stereotypes_per_class=3, n_human=3, n_none=4)[0]


def test_two_embeddings_are_refused():
    with pytest.raises(InputDataError, match="3 or more embeddings; the table holds 2"):
        leave_one_embedding_out(_table(n=2))


@pytest.mark.parametrize("kind", ["bootstrap", "seeds", "corpora"])
def test_refits_of_one_shape_share_a_compiled_model(kind):
    # the labels are part of the compiled model: renamed by position, every refit of a
    # leave-one-out series has the same structure key, so the model compiles once
    t = _table(kind)
    spec = load_spec("embedding_level")
    keys = set()
    for label in t["embedding"].unique():
        part = _canonical_labels(t.loc[t["embedding"] != label])
        keys.add(structure_key(spec, cells(part)))
        # what the labels say is kept: bootstrap samples stay bootstrap samples
        before = t.loc[t["embedding"] != label, "corpus_sample"].astype(str)
        after = part["corpus_sample"].astype(str)
        assert (before.str.startswith("bootstrap").to_numpy()
                == after.str.startswith("bootstrap").to_numpy()).all()
        assert ((before == "original").to_numpy() == (after == "original").to_numpy()).all()
        assert part["embedding"].nunique() == 3
        np.testing.assert_array_equal(part["cosine_distance"].to_numpy(),
                                      t.loc[t["embedding"] != label,
                                            "cosine_distance"].to_numpy())
    assert len(keys) == 1


@pytest.mark.slow
def test_leave_one_embedding_out_refits_and_names_what_flips():
    t = _table("bootstrap", n=4, seed=11)
    logging.disable(logging.WARNING)
    try:
        r = leave_one_embedding_out(t, seed=3, draws=300, tune=300, chains=2)
    finally:
        logging.disable(logging.NOTSET)
    lo = r.left_out
    assert r.n_refits == 4 and len(lo) == 4 * len(ENSEMBLE_CONTRASTS)
    assert set(lo["embedding"]) == set(t["embedding"])
    base = r.baseline.set_index("contrast")["holds"]
    for _, row in lo.iterrows():
        assert row["holds"] == (row["upper"] < 0)
        assert row["flips"] == (row["holds"] != base[row["contrast"]])
    text = r.sentence()
    assert "4 embeddings left out one at a time" in text
    for c in ENSEMBLE_CONTRASTS:
        held = int(lo.loc[lo["contrast"] == c, "holds"].sum())
        assert f"`{c}` " in text and f"below 0 in {held} of 4 refits" in text
    if r.flips().empty:
        assert "no single left-out embedding flips" in text
    else:
        assert "flips `" in text
    d = json.loads(json.dumps(r.to_dict()))
    assert d["refits"] == 4 and len(d["left_out"]) == 12


def test_fit_sensitivity_of_an_ensemble_needs_three_embeddings(tmp_path, capsys):
    from bayesbias.cli import main

    path = tmp_path / "two.csv"
    _table(n=2).to_csv(path, index=False)
    code = main(["--quiet", "fit", "--distances", str(path), "--model", "embedding_level",
                 "--sensitivity"])
    assert code == 2
    err = capsys.readouterr().err
    assert "leaves out each embedding in turn" in err and "the table holds 2" in err
