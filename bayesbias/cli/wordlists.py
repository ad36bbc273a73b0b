"""``bayesbias wordlists``: list the shipped word lists, or show one."""

from __future__ import annotations

from ..inputs.wordlists import available_wordlists, load_wordlist
from ._common import add_json, add_parser, emit


def register(sub) -> None:
    """Add the ``wordlists`` sub-command to `sub`."""
    p = add_parser(sub, "wordlists", "list shipped word lists with counts, or show one",
                   "  bayesbias wordlists\n  bayesbias wordlists religion --json\n"
                   "  bayesbias wordlists my_topic.toml")
    p.add_argument("name", nargs="?",
                   help="a shipped list or a TOML file to show in full (default: list them all)")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Run ``bayesbias wordlists``; return the exit code."""
    if args.name:
        wl = load_wordlist(args.name)
        payload = dict(wl.summary(), words={k: list(v) for k, v in wl.parts().items()},
                       definite_sets=[list(s) for s in wl.definite_sets],
                       provenance=wl.provenance)
        lines = [f"{wl.name}: {wl.description}", f"  file: {wl.path}"]
        for part, words in wl.parts().items():
            shown = ", ".join(words[:12]) + (" ..." if len(words) > 12 else "")
            lines.append(f"  {part} ({len(words)}): {shown}")
        if wl.definite_sets:
            lines.append("  definite sets: " + "; ".join("/".join(s) for s in wl.definite_sets))
        for k, v in wl.provenance.items():
            lines.append(f"  {k}: {v}")
        emit(args, payload, "\n".join(lines))
        return 0
    rows = [load_wordlist(p).summary() for p in available_wordlists().values()]
    lines = [f"{'name':<10} {'classes':<36} {'protected':>9} {'stereotypes':>11} "
             f"{'human':>6} {'none':>5}"]
    for r in rows:
        c = r["classes"]
        lines.append(
            f"{r['name']:<10} {', '.join(c):<36} "
            f"{sum(v['protected_words'] for v in c.values()):>9} "
            f"{sum(v['stereotypes'] for v in c.values()):>11} "
            f"{r['controls'].get('human', 0):>6} {r['controls'].get('none', 0):>5}"
        )
    emit(args, {"wordlists": rows}, "\n".join(lines))
    return 0
