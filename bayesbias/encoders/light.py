"""The light route: BERT sentence encoders without PyTorch (tokenizers + onnxruntime).

The folder's ``tokenizer.json`` is read by the ``tokenizers`` library, set to truncate at the
model's maximum length (``max_seq_length`` of ``sentence_bert_config.json``, or, in folders
written by sentence-transformers 6, ``model_max_length`` of ``tokenizer_config.json``) and
padded to the longest text of a batch, as sentence-transformers does. The encoder is a graph
of standard ONNX operators built here from ``model.safetensors`` and run by onnxruntime;
mean pooling over the real tokens and the L2 normalisation are done in numpy.

Only what this route reproduces exactly is accepted (:func:`light_plan`): a BERT encoder
(``model_type`` ``bert``, absolute positions, exact ``gelu``, float32 weights), modules
Transformer, Pooling (mean only) and optionally Normalize. Anything else raises
:class:`~bayesbias.encoders.model.UnsupportedModelError` with the reason; such folders run on
sentence-transformers (the ``transformers`` extra). Checked against sentence-transformers on
all-MiniLM-L6-v2 (``tests/test_encoders_light.py``): sentence vectors within 1e-5 relative.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import EncoderError, MissingExtraError, UnsupportedModelError
from .folder import ModelFolder, ModelFolderError, read_safetensors

__all__ = ["LightPlan", "light_plan", "LightBackend", "LIGHT_EXTRA", "BACKEND_NAME",
           "unused_tensors"]

#: Name of this backend in reports.
BACKEND_NAME = "onnxruntime"
#: The extra that installs tokenizers and onnxruntime.
LIGHT_EXTRA = "contextual"
_OPSET = 17  # LayerNormalization
_ACTIVATIONS = ("gelu",)  # exact (erf) GELU: what BERT's "gelu" is in transformers
_POOLING_OLD = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                "pooling_mode_lasttoken")
_SBERT_KEYS = {"max_seq_length", "do_lower_case", "transformer_task", "modality_config",
               "module_output_name", "model_args", "tokenizer_args", "config_args",
               "processor_kwargs", "config_kwargs", "model_kwargs", "backend"}


@dataclass
class LightPlan:
    """What the light route runs for a model folder (read from its files, nothing loaded).

    Attributes
    ----------
    root, transformer : Path
        The model folder and the folder of the transformer and its tokenizer.
    weights : Path
        The ``.safetensors`` file.
    config : dict
        ``config.json``.
    max_length : int
        Tokens per text, special tokens included; longer texts are truncated.
    normalize : bool
        Whether sentence vectors are scaled to unit length (a Normalize module).
    modules : list of str
        Module names, as sentence-transformers calls them.
    prefix : str
        Prefix of the encoder's tensor names in the checkpoint (``""`` or ``"bert."``).
    """

    root: Path
    transformer: Path
    weights: Path
    config: dict
    max_length: int
    normalize: bool
    modules: list = field(default_factory=list)
    prefix: str = ""

    @property
    def dim(self) -> int:
        """Length of the sentence vectors (the hidden size)."""
        return int(self.config["hidden_size"])


def _refuse(root: Path, why: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"{root}: {why}; the light route (onnxruntime, no PyTorch) reproduces only BERT "
        "encoders with mean pooling: run this model on sentence-transformers "
        "(--encoder-backend sentence-transformers; pip install 'bayesbias[transformers]')")


def _json(path: Path, root: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise EncoderError(f"{root}: cannot read {path.name} ({exc})") from None
    if not isinstance(data, dict):
        raise _refuse(root, f"{path.name} is not a JSON object")
    return data


def _modules(found: ModelFolder) -> list[tuple[str, Path | None]]:
    """Every module (short type name, folder or None), Normalize included."""
    spec = found.root / "modules.json"
    if not spec.is_file():  # a transformers folder: sentence-transformers adds mean pooling
        return [("Transformer", found.transformer), ("Pooling", None)]
    out = []
    for item in json.loads(spec.read_text(encoding="utf-8")):  # checked by check_model_folder
        folder = (found.root / item["path"]).resolve()
        out.append((item["type"].rsplit(".", 1)[-1], folder if folder.is_dir() else None))
    return out


def _check_pooling(root: Path, folder: Path | None, hidden: int) -> None:
    if folder is None:  # added by sentence-transformers: mean pooling
        return
    path = folder / "config.json"
    cfg = _json(path, root) if path.is_file() else {}
    if "pooling_mode" in cfg:  # sentence-transformers 6
        mode = cfg["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode) if isinstance(mode, list) \
            else [mode]
        if modes != ["mean"]:
            raise _refuse(root, f"pooling {mode!r} ({path.name} of the Pooling module)")
        unknown = set(cfg) - {"pooling_mode", "embedding_dimension", "include_prompt"}
        dim = cfg.get("embedding_dimension", hidden)
    else:  # sentence-transformers 2 to 5
        on = [k for k in _POOLING_OLD if cfg.get(k)]
        if on != ["pooling_mode_mean_tokens"]:
            raise _refuse(root, f"pooling {', '.join(on) or 'none'} (Pooling module)")
        unknown = set(cfg) - set(_POOLING_OLD) - {"word_embedding_dimension", "include_prompt"}
        dim = cfg.get("word_embedding_dimension", hidden)
    if unknown:
        raise _refuse(root, f"pooling setting(s) {', '.join(sorted(unknown))}")
    if dim != hidden:
        raise _refuse(root, f"the Pooling module expects {dim} dimensions, the model has "
                            f"{hidden}")


def _max_length(root: Path, tf: Path, sbert: dict, config: dict) -> int:
    """Tokens per text as sentence-transformers sets them (2 to 6)."""
    positions = int(config.get("max_position_embeddings") or 0)
    value = sbert.get("max_seq_length")
    if value is None:  # sentence-transformers 6 keeps it in tokenizer_config.json
        tok_cfg = tf / "tokenizer_config.json"
        tok = _json(tok_cfg, root).get("model_max_length") if tok_cfg.is_file() else None
        if isinstance(tok, int) and not isinstance(tok, bool) and 0 < tok < 1 << 30:
            value = min(tok, positions) if positions > 0 else tok
        else:
            value = positions
    if not isinstance(value, int) or isinstance(value, bool) or value < 3:
        raise _refuse(root, f"no usable maximum length (max_seq_length {value!r})")
    if positions and value > positions:
        raise _refuse(root, f"max_seq_length {value} exceeds max_position_embeddings "
                            f"{positions}")
    return value


def _bert_tensors(config: dict) -> dict[str, tuple]:
    h, i = int(config["hidden_size"]), int(config["intermediate_size"])
    out = {"embeddings.word_embeddings.weight": (int(config["vocab_size"]), h),
           "embeddings.position_embeddings.weight": (int(config["max_position_embeddings"]), h),
           "embeddings.token_type_embeddings.weight": (int(config.get("type_vocab_size", 2)), h),
           "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,)}
    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}."
        for name, shape in (("attention.self.query", (h, h)), ("attention.self.key", (h, h)),
                            ("attention.self.value", (h, h)), ("attention.output.dense", (h, h)),
                            ("intermediate.dense", (i, h)), ("output.dense", (h, i))):
            out[p + name + ".weight"] = shape
            out[p + name + ".bias"] = shape[:1]
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[p + name + ".weight"] = (h,)
            out[p + name + ".bias"] = (h,)
    return out


def _legacy(name: str) -> str:
    for old, new in ((".gamma", ".weight"), (".beta", ".bias")):
        if name.endswith(old):
            return name[: -len(old)] + new
    return name


_BERT_BUFFERS = {"embeddings.position_ids", "embeddings.token_type_ids"}


def unused_tensors(found: ModelFolder, plan: LightPlan) -> list[str]:
    """Checkpoint tensors of the transformer folder that the light route does not read.

    BERT's pooler (``pooler.*``, unused by mean pooling on either route) and its buffers
    (position and token type ids) are left out, so the list matches what the
    sentence-transformers route reports as unused (e.g. a pre-training head).
    """
    want = set(_bert_tensors(plan.config))
    out = []
    for path, shapes in found.tensors.items():
        for name in shapes:
            key = _legacy(name)
            if path == plan.weights and key.startswith(plan.prefix) \
                    and key[len(plan.prefix):] in want:
                continue
            bare = key.removeprefix(plan.prefix)
            if bare.startswith("pooler.") or bare in _BERT_BUFFERS:
                continue
            out.append(name if path == plan.weights else f"{path.name}:{name}")
    return sorted(out)


def light_plan(found: ModelFolder) -> LightPlan:
    """Check that the light route reproduces the model of `found` exactly; return its plan.

    Reads only small JSON files and the safetensors header (checked by
    :func:`~bayesbias.encoders.folder.check_model_folder`).

    Raises
    ------
    UnsupportedModelError
        Naming the folder and the reason (architecture, activation, pooling, module, ...).
    """
    try:
        return _plan(found)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        if isinstance(exc, EncoderError):
            raise
        raise _refuse(found.root, f"settings of an unexpected form ({type(exc).__name__}: "
                                  f"{exc})") from None


def _plan(found: ModelFolder) -> LightPlan:
    root, tf = found.root, found.transformer
    mods = _modules(found)
    kinds = [k for k, _ in mods]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise _refuse(root, f"modules {' -> '.join(kinds)} (not Transformer -> Pooling "
                            "[-> Normalize])")
    config = _json(tf / "config.json", root)
    if config.get("model_type") != "bert":
        raise _refuse(root, f"architecture {config.get('model_type')!r} (config.json "
                            "model_type; only 'bert')")
    arch = config.get("architectures") or ["BertModel"]
    if not all(isinstance(a, str) and a.startswith("Bert") for a in arch):
        raise _refuse(root, f"architectures {arch!r} in config.json")
    act = config.get("hidden_act", "gelu")
    if act not in _ACTIVATIONS:
        raise _refuse(root, f"activation {act!r} (config.json hidden_act; only exact 'gelu')")
    pos = config.get("position_embedding_type", "absolute")
    if pos not in (None, "absolute"):
        raise _refuse(root, f"position embeddings {pos!r} (only 'absolute')")
    for key in ("is_decoder", "add_cross_attention"):
        if config.get(key):
            raise _refuse(root, f"config.json {key} is true")
    dtype = config.get("dtype", config.get("torch_dtype"))
    if dtype not in (None, "float32"):
        raise _refuse(root, f"weights in {dtype} (config.json; only float32)")
    need = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "vocab_size", "max_position_embeddings")
    bad = [k for k in need if not isinstance(config.get(k), int) or config[k] < 1]
    if bad:
        raise _refuse(root, f"config.json lacks positive integers {', '.join(bad)}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise _refuse(root, "hidden_size is not a multiple of num_attention_heads")
    sbert_path = tf / "sentence_bert_config.json"
    sbert = _json(sbert_path, root) if sbert_path.is_file() else {}
    unknown = set(sbert) - _SBERT_KEYS
    if unknown:
        raise _refuse(root, f"sentence_bert_config.json setting(s) {', '.join(sorted(unknown))}")
    for key in ("model_args", "tokenizer_args", "config_args", "processor_kwargs",
                "config_kwargs", "model_kwargs"):
        if sbert.get(key):
            raise _refuse(root, f"sentence_bert_config.json {key} {sbert[key]!r}")
    if sbert.get("transformer_task", "feature-extraction") != "feature-extraction":
        raise _refuse(root, f"transformer_task {sbert['transformer_task']!r}")
    text = (sbert.get("modality_config") or {}).get("text", {})
    if text and (text.get("method", "forward") != "forward"
                 or text.get("method_output_name", "last_hidden_state") != "last_hidden_state"):
        raise _refuse(root, f"modality_config {sbert['modality_config']!r}")
    if sbert.get("module_output_name", "token_embeddings") != "token_embeddings":
        raise _refuse(root, f"module_output_name {sbert['module_output_name']!r}")
    if not (tf / "tokenizer.json").is_file():
        raise _refuse(root, "no tokenizer.json (the light route reads only fast tokenizers)")
    tok_cfg = _json(tf / "tokenizer_config.json", root) \
        if (tf / "tokenizer_config.json").is_file() else {}
    for key in ("padding_side", "truncation_side"):
        if tok_cfg.get(key, "right") != "right":
            raise _refuse(root, f"tokenizer_config.json {key} {tok_cfg[key]!r}")
    norm = _json(tf / "tokenizer.json", root).get("normalizer") or {}
    if sbert.get("do_lower_case") and not (norm.get("type") == "BertNormalizer"
                                           and norm.get("lowercase")):
        raise _refuse(root, "do_lower_case adds a lower-casing step the tokenizer lacks")
    # transformers rebuilds a BERT normaliser that disagrees with tokenizer_config.json
    for key, nkey in (("do_lower_case", "lowercase"), ("strip_accents", "strip_accents"),
                      ("tokenize_chinese_chars", "handle_chinese_chars")):
        if norm.get("type") == "BertNormalizer" and key in tok_cfg \
                and tok_cfg[key] != norm.get(nkey, tok_cfg[key]):
            raise _refuse(root, f"tokenizer_config.json {key} {tok_cfg[key]!r} differs from "
                                f"tokenizer.json's normalizer ({nkey} {norm.get(nkey)!r})")
    _check_pooling(root, mods[1][1], int(config["hidden_size"]))
    max_length = _max_length(root, tf, sbert, config)
    # the weights: exactly the BERT encoder's tensors, float32, in one file
    want = _bert_tensors(config)
    files = list(found.tensors)
    for path in files:
        names = {_legacy(k): v for k, v in found.tensors[path].items()}
        for prefix in ("", "bert."):
            if all(prefix + k in names for k in want):
                wrong = [k for k, shape in want.items() if names[prefix + k] != shape]
                if wrong:
                    raise _refuse(root, f"tensor {wrong[0]!r} has shape "
                                        f"{list(names[prefix + wrong[0]])}, config.json "
                                        f"implies {list(want[wrong[0]])}")
                return LightPlan(root, tf, path, config, max_length, len(mods) == 3,
                                 kinds, prefix)
    missing = sorted(set(want) - {_legacy(k) for p in files for k in found.tensors[p]})
    raise _refuse(root, f"the weights lack BERT tensors (e.g. {', '.join(missing[:3])})"
                  if missing else "the BERT tensors are split over several files")


# -- the graph -------------------------------------------------------------------------
def _import_runtime():
    try:
        import onnx
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise MissingExtraError(
            f"the light encoder route needs the optional libraries of the '{LIGHT_EXTRA}' "
            f"extra ({exc.name or exc} is missing): pip install 'bayesbias[{LIGHT_EXTRA}]' "
            f"(from a source checkout: pip install '.[{LIGHT_EXTRA}]')") from None
    return onnx, onnxruntime, tokenizers


def _external(TensorProto, name: str, arr: np.ndarray):
    """Declare an initializer whose data onnxruntime gets at session creation (not copied)."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(arr.shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "bayesbias-weights"), ("offset", "0"),
                       ("length", str(arr.nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def _build_graph(onnx, plan: LightPlan, weights: dict) -> tuple[bytes, dict]:
    """Build a BERT encoder of standard ONNX operators.

    Returns the serialised graph and its weights (name -> float32 array; the linear layers'
    transposed), which onnxruntime is given apart (``add_external_initializers``).
    """
    from onnx import TensorProto, helper, numpy_helper

    cfg = plan.config
    h, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    inits, nodes, arrays = [], [], {}

    def w(name, transpose=False):
        tag = name + (".T" if transpose else "")
        if tag not in arrays:
            arr = np.asarray(weights[_key(name)], dtype=np.float32)
            arrays[tag] = np.require(arr.T if transpose else arr, np.float32, ["C", "A", "O"])
            inits.append(_external(TensorProto, tag, arrays[tag]))
        return tag

    def _key(name):
        return plan.prefix + name

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def node(op, inputs, out, **attrs):
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def linear(x, name, out):
        return node("Add", [node("MatMul", [x, w(name + ".weight", True)], out + ".mm"),
                            w(name + ".bias")], out)

    def norm(x, name, out):
        return node("LayerNormalization", [x, w(name + ".weight"), w(name + ".bias")], out,
                    axis=-1, epsilon=eps)

    split = const("shape.heads", [0, 0, heads, h // heads])
    merge = const("shape.merge", [0, 0, h])
    scale = const("scale", np.float32(1.0 / math.sqrt(h // heads)), np.float32)
    half, one = const("half", np.float32(0.5), np.float32), const("one", np.float32(1.0),
                                                                   np.float32)
    root2 = const("sqrt2", np.float32(math.sqrt(2.0)), np.float32)
    emb = node("Add", [node("Add", [
        node("Gather", [w("embeddings.word_embeddings.weight"), "input_ids"], "e.word"),
        node("Gather", [w("embeddings.position_embeddings.weight"), "position_ids"], "e.pos")],
        "e.sum1"), node("Gather", [w("embeddings.token_type_embeddings.weight"),
                                   "token_type_ids"], "e.type")], "e.sum")
    x = norm(emb, "embeddings.LayerNorm", "e.out")
    for n in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{n}."
        q = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.query",
                                                       f"l{n}.q"), split], f"l{n}.q4")],
                 f"l{n}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key",
                                                       f"l{n}.k"), split], f"l{n}.k4")],
                 f"l{n}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.value",
                                                       f"l{n}.v"), split], f"l{n}.v4")],
                 f"l{n}.vt", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"l{n}.qk"), scale],
                                   f"l{n}.qks"), "mask_bias"], f"l{n}.scores")
        probs = node("Softmax", [scores], f"l{n}.probs", axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v], f"l{n}.ctx4")],
                                    f"l{n}.ctxt", perm=[0, 2, 1, 3]), merge], f"l{n}.ctx")
        att = norm(node("Add", [linear(ctx, p + "attention.output.dense", f"l{n}.ao"), x],
                        f"l{n}.ares"), p + "attention.output.LayerNorm", f"l{n}.att")
        inter = linear(att, p + "intermediate.dense", f"l{n}.i")
        gelu = node("Mul", [node("Mul", [inter, half], f"l{n}.ih"), node("Add", [node(
            "Erf", [node("Div", [inter, root2], f"l{n}.id")], f"l{n}.erf"), one],
            f"l{n}.erf1")], f"l{n}.gelu")
        x = norm(node("Add", [linear(gelu, p + "output.dense", f"l{n}.o"), att], f"l{n}.ores"),
                 p + "output.LayerNorm", f"l{n}.out" if n + 1 < int(cfg["num_hidden_layers"])
                 else "hidden")
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"]),
              helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "t"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["t"]),
              helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT,
                                            ["b", 1, 1, "t"])]
    outputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["b", "t", h])]
    graph = helper.make_graph(nodes, "bert", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)],
                              producer_name="bayesbias")
    model.ir_version = 8  # opset 17 needs IR 8; older onnxruntime reads no newer IR
    return model.SerializeToString(), arrays


