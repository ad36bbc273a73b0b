"""Reference values of responsibly 0.1.3 (Bolukbasi et al.'s direct and indirect bias).

responsibly needs Python < 3.9; run it in its own environment (not a bayesbias dependency),
from the repository root, after ``wefe_reference.py`` (it reuses that file's word sets):

    /root/.pyenv/versions/3.8.18/bin/python3 -m venv /work/venvs/responsibly
    /work/venvs/responsibly/bin/pip install responsibly==0.1.3
    /work/venvs/responsibly/bin/python tests/data/reference/responsibly_reference.py

Writes ``responsibly_reference.json``: per case the bias direction (PCA of the pair-centred
unit vectors of the definite-set pairs, responsibly's ``method='pca'``), the direct bias of
A ∪ B for c = 1 and c = 0.5, and the indirect bias of every pair of attribute words.
"""

import datetime
import itertools
import json
import platform
import sys
from pathlib import Path

import gensim
import numpy as np
import responsibly
import sklearn
from gensim.models import KeyedVectors
from responsibly.we import BiasWordEmbedding

HERE = Path(__file__).resolve().parent
EMB = HERE.parents[2] / "bayesbias" / "data" / "embeddings" / "glove-6b-50d-subset.bin"


def main():
    sets = json.loads((HERE / "wefe_reference.json").read_text())["cases"]
    out = {"provenance": {
        "command": "/work/venvs/responsibly/bin/python "
                   "tests/data/reference/responsibly_reference.py",
        "script": "tests/data/reference/responsibly_reference.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0], "platform": platform.platform(),
        "responsibly": responsibly.__version__, "gensim": gensim.__version__,
        "scikit-learn": sklearn.__version__, "numpy": np.__version__,
        "embedding": "bayesbias/data/embeddings/glove-6b-50d-subset.bin (word2vec binary), "
                     "vectors cast to float64",
    }, "cases": []}
    for case in sets:
        s = case["sets"]
        if len(s["pairs"]) < 5:  # responsibly's PCA asks for 10 components: 5 pairs
            continue
        kv = KeyedVectors.load_word2vec_format(str(EMB), binary=True)
        kv.vectors = kv.vectors.astype(np.float64)
        we = BiasWordEmbedding(kv, only_lower=False, to_normalize=True)
        px, py = s["pairs"][0]
        definitional = [tuple(p) for p in s["pairs"]]
        note = ""
        try:
            we._identify_direction(px, py, definitional=definitional, method="pca")
        except RuntimeError as exc:  # first PC explains < 50%: responsibly's own guard
            note = f"responsibly refused ({exc}); direction from its PCA step without the guard"
            pca = we._identify_subspace_by_pca(definitional, 10)
            d = pca.components_[0]
            we.direction = -d if (we[px] - we[py]) @ d < 0 else d
            we.positive_end, we.negative_end = px, py
        attrs = s["A"] + s["B"]
        pairs = list(itertools.combinations(attrs, 2))
        out["cases"].append({
            "wordlist": case["wordlist"], "classes": case["classes"], "sets": s,
            "note": note,
            "responsibly": {
                "direction": [float(v) for v in we.direction],
                "direct_bias_c1": float(we.calc_direct_bias(attrs, c=1)),
                "direct_bias_c0.5": float(we.calc_direct_bias(attrs, c=0.5)),
                "indirect_bias": {f"{a}|{b}": float(we.calc_indirect_bias(a, b))
                                  for a, b in pairs},
            }})
    path = Path(__file__).with_suffix(".json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
