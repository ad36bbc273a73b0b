"""WEAT on a WEFE ``Query`` gives WEFE's numbers (needs WEFE: slow, skipped without it).

WEFE 1.0.1 pins numpy <= 1.26.4, so it is not a declared extra; to run this test install it
beside numpy 2 with ``pip install --no-deps wefe semantic_version`` (its WEAT code runs
there unchanged).
"""

import pytest


@pytest.mark.slow
def test_weat_on_a_wefe_query_matches_wefe():
    pytest.importorskip("wefe")
    from gensim.models import KeyedVectors
    from wefe.metrics import WEAT
    from wefe.query import Query
    from wefe.word_embedding_model import WordEmbeddingModel

    from bayesbias.comparators.weat import weat
    from bayesbias.embeddings import load_embedding
    from bayesbias.interop import wefe_sets
    from bayesbias.wordlists import load_wordlist

    emb = load_embedding("default")
    kv = KeyedVectors(vector_size=emb.dim)
    kv.add_vectors(list(emb.words), emb.vectors)
    s = load_wordlist("weat7").weat_sets()
    query = Query([list(s.X), list(s.Y)], [list(s.A), list(s.B)], list(s.names[:2]),
                  list(s.names[2:]))
    theirs = WEAT().run_query(query, WordEmbeddingModel(kv, "glove"), return_effect_size=True)
    # WEFE's effect size divides by the population sd (numpy's default ddof=0)
    ours = weat(kv, wefe_sets(query), sd="population", bootstrap=200, seed=1)
    # float32 vectors: cosines agree to ~1e-7 relative
    assert ours.statistic == pytest.approx(theirs["weat"], rel=1e-6)
    assert ours.effect_size == pytest.approx(theirs["effect_size"], rel=1e-6)
    assert ours.names["X"] == "math" and ours.names["B"] == "female terms"
    # what WEFE does not give: the exact p over all splits and an interval over word choice
    assert ours.exact and ours.n_permutations == 12870
    assert ours.ci[0] < ours.effect_size < ours.ci[1]


def test_wefe_sets_reads_any_query_shaped_object():
    from types import SimpleNamespace

    from bayesbias.errors import InvalidArgumentError
    from bayesbias.interop import wefe_sets

    q = SimpleNamespace(target_sets=[["a", "b"], ["c"]], attribute_sets=[["x"], ["y", "z"]],
                        target_sets_names=["T1", "T2"], attribute_sets_names=None)
    assert wefe_sets(q) == {"X": ("a", "b"), "Y": ("c",), "A": ("x",), "B": ("y", "z"),
                            "names": ("T1", "T2", "A", "B")}
    with pytest.raises(InvalidArgumentError, match="3 target and 2 attribute"):
        wefe_sets(SimpleNamespace(target_sets=[[1], [2], [3]], attribute_sets=[[1], [2]]))
    with pytest.raises(InvalidArgumentError, match="got list"):
        wefe_sets([["a"], ["b"]])
