"""Word vectors from a sentence encoder, three ways, and the corpus contexts they use.

``how="word"``
    The sentence embedding of the word alone (the text ``"nurse"``).
``how="templates"``
    The mean sentence embedding over semantically bleached templates (SEAT, May et al.
    2019): ``"This is a nurse."``, ``"The nurse is here."``, ... It describes sentences
    about the word, not the word itself.
``how="contexts"``
    The mean contextual vector of the word's own sub-word tokens over up to ``contexts``
    corpus sentences that contain it, drawn with a seed.

:class:`EncoderSource` bundles these choices; :func:`bayesbias.embeddings.load_embedding`
accepts one in place of a file, so every command that reads an embedding reads an encoder.
"""

from __future__ import annotations

import gzip
import os
import re
import tomllib
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._atomic import shipped_dir
from ..config import defaults
from ..inputs.embeddings import Embedding
from ..inputs.wordlists import load_wordlist
from ..progress import progress
from .model import Encoder, EncoderError, load_encoder

__all__ = [
    "HOWS",
    "Templates",
    "EncoderSource",
    "read_corpus",
    "iter_corpus",
    "find_contexts",
    "template_vectors",
]

#: Corpus name of the shipped demonstration corpus (the toxicity madlibs sentences).
MADLIBS = "madlibs"
#: The ways of turning a word into a vector (see the module docs).
HOWS = ("word", "templates", "contexts")
_TOKEN = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_PRONOUN_GROUPS = {"he": "subject_pronoun", "she": "subject_pronoun",
                   "him": "object_pronoun", "her": "object_pronoun",
                   "his": "possessive_pronoun", "hers": "possessive_pronoun"}


