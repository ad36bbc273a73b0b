"""``bayesbias distances``: the long table of cosine distances."""

from __future__ import annotations

from ..inputs.wordlists import load_wordlist
from ._common import (
    add_distances,
    add_embedding_options,
    add_json,
    add_output,
    add_parser,
    add_wordlist,
    dropped_line,
    emit,
)


def register(sub) -> None:
    """Add the ``distances`` sub-command to `sub`."""
    p = add_parser(
        sub, "distances", "build the table of cosine distances for a word list",
        "  bayesbias distances --embedding default --wordlist gender -o gender.csv\n"
        "  bayesbias distances --embedding vectors.txt --wordlist my_topic.toml -o t.parquet\n"
        "  bayesbias distances --distances published.csv --json   # summarise a table",
    )
    add_embedding_options(p)
    add_wordlist(p)
    add_distances(p, help="summarise an existing table (ours, the published format, or "
                          "published:TOPIC:EMBEDDING) (default: none, build one)")
    add_output(p, "write the table (.csv, or .parquet/.pq; other suffixes are refused)")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias distances``; return the exit code."""
    from ..inputs.datasets import read_table
    from ..inputs.distances import check_table_path, distance_table, write_distance_table
    from ..inputs.embeddings import load_embedding

    if args.output is not None:
        check_table_path(args.output, what="-o")
    if args.distances:
        table = read_table(args.distances)
    else:
        wl = load_wordlist(args.wordlist)
        emb = load_embedding(args.embedding, wl.all_words, format=args.format,
                             trust_pickle=args.trust_pickle)
        table = distance_table(emb, wl, on_missing=args.on_missing)
    if args.output is not None:
        write_distance_table(table, args.output)
    summary = (table.groupby("connection", observed=True)["cosine_distance"]
               .agg(["count", "mean", "std"]))
    payload = {
        "rows": len(table),
        "protected_words": int(table["protected_word"].nunique()),
        "attributes": int(table["attribute"].nunique()),
        "dropped_words": table.attrs.get("missing", {}),
        "by_connection": summary.reset_index(),
        "output": args.output,
    }
    lines = [f"{len(table)} rows: {payload['protected_words']} protected words x "
             f"{payload['attributes']} attributes", summary.round(4).to_string()]
    if payload["dropped_words"]:
        lines.append(dropped_line(payload["dropped_words"]))
    if args.output is not None:
        lines.append(f"wrote {args.output}")
    emit(args, payload, "\n".join(lines))
    return 0
