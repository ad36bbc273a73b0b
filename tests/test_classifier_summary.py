"""classifier_bias: several metrics in one tidy table."""

import json

import numpy as np
import pytest

from bayesbias.classifier import classifier_bias, counterfactual_frames, madlibs_data
from bayesbias.classifier.summary import TIDY_COLUMNS
from bayesbias.errors import InputDataError, InvalidArgumentError


@pytest.fixture(scope="module")
def madlibs_cd():
    return madlibs_data("TOXICITY@1", terms=["gay", "straight", "black", "white"])


def test_tidy_table_for_all_kinds(madlibs_cd):
    cd, full = madlibs_cd
    src = counterfactual_frames(full, cd.groups)
    res = classifier_bias(cd, ["auc", "bbu", "fped*", "neg_aeg", "pertsd"], ci_prob=0.9,
                          n_boot=30, source=src, seed=1)
    t = res.table
    assert list(t.columns) == TIDY_COLUMNS
    assert set(t["ci_kind"]) == {"delong", "bernstein", "hdi", "bootstrap"}
    assert t.attrs["ci_prob"] == 0.9 and (t["model"] == "TOXICITY@1").all()
    d = res.to_dict()
    json.dumps(d)  # plain JSON
    assert d["ci_prob"] == 0.9 and set(d["ci_kinds"]) == {"delong", "bernstein", "hdi",
                                                          "bootstrap"}
    assert "classifier bias of TOXICITY@1 (90% intervals)" in str(res)
    assert "difference" in set(t["level"])  # MetricFrame shape: overall, groups, difference
    bpsn = t[(t["metric"] == "bpsn_auc") & (t["group"] == "gay")].iloc[0]
    assert bpsn["value"] == pytest.approx(0.647514416315, abs=1e-9)  # published TOXICITY@1
    agg = t[(t["metric"] == "fped*") & (t["level"] == "aggregate")].iloc[0]
    assert agg["lower"] <= agg["value"] <= agg["upper"]
    assert res.generalized["pertsd"].info["sources"] > 0
    assert np.isfinite(res.bbu["half_width"]).all()


def test_errors(madlibs_cd):
    cd, _ = madlibs_cd
    with pytest.raises(InvalidArgumentError, match="choose from"):
        classifier_bias(cd, ["auc", "nope"])
    with pytest.raises(InputDataError, match="counterfactual"):
        classifier_bias(cd, ["cfgap"])
    with pytest.raises(InputDataError, match="exactly two groups"):
        classifier_bias(cd, ["f1_difference"])


def test_degenerate_tables_are_refused():
    import pandas as pd

    from bayesbias.classifier import validate_classifier_data

    base = pd.DataFrame({"y": [1, 0, 1, 0], "s": [0.9, 0.1, 0.8, 0.3],
                         "g": [True, False, True, False], "h": [False] * 4,
                         "all": [True] * 4})
    with pytest.raises(InputDataError, match="h have no rows"):
        validate_classifier_data(base, "y", score="s", groups=["g", "h"])
    with pytest.raises(InputDataError, match="all contain every row"):
        validate_classifier_data(base, "y", score="s", groups=["g", "all"])
    with pytest.raises(InputDataError, match="1 row"):
        validate_classifier_data(base.iloc[:1], "y", score="s", groups=["g"])
    with pytest.raises(InputDataError, match="contain every row"):
        validate_classifier_data(base.assign(c="x"), "y", score="s", group_column="c")


def test_one_label_class_warns(caplog):
    import pandas as pd

    from bayesbias.classifier import validate_classifier_data

    t = pd.DataFrame({"y": [1, 1, 1], "s": [0.9, 0.1, 0.8], "g": [True, False, True]})
    validate_classifier_data(t, "y", score="s", groups=["g"])
    assert "one class only" in caplog.text
