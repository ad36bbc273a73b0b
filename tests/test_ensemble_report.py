"""What the user reads about many embeddings: the corpus level beside each embedding alone.

Fast tests use hand-made posteriors and verdicts; the fits of the embedding-level model (a
minute of compiling) are in the slow tests, end to end from a trained ensemble.
"""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from json_schemas import validate

from bayesbias.cli import main
from bayesbias.ensemble import (
    ENSEMBLE_CONTRASTS,
    EnsembleSummary,
    ensemble_caveat,
    ensemble_kind,
    manifest_path,
    n_embeddings,
    simulate_ensemble_table,
    single_embedding,
    variance_shares,
    weat_per_embedding,
)
from bayesbias.errors import DistanceTableError, InputDataError
from bayesbias.models import cells_from_table, fit_model, load_spec
from bayesbias.reliability import ensemble_reliability

# fit / report / compare runs here check plumbing: no refits of undecided verdicts
pytestmark = pytest.mark.usefixtures("quick_verdicts")


def _table(kind="bootstrap", n=4, **kw):
    return simulate_ensemble_table(kind=kind, n_embeddings=n, seed=5, words_per_class=3,
                                   stereotypes_per_class=3, n_human=3, n_none=4, **kw)[0]


# -- other families refuse a table of several embeddings ------------------------------------

@pytest.mark.parametrize("model", ["crossed", "hierarchical", "additive"])
def test_other_families_refuse_several_embeddings(model):
    t = _table()
    with pytest.raises(DistanceTableError, match=r"holds 4 embeddings \(column 'embedding'\)"
                                                 r".*--model embedding_level"):
        fit_model(t, model, draws=10, tune=10)


@pytest.mark.filterwarnings("ignore::bayesbias.models.SamplerWarning")
def test_one_embedding_is_an_ordinary_table():
    t = _table()
    one = t[t["embedding"] == t["embedding"].iloc[0]].reset_index(drop=True)
    one.attrs["source"] = "one.csv"
    plain = single_embedding(one, "crossed")
    assert "embedding" not in plain and "corpus_sample" not in plain
    assert plain.attrs["source"] == "one.csv"
    assert single_embedding(plain, "crossed") is plain  # no ensemble columns: as given
    fit = fit_model(one, "hierarchical", draws=50, tune=50, chains=1, seed=1)
    assert not any(" @ " in str(u) for u in fit.cells.units)  # units are plain words


