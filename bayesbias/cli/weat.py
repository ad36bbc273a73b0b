"""``bayesbias weat``: the Word Embedding Association Test with an honest p-value."""

from __future__ import annotations

from ..comparators.weat import (
    ALTERNATIVES,
    SD_CONVENTIONS,
    resolve_weat_sets,
    weat,
    weat_from_table,
)
from ..config import defaults
from ..inputs.embeddings import load_embedding
from ..inputs.wordlists import WeatSets
from ._common import (
    add_bootstrap,
    add_ci_prob,
    add_distances,
    add_embedding_options,
    add_json,
    add_parser,
    add_seed,
    add_word_sets,
    add_wordlist,
    emit,
    nonneg_int,
    positive_int,
    word_sets,
)

DESCRIPTION = """\
WEAT (Caliskan et al. 2017): s(w, A, B) = mean cos(w, A) - mean cos(w, B) for every
target word, the test statistic sum_X s - sum_Y s, and the effect size
(mean_X s - mean_Y s) / sd of s over X and Y (sample sd, n - 1, by default; the
existing toolkits use the population sd: --sd-convention population).

The p-value re-partitions X and Y without replacement: exactly over all splits when there
are at most --exact-limit of them, else over --permutations random splits with the +1
correction (p is never 0; below 0.001 it is printed as the bound "< 0.001"). The test is
two-sided by default, as in the report (Caliskan's one-sided test: --alternative greater).
--bootstrap N adds an interval for the effect size resampling
targets and attributes. Words missing from the embedding stop the run unless
--on-missing drop, which drops and lists them."""



def register(sub) -> None:
    """Add the ``weat`` sub-command to `sub`."""
    p = add_parser(
        sub, "weat", "Word Embedding Association Test (exact/Monte Carlo permutation p)",
        "  bayesbias weat --embedding default --wordlist weat7 --json\n"
        "  bayesbias weat --wordlist weat7 --bootstrap 5000 --alternative two-sided\n"
        "  bayesbias weat --x math,algebra,geometry --y poetry,art,dance \\\n"
        "                 --a male,man,boy --b female,woman,girl\n"
        "  bayesbias weat --embedding vectors.txt --x x.txt --y y.txt --a a.txt --b b.txt\n"
        "  bayesbias weat --distances published:weat_7:reddit   # from a distance table",
        description=DESCRIPTION,
    )
    add_embedding_options(p)
    add_wordlist(p, None, "two-class word list: a shipped name (weat1, weat6, weat7, gender, "
                          "...) or a TOML file (default weat7 unless --x/--y/--a/--b are given)",
                 deprecated=("--test",))
    add_word_sets(p)
    add_distances(p, help="run on a distance table (ours or the published format, or "
                          "published:weat_7:reddit for a shipped one) instead (default: none)")
    p.add_argument("--permutations", type=positive_int, default=defaults.n_permutations,
                   help=f"Monte Carlo splits (default {defaults.n_permutations})")
    p.add_argument("--exact-limit", type=nonneg_int,
                   default=defaults.exact_permutation_limit,
                   help="enumerate all splits when there are at most this many "
                        f"(default {defaults.exact_permutation_limit})")
    p.add_argument("--alternative", choices=ALTERNATIVES, default="two-sided",
                   help="two-sided (default, as the report, fit and compare), greater "
                        "(Caliskan's one-sided test) or less; the output names it beside p")
    p.add_argument("--sd-convention", choices=list(SD_CONVENTIONS), default="sample",
                   help="sd of the effect size: sample (n - 1, default) or population (n)")
    add_bootstrap(p, 0, "bootstrap resamples for an effect-size interval (default 0: none)")
    add_ci_prob(p, None, f"probability of the interval (default {defaults.ci_prob})")
    add_seed(p, None, f"seed of the Monte Carlo splits and bootstrap (default {defaults.seed})")
    add_json(p)
    p.set_defaults(run=run)


def _sets(args):
    sets = word_sets(args)
    if sets is not None:
        return resolve_weat_sets(WeatSets(*(sets[k] for k in "XYAB")))
    return resolve_weat_sets(args.wordlist or "weat7")


def run(args) -> int:
    """Run ``bayesbias weat``; return the exit code."""
    options = dict(alternative=args.alternative, sd=args.sd_convention,
                   n_permutations=args.permutations, exact_limit=args.exact_limit,
                   seed=args.seed, bootstrap=args.bootstrap, ci_prob=args.ci_prob)
    if args.distances:
        from ..inputs.datasets import read_table

        result = weat_from_table(read_table(args.distances), **options)
    else:
        sets = _sets(args)
        words = set(sets.X) | set(sets.Y) | set(sets.A) | set(sets.B)
        emb = load_embedding(args.embedding, words, format=args.format,
                             trust_pickle=args.trust_pickle)
        result = weat(emb, sets, on_missing=args.on_missing, **options)
    emit(args, result.to_dict(), str(result))
    return 0
