"""``bayesbias train``: train word2vec embeddings (seeds, document bootstraps) of a corpus."""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..inputs.wordlists import load_wordlist
from ..progress import TrainProgress, progress
from ._common import add_json, add_output, add_parser, add_wordlist, emit, int_range

DESCRIPTION = """\
Train word2vec (gensim; skip-gram by default) on a plain-text corpus, one document per line
(.gz accepted, streamed), K times with different seeds and/or on B bootstrap resamples of
its documents. One Dask task per model, each with one gensim thread, so a seed always gives
the same vectors. Writes one word2vec binary file per model and manifest.json (settings,
seeds, corpus and resample digests, gensim version) into the output folder; a re-run skips
the models already trained. With --wordlist also writes distances.csv, the table of every
embedding that 'bayesbias fit --model embedding_level' reads."""


def register(sub) -> None:
    """Add the ``train`` sub-command to `sub`."""
    p = add_parser(
        sub, "train", "train word2vec embeddings of a corpus (seeds, document bootstraps)",
        "  bayesbias train corpus.txt.gz -o runs --bootstrap 8 --wordlist gender\n"
        "  bayesbias fit --distances runs/distances.csv --model embedding_level\n"
        "  bayesbias train corpus.txt -o runs --seeds 4 --vector-size 50 --epochs 10\n"
        "  bayesbias train corpus.txt -o runs --seeds 2 --bootstrap 4 --seeds-within --jobs 2\n"
        "  bayesbias train c1990.txt.gz -o decades/1990 --bootstrap 4 --factor decade=1990",
        description=DESCRIPTION,
    )
    p.add_argument("corpus", help="plain text, one document per line (.gz accepted)")
    add_output(p, "output folder (created)", required=True)
    p.add_argument("--seeds", type=int_range(0, 100_000, name="--seeds"), default=None,
                   help="models with different seeds on the corpus itself (default 1 without "
                        "--bootstrap, else 0)")
    p.add_argument("--bootstrap", type=int_range(0, 100_000, name="--bootstrap"), default=0,
                   help="models on document-bootstrap resamples of the corpus (default 0)")
    p.add_argument("--seeds-within", action="store_true",
                   help="train every seed on every resample (default: the first seed only)")
    p.add_argument("--first-seed", type=int_range(0, 2**31 - 1, name="--first-seed"),
                   default=1, help="gensim seed of the first model (default 1)")
    p.add_argument("--bootstrap-seed", type=int_range(0, 2**32 - 1, name="--bootstrap-seed"),
                   default=0, help="seed of the document resampling (default 0)")
    from ..inputs.training import SETTINGS

    for name, default in SETTINGS.items():
        kind = float if isinstance(default, float) else int
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=default,
                       help=f"gensim Word2Vec {name} (default %(default)s)")
    p.add_argument("--factor", action="append", default=[], metavar="NAME=LEVEL",
                   help="a property of this corpus (e.g. decade=1990), recorded in the "
                        "manifest; repeatable. A folder of such runs (one per corpus) read "
                        "with --embedding FOLDER is one ensemble, compared level by level")
    p.add_argument("--jobs", type=int_range(1, 1024, name="--jobs"), default=1,
                   help="models trained at once, as Dask threads (default 1)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a dask.distributed scheduler (default: in-process)")
    add_wordlist(p, None, "also write OUTPUT/distances.csv for this word list (shipped name "
                          "or TOML file) (default: none)")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias train``; return the exit code."""
    from pathlib import Path

    from ..inputs.training import SETTINGS, TrainSettings, train_models

    factors = {}
    for item in args.factor:
        name, sep, level = item.partition("=")
        if not sep or not name.strip() or not level.strip() or not name.isidentifier():
            raise InvalidArgumentError(f"--factor takes NAME=LEVEL with NAME a plain "
                                       f"identifier (e.g. decade=1990), got {item!r}")
        factors[name.strip()] = level.strip()
    seeds = args.seeds if args.seeds is not None else (0 if args.bootstrap else 1)
    settings = TrainSettings(**{k: getattr(args, k) for k in SETTINGS})
    if args.wordlist:
        load_wordlist(args.wordlist)  # refuse a bad list before training

    if Path(args.corpus).is_file():  # (a missing file: the error alone)
        progress.info(f"reading {args.corpus} (documents, tokens, digest)")
    manifest = train_models(args.corpus, args.output, seeds=seeds, bootstrap=args.bootstrap,
                            seeds_within=args.seeds_within, first_seed=args.first_seed,
                            bootstrap_seed=args.bootstrap_seed, settings=settings,
                            jobs=args.jobs, scheduler=args.scheduler, factors=factors,
                            on_progress=TrainProgress())
    lines = [f"{len(manifest['models'])} models of {manifest['corpus']} "
             f"({manifest['documents']} documents, {manifest['tokens']} tokens) in "
             f"{args.output}:"]
    for m in manifest["models"]:
        lines.append(f"  {m['file']}: seed {m['seed']}, {m['corpus_sample']}, "
                     f"{m['vocabulary']} words, {m['seconds']:.1f} s")
    payload = {"manifest": manifest, "output": args.output}
    if args.wordlist:
        from ..inputs.distances import write_distance_table
        from ..inputs.ensemble import manifest_table

        progress.info(f"distances of word list {args.wordlist} in "
                      f"{len(manifest['models'])} embeddings")
        table = manifest_table(args.output, args.wordlist)
        out = Path(args.output) / "distances.csv"
        write_distance_table(table, out)
        payload["distances"] = str(out)
        lines.append(f"wrote {out} ({len(table)} rows, {len(manifest['models'])} embeddings)")
    lines.append(f"wrote {Path(args.output) / 'manifest.json'}")
    emit(args, payload, "\n".join(lines))
    return 0