class LightBackend:
    """Tokenizer and onnxruntime session of a :class:`LightPlan` (built when created)."""

    name = BACKEND_NAME

    def __init__(self, plan: LightPlan):
        onnx, ort, tokenizers = _import_runtime()
        self.plan = plan
        try:
            tok = tokenizers.Tokenizer.from_file(str(plan.transformer / "tokenizer.json"))
        except BaseException as exc:  # the Rust library's own error types, or a panic
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise  # KeyboardInterrupt, SystemExit
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise EncoderError(f"{plan.root}: cannot read tokenizer.json ({first})") from None
        tok.no_padding()  # padded here, to the longest text of each batch
        tok.enable_truncation(plan.max_length, stride=0, strategy="longest_first",
                              direction="right")
        self.tokenizer = tok
        self.pad_id = self._pad_id(tok)
        top = tok.get_vocab_size(with_added_tokens=True)
        if top > int(plan.config["vocab_size"]):
            raise EncoderError(f"{plan.root}: the tokenizer has {top} tokens but the model's "
                               f"embedding only {plan.config['vocab_size']} rows "
                               "(config.json vocab_size)")
        probe = tok.encode("This is a test sentence about a person.",
                           add_special_tokens=False)
        unk = {tok.token_to_id(t) for t in ("[UNK]", "<unk>")} - {None}
        if not probe.ids or all(i in unk for i in probe.ids):
            raise EncoderError(f"{plan.root}: the tokenizer knows no words (a test sentence "
                               "became only unknown tokens)")
        try:
            raw = read_safetensors(plan.weights, plan.root)
        except ModelFolderError as exc:
            raise _refuse(plan.root, str(exc).removeprefix(f"{plan.root}: ")) from None
        weights = {_legacy(k): v for k, v in raw.items()}
        wrong = [k for k in _bert_tensors(plan.config)
                 if weights[plan.prefix + k].dtype != np.float32]
        if wrong:
            dtype = weights[plan.prefix + wrong[0]].dtype
            raise _refuse(plan.root, f"tensor {wrong[0]!r} is {dtype} (only float32)")
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle threads sleep instead of spinning: on a busy machine (2 cores, load 8) the
        # spinning cost 40% more CPU for the same wall time (weat1's 1,165 sentences)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        graph, arrays = _build_graph(onnx, plan, weights)
        self._weights = [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays.values()]
        opts.add_external_initializers(list(arrays), self._weights)
        try:
            self.session = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own error types
            raise EncoderError(f"{plan.root}: cannot build the encoder graph ({exc})") from None

    def _pad_id(self, tok) -> int:
        path = self.plan.transformer / "tokenizer_config.json"
        pad = None
        if path.is_file():
            pad = json.loads(path.read_text(encoding="utf-8")).get("pad_token")
            pad = pad.get("content") if isinstance(pad, dict) else pad
        pid = tok.token_to_id(pad) if isinstance(pad, str) else None
        return int(pid if pid is not None else self.plan.config.get("pad_token_id") or 0)

    @property
    def dim(self) -> int:
        """Length of the vectors."""
        return self.plan.dim

    def tokenize(self, texts):
        """Return the encodings of `texts` (truncated, not padded)."""
        return self.tokenizer.encode_batch(list(texts))

    def _run(self, encodings) -> tuple[np.ndarray, np.ndarray]:
        """Last hidden states and attention mask of one batch, padded to its longest text."""
        n, t = len(encodings), max(len(e.ids) for e in encodings)
        ids = np.full((n, t), self.pad_id, dtype=np.int64)
        types = np.zeros((n, t), dtype=np.int64)
        mask = np.zeros((n, t), dtype=np.int64)
        for i, e in enumerate(encodings):
            k = len(e.ids)
            ids[i, :k], types[i, :k], mask[i, :k] = e.ids, e.type_ids, e.attention_mask
        bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        (hidden,) = self.session.run(None, {"input_ids": ids, "token_type_ids": types,
                                            "position_ids": np.arange(t, dtype=np.int64),
                                            "mask_bias": bias.astype(np.float32)})
        return hidden, mask

    def _batches(self, encodings, batch_size: int):
        """Index batches of texts of similar length (less padding)."""
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), batch_size):
            yield order[start:start + batch_size]

    def encode(self, texts, batch_size: int = 64) -> np.ndarray:
        """Sentence vectors: mean of the real tokens' states, unit length if normalised."""
        encodings = self.tokenize(texts)
        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        for idx in self._batches(encodings, batch_size):
            hidden, mask = self._run([encodings[i] for i in idx])
            m = mask.astype(np.float32)[:, :, None]
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            if self.plan.normalize:
                pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[idx] = pooled
        return out

    def token_states(self, texts, batch_size: int = 64):
        """Per text: last hidden states, character offsets and the mask of its word tokens.

        Yields ``(index, hidden, offsets, mask)`` with ``hidden`` of shape (tokens, dim);
        ``mask`` is true for real, non-special tokens.
        """
        encodings = self.tokenize(texts)
        for idx in self._batches(encodings, batch_size):
            hidden, _ = self._run([encodings[i] for i in idx])
            for row, i in enumerate(idx):
                e = encodings[i]
                k = len(e.ids)
                keep = (np.asarray(e.attention_mask, bool)
                        & ~np.asarray(e.special_tokens_mask, bool))
                yield int(i), hidden[row, :k], np.asarray(e.offsets, dtype=np.int64), keep
