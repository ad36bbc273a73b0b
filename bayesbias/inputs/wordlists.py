"""Word lists: protected classes, their stereotype attributes, and control groups.

A word list ("topic") is a TOML file::

    name = "religion"
    description = "..."
    definite_sets = [["judaism", "christianity", "islam"], ...]   # optional

    [provenance]
    source = "Manzini et al. (2019) ..."

    [classes.jew]
    protected_words = ["jew", "judaism", ...]
    stereotypes = ["greedy", "cheap", ...]
    attribute_label = "jew stereotypes"        # optional, for display

    [controls]
    human = "default"      # the shipped 85 human attributes, or a list of words
    none = "default"       # the shipped 226 neutral words, or a list of words

Two-class lists double as WEAT tests: X and Y are the protected words of the first and
second class, A and B their stereotypes.

Unicode: words are looked up exactly as written (an embedding's vocabulary is not
normalised either), but two words of one list that differ only in Unicode form (NFC and
NFD spellings, fullwidth or compatibility forms, zero-width characters) are refused as the
same word written twice; see :func:`spelling_key`.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .._atomic import shipped_dir
from ..display import card
from ..errors import WordListError

__all__ = [
    "ProtectedClass",
    "WordList",
    "WeatSets",
    "load_wordlist",
    "spelling_key",
    "available_wordlists",
    "default_controls",
]

CONTROL_GROUPS = ("human", "none")
_SPACE = re.compile(r"\s")


@dataclass(frozen=True)
class ProtectedClass:
    """One protected class: its protected words and its stereotype attributes."""

    name: str
    protected_words: tuple[str, ...]
    stereotypes: tuple[str, ...]
    attribute_label: str | None = None


@dataclass(frozen=True)
class WeatSets:
    """The four word sets of a WEAT test: targets X, Y and attributes A, B."""

    X: tuple[str, ...]
    Y: tuple[str, ...]
    A: tuple[str, ...]
    B: tuple[str, ...]
    names: tuple[str, str, str, str] = ("X", "Y", "A", "B")


@dataclass(frozen=True)
class WordList:
    """A validated bias topic. Build it with :func:`load_wordlist` or directly."""

    name: str
    classes: tuple[ProtectedClass, ...]
    controls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    definite_sets: tuple[tuple[str, ...], ...] = ()
    description: str = ""
    provenance: dict = field(default_factory=dict)
    path: str | None = None

    def __post_init__(self):
        _validate(self)

    # -- views ---------------------------------------------------------------
    @property
    def class_names(self) -> tuple[str, ...]:
        """Names of the protected classes, in file order."""
        return tuple(c.name for c in self.classes)

    @property
    def protected_words(self) -> tuple[str, ...]:
        """All protected words, in class order."""
        return tuple(w for c in self.classes for w in c.protected_words)

    @property
    def stereotypes(self) -> tuple[str, ...]:
        """All stereotype attributes (unique, in class order)."""
        return tuple(dict.fromkeys(w for c in self.classes for w in c.stereotypes))

    @property
    def attributes(self) -> tuple[str, ...]:
        """Stereotypes, then human controls, then neutral controls (unique)."""
        words = list(self.stereotypes)
        for group in CONTROL_GROUPS:
            words.extend(self.controls.get(group, ()))
        return tuple(dict.fromkeys(words))

    @property
    def all_words(self) -> tuple[str, ...]:
        """Every word the list needs from an embedding."""
        return tuple(dict.fromkeys(self.protected_words + self.attributes))

    def class_of(self, protected_word: str) -> str:
        """Return the protected class of `protected_word`."""
        for c in self.classes:
            if protected_word in c.protected_words:
                return c.name
        raise WordListError(f"{protected_word!r} is not a protected word of {self.name!r}")

    def parts(self) -> dict[str, tuple[str, ...]]:
        """Return every named part (``protected:<class>``, ``stereotypes:<class>``, controls)."""
        out = {}
        for c in self.classes:
            out[f"protected:{c.name}"] = c.protected_words
            out[f"stereotypes:{c.name}"] = c.stereotypes
        for group, words in self.controls.items():
            out[f"control:{group}"] = words
        return out

    def weat_sets(self) -> WeatSets:
        """X, Y (protected words) and A, B (stereotypes) of a two-class list."""
        if len(self.classes) != 2:
            raise WordListError(
                f"word list {self.name!r} has {len(self.classes)} classes; WEAT needs exactly 2"
            )
        c1, c2 = self.classes
        return WeatSets(
            c1.protected_words,
            c2.protected_words,
            c1.stereotypes,
            c2.stereotypes,
            names=(c1.name, c2.name, c1.attribute_label or f"{c1.name} attributes",
                   c2.attribute_label or f"{c2.name} attributes"),
        )

    def restrict(self, keep: set[str]) -> WordList:
        """Return a copy without the words not in `keep` (e.g. after dropping OOV words)."""
        classes = tuple(
            ProtectedClass(
                c.name,
                tuple(w for w in c.protected_words if w in keep),
                tuple(w for w in c.stereotypes if w in keep),
                c.attribute_label,
            )
            for c in self.classes
        )
        controls = {g: tuple(w for w in ws if w in keep) for g, ws in self.controls.items()}
        sets = tuple(tuple(s) for s in self.definite_sets if all(w in keep for w in s))
        return WordList(self.name, classes, controls, sets, self.description,
                        dict(self.provenance), self.path)

    def summary(self) -> dict:
        """Return counts per part, for listings."""
        return {
            "name": self.name,
            "classes": {c.name: {"protected_words": len(c.protected_words),
                                 "stereotypes": len(c.stereotypes)} for c in self.classes},
            "controls": {g: len(w) for g, w in self.controls.items()},
            "definite_sets": len(self.definite_sets),
            "description": self.description,
            "path": self.path,
        }

    def _repr_html_(self) -> str:
        return _wordlist_html(self)

    def __repr__(self) -> str:
        return _wordlist_repr(self)


def _validate(wl: WordList) -> None:
    where = wl.path or wl.name
    if not wl.classes:
        raise WordListError(f"{where}: a word list needs at least one protected class")
    seen_protected: dict[str, str] = {}
    seen_stereo: dict[str, str] = {}
    for c in wl.classes:
        if not c.protected_words:
            raise WordListError(f"{where}: class {c.name!r} has no protected words")
        for w in c.protected_words:
            if w in seen_protected:
                raise WordListError(
                    f"{where}: protected word {w!r} is in classes {seen_protected[w]!r} "
                    f"and {c.name!r}"
                )
            seen_protected[w] = c.name
        for w in c.stereotypes:
            if w in seen_stereo and seen_stereo[w] != c.name:
                raise WordListError(
                    f"{where}: stereotype {w!r} is in classes {seen_stereo[w]!r} and {c.name!r}"
                )
            seen_stereo[w] = c.name
    for group, words in wl.controls.items():
        if group not in CONTROL_GROUPS:
            raise WordListError(
                f"{where}: unknown control group {group!r}; valid: {', '.join(CONTROL_GROUPS)}"
            )
        clash = sorted(set(words) & set(seen_stereo))
        if clash:
            raise WordListError(
                f"{where}: control group {group!r} repeats stereotype(s) {', '.join(clash)}"
            )
    for group, words in wl.controls.items():
        clash = sorted(set(words) & set(seen_protected))
        if clash:
            raise WordListError(
                f"{where}: control group {group!r} repeats protected word(s) "
                f"{', '.join(map(repr, clash))} (a word compared with itself has distance 0)"
            )
    clash = sorted(set(seen_stereo) & set(seen_protected))
    if clash:
        w = clash[0]
        raise WordListError(
            f"{where}: {w!r} is a protected word of class {seen_protected[w]!r} and a "
            f"stereotype of class {seen_stereo[w]!r}"
            + (f" (and {len(clash) - 1} more: {', '.join(clash[1:6])})" if len(clash) > 1 else "")
            + "; a word compared with itself has distance 0"
        )
    if set(wl.controls.get("human", ())) & set(wl.controls.get("none", ())):
        both = sorted(set(wl.controls["human"]) & set(wl.controls["none"]))
        raise WordListError(f"{where}: word(s) in both control groups: {', '.join(both)}")
    _check_spellings(wl, where)
    for s in wl.definite_sets:
        if len(s) < 2:
            raise WordListError(f"{where}: definite set {list(s)} needs at least two words")
        unknown = [w for w in s if w not in seen_protected]
        if unknown:
            raise WordListError(
                f"{where}: definite set {list(s)} has word(s) that are not protected words: "
                f"{', '.join(unknown)}"
            )


_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u2060"
                                "\u2061\u2062\u2063\u2064\ufeff"))


def spelling_key(word: str) -> str:
    """Return the word as read: NFKC form, invisible format characters removed, case kept.

    Two words of a list with the same key (``"café"`` in NFC and NFD, ``"ｊｅｗ"`` and
    ``"jew"``, ``"jew\u200d"`` and ``"jew"``) would be one word to a reader and two to an
    embedding.
    """
    return unicodedata.normalize("NFKC", word).translate(_INVISIBLE)


def _check_spellings(wl: WordList, where: str) -> None:
    seen: dict[str, str] = {}
    for word in wl.all_words:
        if word.isascii():
            key = word
        else:
            key = spelling_key(word)
        other = seen.setdefault(key, word)
        if other != word:
            raise WordListError(
                f"{where}: {other!r} and {word!r} are one word in two Unicode spellings "
                f"({_spelling_note(other, word)}); keep the one the embedding uses")


def _spelling_note(a: str, b: str) -> str:
    notes = []
    for w in (a, b):
        if w.translate(_INVISIBLE) != w:
            notes.append(f"{w!r} has invisible characters")
        elif unicodedata.normalize("NFC", w) != w:
            notes.append(f"{w!r} is not in NFC form")
        elif unicodedata.normalize("NFKC", w) != w:
            notes.append(f"{w!r} has compatibility (e.g. fullwidth) characters")
    return "; ".join(notes) or "same NFKC form"


# -- files -----------------------------------------------------------------------
def _word_tuple(value, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(w, str) and w.strip() for w in value):
        raise WordListError(f"{where}: {key} must be a list of non-empty strings")
    words = [w.strip() for w in value]
    inner = [w for w in words if _SPACE.search(w)]
    if inner:
        raise WordListError(f"{where}: {key} has word(s) with whitespace inside: "
                            f"{', '.join(map(repr, inner[:5]))} (an embedding word has none)")
    counts = Counter(words)  # linear: 500k words in well under a second
    dupes = sorted(w for w, n in counts.items() if n > 1)
    if dupes:
        raise WordListError(f"{where}: {key} repeats word(s) {', '.join(map(repr, dupes[:20]))}"
                            + (f" and {len(dupes) - 20} more" if len(dupes) > 20 else "")
                            + " (after removing surrounding whitespace)")
    return tuple(words)


def default_controls() -> dict[str, tuple[str, ...]]:
    """Return the shipped control groups of Dobrzeniecka & Urbaniak (85 human, 226 neutral)."""
    path = shipped_dir("wordlists") / "controls.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {g: _word_tuple(data[g], str(path), g) for g in CONTROL_GROUPS}


def _from_mapping(data: dict, where: str) -> WordList:
    # "templates": sentence templates for encoders, read by bayesbias.encoders
    known = {"name", "description", "provenance", "classes", "controls", "definite_sets",
             "templates"}
    unknown = set(data) - known
    if unknown:
        raise WordListError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(sorted(known))}"
        )
    classes_raw = data.get("classes")
    if not isinstance(classes_raw, dict) or not classes_raw:
        raise WordListError(f"{where}: needs a [classes.<name>] table for each protected class")
    classes = []
    for cname, spec in classes_raw.items():
        if not isinstance(spec, dict) or "protected_words" not in spec:
            raise WordListError(f"{where}: class {cname!r} needs 'protected_words'")
        extra = set(spec) - {"protected_words", "stereotypes", "attribute_label"}
        if extra:
            raise WordListError(f"{where}: class {cname!r} has unknown key(s) {sorted(extra)}")
        if not isinstance(spec.get("attribute_label", ""), str):
            raise WordListError(f"{where}: classes.{cname}.attribute_label must be a string")
        classes.append(ProtectedClass(
            cname,
            _word_tuple(spec["protected_words"], where, f"classes.{cname}.protected_words"),
            _word_tuple(spec.get("stereotypes", []), where, f"classes.{cname}.stereotypes"),
            spec.get("attribute_label"),
        ))
    controls = {}
    raw_controls = data.get("controls", {})
    if not isinstance(raw_controls, dict):
        raise WordListError(f"{where}: [controls] must be a table")
    shipped = None
    for group, value in raw_controls.items():
        if value == "default":
            shipped = shipped or default_controls()
            if group not in shipped:
                raise WordListError(f"{where}: no shipped control group {group!r}")
            controls[group] = shipped[group]
        else:
            controls[group] = _word_tuple(value, where, f"controls.{group}")
    sets = tuple(
        _word_tuple(s, where, "definite_sets") for s in data.get("definite_sets", [])
    )
    if not isinstance(data.get("provenance", {}), dict):
        raise WordListError(f"{where}: [provenance] must be a table of key = \"text\" lines")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str):
            raise WordListError(f"{where}: {key} must be a string")
    return WordList(
        name=str(data.get("name") or Path(where).stem),
        classes=tuple(classes),
        controls=controls,
        definite_sets=sets,
        description=str(data.get("description", "")),
        provenance=dict(data.get("provenance", {})),
        path=where,
    )


def available_wordlists() -> dict[str, Path]:
    """Shipped word lists by name (the controls file is not a topic)."""
    root = shipped_dir("wordlists")
    return {p.stem: p for p in sorted(root.glob("*.toml")) if p.stem != "controls"}


def load_wordlist(name_or_path) -> WordList:
    """Load a shipped word list by name (e.g. ``"religion"``) or a TOML file by path."""
    if isinstance(name_or_path, WordList):
        return name_or_path
    shipped = available_wordlists()
    path = shipped.get(str(name_or_path)) or Path(name_or_path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is None or stat.S_ISDIR(mode):
        raise WordListError(
            f"word list {str(name_or_path)!r} is neither a shipped list "
            f"({', '.join(shipped)}) nor an existing file"
        )
    if not stat.S_ISREG(mode):
        raise WordListError(f"{path}: not a regular file (a device, FIFO or socket)")
    if os.stat(path).st_size > _MAX_TOML_BYTES:
        raise WordListError(f"{path}: larger than {_MAX_TOML_BYTES >> 20} MiB; not a word list")
    return _from_mapping(read_toml(path, WordListError), str(path))


#: Largest word-list or spec file read (a 500k-word list is about 10 MB).
_MAX_TOML_BYTES = 256 << 20


def read_toml(path, error=WordListError) -> dict:
    """Read a TOML file; any failure (decoding, syntax, nesting, permission) raises `error`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: not valid TOML: nested too deeply") from None


# -- how it shows itself (the card kit: bayesbias.display) --------------------


def _wordlist_html(wl) -> str:
    """HTML card of a :class:`~bayesbias.wordlists.WordList` (the words, per part)."""
    import pandas as pd

    rows = [{"part": part, "words": len(words), "list": ", ".join(words)}
            for part, words in wl.parts().items()]
    return card(f"Word list: {wl.name}", wl.path or "", wl.description,
                tables=[("words per part", pd.DataFrame(rows))])


def _wordlist_repr(wl) -> str:
    """Short repr of a WordList."""
    classes = ", ".join(f"{c.name} {len(c.protected_words)}" for c in wl.classes)
    controls = ", ".join(f"{g} {len(w)}" for g, w in wl.controls.items())
    return (f"<WordList {wl.name!r}: classes {classes}; {len(wl.stereotypes)} stereotypes"
            + (f"; controls {controls}" if controls else "") + ">")
