"""``bayesbias debias``: debias an embedding for a word list and write it out.

Hard (Bolukbasi et al. 2016) and multiclass hard (Manzini et al. 2019) debiasing, INLP
(Ravfogel et al. 2020), LEACE (Belrose et al. 2023) and Double-Hard (Wang et al. 2020).
"""

from __future__ import annotations

import logging
from pathlib import Path

from .._atomic import check_output
from ..errors import InvalidArgumentError, OutputPathError, WordListError
from ..inputs.debias import METHODS, NEUTRALIZE_CHOICES, OVERLAPPING_CHOICES, debias, hard_debias
from ..inputs.distances import distance_table
from ..inputs.embeddings import load_embedding, save_embedding
from ..inputs.wordlists import load_wordlist
from ._common import (
    add_embedding_options,
    add_json,
    add_output,
    add_parser,
    add_wordlist,
    dropped_line,
    emit,
    int_range,
)

DESCRIPTION = """\
--method hard (default) or multiclass (the same code; multiclass is its use with definite
sets of three or more words): hard debiasing (Bolukbasi et al. 2016; multiclass: Manzini et
al. 2019). The bias subspace is the first K principal directions of the word list's definite
sets, each centred on its mean. The neutralised words (default: every stereotype attribute
of the list) lose their component in it; each definite set is then equalised (its words
share one off-subspace part). Only those words change: every other row is written unchanged,
unless --normalize-all scales every row to unit length.

The whole embedding is loaded and written (every word, changed rows replaced): memory
grows with the file (the shipped default has 20,162 words; a 3M-word 300-d file needs
several GB). K defaults to the size of the largest definite set minus one: equalising m words in a
k-dimensional subspace keeps them distinct only if k >= m - 1 (with k=1, two of the three
religion words 'jew', 'christian', 'muslim' would end up identical). A smaller -k is
refused unless --allow-merge.

Exit code 3 if a check fails (a neutralised word keeps a projection above 1e-6, a
definite set that shares no word with a later set is not symmetric, or two equalised
words coincide); then no output file is written unless --force.

--method inlp, leace, double-hard (see docs/debiasing.md) map every vector. INLP and LEACE
are fitted on the protected words of each class plus the --n-biased words most biased
toward each class (ranked by cosine with the class's protected words); INLP removes
--iterations linear-classifier directions, LEACE the least-squares closed form (rank at
most the number of classes). Double-Hard removes the principal direction (among the first
--components) whose removal best hides the classes from k-means, then hard-debiases with
every word but the protected words and definite sets neutralised. Same --seed, same
output. The output file may not be the input file."""



def register(sub) -> None:
    """Add the ``debias`` sub-command to `sub`."""
    p = add_parser(
        sub, "debias", "hard-debias an embedding for a word list (Bolukbasi/Manzini)",
        "  bayesbias debias --embedding default --wordlist religion -o glove-religion.bin\n"
        "  bayesbias debias --wordlist gender -k 2 --neutralize attributes --on-missing drop "
        "-o g.txt --text\n"
        "  bayesbias debias --embedding vectors.txt --wordlist my_topic.toml --json"
        "   # report only\n"
        "  bayesbias debias --wordlist race --neutralize doctor,nurse,teacher -o r.bin",
        description=DESCRIPTION,
    )
    add_embedding_options(p)
    p.add_argument("--method", default="hard", choices=list(METHODS),
                   help="debiasing method (default hard)")
    p.add_argument("--iterations", type=int_range(1, 10_000, "--iterations"), default=10,
                   help="INLP: classifiers trained, one direction each for two classes "
                        "(default 10)")
    p.add_argument("--n-biased", type=int_range(0, 1_000_000, "--n-biased"), default=1000,
                   help="INLP, LEACE: most biased words per class added to the training "
                        "words (default 1000)")
    p.add_argument("--components", type=int_range(1, 10_000, "--components"), default=20,
                   help="Double-Hard: candidate frequency directions (default 20)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of INLP's classifiers and Double-Hard's k-means (default 0)")
    add_wordlist(p, "religion", "word list: a shipped name or a TOML file with definite_sets "
                                "(default religion)")
    p.add_argument("-k", type=int_range(1, 10_000, "k"), default=None,
                   help="bias directions (default: the largest definite set's size minus one, "
                        "which keeps every set's words distinct: 2 for religion and race, 1 "
                        "for gender; at most the sum over definite sets of size minus one)")
    p.add_argument("--allow-merge", action="store_true",
                   help="accept a -k below the default although it makes words of a "
                        "definite set identical (they are listed)")
    p.add_argument("--force", action="store_true",
                   help="write the output even if a check fails (exit code still 3)")
    p.add_argument("--neutralize", default="stereotypes",
                   help="words to neutralise: 'stereotypes' (default, as Manzini et al.), "
                        "'attributes' (stereotypes + human and neutral controls), 'none', "
                        "or a comma-separated list of words")
    p.add_argument("--no-equalize", dest="equalize", action="store_false",
                   help="do not equalise the definite sets (default: equalise)")
    p.add_argument("--overlapping", default="sequential", choices=list(OVERLAPPING_CHOICES),
                   help="definite sets sharing words (race): sequential, equalise one after "
                        "another as Manzini et al. (default; a shared word is symmetric within "
                        "its last set only), or merge them into one group each")
    p.add_argument("--normalize-all", action="store_true",
                   help="also scale every unchanged row to unit length (cosines unchanged)")
    add_output(p, "write the debiased embedding (word2vec; '.gz' compresses) (default: "
                  "none, only the report is printed)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--binary", dest="binary", action="store_true", default=None,
                     help="word2vec binary (default for a .bin output)")
    fmt.add_argument("--text", dest="binary", action="store_false",
                     help="word2vec text (default for other suffixes)")
    add_json(p)
    p.set_defaults(run=run)