def test_cli_fit_and_report_refuse_several_embeddings(tmp_path, capsys):
    t = _table()
    t.to_csv(tmp_path / "many.csv", index=False)
    assert main(["--quiet", "fit", "--distances", str(tmp_path / "many.csv"),
                 "--draws", "10", "--tune", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "many.csv" in err[0] and "'embedding'" in err[0] \
        and "--model embedding_level" in err[0]
    assert main(["--quiet", "report", "--distances", str(tmp_path / "many.csv"),
                 "-o", str(tmp_path / "rep"), "--draws", "10", "--tune", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds 4 embeddings" in err[0]
    assert not (tmp_path / "rep").exists()  # refused before any work
    # and the embedding-level model refuses one embedding in the report, before any work
    t[t["embedding"] == t["embedding"].iloc[0]].to_csv(tmp_path / "one.csv", index=False)
    assert main(["--quiet", "report", "--distances", str(tmp_path / "one.csv"), "--model",
                 "embedding_level", "-o", str(tmp_path / "rep")]) == 2
    assert "2 or more embeddings" in capsys.readouterr().err


# -- embedding fields survive a saved fit -----------------------------------------------------

def test_embedding_cells_survive_the_data_groups():
    from bayesbias.models.files import _cells_from_groups, _data_groups

    c = cells_from_table(_table(runs_per_sample=2))
    back = _cells_from_groups(*_data_groups(c), c.level)
    for name in ("units", "unit_base", "unit_embedding", "embeddings", "embedding_sample",
                 "attributes", "n", "unit_idx", "attr_idx"):
        assert np.array_equal(np.asarray(getattr(back, name)), np.asarray(getattr(c, name)))
    plain = cells_from_table(single_embedding(_table(n=1), "crossed"))
    assert _cells_from_groups(*_data_groups(plain), "word").embeddings is None


def test_manifest_path(tmp_path):
    assert manifest_path("default") is None and manifest_path(None) is None
    (tmp_path / "manifest.json").write_text("{}")
    assert manifest_path(tmp_path) == tmp_path / "manifest.json"
    assert manifest_path(tmp_path / "manifest.json") == tmp_path / "manifest.json"
    assert manifest_path(tmp_path / "vectors.txt") is None


# -- the parts of the summary -----------------------------------------------------------------

def test_kind_and_count():
    assert ensemble_kind(_table("bootstrap")) == "bootstrap"
    assert ensemble_kind(_table("seeds")) == "seeds"
    assert ensemble_kind(_table("corpora")) == "corpora"
    t = _table("bootstrap")
    mixed = pd.concat([t, _table("seeds").assign(embedding=lambda d: "s-" + d["embedding"])])
    assert ensemble_kind(mixed) == "mixed"
    assert n_embeddings(t) == 4 and n_embeddings(t.drop(columns="embedding")) == 1


def test_caveat_when_resamples_were_trained_once():
    once = simulate_ensemble_table(n_embeddings=4, kind="bootstrap", runs_per_sample=1)[0]
    twice = simulate_ensemble_table(n_embeddings=4, kind="bootstrap", runs_per_sample=2)[0]
    assert "--seeds-within" in ensemble_caveat(once)
    assert "conservative" in ensemble_caveat(once)
    assert ensemble_caveat(twice) == ""
    assert ensemble_caveat(_table("seeds")) == ensemble_caveat(_table("corpora", n=8)) == ""


def test_caveat_when_few_independent_corpora():
    few = ensemble_caveat(_table("corpora", n=4))
    assert "with 4 independent corpora" in few and "rests on 3 degrees of freedom" in few
    assert "conservative" in few
    assert "rests on 1 degree of freedom" in ensemble_caveat(_table("corpora", n=2))


def _posterior(draws=200, seed=0):
    rng = np.random.default_rng(seed)
    shape = (2, draws)

    def scale(*extra):
        return np.abs(rng.normal(0.05, 0.02, size=shape + extra))

    return xr.Dataset({
        "tau": (("chain", "draw", "connection"), scale(4)),
        "eta": (("chain", "draw", "connection"), scale(4)),
        "kappa0": (("chain", "draw"), scale()),
        "kappa": (("chain", "draw", "connection_vs_none"), scale(3)),
        "lambda0": (("chain", "draw"), scale()),
        "lambda": (("chain", "draw", "connection_vs_none"), scale(3)),
        "omega": (("chain", "draw"), scale()),
        "gamma": (("chain", "draw"), scale()),
    })


@pytest.mark.parametrize("kind, runs", [("bootstrap", 1), ("seeds", 1), ("bootstrap", 2)])
def test_variance_shares_closed_form(kind, runs):
    """Check the shares against sums of squared scales drawn by hand (to 1e-12).

    A level the ensemble lacks counts 0; shared shifts cancel in contrasts.
    """
    post = _posterior()
    cells = cells_from_table(_table(kind, runs_per_sample=runs))
    fit = SimpleNamespace(spec=load_spec("embedding_level"), posterior=post, cells=cells)
    v = variance_shares(fit, ci_prob=0.9, ci_kind="eti").set_index("quantity")
    parts = ["word choice", "attribute choice", "word x embedding", "corpus sample",
             "training run"]
    np.testing.assert_allclose(v[parts].sum(axis=1), 1.0, atol=1e-12)
    f = {k: post[k].values.reshape(-1, *post[k].shape[2:]) for k in post.data_vars}
    sample = kind == "bootstrap"
    run = kind == "seeds" or runs > 1
    # a cell's rows are its attribute words: A = 1 / mean(1 / rows) per connection
    inv = [np.mean(1.0 / cells.n[cells.n[:, j] > 0, j]) for j in range(4)]
    # associated (index 0): all five parts, shared shifts included; the stereotypes'
    # strengths count gamma^2 / 4 per attribute word
    choice = f["tau"][:, 0] ** 2 + (f["omega"] ** 2 + f["gamma"] ** 2 / 4) * inv[0]
    tot = (choice + f["eta"][:, 0] ** 2
           + sample * (f["kappa0"] ** 2 + f["kappa"][:, 0] ** 2)
           + run * (f["lambda0"] ** 2 + f["lambda"][:, 0] ** 2))
    share = 1 - choice / tot
    assert v.loc["associated", "embedding_share"] == pytest.approx(share.mean(), abs=1e-12)
    assert v.loc["associated", "lower"] == pytest.approx(np.quantile(share, 0.05), abs=1e-12)
    # associated - none: parts add; kappa0 and lambda0 cancel; none has no vs-none part
    # and no strength
    word = (f["tau"][:, 0] ** 2 + f["tau"][:, 3] ** 2
            + (f["omega"] ** 2 + f["gamma"] ** 2 / 4) * inv[0] + f["omega"] ** 2 * inv[3])
    tot = (word + f["eta"][:, 0] ** 2 + f["eta"][:, 3] ** 2 + sample * f["kappa"][:, 0] ** 2
           + run * f["lambda"][:, 0] ** 2)
    assert v.loc["associated - none", "embedding_share"] == pytest.approx(
        (1 - word / tot).mean(), abs=1e-12)
    assert (v["corpus sample"] == 0).all() == (not sample)
    assert (v["training run"] == 0).all() == (not run)
    assert list(v.index) == ["associated", "different", "human", "none",
                             *ENSEMBLE_CONTRASTS]


def test_variance_shares_refuse_other_fits():
    fit = SimpleNamespace(spec=load_spec("crossed"))
    with pytest.raises(InputDataError, match="embedding_level fit"):
        variance_shares(fit)


def test_weat_per_embedding_is_weat_of_each_embedding():
    from bayesbias.comparators.weat import weat_class_pairs

    t = _table()
    w = weat_per_embedding(t, seed=3, n_permutations=500)
    assert list(w["embedding"]) == list(dict.fromkeys(t["embedding"]))
    for _, row in w.iterrows():
        one = t[t["embedding"] == row["embedding"]].drop(columns=["embedding",
                                                                  "corpus_sample"])
        (x, y), r = weat_class_pairs(one.reset_index(drop=True), alternative="two-sided",
                                     n_permutations=500, seed=3)[0]
        assert (row["X"], row["Y"]) == (x, y)
        assert row["effect_size"] == r.effect_size and row["p_value"] == r.p_value
    with pytest.raises(InputDataError, match="no embedding column"):
        weat_per_embedding(t.drop(columns="embedding"))


def _summary(codes=("stereotype-specific", "not closer than neutral", "stereotype-specific")):
    from bayesbias.verdicts import verdict_from_draws

    rng = np.random.default_rng(1)
    draws = {"associated - none": rng.normal(-0.05, 0.01, 2000),
             "associated - human": rng.normal(-0.04, 0.01, 2000),
             "associated - different": rng.normal(-0.1, 0.02, 2000),
             "human - none": rng.normal(0.0, 0.01, 2000)}
    verdict = verdict_from_draws("corpus", draws, 0.89, "hdi")
    rows = []
    for i, code in enumerate(codes):
        row = {"embedding": f"e{i}", "corpus_sample": f"bootstrap-{i + 1}", "verdict": code}
        for c in ENSEMBLE_CONTRASTS:
            row.update({f"{c} mean": -0.05 + 0.01 * i, f"{c} lower": -0.08 + 0.01 * i,
                        f"{c} upper": -0.02 + 0.03 * i})
        rows.append(row)
    variance = pd.DataFrame({"quantity": ["associated - none", "associated - human",
                                          "associated - different"],
                             "embedding_share": [0.4, 0.5, 0.3], "lower": [0.2, 0.3, 0.1],
                             "upper": [0.6, 0.7, 0.5]})
    weat = pd.DataFrame({"embedding": ["e0", "e1", "e2"], "X": "a", "Y": "b",
                         "effect_size": [0.5, 1.5, 1.0], "p_value": [0.3, 0.01, 0.04]})
    t = _table(n=3)
    return EnsembleSummary(verdict=verdict, per_embedding=pd.DataFrame(rows),
                           variance=variance, reliability=ensemble_reliability(t), weat=weat,
                           kind="bootstrap")


def test_summary_describes_itself(tmp_path):
    s = _summary()
    assert s.verdict.code == "stereotype-specific" and s.disagree == 1
    assert "1 of 3 single embeddings would have said otherwise" in s.headline()
    frame = s.to_frame()
    assert list(frame["level"]) == ["single embedding"] * 3 + ["corpus level"]
    last = frame.iloc[-1]
    assert last["associated - none lower"] == s.verdict["associated - none"].lower
    spread = s.weat_spread()
    assert spread["sd"] == pytest.approx(0.5) and spread["n_p_below_0.05"] == 2
    d = json.loads(json.dumps(s.to_dict()))  # plain JSON, in the shape the schema names
    assert d["disagree"] == 1 and d["embeddings"] == 3
    import jsonschema

    from bayesbias.schemas import DEFS

    jsonschema.validate(d, {"$defs": DEFS, "$ref": "#/$defs/ensemble"})
    assert d["reliability"]["icc_2_1_test_retest"] == s.reliability.test_retest
    text = str(s)
    assert "ICC(2,1)" in text and "p < 0.05 in 2 of 3" in text and "40%" in text
    assert s.plot(tmp_path / "e.png").stat().st_size > 1000
    s.reliability = "needs 2 or more embeddings"
    assert "not computed (needs 2" in str(s)
    assert s.to_dict()["reliability"] == {"skipped": "needs 2 or more embeddings"}


# -- end to end: a trained ensemble, fit and report (slow: the model compiles a minute) ------

@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from bayesbias.corpora import synthetic_wordlist_toml, write_synthetic_corpus

    d = tmp_path_factory.mktemp("ensemble")
    write_synthetic_corpus(d / "c.txt.gz", n_docs=600, planted=0.6, seed=1)
    synthetic_wordlist_toml(d / "syn.toml")
    assert main(["--quiet", "train", str(d / "c.txt.gz"), "-o", str(d / "runs"),
                 "--bootstrap", "3", "--vector-size", "16", "--min-count", "2", "--epochs",
                 "5"]) == 0
    return d


@pytest.mark.slow
def test_fit_and_report_from_a_manifest(trained, capsys):
    d = trained
    common = ["--model", "embedding_level", "--draws", "200", "--tune", "300", "--chains",
              "2", "--seed", "4"]
    assert main(["--quiet", "fit", "--embedding", str(d / "runs"), "--wordlist",
                 str(d / "syn.toml"), *common, "-o", str(d / "fit.nc"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    validate(out, "fit")
    ens = out["ensemble"]
    assert ens["embeddings"] == 3 and ens["kind"] == "bootstrap"
    assert len(ens["per_embedding"]) == 3 and len(ens["weat_per_embedding"]) == 3
    assert ens["corpus_level"]["code"] == out["verdict"]["code"]
    # the saved fit keeps its embeddings and the manifest it came from
    from bayesbias.models import load_fit

    fit = load_fit(d / "fit.nc")
    assert list(fit.cells.embeddings) == ["bootstrap1-seed1", "bootstrap2-seed1",
                                          "bootstrap3-seed1"]
    assert set(fit.cells.embedding_sample) == {"bootstrap-1", "bootstrap-2", "bootstrap-3"}
    attrs = json.loads(fit.idata.attrs["table_attrs"])
    assert attrs["manifest"].endswith("manifest.json")
    assert json.loads(attrs["embeddings"]) == list(fit.cells.embeddings)
    roles = [r["role"] for r in json.loads(fit.idata.attrs["provenance"])["inputs"]]
    assert "manifest" in roles
    v = variance_shares(fit).set_index("quantity")
    assert v.loc["associated - none", "embedding_share"] == pytest.approx(
        ens["variance_shares"][4]["embedding_share"])
    # how many embeddings a claim needs, from this fit as the pilot
    assert main(["--quiet", "design", "--pilot-fit", str(d / "fit.nc"), "--embeddings",
                 "2,8,32", "--json"]) == 0
    design = json.loads(capsys.readouterr().out)
    validate(design, "design")
    assert design["kind"] == "bootstrap" and design["pilot_embeddings"] == 3
    assert len(design["assurance"]) == 9 and len(design["check"]) == 3
    # the report: the ensemble section, its figure and tables, --json
    rep = d / "report"
    assert main(["--quiet", "report", "--embedding", str(d / "runs" / "manifest.json"),
                 "--wordlist", str(d / "syn.toml"), *common, "--jobs", "1",
                 "--permutations", "1000", "-o", str(rep), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    validate(payload, "report")
    assert payload["ensembles"]["synthetic"]["embeddings"] == 3
    md = (rep / "report.md").read_text()
    assert "Many embeddings: the corpus level beside each embedding alone" in md
    assert "single embeddings would have said otherwise" in md and "ICC(2,1)" in md
    assert (rep / "figures" / "synthetic_embeddings.png").is_file()
    for name in ("embeddings", "variance_shares", "weat_per_embedding"):
        assert (rep / "tables" / f"synthetic_{name}.csv").is_file()
    results = json.loads((rep / "results.json").read_text())
    assert results["wordlists"]["synthetic"]["data"]["embeddings"] == 3
    # robustness of the corpus-level verdict: each embedding left out in turn
    line = results["wordlists"]["synthetic"]["robustness"]
    assert line.startswith("Robustness over the 3 embeddings left out one at a time")
    assert line.count(" of 3 refits") == 3 and "Robustness over the 3 embeddings" in md
    assert "manifest" in [r["role"] for r in results["provenance"]["inputs"]]


def test_weat_mac_and_pilots_refuse_several_embeddings():
    """Refuse several embeddings in WEAT, MAC and pilots.

    WEAT took the first embedding's similarity of each pair and MAC averaged over all
    embeddings: both now refuse, as design and sensitivity pilots do.
    """
    from bayesbias.comparators.mac import mac_from_table
    from bayesbias.comparators.weat import weat_from_table
    from bayesbias.distances import check_pilot

    t = _table()
    for call, what in ((weat_from_table, "WEAT"), (mac_from_table, "MAC"),
                       (check_pilot, "a design or sensitivity study")):
        with pytest.raises(DistanceTableError, match=f"4 embeddings.*{what} describes one"):
            call(t)
    one = t[t["embedding"] == t["embedding"].iloc[0]]
    plain = one.drop(columns=["embedding", "corpus_sample"])
    assert weat_from_table(one, n_permutations=200, seed=1).effect_size == \
        weat_from_table(plain, n_permutations=200, seed=1).effect_size
    assert mac_from_table(one).mac == mac_from_table(plain).mac


@pytest.mark.slow
def test_fit_no_single_says_what_it_does(tmp_path, capsys):
    """``fit --no-single`` fits no embedding alone, and its progress does not say it does."""
    _table().to_csv(tmp_path / "many.csv", index=False)
    assert main(["fit", "--distances", str(tmp_path / "many.csv"), "--model",
                 "embedding_level", "--no-single", "--draws", "100", "--tune", "100",
                 "--chains", "2", "--seed", "1"]) == 0
    cap = capsys.readouterr()
    assert "embeddings alone" not in cap.err and "single fits skipped" in cap.err
    assert "single embeddings not fitted" in cap.out.splitlines()[0]  # the headline
