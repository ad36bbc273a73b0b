"""classifier_bias: several metrics in one tidy table."""

import numpy as np
import pytest

from bayesbias.classifier import classifier_bias, counterfactual_frames, madlibs_data
from bayesbias.classifier.summary import TIDY_COLUMNS
from bayesbias.errors import InputDataError


@pytest.fixture(scope="module")
def madlibs_cd():
    return madlibs_data("TOXICITY@1", terms=["gay", "straight", "black", "white"])


def test_tidy_table_for_all_kinds(madlibs_cd):
    cd, full = madlibs_cd
    src = counterfactual_frames(full, cd.groups)
    res = classifier_bias(cd, ["auc", "bbu", "fped*", "neg_aeg", "pertsd"], confidence=0.9,
                          n_boot=30, source=src, seed=1)
    t = res.table
    assert list(t.columns) == TIDY_COLUMNS
    assert set(t["interval"]) == {"DeLong", "bernstein", "bayes", "bootstrap"}
    assert t.attrs["confidence"] == 0.9 and (t["model"] == "TOXICITY@1").all()
    bpsn = t[(t["metric"] == "bpsn_auc") & (t["group"] == "gay")].iloc[0]
    assert bpsn["value"] == pytest.approx(0.647514416315, abs=1e-9)  # published TOXICITY@1
    agg = t[(t["metric"] == "fped*") & (t["level"] == "aggregate")].iloc[0]
    assert agg["lower"] <= agg["value"] <= agg["upper"]
    assert res.generalized["pertsd"].info["sources"] > 0
    assert np.isfinite(res.bbu["half_width"]).all()


def test_errors(madlibs_cd):
    cd, _ = madlibs_cd
    with pytest.raises(InputDataError, match="choose from"):
        classifier_bias(cd, ["auc", "nope"])
    with pytest.raises(InputDataError, match="counterfactual"):
        classifier_bias(cd, ["cfgap"])
    with pytest.raises(InputDataError, match="exactly two groups"):
        classifier_bias(cd, ["f1_difference"])