# -- templates ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Templates:
    """Sentence templates: SEAT's groups and word categories, plus user choices.

    ``default`` is ``"seat"`` (SEAT's rule: the group follows the kind of word), a group
    name or a list of templates; ``words`` maps a word to a group name or a list.
    """

    groups: dict
    categories: dict
    default: str | tuple = "seat"
    words: dict = field(default_factory=dict)
    source: str = "SEAT (May et al. 2019)"

    @classmethod
    def shipped(cls) -> Templates:
        """SEAT's bleached templates (``wordlists/seat/templates.toml``)."""
        path = shipped_dir("wordlists") / "seat" / "templates.toml"
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        groups = {k: tuple(v) for k, v in data["groups"].items()}
        cats = {k: frozenset(v) for k, v in data["categories"].items()}
        return cls(groups, cats)

    @classmethod
    def from_wordlist(cls, wordlist) -> Templates:
        """Shipped templates with the ``[templates]`` table of a word-list TOML applied.

        ``[templates]`` may hold ``default`` (``"seat"``, a group name or a list of templates
        with ``{term}`` and optionally ``{article}``) and a ``[templates.words]`` table
        mapping words to a group name or a list of templates.
        """
        base = cls.shipped()
        path = getattr(wordlist, "path", None)
        if not path or not Path(path).is_file():
            return base
        data = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("templates")
        if data is None:
            return base
        where = f"{path}: [templates]"
        if not isinstance(data, dict) or set(data) - {"default", "words"}:
            raise EncoderError(f"{where} takes only 'default' and a [templates.words] table")
        default = base._check_choice(data.get("default", "seat"), f"{where} default")
        words = data.get("words", {})
        if not isinstance(words, dict):
            raise EncoderError(f"{where}.words must be a table of word = group or list")
        words = {str(w): base._check_choice(v, f"{where}.words.{w}") for w, v in words.items()}
        return cls(base.groups, base.categories, default, words, f"SEAT + {path}")

    @classmethod
    def from_wordlists(cls, wordlists) -> Templates:
        """Shipped templates with the ``[templates]`` of several word lists (later wins)."""
        out = cls.shipped()
        for item in wordlists:
            try:
                wl = load_wordlist(item)
            except Exception:  # noqa: BLE001 - a bad list is reported where it is read
                continue
            t = cls.from_wordlist(wl)
            if t.source != out.source or t.words:
                default = t.default if t.default != "seat" else out.default
                out = cls(out.groups, out.categories, default, {**out.words, **t.words},
                          t.source if out.source == cls.shipped().source
                          else f"{out.source}; {t.source}")
        return out

    def _check_choice(self, value, where: str):
        if isinstance(value, str):
            if value != "seat" and value not in self.groups:
                raise EncoderError(f"{where}: unknown template group {value!r}; valid: seat, "
                                   f"{', '.join(self.groups)}")
            return value
        if (isinstance(value, list) and value
                and all(isinstance(t, str) and "{term}" in t for t in value)):
            for t in value:
                try:
                    t.format(term="x", article="a")
                except (KeyError, IndexError, ValueError) as exc:
                    raise EncoderError(f"{where}: bad template {t!r} ({exc})") from None
            return tuple(value)
        raise EncoderError(f"{where}: give a group name or a list of templates containing "
                           "{term}")

    def sentences(self, word: str) -> list[str]:
        """Sentences made from `word` (its own choice, else the default)."""
        choice = self.words.get(word, self.default)
        if choice == "seat":
            return self.seat_sentences(word)
        templates = self.groups[choice] if isinstance(choice, str) else choice
        return [_fill(t, word) for t in templates]

    def seat_sentences(self, term: str) -> list[str]:
        """SEAT's sentences for `term`: the group follows the kind of word (May et al.)."""
        cats = self.categories
        g = self.groups
        if term[:1].isupper() and not term.endswith("American") and term != term.upper():
            groups = [(g["name"], term)]
        elif term in cats["adjective"]:
            groups = [(g["adjective"], term)]
        elif term in cats["verb"]:
            groups = [(g["verb"], term)]
        elif term in cats["mass_noun"]:
            groups = [(g["mass_noun"], term)]
        elif term in _PRONOUN_GROUPS:
            groups = [(g[_PRONOUN_GROUPS[term]], term)]
        else:
            if term in cats["plural_noun"]:
                singular, plural = _singular(term), term
            else:
                singular, plural = term, _plural(term)
            person = bool(set(_TOKEN.findall(term)) & cats["person_words"])
            groups = [(g["singular_noun"] + g["singular_person" if person else "singular_thing"],
                       singular),
                      (g["plural_noun"] + g["plural_person" if person else "plural_thing"],
                       plural)]
        return [_fill(t, w) for templates, w in groups for t in templates]


def _article(term: str) -> str:
    vowel = term[:1].lower() in "aeiou" or term.startswith("honor")
    exception = term.startswith("European") or term.startswith("Ukrainian")
    return "an" if vowel and not exception else "a"


def _fill(template: str, term: str) -> str:
    s = template.format(term=term, article=_article(term))
    return s[:1].upper() + s[1:]


def _singular(word: str) -> str:
    if word == "children":
        return "child"
    return word[:-1] if word.endswith("s") else word


def _plural(word: str) -> str:
    for man, men in (("woman", "women"), ("man", "men")):
        new = re.sub(rf"\b{man}\b", men, word)
        if new != word:
            return new
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("ch", "sh", "s")):
        return word + "es"
    return word + "s"


def template_vectors(encoder: Encoder, words, templates: Templates | None = None
                     ) -> tuple[np.ndarray, dict]:
    """Mean sentence embedding of each word over its templates.

    Returns
    -------
    vectors : ndarray, shape (len(words), dim)
    sentences : dict of {str: list of str}
        The sentences of each word.
    """
    templates = templates or Templates.shipped()
    sentences = {w: templates.sentences(w) for w in words}
    flat = [s for w in words for s in sentences[w]]
    vecs = encoder.encode(flat)
    out, pos = np.empty((len(words), encoder.dim), dtype=np.float32), 0
    for i, w in enumerate(words):
        k = len(sentences[w])
        out[i] = vecs[pos:pos + k].mean(axis=0)
        pos += k
    return out, sentences


