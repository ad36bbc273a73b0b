"""Hostile corpus, class 5: encoder folders and the encoder vector cache.

Pickle-format weights anywhere a module is read from, broken or truncated safetensors,
checkpoints whose names do not match, folders without a tokenizer, ``modules.json`` that
escapes the folder or names a foreign class, and a cache key that must change with any
byte of any weight file (symbolic links followed). Every refusal: CLI exit 2, one line
naming the folder and the file, no traceback.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import shutil
import struct

import numpy as np
import pytest
from hostile import assert_clean_error, run_main

from bayesbias.encoders.folder import (
    PICKLE_SUFFIXES,
    ModelFolder,
    ModelFolderError,
    check_model_folder,
    model_digest,
)

HAVE_EXTRA = all(importlib.util.find_spec(m) is not None
                 for m in ("torch", "transformers", "sentence_transformers", "safetensors"))
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="sentence-transformers / torch absent "
                                 "(extra [transformers] or [test])")
WORDS = list(dict.fromkeys(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "this", "is", "a", "the", "nurse", "doctor",
     "man", "woman", "he", "she", "math", "art"] + [chr(c) for c in range(97, 123)]))


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    """A random 2-layer BERT saved as a sentence-transformers folder with a Dense module."""
    if not HAVE_EXTRA:
        pytest.skip("sentence-transformers / torch absent (extra [transformers] or [test])")
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        import sentence_transformers.sentence_transformer.modules as st_models
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers import models as st_models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("hostile-encoder")
    hf = root / "hf"
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:  # transformers 5
        tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(WORDS)}, do_lower_case=True)
    else:  # transformers 4
        vocab = root / "vocab.txt"
        vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
        tok = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    BertModel(config).eval().save_pretrained(hf, safe_serialization=True)
    tok.save_pretrained(hf)
    st = root / "st"
    model = SentenceTransformer(modules=[st_models.Transformer(str(hf), max_seq_length=32),
                                         st_models.Pooling(32, pooling_mode="mean"),
                                         st_models.Dense(32, 8), st_models.Normalize()],
                                device="cpu")
    model.save(str(st), create_model_card=False)
    return st


def _copy(src, dest):
    shutil.copytree(src, dest, symlinks=True)
    return dest


def _seat(capsys, folder, *extra):
    return run_main(capsys, ["seat", "--encoder", folder, "--wordlist", "weat7",
                             "--permutations", "20", "--quiet", *extra])


# -- pickle guard ------------------------------------------------------------------------
@needs_extra
def test_pickled_bin_beside_an_empty_safetensors_is_refused(tiny_st, tmp_path, capsys):
    """Today's guard asked only whether some .safetensors exists: the pickle was loaded."""
    import torch
    from safetensors.torch import load_file

    d = _copy(tiny_st, tmp_path / "m")
    state = load_file(d / "model.safetensors")
    (d / "model.safetensors").unlink()
    torch.save(state, d / "pytorch_model.bin")
    (d / "unused.safetensors").write_bytes(b"")
    code, _, err = _seat(capsys, d)
    assert_clean_error(code, err, str(d), "pytorch_model.bin", "pickle")


@needs_extra
def test_pickled_module_folder_is_refused(tiny_st, tmp_path, capsys):
    """A 2_Dense folder with only a pytorch_model.bin beside a valid root: refused."""
    import torch
    from safetensors.torch import load_file

    d = _copy(tiny_st, tmp_path / "m")
    state = load_file(d / "2_Dense" / "model.safetensors")
    (d / "2_Dense" / "model.safetensors").unlink()
    torch.save(state, d / "2_Dense" / "pytorch_model.bin")
    code, _, err = _seat(capsys, d)
    assert_clean_error(code, err, str(d), "2_Dense/pytorch_model.bin")


