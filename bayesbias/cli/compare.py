"""``bayesbias compare``: the same word list on two embeddings (e.g. original vs debiased)."""

from __future__ import annotations

from .._atomic import check_output as check_file
from ..errors import BayesbiasError, InvalidArgumentError
from ..inputs.wordlists import load_wordlist
from ..progress import progress
from ._common import (
    add_json,
    add_model_options,
    add_output,
    add_parser,
    add_plot,
    add_rope,
    add_table_source,
    dropped_line,
    emit,
    int_range,
)
from .fit import fit_from_args, load_table, weat_rows

DESCRIPTION = """\
Fit the same model to two distance tables (or to one word list on two embeddings) and report
the posterior difference b - a of every group-level mean, contrast and per-word mean with
credible intervals, and whether only the neutral/human controls moved (the pattern
Dobrzeniecka & Urbaniak found for debiasing). With --wordlist, A and B are embeddings
(files or 'default'); without it they are distance tables or published:TOPIC:EMBEDDING.
When both sides are tables, MAC with Manzini's paired t-test is reported alongside.

Debiasing section (--wordlist only): --recoverability runs the recoverability tests on a
and b, and --debias-methods hard,double-hard,inlp,leace also debiases a with each method
(hard: every word but the protected words neutralised, as Bolukbasi et al.; multiclass:
the stereotypes only, as Manzini et al.). The --top most biased words per class, chosen on
a, are tested after debiasing: k-means alignment (bootstrap interval over words), linear
and RBF-SVM cross-validated accuracy (Beta interval), same-class neighbour share
(bootstrap interval), each against a label-permutation null band, with the Bayesian
verdict and WEAT of every row and one sentence per method: removed, or hidden from WEAT.
INLP and LEACE are trained without the tested words."""


def register(sub) -> None:
    """Add the ``compare`` sub-command to `sub`."""
    p = add_parser(
        sub, "compare", "posterior differences between two embeddings (b - a)",
        "  bayesbias compare --a published:religion:reddit "
        "--b published:religion:debiased_reddit\n"
        "  bayesbias compare --a original.csv --b debiased.csv --json --plot diff.png\n"
        "  bayesbias compare --wordlist gender --a vectors.txt --b debiased.txt --strict",
        description=DESCRIPTION,
    )
    p.add_argument("--a", required=True, help="first table / embedding (the reference)")
    p.add_argument("--b", required=True, help="second table / embedding (e.g. debiased)")
    p.add_argument("--labels", nargs=2, default=None, metavar=("A", "B"),
                   help="names for the two sides in the report (default: the --a and --b "
                        "values)")
    add_table_source(p)
    add_model_options(p)
    add_rope(p)
    add_plot(p, "save a forest plot of the differences (PNG) (default: none)")
    p.add_argument("--recoverability", action="store_true",
                   help="(--wordlist) add the debiasing section: recoverability tests on a "
                        "and b")
    p.add_argument("--debias-methods", default=None, metavar="LIST",
                   help="(--wordlist) also debias a with these methods (comma-separated: "
                        "hard, multiclass, inlp, leace, double-hard) and test each; implies "
                        "--recoverability (default: none)")
    p.add_argument("--top", type=int_range(5, 100_000, "--top"), default=500,
                   help="most biased words per class tested for recoverability (default 500)")
    p.add_argument("--debias-plot", default=None, metavar="PNG",
                   help="save the debiasing figure (PNG) (default: none; in the -o report "
                        "anyway)")
    add_output(p, "write a before/after report folder (index.html, report.md, tables, "
                  "figures, fits/a.nc and fits/b.nc, results.json); a name ending in .nc "
                  "saves only the two fits, as NAME_a.nc and NAME_b.nc (default: none)")
    add_json(p)
    p.set_defaults(run=run)


def _load(source: str, args):
    if args.wordlist:
        args.embedding = source
        return load_table(None, args)
    return load_table(source, args)


def _mac(ta, tb):
    """MAC of both tables and Manzini's paired t-test, or None when it does not apply."""
    try:
        from ..comparators.mac import mac_from_table, mac_ttest
    except ImportError:  # pragma: no cover - MAC is part of the package
        return None

    try:
        return mac_ttest(mac_from_table(ta), mac_from_table(tb)).to_dict()
    except BayesbiasError as exc:
        return {"error": str(exc)}


def _weat(ta, tb, seed):
    """WEAT (two-sided, exact or Monte Carlo p) per pair of classes on both sides.

    Returns the rows (or ``{"error": ...}``) and the results per side.
    """
    from ..comparators.weat import weat_class_pairs

    rows, pairs = [], {}
    try:
        for tag, table in (("a", ta), ("b", tb)):
            pairs[tag] = weat_class_pairs(table, alternative="two-sided", seed=seed)
            rows += [{"side": tag, **row} for row in weat_rows(pairs[tag])]
    except BayesbiasError as exc:
        return {"error": str(exc)}, {}
    return rows, pairs