# -- corpus contexts ---------------------------------------------------------------------
#: Longest corpus line (a sentence); a longer one is refused, naming its line.
MAX_SENTENCE_BYTES = 1 << 20
#: Most text kept from a corpus: the sentences that contain a word of the study (repeats
#: once). The corpus itself is streamed, so its size costs time only.
MAX_KEPT_BYTES = 512 << 20
_READ_BYTES = 1 << 20
#: Largest decompressed / compressed size of a gzip corpus (text: 3 to 20; a stream of
#: blank lines: 1000), above 64 MiB decompressed.
MAX_GZIP_RATIO = 200


def iter_corpus(path):
    """Stream the sentences of a corpus file: one per line, plain or gzip, blanks skipped.

    Memory and time are bounded: the file is read in blocks, each line at most
    :data:`MAX_SENTENCE_BYTES` long, and a gzip file may expand at most
    :data:`MAX_GZIP_RATIO`-fold.

    Raises
    ------
    EncoderError
        The file is missing, not a regular file, unreadable, not UTF-8 (naming the line),
        or has a line longer than the bound.
    """
    path = Path(path)
    if not path.is_file():
        raise EncoderError(f"corpus {path}: no such file" if not path.exists() else
                           f"corpus {path}: not a regular file")
    lineno = 0
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if gz else raw
            limit = max(MAX_GZIP_RATIO * os.fstat(raw.fileno()).st_size, 64 << 20) if gz \
                else None
            buf, total = b"", 0
            while True:
                chunk = fh.read(_READ_BYTES)
                total += len(chunk)
                if limit is not None and total > limit:
                    raise EncoderError(f"corpus {path}: expands more than {MAX_GZIP_RATIO}-fold "
                                       "when decompressed; not a text corpus (a compression "
                                       "bomb?)")
                if chunk and not buf and not chunk.strip():  # a blank block: skipped in C
                    lineno += chunk.count(b"\n")
                    continue
                lines = (buf + chunk).split(b"\n")
                buf = lines.pop() if chunk else b""  # at the end the last piece is a line
                for line in lines:
                    lineno += 1
                    if len(line) > MAX_SENTENCE_BYTES:
                        raise _too_long(path, lineno)
                    text = line.decode("utf-8").strip()
                    if text:
                        yield text
                if len(buf) > MAX_SENTENCE_BYTES:
                    raise _too_long(path, lineno + 1)
                if not chunk:
                    return
    except UnicodeDecodeError as exc:
        raise EncoderError(f"corpus {path}, line {lineno}: not UTF-8 text ({exc.reason} at "
                           f"byte {exc.start} of the line)") from None
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise EncoderError(f"corpus {path}: cannot read ({exc})") from None


def _too_long(path, lineno: int) -> EncoderError:
    return EncoderError(f"corpus {path}, line {lineno}: longer than "
                        f"{MAX_SENTENCE_BYTES >> 20} MiB; one sentence per line expected")


def read_corpus(path) -> list[str]:
    """Sentences of a corpus file: one per line, plain text or gzip; blanks and repeats dropped.

    The whole corpus is kept in memory: :class:`EncoderSource` streams it instead
    (:func:`iter_corpus`).

    Raises
    ------
    EncoderError
        The file is missing, unreadable, not UTF-8 or has no sentence.
    """
    sentences = list(dict.fromkeys(iter_corpus(path)))
    if not sentences:
        raise EncoderError(f"corpus {path}: no sentences (one sentence per line expected)")
    return sentences


def _word_rng(seed: int, word: str) -> np.random.Generator:
    """Return a stream per (seed, word): a word's draws do not depend on the others."""
    return np.random.default_rng([int(seed), zlib.crc32(word.encode("utf-8"))])