@pytest.mark.parametrize("suffix", PICKLE_SUFFIXES)
@pytest.mark.parametrize("where", ["", "1_Pooling"])
def test_every_pickle_suffix_refused(tmp_path, suffix, where):
    """In the model folder and in every module folder (checked without torch)."""
    d = tmp_path / "m"
    (d / "1_Pooling").mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"}]))
    (d / where / f"weights{suffix}").write_bytes(b"\x80\x04K\x01.")  # pickle of 1
    with pytest.raises(ModelFolderError, match=f"weights\\{suffix}.*pickle"):
        check_model_folder(d)


@pytest.mark.parametrize(("entry", "match"), [
    ({"path": "../elsewhere", "type": "sentence_transformers.models.Dense"}, "leaves"),
    ({"path": "/etc", "type": "sentence_transformers.models.Dense"}, "leaves"),
    ({"path": "", "type": "os.system"}, "not a sentence-transformers module"),
    ({"path": "", "type": "sentence_transformers.x;import os"}, "not a sentence-transformers"),
    ({"path": 3, "type": "sentence_transformers.models.Dense"}, "string 'path'"),
])
def test_modules_json_cannot_leave_the_folder_or_name_foreign_classes(tmp_path, entry, match):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "modules.json").write_text(json.dumps([entry]))
    with pytest.raises(ModelFolderError, match=match):
        check_model_folder(d)


@needs_extra
@pytest.mark.parametrize("content", ['{"a": 1}', "[]", "not json", '"x"'])
def test_modules_json_not_a_list(tmp_path, capsys, content):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "modules.json").write_text(content)
    code, _, err = _seat(capsys, d)
    assert_clean_error(code, err, str(d), "modules.json")


# -- broken checkpoints -------------------------------------------------------------------
def _header(tensors: dict) -> bytes:
    raw = json.dumps(tensors).encode()
    return struct.pack("<Q", len(raw)) + raw


def _safetensors_cases():
    ok = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    return {
        "garbage": b"\x00" * 100 + b"garbage",
        "too-short": b"\x01\x02",
        "header-beyond-file": struct.pack("<Q", 10**9) + b"{}",
        "not-json": struct.pack("<Q", 4) + b"\xff\xfe{}",
        "no-tensors": _header({}),
        "negative-dim": _header({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})
        + b"\0" * 8,
        "truncated": _header(ok) + b"\0" * 4,
        "padded": _header(ok) + b"\0" * 12,
        "bad-dtype": _header({"w": {"dtype": "PICKLE", "shape": [2], "data_offsets": [0, 8]}})
        + b"\0" * 8,
        "shape-vs-bytes": _header({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})
        + b"\0" * 8,
    }


@pytest.mark.parametrize("case", list(_safetensors_cases()))
def test_malformed_safetensors_refused_naming_the_file(tmp_path, case):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "vocab.txt").write_text("a\n")
    (d / "model.safetensors").write_bytes(_safetensors_cases()[case])
    with pytest.raises(ModelFolderError, match=f"{d}: model.safetensors"):
        check_model_folder(d)


@needs_extra
@pytest.mark.parametrize("case", ["no-tensors", "wrong-names", "wrong-shape", "no-tokenizer",
                                  "truncated", "garbage", "empty-vocab", "ids-beyond-embedding",
                                  "broken-bpe"])
