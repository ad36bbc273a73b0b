"""The Python API in a notebook.

The backend left alone, figures returned, rich display, gensim KeyedVectors and the
fairlearn-style classifier entry point.
"""

import dataclasses
import json
import re
import types
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from bayesbias.errors import EmbeddingFormatError, InputDataError, InvalidArgumentError

PACKAGE = Path(__file__).resolve().parent.parent / "bayesbias"


# -- the backend ---------------------------------------------------------------------------
def test_no_module_selects_a_backend_or_draws_with_pyplot():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"matplotlib\.use\(|import matplotlib\.pyplot|from matplotlib import "
                     r"pyplot|plt\.subplots|plt\.figure", text):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []


@pytest.fixture
def svg_backend():
    """Make svg (not Agg, which the library used to force) the backend for one test."""
    old = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        yield
    finally:
        matplotlib.use(old)


def _fignums():
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    return plt.get_fignums() if plt is not None else []


def test_plotting_keeps_the_backend_and_returns_figures(religion_fit, svg_backend, tmp_path):
    from matplotlib.figure import Figure

    from bayesbias.datasets import published_table
    from bayesbias.models import compare_fits
    from bayesbias.models.plots import figure_png, plot_comparison_forest, plot_fit_forest
    from bayesbias.report.sections import _null_figure
    from bayesbias.studies.calibration import sbc
    from bayesbias.studies.design import Design, Pilot, run_design
    from bayesbias.studies.sensitivity import sensitivity

    before = _fignums()
    assert isinstance(religion_fit.plot_forest(), Figure)  # the methods need no path either
    assert isinstance(compare_fits(religion_fit, religion_fit).plot_forest(), Figure)
    figures = {"forest": plot_fit_forest(religion_fit),
               "comparison": plot_comparison_forest(compare_fits(religion_fit, religion_fit))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few replications: fewer bins, with a warning
        figures["sbc"] = sbc("hierarchical", method="exact", reps=10, seed=1).plot()
    table = published_table("religion", "reddit")
    pilot = Pilot.from_table(table, "hierarchical", draws=500, seed=3)
    figures["design"] = run_design(pilot, [Design(5, 4, 20, 40), Design(8, 4, 20, 40)],
                                   reps=10, chunk_size=10, seed=5, n_draws=200).plot()
    keep = set()
    for conn, words in table.groupby("connection", observed=True)["attribute"]:
        words = sorted(words.unique())
        keep |= set(words if conn in ("associated", "different") else words[:10])
    small = table.loc[table["attribute"].isin(keep)].reset_index(drop=True)
    figures["sensitivity"] = sensitivity(small, "hierarchical", n_resamples=10, n_draws=300,
                                         seed=4).plot()
    null = {"weat_effect": types.SimpleNamespace(values=np.linspace(-2, 2, 200)),
            "mac": types.SimpleNamespace(values=np.linspace(0.7, 0.9, 200))}
    png = figure_png(_null_figure, null, {"weat_effect": 0.4, "mac": 0.8}, "title")
    assert png.startswith(b"\x89PNG")
    for name, fig in figures.items():
        assert isinstance(fig, Figure), name
        assert fig.axes, name
        assert fig._repr_png_().startswith(b"\x89PNG"), name  # shows in a notebook
    assert len(figures["forest"].axes) == 3
    assert matplotlib.get_backend() == "svg"
    assert _fignums() == before  # none of them joined pyplot's figures
    # with a path, the file is written and the path returned, as before
    assert plot_fit_forest(religion_fit, tmp_path / "f.png") == tmp_path / "f.png"
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
    with pytest.raises(InvalidArgumentError, match="suffix"):
        plot_fit_forest(religion_fit, tmp_path / "f.txt")


# -- rich display ----------------------------------------------------------------------------
def _short(text: str) -> bool:
    return text.startswith("<") and "\n" not in text and len(text) < 300


def test_verdict_display_is_short_escaped_and_complete(religion_fit):
    from bayesbias.verdicts import verdict_from_fit

    v = verdict_from_fit(religion_fit)
    assert _short(repr(v)) and v.code in repr(v)
    html = v._repr_html_()
    for c in v.contrasts:
        assert c.contrast in html
        assert f"{round(c.mean, 4):g}"[:6] in html
    hostile = dataclasses.replace(v, name="<script>alert(1)</script>")
    html = hostile._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_fit_text_and_html(religion_fit):
    from bayesbias.display import fit_html, fit_text
    from bayesbias.verdicts import verdict_from_fit

    v = verdict_from_fit(religion_fit)
    text = fit_text(religion_fit)
    assert text.splitlines()[0] == repr(religion_fit)
    assert v.headline in text
    means = religion_fit.contrasts().set_index("contrast")["mean"]
    for contrast, m in means.items():
        line = next(x for x in text.splitlines() if x.strip().startswith(contrast))
        assert float(line.split()[len(contrast.split())]) == pytest.approx(m, abs=1e-4)
    assert str(religion_fit) == text  # what print(fit) and Jupyter show
    html = fit_html(religion_fit)
    assert religion_fit._repr_html_() == html
    assert v.headline.replace("'", "&#x27;") in html
    assert "4830 rows" in html
    # the 60 per-word rows are collapsed; the contrasts are not
    assert html.count("<details>") == 1 and "(60 rows)" in html


def test_comparison_display(religion_fit):
    from bayesbias.display import comparison_html, comparison_repr
    from bayesbias.models import compare_fits

    comp = compare_fits(religion_fit, religion_fit, labels=("before", "after"))
    assert _short(comparison_repr(comp)) and "'after' - 'before'" in comparison_repr(comp)
    html = comparison_html(comp)
    assert "Comparison: after - before" in html and "associated - human" in html
    assert repr(comp) == comparison_repr(comp) and comp._repr_html_() == html


def test_comparator_and_wordlist_reprs():
    from bayesbias.comparators.mac import mac
    from bayesbias.comparators.metrics import metric_table
    from bayesbias.comparators.weat import weat
    from bayesbias.embeddings import load_embedding
    from bayesbias.wordlists import load_wordlist

    emb = load_embedding("default")
    r = weat(emb, "weat7", bootstrap=50, seed=1)
    assert _short(repr(r)) and f"d = {r.effect_size:.3f}" in repr(r)
    assert f"{r.effect_size:.3f}" in r._repr_html_() and "bootstrap interval" in r._repr_html_()
    wl = load_wordlist("religion")
    assert repr(wl) == ("<WordList 'religion': classes jew 5, christian 5, muslim 5; "
                        f"{len(wl.stereotypes)} stereotypes; controls human "
                        f"{len(wl.controls['human'])}, none {len(wl.controls['none'])}>")
    assert "synagogue" in wl._repr_html_()
    m = mac(emb, "religion", on_missing="drop")
    assert _short(repr(m)) and f"{m.mac:.4f}" in m._repr_html_()
    t = metric_table(emb, "religion", metrics=["weat_es", "rnsb"], bootstrap=10, null_reps=10,
                     seed=1, on_missing="drop")
    assert _short(repr(t)) and _short(repr(t.results[0]))
    html = t._repr_html_()
    assert "rnsb" in html and "null" in html
    assert f"{t.results[0].value:.4f}" in t.results[0]._repr_html_()


def test_classifier_displays():
    from bayesbias.classifier import classifier_bias_from_arrays, groupwise_disparity

    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b"], 400)
    y = rng.random(400) < 0.4
    s = np.clip(y * 0.3 + rng.random(400) * 0.7, 0, 1)
    r = classifier_bias_from_arrays(y, s, sensitive_features=g, threshold=0.5, n_boot=20,
                                    seed=1, metrics=["bbu", "auc", "parity_gap"])
    assert _short(repr(r)) and "subgroup_auc" in r._repr_html_()
    fr = r.generalized["parity_gap"]
    assert "per group" in fr._repr_html_()
    b = groupwise_disparity((s >= 0.5).astype(float), np.where(g == "a", 1, -1))
    assert _short(repr(b)) and f"{b.disparity:.4f}" in b._repr_html_()


def test_null_study_to_dict_is_json():
    from bayesbias.comparators.null import NullStudy

    d = NullStudy(reps=10).to_dict()
    assert json.loads(json.dumps(d)) == d and d["reps"] == 10 and d["null"] == "independent"


# -- gensim ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def default_and_kv():
    from gensim.models import KeyedVectors

    from bayesbias.embeddings import load_embedding

    emb = load_embedding("default")
    kv = KeyedVectors(vector_size=emb.dim)
    kv.add_vectors(list(emb.words), emb.vectors)
    return emb, kv


def test_keyedvectors_give_the_same_tables_and_tests(default_and_kv):
    from bayesbias.comparators.mac import mac
    from bayesbias.comparators.weat import weat
    from bayesbias.distances import distance_table

    emb, kv = default_and_kv
    a = distance_table(emb, "religion")
    b = distance_table(kv, "religion")
    pd.testing.assert_frame_equal(a, b)
    assert b.attrs["embedding"].startswith("gensim KeyedVectors")
    wa, wb = weat(emb, "weat7", seed=3), weat(kv, "weat7", seed=3)
    assert (wa.effect_size, wa.p_value) == (wb.effect_size, wb.p_value)
    model = types.SimpleNamespace(wv=kv)  # a Word2Vec / FastText model: its .wv is used
    assert mac(model, "religion").mac == mac(emb, "religion").mac


def test_keyedvectors_subset_and_bad_input(default_and_kv):
    from gensim.models import KeyedVectors

    from bayesbias.distances import distance_table
    from bayesbias.embeddings import Embedding

    _, kv = default_and_kv
    sub = Embedding.from_keyedvectors(kv, words=["jew", "church", "nowordlikethis"])
    assert set(sub.words) == {"jew", "church"}
    with pytest.raises(InvalidArgumentError, match="got dict"):
        distance_table({"jew": [1.0]}, "religion")
    bad = KeyedVectors(vector_size=3)
    bad.add_vectors(["jew", "zero"], np.array([[1.0, 0, 0], [0, 0, 0]], dtype=np.float32))
    with pytest.raises(EmbeddingFormatError, match="'zero'"):
        Embedding.from_keyedvectors(bad)


# -- the fairlearn-style classifier entry point ---------------------------------------------
def test_classifier_from_arrays_equals_the_table_call():
    from bayesbias.classifier import (
        classifier_bias,
        classifier_bias_from_arrays,
        validate_classifier_data,
    )

    rng = np.random.default_rng(2)
    n = 600
    sex = rng.choice(["female", "male"], n)
    race = rng.choice(["black", "white"], n)
    y = rng.random(n) < 0.5
    score = np.clip(0.4 * y + 0.6 * rng.random(n) + 0.05 * (sex == "male"), 0, 1)
    df = pd.DataFrame({"y": y, "s": score, "g": sex})
    ref = classifier_bias(validate_classifier_data(df, "y", score="s", group_column="g",
                                                   threshold=0.5), seed=4, n_boot=30)
    got = classifier_bias_from_arrays(y, score, sensitive_features=sex, threshold=0.5, seed=4,
                                      n_boot=30)
    cols = ["metric", "level", "group", "value", "lower", "upper", "ci_kind"]
    pd.testing.assert_frame_equal(ref.table[cols], got.table[cols])
    # two columns are crossed; boolean columns are (overlapping) groups
    crossed = classifier_bias_from_arrays(
        y, score, sensitive_features=pd.DataFrame({"sex": sex, "race": race}), metrics=["auc"])
    assert set(crossed.table["group"]) == {"female & black", "female & white", "male & black",
                                           "male & white"}
    flags = classifier_bias_from_arrays(y, score, metrics=["auc"], sensitive_features={
        "female": sex == "female", "black": race == "black"})
    assert set(flags.table["group"]) == {"female", "black"}
    with pytest.raises(InputDataError, match="different lengths"):
        classifier_bias_from_arrays(y[:-1], score, sensitive_features=sex)
    with pytest.raises(InputDataError, match="no metric"):
        classifier_bias_from_arrays(y, sensitive_features=sex, metrics=["auc"])