def find_contexts(sentences, words, n: int, seed: int, *, source: str = "corpus"
                  ) -> dict[str, list[tuple[str, tuple]]]:
    """Up to `n` corpus sentences per word, drawn without replacement with `seed`.

    A word matches a whole token, case-insensitively (``"nurse"`` matches ``"Nurse"`` but not
    ``"nurses"``); its first occurrence in a sentence is used. `sentences` may be any
    iterable (a stream, read once); only the sentences that contain a word are kept
    (a repeated sentence counts once), at most :data:`MAX_KEPT_BYTES` of them.

    Returns
    -------
    dict of {str: list of (sentence, (start, end))}
        Words that occur nowhere map to an empty list.

    Raises
    ------
    EncoderError
        The sentences that contain the words exceed :data:`MAX_KEPT_BYTES`, or there is
        no sentence at all.
    """
    words = list(words)
    wanted = {w.lower(): w for w in words}
    # words that are not one token (rare): case-insensitive search on word boundaries
    patterns = {w: re.compile(rf"(?<!\w){re.escape(w)}(?!\w)", re.IGNORECASE)
                for w in words if not _TOKEN.fullmatch(w)}
    hits: dict[str, list[tuple[str, tuple]]] = {w: [] for w in words}
    seen: dict[str, set] = {w: set() for w in words}
    kept: set[str] = set()
    kept_bytes = 0
    any_sentence = False
    for s in sentences:
        any_sentence = True
        found = {}
        for m in _TOKEN.finditer(s):
            w = wanted.get(m.group(0).lower())
            if w is not None and w not in found:
                found[w] = m.span()
        for w, pat in patterns.items():
            m = pat.search(s)
            if m:
                found.setdefault(w, m.span())
        for w, span in found.items():
            if s not in seen[w]:
                seen[w].add(s)
                hits[w].append((s, span))
        if found and s not in kept:
            kept.add(s)
            kept_bytes += len(s)
            if kept_bytes > MAX_KEPT_BYTES:
                raise EncoderError(
                    f"{source}: the sentences that contain the words exceed "
                    f"{MAX_KEPT_BYTES >> 20} MiB; give a smaller corpus")
    if not any_sentence:
        raise EncoderError(f"{source}: no sentences (one sentence per line expected)")
    out = {}
    for w in words:
        idx = hits[w]
        if len(idx) > n:
            pick = _word_rng(seed, w).choice(len(idx), size=n, replace=False)
            idx = [idx[j] for j in sorted(pick)]
        out[w] = list(idx)
    return out