def _neutralize_arg(value: str):
    if value in NEUTRALIZE_CHOICES:
        return value
    if value == "none":
        return None
    words = [w.strip() for w in value.split(",") if w.strip()]
    if not words:
        raise InvalidArgumentError(
            f"--neutralize: give {', '.join(NEUTRALIZE_CHOICES)}, none, or a list of words")
    return words


def _connection_means(embedding, wordlist):
    """Mean distance per connection, over the word-list words in `embedding`."""
    quiet = logging.getLogger("bayesbias.embeddings")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # dropped words are reported once, below
    try:
        table = distance_table(embedding, wordlist, on_missing="drop")
    finally:
        quiet.setLevel(level)
    means = table.groupby("connection", observed=True)["cosine_distance"].mean()
    return means, table.attrs.get("missing", {})


def _not_the_input(output, embedding) -> None:
    """Refuse an output path that is the input embedding file (or a link to it)."""
    import os

    out = Path(output)
    if embedding in (None, "default", "glove-6b-50d") or not out.exists():
        return
    try:
        same = os.path.samefile(out, embedding)
    except OSError:
        same = False
    if same:
        raise OutputPathError(f"-o {output}: this is the input embedding {embedding}; "
                              "write the debiased embedding to another file")


def run(args) -> int:
    """Run ``bayesbias debias``; return the exit code."""
    wl = load_wordlist(args.wordlist)
    neutralize = _neutralize_arg(args.neutralize)
    if not wl.definite_sets and args.method in ("hard", "multiclass", "double-hard"):
        # fail before loading a possibly large file
        raise WordListError(f"word list {wl.name!r} ({wl.path}) has no definite_sets; "
                            f"{args.method} debiasing needs them")
    if args.output is not None:
        check_output(args.output, what="-o")
        _not_the_input(args.output, args.embedding)
    emb = load_embedding(args.embedding, format=args.format, trust_pickle=args.trust_pickle)
    on_missing = args.on_missing or "error"
    if args.method in ("hard", "multiclass"):
        debiased, report = hard_debias(emb, wl, k=args.k, neutralize=neutralize,
                                       equalize=args.equalize, on_missing=on_missing,
                                       normalize_all=args.normalize_all,
                                       overlapping=args.overlapping,
                                       allow_merge=args.allow_merge)
    elif args.method == "double-hard":
        debiased, report = debias(emb, wl, "double-hard", seed=args.seed, k=args.k,
                                  n_components=args.components, on_missing=on_missing)
    else:
        extra = {"n_iterations": args.iterations} if args.method == "inlp" else {}
        debiased, report = debias(emb, wl, args.method, seed=args.seed,
                                  n_biased=args.n_biased, on_missing=on_missing, **extra)
    import pandas as pd

    before, dropped = _connection_means(emb, wl)
    after, _ = _connection_means(debiased, wl)
    means = pd.DataFrame({"before": before, "after": after})
    means["change"] = means["after"] - means["before"]
    binary = None
    written = args.output is not None and (report.passed or args.force)
    if written:
        out = Path(args.output)
        suffix = out.suffixes[-2] if out.suffix == ".gz" and len(out.suffixes) > 1 else out.suffix
        binary = args.binary if args.binary is not None else suffix == ".bin"
        save_embedding(debiased, out, binary=binary)
    payload = dict(report.to_dict(), output=args.output if written else None,
                   output_format=None if binary is None else
                   ("word2vec-binary" if binary else "word2vec"),
                   mean_cosine_distance=means.reset_index(),
                   mean_cosine_distance_dropped=dropped)
    payload["method"] = args.method
    lines = [report.summary(), "",
             "mean cosine distance by connection (word-list words in the embedding):",
             means.round(4).to_string()]
    if dropped:
        lines.append("  " + dropped_line(dropped, "dropped (not in the embedding) from "
                                                  "these means"))
    if written:
        lines.append(f"wrote {args.output} ({payload['output_format']}, {len(debiased)} words)"
                     + ("" if report.passed else " despite the failed checks (--force)"))
    elif args.output is not None:
        lines.append(f"checks failed: {args.output} not written (--force writes it anyway)")
    emit(args, payload, "\n".join(lines))
    return 0 if report.passed else 3
