"""Word lists: shipped files reproduce the published tables; user files; errors."""

import numpy as np
import pytest

from bayesbias.datasets import published_table
from bayesbias.distances import distance_table
from bayesbias.embeddings import Embedding
from bayesbias.errors import WordListError
from bayesbias.wordlists import available_wordlists, default_controls, load_wordlist

TOPIC_FILES = {"religion": "religion", "race": "race", "gender": "gender",
               "weat1": "weat_1", "weat7": "weat_7"}


def random_embedding(words, dim=10, seed=0):
    rng = np.random.default_rng(seed)
    return Embedding(sorted(set(words)), rng.normal(size=(len(set(words)), dim)), "random")


def test_shipped_lists_and_counts():
    names = set(available_wordlists())
    assert {"religion", "race", "gender", "weat1", "weat6", "weat7"} <= names
    controls = default_controls()
    assert len(controls["none"]) == 226 and len(controls["human"]) == 85
    for name in names:
        wl = load_wordlist(name)
        assert wl.provenance.get("source"), f"{name} has no provenance"


@pytest.mark.parametrize("name", sorted(TOPIC_FILES))
@pytest.mark.parametrize("embedding", ["reddit", "google"])
def test_lists_reproduce_published_rows(name, embedding):
    """Every labelled (word, attribute) pair of the published table, and no other."""
    wl = load_wordlist(name)
    ours = distance_table(random_embedding(wl.all_words), wl)
    published = published_table(TOPIC_FILES[name], embedding, missing="drop")
    key = ["protected_word", "protected_class", "attribute", "attribute_class", "connection"]
    ours_rows = set(map(tuple, ours[key].astype(str).to_numpy()))
    pub_rows = set(map(tuple, published[key].astype(str).to_numpy()))
    # The published file may lack words missing from its embedding (sentinel rows).
    assert pub_rows <= ours_rows
    missing = published.attrs.get("missing", {})
    if not missing:
        assert ours_rows == pub_rows


def test_weat_sets_of_weat7():
    sets = load_wordlist("weat7").weat_sets()
    assert sets.X[:2] == ("math", "algebra") and "poetry" in sets.Y
    assert "he" in sets.A and "she" in sets.B
    with pytest.raises(WordListError, match="exactly 2"):
        load_wordlist("religion").weat_sets()


USER_LIST = """
name = "sports"
description = "a user's own list"
definite_sets = [["football", "ballet"]]
[classes.masc]
protected_words = ["football", "boxing"]
stereotypes = ["strong", "loud"]
[classes.fem]
protected_words = ["ballet", "gymnastics"]
stereotypes = ["graceful"]
[controls]
human = ["walk", "talk"]
none = "default"
"""


def test_user_file_works_like_a_shipped_one(tmp_path):
    path = tmp_path / "sports.toml"
    path.write_text(USER_LIST)
    wl = load_wordlist(path)
    assert wl.class_names == ("masc", "fem")
    assert len(wl.controls["none"]) == 226 and wl.controls["human"] == ("walk", "talk")
    table = distance_table(random_embedding(wl.all_words), wl)
    assert len(table) == 4 * (3 + 2 + 226)
    row = table[(table.protected_word == "ballet") & (table.attribute == "graceful")]
    assert row.connection.item() == "associated"
    row = table[(table.protected_word == "ballet") & (table.attribute == "loud")]
    assert row.connection.item() == "different"


@pytest.mark.parametrize("text, match", [
    ("name = 'x'\n[classes.a]\nprotected_words = ['a', 'b', 'a']", "repeats word"),
    ("name = 'x'\n[classes.a]\nprotected_words = ['a']\n[classes.b]\nprotected_words = ['a']",
     "in classes"),
    ("name = 'x'\n[classes.a]\nprotected_words = ['a']\nstereotypes = ['s']\n"
     "[controls]\nhuman = ['s']", "repeats stereotype"),
    ("name = 'x'\ncolour = 1\n[classes.a]\nprotected_words = ['a']", "unknown key"),
    ("name = 'x'\n[classes.a]\nprotected_words = []", "no protected words"),
    ("name = 'x'\n[classes.a]\nprotected_words = 'a'", "list of non-empty strings"),
    ("name = 'x'", r"\[classes"),
    ("name = 'x'\ndefinite_sets = [['a', 'zz']]\n[classes.a]\nprotected_words = ['a']",
     "not protected words: zz"),
    ("name = 'x'\ndefinite_sets = [['a']]\n[classes.a]\nprotected_words = ['a']",
     "at least two"),
    ("name = 'x'\n[classes.a]\nprotected_words = ['a']\n[controls]\nother = ['q']",
     "unknown control group"),
    ("name = 'x\n", "not valid TOML"),
])
def test_bad_files_name_the_problem(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(WordListError, match=match) as info:
        load_wordlist(path)
    assert str(path) in str(info.value)


def test_unknown_name_lists_shipped():
    with pytest.raises(WordListError, match="religion"):
        load_wordlist("no-such-list")