def test_broken_checkpoint_refused_not_randomly_initialised(tiny_st, tmp_path, capsys, case):
    """Today: random weights and a printed d with exit 0, or 'unexpected error' exit 1."""
    import torch
    from safetensors.torch import load_file, save_file

    d = _copy(tiny_st, tmp_path / "m")
    weights = d / "model.safetensors"
    state = load_file(weights)
    needle = "model.safetensors"
    if case == "no-tensors":
        save_file({}, weights)
    elif case == "wrong-names":
        save_file({f"x.{k}": v for k, v in state.items()}, weights)
    elif case == "wrong-shape":
        key = next(k for k in state if k.endswith("word_embeddings.weight"))
        state[key] = torch.zeros(3, 32)
        save_file(state, weights)
        needle = "word_embeddings.weight"
    elif case == "no-tokenizer":
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
            (d / f).unlink(missing_ok=True)
        needle = "no tokenizer"
    elif case == "truncated":
        weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    elif case == "garbage":
        weights.write_bytes(os.urandom(4096))
    elif case == "empty-vocab":  # a tokenizer that knows only its special tokens
        tok = json.loads((d / "tokenizer.json").read_text())
        tok["model"]["vocab"] = {k: v for k, v in tok["model"]["vocab"].items()
                                 if k.startswith("[")}
        (d / "tokenizer.json").write_text(json.dumps(tok))
        needle = "knows no words"
    elif case == "ids-beyond-embedding":  # token ids the model's embedding does not have
        tok = json.loads((d / "tokenizer.json").read_text())
        tok["model"]["vocab"]["extra"] = len(tok["model"]["vocab"]) + 5
        (d / "tokenizer.json").write_text(json.dumps(tok))
        needle = "embedding only"
    elif case == "broken-bpe":  # merges of tokens the vocabulary lacks, no [UNK]
        (d / "tokenizer.json").write_text(json.dumps({
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": None, "decoder": None,
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "vocab": {"a": 0, "aa": 1},
                      "merges": ["a a", "aa aa", "a aa"]}}))
        needle = "cannot load the model"
    code, out, err = _seat(capsys, d)
    assert_clean_error(code, err, str(d), needle)
    assert "p-value" not in out


def test_undefined_effect_size_gives_no_p_value():
    """Constant associations (all vectors equal): refused, not 'd = nan, p = 1'."""
    from bayesbias.comparators.weat import weat_from_similarities
    from bayesbias.errors import InputDataError

    sim = np.full((3, 4), 0.5)
    with pytest.raises(InputDataError, match="effect size is undefined"):
        weat_from_similarities(sim, sim, sim, sim)


# -- cache key -----------------------------------------------------------------------------
def _folder(root):
    return ModelFolder(root, [("transformers", root.resolve())])


def test_digest_changes_with_a_byte_in_the_middle_of_a_large_file(tmp_path):
    """Today's key read only the head and tail of files over 1 MiB."""
    d = tmp_path / "m"
    d.mkdir()
    blob = bytearray(os.urandom(3 << 20))
    (d / "model.safetensors").write_bytes(blob)
    before = model_digest(_folder(d))
    blob[len(blob) // 2] ^= 1
    (d / "model.safetensors").write_bytes(blob)
    assert model_digest(_folder(d)) != before


def test_digest_follows_symlinked_module_folders(tmp_path):
    d, shared = tmp_path / "m", tmp_path / "shared"
    d.mkdir()
    shared.mkdir()
    (shared / "model.safetensors").write_bytes(b"1" * 100)
    (d / "2_Dense").symlink_to(shared, target_is_directory=True)
    (d / "config.json").write_text("{}")
    before = model_digest(_folder(d))
    (shared / "model.safetensors").write_bytes(b"2" * 100)
    assert model_digest(_folder(d)) != before


def test_digest_survives_a_symlink_cycle(tmp_path):
    d = tmp_path / "m"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "loop").symlink_to(d, target_is_directory=True)
    (d / "config.json").write_text("{}")
    assert len(model_digest(_folder(d))) == 32


@needs_extra
def test_cache_never_answers_for_edited_weights(tiny_st, tmp_path):
    """Edit the Dense weights behind a symlinked module folder: cached == fresh vectors."""
    from safetensors.torch import load_file, save_file

    from bayesbias.encoders import load_encoder

    d = tmp_path / "m"
    _copy(tiny_st, d)
    shared = tmp_path / "dense"
    shutil.move(d / "2_Dense", shared)
    (d / "2_Dense").symlink_to(shared, target_is_directory=True)
    cache = tmp_path / "cache"
    texts = ["this is a nurse", "the man is a doctor"]
    first = load_encoder(d, cache_dir=cache).encode(texts)
    state = load_file(shared / "model.safetensors")
    state = {k: v * -1.5 if v.ndim == 2 else v for k, v in state.items()}
    save_file(state, shared / "model.safetensors")
    cached = load_encoder(d, cache_dir=cache).encode(texts)
    fresh = load_encoder(d, cache=False).encode(texts)
    np.testing.assert_allclose(cached, fresh, atol=1e-6)
    assert not np.allclose(cached, first)


