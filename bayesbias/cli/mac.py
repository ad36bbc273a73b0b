"""``bayesbias mac``: Mean Average Cosine distance (Manzini et al. 2019)."""

from __future__ import annotations

from ..comparators.mac import mac, mac_from_table, mac_ttest
from ..errors import InvalidArgumentError
from ..inputs.datasets import read_table
from ..inputs.embeddings import load_embedding
from ..inputs.wordlists import load_wordlist
from ._common import (
    add_distances,
    add_embedding_options,
    add_json,
    add_option,
    add_parser,
    add_wordlist,
    emit,
)

DESCRIPTION = """\
MAC (Manzini et al. 2019): S(t, A_j) = mean cosine DISTANCE of target t to the attributes
of class A_j; MAC = mean of S over the targets and attribute classes. With a second
embedding (--embedding-b) or table (--distances-b), a paired t-test on the matched S values
(scipy.stats.ttest_rel), as Manzini et al. compare biased and debiased embeddings.
MAC makes no difference between a target's own stereotypes and other classes' and is
not scaled by any spread: read it as a distance level, not as an effect size."""


def register(sub) -> None:
    """Add the ``mac`` sub-command to `sub`."""
    p = add_parser(
        sub, "mac", "Mean Average Cosine distance (Manzini et al.), paired t-test",
        "  bayesbias mac --embedding default --wordlist religion --json\n"
        "  bayesbias mac --distances religion_reddit.csv\n"
        "  bayesbias mac --distances published:race:reddit --distances-b "
        "published:race:debiased_reddit\n"
        "  bayesbias mac --distances biased.csv --distances-b debiased.csv --json\n"
        "  bayesbias mac --wordlist race --target-counting definite_sets --embedding v.txt "
        "--embedding-b debiased.txt",
        description=DESCRIPTION,
    )
    add_embedding_options(p)
    add_wordlist(p)
    p.add_argument("--embedding-b", default=None,
                   help="second embedding (e.g. debiased) for the paired t-test (default: none)")
    add_distances(p, help="distance table (ours or the published format, or "
                          "published:TOPIC:EMBEDDING for a shipped one) instead of an "
                          "embedding (default: none)")
    p.add_argument("--distances-b", default=None, metavar="TABLE",
                   help="second distance table for the paired t-test (default: none)")
    add_option(p, "--target-counting", deprecated=("--targets",), dest="targets",
               choices=["unique", "definite_sets"], default="unique",
               help="unique: count every protected word once (default), or definite_sets: as "
                    "often as it appears in the word list's definite sets, as Manzini's "
                    "evaluation loop")
    add_json(p)
    p.set_defaults(run=run)


def _from_embedding(args, path):
    wl = load_wordlist(args.wordlist)
    emb = load_embedding(path, wl.all_words, format=args.format,
                         trust_pickle=args.trust_pickle)
    return mac(emb, wl, on_missing=args.on_missing, targets=args.targets)


def _from_table(args, path):
    wordlist = args.wordlist if args.targets == "definite_sets" else None
    return mac_from_table(read_table(path), targets=args.targets, wordlist=wordlist)


def run(args) -> int:
    """Run ``bayesbias mac``; return the exit code."""
    if args.distances_b and not args.distances:
        raise InvalidArgumentError("--distances-b needs --distances (the first table)")
    if args.distances and args.embedding_b:
        raise InvalidArgumentError("give the second side as --distances-b when the first is "
                                   "--distances (--embedding-b pairs with --embedding)")
    if args.distances:
        a = _from_table(args, args.distances)
        b = _from_table(args, args.distances_b) if args.distances_b else None
    else:
        a = _from_embedding(args, args.embedding)
        b = _from_embedding(args, args.embedding_b) if args.embedding_b else None
    payload = {"a": a.to_dict()}
    text = [str(a)]
    if b is not None:
        test = mac_ttest(a, b)
        payload["b"] = b.to_dict()
        payload["paired_ttest"] = test.to_dict()
        text += ["", "second:", str(b), "", str(test)]
    emit(args, payload, "\n".join(text))
    return 0
