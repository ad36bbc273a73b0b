"""Reference values of WEFE 1.0.1 on bayesbias' shipped GloVe subset and word lists.

Run with WEFE in its own environment (not a bayesbias dependency), from the repository root:

    python3 -m venv /work/venvs/wefe && /work/venvs/wefe/bin/pip install wefe==1.0.1
    /work/venvs/wefe/bin/python tests/data/reference/wefe_reference.py

It writes ``tests/data/reference/wefe_reference.json``: per word list and class pair the
word sets used (words missing from the embedding dropped), WEFE's results and the package
versions. ``tests/test_embedding_metrics.py`` checks bayesbias against it. Sets: X, Y =
protected words of the two classes, A, B = their stereotypes; RND, ECT, RIPA take A ∪ B as
their one attribute set; RIPA's pairs come from the definite sets. RNSB is run without
holdout and with scikit-learn's lbfgs at a tight tolerance, so the classifier is plain L2
logistic regression solved to convergence (WEFE's default, liblinear, also penalises the
intercept; its holdout split is random).
"""

import datetime
import json
import platform
import sys
import tomllib
from pathlib import Path

import gensim
import numpy as np
import sklearn
import wefe
from gensim.models import KeyedVectors
from sklearn.linear_model import LogisticRegression
from wefe.metrics import ECT, RIPA, RND, RNSB, WEAT
from wefe.query import Query
from wefe.word_embedding_model import WordEmbeddingModel

ROOT = Path(__file__).resolve().parents[3]
EMB = ROOT / "bayesbias" / "data" / "embeddings" / "glove-6b-50d-subset.bin"
LISTS = {"gender": ("man", "woman"), "weat7": ("math", "arts"), "religion": ("jew", "muslim")}


def sets_for(name, classes, vocab):
    data = tomllib.loads((ROOT / "wordlists" / f"{name}.toml").read_text())
    c1, c2 = (data["classes"][c] for c in classes)
    keep = [w for w in (c1["protected_words"], c2["protected_words"], c1["stereotypes"],
                        c2["stereotypes"])]
    x, y, a, b = ([w for w in s if w in vocab] for s in keep)
    pairs = []
    for s in data.get("definite_sets", []):
        px = [w for w in s if w in c1["protected_words"]]
        py = [w for w in s if w in c2["protected_words"]]
        if len(px) == 1 and len(py) == 1 and px[0] in vocab and py[0] in vocab:
            pairs.append([px[0], py[0]])
    if not pairs and len(x) == len(y):
        pairs = [list(p) for p in zip(x, y, strict=True)]
    return {"X": x, "Y": y, "A": a, "B": b, "pairs": pairs}


def main():
    kv = KeyedVectors.load_word2vec_format(str(EMB), binary=True)
    # float64 copies of the stored float32 values, as bayesbias computes: WEFE (and
    # scikit-learn's float32 solver) then work at double precision too
    kv.vectors = kv.vectors.astype(np.float64)
    model = WordEmbeddingModel(kv, "glove-6b-50d-subset")
    out = {"provenance": {
        "command": "/work/venvs/wefe/bin/python tests/data/reference/wefe_reference.py",
        "script": "tests/data/reference/wefe_reference.py",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0], "platform": platform.platform(),
        "wefe": wefe.__version__, "gensim": gensim.__version__,
        "scikit-learn": sklearn.__version__, "numpy": np.__version__,
        "embedding": "bayesbias/data/embeddings/glove-6b-50d-subset.bin (word2vec binary), "
                     "vectors cast to float64",
    }, "cases": []}
    for name, classes in LISTS.items():
        s = sets_for(name, classes, kv.key_to_index)
        attrs = s["A"] + s["B"]
        q22 = Query([s["X"], s["Y"]], [s["A"], s["B"]], ["X", "Y"], ["A", "B"])
        q21 = Query([s["X"], s["Y"]], [attrs], ["X", "Y"], ["AB"])
        case = {"wordlist": name, "classes": list(classes), "sets": s, "wefe": {}}
        r = WEAT().run_query(q22, model, return_effect_size=True, lost_vocabulary_threshold=1.0)
        case["wefe"]["weat_effect_size_population_sd"] = float(r["effect_size"])
        case["wefe"]["weat_statistic"] = float(r["weat"])
        r = RND().run_query(q21, model, distance="norm", lost_vocabulary_threshold=1.0)
        case["wefe"]["rnd_norm"] = float(r["rnd"])
        case["wefe"]["rnd_norm_by_word"] = {k: float(v) for k, v in r["distance_by_word"].items()}
        r = RND().run_query(q21, model, distance="cos", lost_vocabulary_threshold=1.0)
        case["wefe"]["rnd_cos"] = float(r["rnd"])
        r = ECT().run_query(q21, model, lost_vocabulary_threshold=1.0)
        case["wefe"]["ect"] = float(r["ect"])
        if s["pairs"]:
            px, py = [p[0] for p in s["pairs"]], [p[1] for p in s["pairs"]]
            qp = Query([px, py], [attrs], ["PX", "PY"], ["AB"])
            r = RIPA().run_query(qp, model, lost_vocabulary_threshold=1.0)
            case["wefe"]["ripa"] = float(r["ripa"])
            case["wefe"]["ripa_by_word"] = {k: float(v["mean"]) for k, v in
                                            r["word_values"].items()}
        r = RNSB().run_query(
            q22, model, estimator=LogisticRegression,
            estimator_params={"solver": "lbfgs", "tol": 1e-12, "max_iter": 100000, "C": 1.0},
            holdout=False, lost_vocabulary_threshold=1.0)
        case["wefe"]["rnsb_no_holdout_lbfgs"] = float(r["rnsb"])
        case["wefe"]["rnsb_probabilities"] = {
            k: float(v) for k, v in r["negative_sentiment_probabilities"].items()}
        out["cases"].append(case)
    path = Path(__file__).with_suffix(".json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