@needs_extra
def test_good_folder_still_loads_and_hashes_everything(tiny_st, tmp_path):
    from bayesbias.encoders import load_encoder

    enc = load_encoder(tiny_st, cache_dir=tmp_path / "c")
    assert enc.encode(["this is a nurse"]).shape == (1, 8)
    assert enc.key == model_digest(check_model_folder(tiny_st))


@pytest.mark.parametrize("content", [b"not a database" * 100, b""])
def test_corrupt_cache_file_is_one_clean_error(tmp_path, content):
    from bayesbias.encoders.cache import CacheError, VectorCache

    path = tmp_path / "k.sqlite"
    path.write_bytes(content)
    cache = VectorCache(path)
    if content:
        with pytest.raises(CacheError, match=f"{path}.*--no-cache"):
            cache.get_many(["a"], 3)
    else:  # an empty file is a fresh database
        cache.put_many({"a": np.ones(3)})
        assert list(cache.get_many(["a"], 3)) == ["a"]


def test_cache_rows_of_the_wrong_size_or_non_finite_are_ignored(tmp_path):
    from bayesbias.encoders.cache import VectorCache

    cache = VectorCache(tmp_path / "k.sqlite")
    cache.put_many({"short": np.ones(2), "nan": np.array([1.0, np.nan, 2.0]),
                    "ok": np.ones(3)})
    assert set(cache.get_many(["short", "nan", "ok"], 3)) == {"ok"}


class PanicException(BaseException):
    """Stands for pyo3_runtime.PanicException (a Rust panic; not importable by name)."""


@needs_extra
def test_rust_panic_while_loading_or_encoding_is_one_line(tiny_st, tmp_path, monkeypatch,
                                                          capsys):
    """A cyclic BPE tokenizer panicked in Rust: 'unexpected error', exit 1, before."""
    import sentence_transformers

    from bayesbias.encoders import EncoderError, load_encoder

    enc = load_encoder(tiny_st, cache=False)

    def panic(*a, **k):
        raise PanicException("range end index 4 out of range for slice of length 2")

    monkeypatch.setattr(enc.model, "encode", panic)
    with pytest.raises(EncoderError, match=f"{tiny_st}: the tokenizer failed"):
        enc.encode(["this is a nurse"])
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", panic)
    code, _, err = _seat(capsys, tiny_st)
    assert_clean_error(code, err, str(tiny_st), "PanicException")


# -- the light route (onnxruntime, no PyTorch): the same guards ---------------------------
HAVE_LIGHT = all(importlib.util.find_spec(m) is not None
                 for m in ("tokenizers", "onnxruntime", "onnx"))
needs_light = pytest.mark.skipif(not HAVE_LIGHT, reason="extra [contextual] absent "
                                 "(tokenizers, onnxruntime, onnx)")


@pytest.fixture(scope="module")
def tiny_light(tmp_path_factory):
    """Return a tiny BERT written with numpy (no PyTorch) that the light route reproduces."""
    if not HAVE_LIGHT:
        pytest.skip("extra [contextual] absent")
    from test_encoders_light import _tiny_bert

    return _tiny_bert(tmp_path_factory.mktemp("hostile-light") / "tiny")


def _light_tensors(d):
    from bayesbias.encoders.folder import read_safetensors

    return {k: np.array(v) for k, v in read_safetensors(d / "model.safetensors", d).items()}


def _light_rewrite(d, tensors):
    from test_encoders_light import _write_safetensors

    _write_safetensors(d / "model.safetensors", tensors)


def _light_missing(d):
    t = _light_tensors(d)
    del t["encoder.layer.1.output.dense.weight"]
    _light_rewrite(d, t)