# -- the embedding source ----------------------------------------------------------------
@dataclass
class EncoderSource:
    """An encoder used where an embedding file is expected.

    Parameters
    ----------
    name : str
        Encoder name or model folder (see :func:`~bayesbias.encoders.load_encoder`).
    how : {"word", "templates", "contexts"}
        How a word becomes a vector (module docs).
    corpus : str, optional
        Corpus file for ``how="contexts"`` (one sentence per line, plain or .gz), or
        ``"madlibs"`` for the shipped toxicity madlibs sentences.
    contexts : int
        Sentences drawn per word.
    seed : int
        Seed of the context draws.
    templates : Templates, optional
        Templates for ``how="templates"`` (default: SEAT's, with a word list's own).
    cache : bool
        Use the on-disk vector cache.
    backend : {"auto", "onnxruntime", "sentence-transformers"}
        What runs the encoder (:func:`~bayesbias.encoders.load_encoder`).
    """

    name: str
    how: str = "templates"
    corpus: str | None = None
    contexts: int = 20
    seed: int = field(default_factory=lambda: defaults.seed)
    templates: Templates | None = None
    cache: bool = True
    batch_size: int = 64
    backend: str = "auto"
    _encoder: Encoder | None = field(default=None, repr=False, compare=False)
    _corpus: list | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.how not in HOWS:
            raise EncoderError(f"unknown way {self.how!r} to get word vectors; valid: "
                               f"{', '.join(HOWS)}")
        if self.how == "contexts" and not self.corpus:
            raise EncoderError("word vectors from contexts need a corpus (--corpus FILE)")
        if int(self.contexts) < 1:
            raise EncoderError(f"contexts must be at least 1, got {self.contexts}")

    def __str__(self) -> str:
        extra = (f", {self.contexts} contexts per word from {self.corpus}, seed {self.seed}"
                 if self.how == "contexts" else "")
        return f"encoder {self.name} ({self.how}{extra})"

    def to_dict(self) -> dict:
        """Plain JSON data: what the vectors were made from."""
        return {"encoder": self.name, "how": self.how, "corpus": self.corpus,
                "contexts": int(self.contexts) if self.how == "contexts" else None,
                "seed": int(self.seed), "cache": bool(self.cache), "backend": self.backend}

    @property
    def encoder(self) -> Encoder:
        """The loaded encoder (loaded once)."""
        if self._encoder is None:
            self._encoder = load_encoder(self.name, cache=self.cache,
                                         batch_size=self.batch_size, backend=self.backend,
                                         lazy=True)
        return self._encoder

    def sentences(self):
        """Return the corpus sentences: the shipped list, or a stream of a corpus file.

        ``corpus="madlibs"`` is the shipped demonstration corpus (the toxicity madlibs),
        kept in memory; a file is streamed on each call (:func:`iter_corpus`).
        """
        if self.corpus == MADLIBS:
            if self._corpus is None:
                from ..inputs.datasets import madlibs

                self._corpus = list(dict.fromkeys(madlibs()["phrase"].astype(str)))
            return self._corpus
        return iter_corpus(self.corpus)

    def word_contexts(self, words) -> dict:
        """Contexts of each word (see :func:`find_contexts`)."""
        return find_contexts(self.sentences(), list(words), int(self.contexts), self.seed,
                             source=f"corpus {self.corpus}")

    def context_vectors(self, words) -> dict[str, np.ndarray]:
        """Return the contextual vectors of each word, one row per drawn context.

        Words without a context (or whose contexts are all cut off by the model's maximum
        length) map to an empty array.
        """
        ctx = self.word_contexts(words)
        flat = [(w, s, sp) for w in words for s, sp in ctx[w]]
        vecs = self.encoder.token_vectors([s for _, s, _ in flat], [sp for _, _, sp in flat])
        out = {w: [] for w in words}
        for (w, _, _), v in zip(flat, vecs, strict=True):
            if np.all(np.isfinite(v)):
                out[w].append(v)
        return {w: np.vstack(v) if v else np.empty((0, self.encoder.dim), np.float32)
                for w, v in out.items()}

    def word_vectors(self, words) -> Embedding:
        """Return an :class:`~bayesbias.embeddings.Embedding` of `words` from the encoder.

        Words without a vector (``how="contexts"``: no sentence of the corpus contains
        them) are left out, so :func:`~bayesbias.embeddings.lookup` reports them.
        """
        if words is None:
            raise EncoderError("an encoder gives vectors for the words of a study only; it "
                               "cannot be read whole like an embedding file")
        words = list(dict.fromkeys(words))
        enc = self.encoder
        progress.info("%s: vectors for %d words", self, len(words))
        meta = {"encoder": enc.describe(), "how": self.how, "dim": enc.dim,
                "format": "encoder", "kept": len(words), "path": str(enc.path)}
        if self.how == "word":
            vectors = enc.encode(words)
            kept = words
        elif self.how == "templates":
            vectors, sentences = template_vectors(enc, words, self.templates)
            kept = words
            meta["templates"] = (self.templates or Templates.shipped()).source
            meta["sentences"] = sum(map(len, sentences.values()))
        else:
            ctx = self.context_vectors(words)
            kept = [w for w in words if len(ctx[w])]
            vectors = (np.vstack([ctx[w].mean(axis=0) for w in kept]) if kept
                       else np.empty((0, enc.dim), np.float32))
            meta.update(corpus=str(self.corpus), contexts=int(self.contexts), seed=self.seed,
                        contexts_used={w: len(ctx[w]) for w in words})
        meta["kept"] = len(kept)
        return Embedding(tuple(kept), vectors, source=str(self), meta=meta)
