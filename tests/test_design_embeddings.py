"""How many embeddings a claim needs (bayesbias.studies.embeddings)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
from json_schemas import validate

from bayesbias.config import CONNECTIONS
from bayesbias.ensemble import simulate_ensemble_table
from bayesbias.errors import InputDataError, InvalidArgumentError
from bayesbias.models import cells_from_table, load_spec
from bayesbias.studies.embeddings import contrast_variance, embeddings_needed

SIZES = dict(words_per_class=4, stereotypes_per_class=5, n_human=6, n_none=8)
SCALES = dict(tau=0.03, sigma=0.05, omega=0.02, eta=0.015, kappa0=0.02, kappa=0.02,
              lambda0=0.01, lam=0.012)


def _scales(n=1):
    one = np.ones((n, 1))
    return {"tau": SCALES["tau"] * np.ones((n, 4)), "eta": SCALES["eta"] * np.ones((n, 4)),
            "sigma": SCALES["sigma"] * np.ones((n, 4)), "omega": SCALES["omega"] * one[:, 0],
            "kappa": SCALES["kappa"] * np.ones((n, 3)), "lambda": SCALES["lam"] * np.ones((n, 3))}


def _layout():
    t, _ = simulate_ensemble_table(kind="corpora", n_embeddings=2, seed=0, **SIZES)
    one = t[t["embedding"] == t["embedding"].iloc[0]]
    rows = one["connection"].value_counts().to_dict()
    kinds = {"associated": 10, "different": 10, "human": 6, "none": 8}
    return {"words": 8, "attributes": kinds, "rows_per_embedding": rows}


@pytest.mark.slow
@pytest.mark.parametrize("kind, levels", [("corpora", (True, False)), ("seeds", (False, True)),
                                          ("bootstrap", (True, False))])
def test_variance_matches_simulated_studies(kind, levels):
    """Check sqrt(V(K)) against 300 simulated ensembles of the model it describes.

    The sd of the corpus-level estimate (mean of a's distances minus mean of b's) around the
    truth mu_bar; relative tolerance 12% (the sd of 300 draws has a relative se of ~4%).
    """
    k, reps = 4, 300
    lay = _layout()
    errs = {c: [] for c in ("associated - none", "associated - human",
                            "associated - different")}
    for r in range(reps):
        t, truth = simulate_ensemble_table(kind=kind, n_embeddings=k, seed=1000 + r,
                                           **SIZES, **SCALES)
        m = t.groupby("connection")["cosine_distance"].mean()
        for c in errs:
            a, b = c.split(" - ")
            errs[c].append(m[a] - m[b] - (truth["mu_bar"][a] - truth["mu_bar"][b]))
    for c, e in errs.items():
        v = contrast_variance(_scales(), c, k, kind=kind, levels=levels, **lay)
        assert np.std(e) == pytest.approx(np.sqrt(v[0]), rel=0.12), c


def test_stereotype_strength_adds_to_contrasts_of_associated_only():
    """gamma^2 / S, once (it does not shrink with more embeddings), fully for associated -
    different and a quarter for the contrasts with a control; human - none is unchanged."""
    lay = _layout()
    with_g = dict(_scales(), gamma=np.array([0.04]))
    for c, added in (("associated - none", 0.25), ("associated - different", 1.0),
                     ("associated - human", 0.25), ("human - none", 0.0)):
        for k in (2, 16):
            base = contrast_variance(_scales(), c, k, kind="corpora", **lay)
            got = contrast_variance(with_g, c, k, kind="corpora", stereotypes=10, **lay)
            np.testing.assert_allclose(got - base, added * 0.04**2 / 10, rtol=1e-12,
                                       atol=1e-18)
            # its deviations per corpus sample shrink like 1/K (with that level)
            both = dict(with_g, phi=np.array([0.03]), psi=np.array([0.0]))
            got = contrast_variance(both, c, k, kind="corpora", stereotypes=10,
                                    interactions=(True, False), **lay)
            base = contrast_variance(dict(_scales(), psi=np.array([0.0])), c, k,
                                     kind="corpora", interactions=(True, False), **lay)
            want = added * (0.04**2 + 0.03**2 / k) / 10
            np.testing.assert_allclose(got - base, want, rtol=1e-12, atol=1e-18)


def test_variance_by_kind():
    lay = _layout()
    v = {kind: [contrast_variance(_scales(), "associated - none", k, kind=kind,
                                  levels=(kind != "seeds", kind == "seeds"), **lay)[0]
                for k in (2, 8, 10**6)] for kind in ("bootstrap", "corpora", "seeds")}
    floor = 2 * SCALES["tau"] ** 2 / 8 + SCALES["omega"] ** 2 * (1 / 10 + 1 / 8)
    assert v["corpora"][2] == pytest.approx(floor, rel=1e-4)
    assert v["seeds"][2] == pytest.approx(floor, rel=1e-4)
    # bootstrap: the corpus is one more draw: the floor keeps kappa_a^2
    assert v["bootstrap"][2] == pytest.approx(floor + SCALES["kappa"] ** 2, rel=1e-4)
    for kind in v:
        assert v[kind][0] > v[kind][1] > v[kind][2]


def _pilot_fit(kind="bootstrap", delta=-0.02, draws=400):
    t, _ = simulate_ensemble_table(kind=kind, n_embeddings=4, seed=3, **SIZES)
    rng = np.random.default_rng(0)
    mu = np.tile([0.8, 0.85, 0.83, 0.82], (2, draws, 1))
    mu[..., 0] = 0.82 + delta + 0.005 * rng.standard_normal((2, draws))
    s = _scales(2 * draws)
    post = xr.Dataset({"mu_bar": (("chain", "draw", "connection"), mu)} | {
        k: (("chain", "draw", *(("connection",) if v.ndim == 2 and v.shape[1] == 4 else
                                ("connection_vs_none",) if v.ndim == 2 else ())),
            v.reshape(2, draws, *v.shape[1:])) for k, v in s.items()},
        coords={"connection": list(CONNECTIONS)})
    return SimpleNamespace(spec=load_spec("embedding_level"), cells=cells_from_table(t),
                           posterior=post)


def test_embeddings_needed(tmp_path):
    r = embeddings_needed(_pilot_fit("corpora", delta=-0.03), (2, 4, 8, 16), target=0.8)
    assert r.kind == "corpora" and r.pilot_embeddings == 4
    an = r.frame[r.frame["contrast"] == "associated - none"]["assurance"].to_numpy()
    assert (np.diff(an) > 0).all() and 0 < an[0] < an[-1] < 1
    need = r.needed()
    assert need["associated - none"] in (None, 2, 4, 8, 16)
    ok = r.frame[(r.frame["contrast"] == "associated - none")
                 & (r.frame["assurance"] >= 0.8)]["embeddings"]
    assert need["associated - none"] == (int(ok.min()) if len(ok) else None)
    d = json.loads(json.dumps(r.to_dict()))
    validate(d, "design")
    assert d["needed"] == need and len(d["assurance"]) == 12
    assert "check at the pilot's K" in str(r)
    assert r.plot(tmp_path / "a.png").stat().st_size > 1000
    boot = embeddings_needed(_pilot_fit("bootstrap", delta=-0.03), (2, 1024))
    assert "levels off" in str(boot)
    # a bootstrap ensemble gains less from more embeddings than independent corpora
    gain = {kind: np.ptp(embeddings_needed(_pilot_fit(kind, -0.03), (2, 1024)).frame
                         .query("contrast == 'associated - none'")["assurance"])
            for kind in ("bootstrap", "corpora")}
    assert gain["bootstrap"] < gain["corpora"]


def test_embeddings_needed_refuses():
    with pytest.raises(InputDataError, match="embedding_level fit"):
        embeddings_needed(SimpleNamespace(spec=load_spec("crossed")))
    with pytest.raises(InvalidArgumentError, match="2 or more"):
        embeddings_needed(_pilot_fit(), (1, 4))


def test_cli_needs_a_pilot_fit(capsys):
    from bayesbias.cli import main

    assert main(["design", "--embeddings", "2,4", "--distances",
                 "published:religion:reddit"]) == 2
    assert "--embeddings needs --pilot-fit" in capsys.readouterr().err