LIGHT_HOSTILE = {  # case: (edit of a good folder, words of the one error line)
    "pickle .bin beside the safetensors": (
        lambda d: (d / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01."),
        ["pytorch_model.bin", "pickle"]),
    "pickle in a module folder": (
        lambda d: (d / "1_Pooling" / "weights.pt").write_bytes(b"\x80\x04K\x01."),
        ["1_Pooling/weights.pt", "pickle"]),
    "safetensors with no tensors": (lambda d: _light_rewrite(d, {}), ["model.safetensors",
                                                                      "no tensors"]),
    "no matching names": (
        lambda d: _light_rewrite(d, {"x." + k: v for k, v in _light_tensors(d).items()}),
        ["lack BERT tensors"]),
    "a missing tensor": (_light_missing, ["encoder.layer.1.output.dense.weight"]),
    "no tokenizer": (lambda d: [(d / f).unlink() for f in ("tokenizer.json",
                                                           "tokenizer_config.json")],
                     ["no tokenizer"]),
    "garbage safetensors": (lambda d: (d / "model.safetensors").write_bytes(b"garbage" * 9),
                            ["model.safetensors", "not a safetensors file"]),
    "truncated safetensors": (
        lambda d: (d / "model.safetensors").write_bytes(
            (d / "model.safetensors").read_bytes()[:40_000]),
        ["model.safetensors", "truncated"]),
    "modules.json not a list": (lambda d: (d / "modules.json").write_text("{}"),
                                ["modules.json", "list"]),
    "tokenizer.json of another form": (
        lambda d: (d / "tokenizer.json").write_text('{"model": 3}'), ["tokenizer.json"]),
}


@needs_light
@pytest.mark.parametrize("case", list(LIGHT_HOSTILE))
def test_light_route_refuses_like_the_torch_route(tiny_light, tmp_path, capsys, case):
    """Issue 21 on the light route: exit 2, one line naming the folder and the file."""
    edit, words = LIGHT_HOSTILE[case]
    d = _copy(tiny_light, tmp_path / "m")
    edit(d)
    code, out, err = _seat(capsys, d, "--encoder-backend", "onnxruntime", "--no-cache")
    assert_clean_error(code, err, str(d), *words)
    assert "p =" not in out


@needs_light
def test_light_route_cache_never_answers_for_edited_weights(tiny_light, tmp_path):
    """One float in the middle of the weights changed: the cache key and the vectors too."""
    from bayesbias.encoders import load_encoder

    d = _copy(tiny_light, tmp_path / "m")
    cache = tmp_path / "cache"
    texts = ["this is a nurse", "the man is a doctor"]
    before = load_encoder(d, backend="onnxruntime", cache_dir=cache)
    first = before.encode(texts)
    t = _light_tensors(d)
    t["encoder.layer.0.intermediate.dense.weight"][7, 3] += 5.0
    _light_rewrite(d, t)
    after = load_encoder(d, backend="onnxruntime", cache_dir=cache)
    assert after.key != before.key
    fresh = load_encoder(d, backend="onnxruntime", cache=False).encode(texts)
    np.testing.assert_allclose(after.encode(texts), fresh, atol=1e-6)
    assert not np.allclose(fresh, first)


@needs_light
def test_light_route_names_unused_checkpoint_tensors(tiny_light, tmp_path, caplog):
    """Name an extra tensor (harmless) as sentence-transformers does.

    The good folder (pooler weights, as MiniLM's) loads without the warning.
    """
    import logging

    from bayesbias.encoders import load_encoder

    with caplog.at_level(logging.WARNING):
        load_encoder(tiny_light, backend="onnxruntime", cache=False)
    assert "not used" not in caplog.text
    d = _copy(tiny_light, tmp_path / "m")
    t = _light_tensors(d)
    t["cls.predictions.bias"] = np.zeros(3)
    _light_rewrite(d, t)
    with caplog.at_level(logging.WARNING):
        load_encoder(d, backend="onnxruntime", cache=False)
    assert "1 tensor(s) of the checkpoint are not used" in caplog.text
    assert "cls.predictions.bias" in caplog.text