def _methods(args):
    """Return the debiasing methods to add (a list, maybe empty), or None (no section)."""
    from ..inputs.debias import METHODS

    if not args.recoverability and not args.debias_methods:
        return None
    if not args.wordlist:
        raise InvalidArgumentError("--recoverability and --debias-methods need --wordlist "
                                   "(--a and --b are then embeddings)")
    methods = [m.strip() for m in (args.debias_methods or "").split(",") if m.strip()]
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise InvalidArgumentError(f"--debias-methods: unknown method(s) {', '.join(bad)}; "
                                   f"choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(methods))


def _weat_min_p(table, seed):
    from ..comparators.weat import weat_class_pairs

    try:
        pairs = weat_class_pairs(table, alternative="two-sided", seed=seed)
    except BayesbiasError:
        return None
    return float(min(r.p_value for _, r in pairs))


def _debiasing(args, labels, methods, comp, weat_pairs):
    """Recoverability of a, b and each method applied to a; rows and text lines."""
    from ..inputs.debias import biased_words, debias
    from ..inputs.distances import distance_table
    from ..inputs.embeddings import load_embedding
    from ..verdicts import verdict_from_fit
    from ..verdicts.recoverability import debiasing_frame, hidden_or_removed, plot_debiasing
    from ..verdicts.recoverability import recoverability as run_tests

    wl = load_wordlist(args.wordlist)
    load = {"format": args.format, "trust_pickle": args.trust_pickle}
    original = load_embedding(args.a, **load)
    words, classes = biased_words(original, wl, args.top)
    va = comp.verdicts["a"]
    sides = [(f"a: {labels[0]}", original, comp.verdicts["a"], None),
             (f"b: {labels[1]}", load_embedding(args.b, **load), comp.verdicts["b"], None)]
    on_missing = args.on_missing or "drop"
    for m in methods:
        kw = {}
        if m == "hard":
            kw = {"neutralize": "all", "on_missing": "drop"}
        elif m == "multiclass":
            kw = {"on_missing": "drop"}
        elif m in ("inlp", "leace"):
            kw = {"exclude": words, "on_missing": on_missing}
        else:
            kw = {"on_missing": on_missing}
        emb, rep = debias(original, wl, m, seed=args.seed, **kw)
        sides.append((m, emb, None, rep.to_dict()))
    rows = []
    for name, emb, verdict, rep in sides:
        table = run_tests(emb, wl, words=words, labels=classes, n_per_class=args.top,
                          ci_prob=args.ci_prob, seed=args.seed)
        dist = distance_table(emb, wl, on_missing="drop")
        if verdict is None:
            verdict = verdict_from_fit(fit_from_args(dist, args), name, args.ci_prob,
                                       args.ci_kind, args.rope)
        weat_p = _weat_min_p(dist, args.seed)
        row = {"name": name, "table": table, "verdict_before": va.code,
               "verdict_after": verdict.code,
               "verdict_change": (verdict.code if name.startswith("a: ")
                                  else f"{va.code} -> {verdict.code}"),
               "weat_min_p": weat_p, "report": rep}
        row["answer"] = ("reference (before debiasing)" if name.startswith("a: ") else
                         hidden_or_removed(name, table,
                                           None if weat_p is None else weat_p < 0.05,
                                           va.code, verdict.code))
        rows.append(row)
    frame = debiasing_frame(rows)
    lines = ["", f"debiasing: removed or hidden? ({args.top} most biased words per class of "
             f"a; {int(args.ci_prob * 100)}% intervals; null = label permutation)",
             frame.drop(columns="answer").to_string(index=False)]
    lines += [r["answer"] for r in rows if not r["name"].startswith("a: ")]
    if args.debias_plot:
        plot_debiasing({r["name"]: r["table"] for r in rows}, args.debias_plot)
        lines.append(f"wrote {args.debias_plot}")
    return rows, lines


def _p(p) -> str:
    from ..verdicts.reconcile import format_p

    text = format_p(p)
    return text if text[:1] in "<n" else f"= {text}"


def run(args) -> int:
    """Run ``bayesbias compare``; return the exit code."""
    from ._common import resolve_draws

    resolve_draws(args)
    from pathlib import Path

    from ..models import compare_fits
    from .compare_report import is_report_output

    methods = _methods(args)
    if is_report_output(args.output):
        from ..report.document import check_output

        check_output(args.output)  # an earlier report or a new folder: before the work
    if args.debias_plot:
        check_file(args.debias_plot, what="--debias-plot")
    labels = tuple(args.labels) if args.labels else (args.a, args.b)

    ta, tb = _load(args.a, args), _load(args.b, args)
    fits = []
    for k, (tag, label, table) in enumerate((("a", labels[0], ta), ("b", labels[1], tb)), 1):
        progress.info(f"fitting {tag} ({label}), {k} of 2: the {args.model} model "
                      f"({args.chains} chains x {args.draws} draws)")
        fits.append(fit_from_args(table, args))
    fa, fb = fits
    progress.info("posterior differences, WEAT and MAC of the two sides")
    comp = compare_fits(fa, fb, args.ci_prob, args.ci_kind, labels=labels, rope=args.rope)
    mac = _mac(ta, tb)
    payload = comp.to_dict()
    # one JSON vocabulary (as Comparison.to_dict): the two sides' verdict objects are under
    # "verdicts" ("a", "b", "changes"), the plain-language reading of the differences under
    # "summary"
    payload["diagnostics"] = {"a": fa.diagnostics().to_dict(), "b": fb.diagnostics().to_dict()}
    payload["mac_ttest"] = mac
    payload["dropped_words"] = {"a": ta.attrs.get("missing", {}),
                                "b": tb.attrs.get("missing", {})}
    weat, weat_pairs = _weat(ta, tb, args.seed)
    payload["weat"] = weat
    from ..verdicts.reconcile import weat_change_sentence, weat_sentence

    va, vb = comp.verdicts["a"], comp.verdicts["b"]
    reconcile = {tag: weat_sentence(v, weat_pairs.get(tag, []))
                 for tag, v in (("a", va), ("b", vb))}
    reconcile["change"] = weat_change_sentence(weat_pairs.get("a", []),
                                               weat_pairs.get("b", []), va, vb, labels)
    payload["weat_reconciliation"] = reconcile
    payload["model"] = fa.spec.name
    from ..report.sections import coverage_warning, diagnostic_advice

    lines = [f"model {fa.spec.name!r} (hash {fa.spec.hash}); a = {labels[0]}, b = {labels[1]}",
             str(comp), "", comp.verdicts["a"].rule,
             f"a: {fa.diagnostics()}", f"b: {fb.diagnostics()}"]
    problems = fa.diagnostics().problems + fb.diagnostics().problems
    if problems:
        lines.append(diagnostic_advice(problems, "compare"))
    payload["coverage_warning"] = {}
    for tag, fit in (("a", fa), ("b", fb)):
        warn = coverage_warning(fit)
        payload["coverage_warning"][tag] = warn
        if warn:
            lines.append(f"warning ({tag}): {warn}")
    for tag, table in (("a", ta), ("b", tb)):
        if table.attrs.get("missing"):
            lines.append(dropped_line(table.attrs["missing"], f"dropped on side {tag}"))
    if mac and "error" not in mac:
        lines.append(f"MAC a = {mac['mac_a']:.4f}, b = {mac['mac_b']:.4f}; Manzini's paired "
                     f"t-test: t = {mac['statistic']:.3f}, p {_p(mac['p_value'])} (two-sided) "
                     f"({mac['n_pairs']} pairs)")
    if isinstance(weat, list) and weat:
        import pandas as pd

        lines.append("WEAT per pair of classes (sample sd, two-sided permutation p, printed "
                     "as a bound below 0.001):")
        lines.append(pd.DataFrame(weat).drop(columns="p_value").round(4)
                     .to_string(index=False))
    lines += [f"WEAT and the verdict ({labels[0]}): {reconcile['a']}",
              f"WEAT and the verdict ({labels[1]}): {reconcile['b']}",
              f"WEAT and the verdict, {labels[0]} -> {labels[1]}: {reconcile['change']}"]
    if methods is not None:
        rows, debias_lines = _debiasing(args, labels, methods, comp, weat_pairs)
        payload["debiasing"] = [dict(name=r["name"], tests=r["table"].to_dict(),
                                     **{k: r[k] for k in ("verdict_before", "verdict_after",
                                                          "verdict_change", "weat_min_p",
                                                          "answer", "report")})
                                for r in rows]
        lines += debias_lines
        args._debiasing_rows = rows
    if args.plot:
        comp.plot_forest(args.plot)
        lines.append(f"wrote {args.plot}")
    if is_report_output(args.output):
        from .compare_report import write_compare_report

        progress.info(f"writing the before/after report to {args.output}")
        out = write_compare_report(args, labels, ta, tb, fa, fb, comp, payload)
        lines.append(f"before/after report written to {out}/index.html")
    elif args.output:
        out = Path(args.output)
        for fit, tag in ((fa, "a"), (fb, "b")):
            path = out.with_name(f"{out.stem}_{tag}.nc")
            fit.save(path)
            lines.append(f"wrote {path}")
    emit(args, payload, "\n".join(lines))
    return 0
