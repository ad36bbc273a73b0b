"""``bayesbias compare``: the same word list on two embeddings (e.g. original vs debiased)."""

from __future__ import annotations

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
)
from .fit import fit_from_args, load_table

DESCRIPTION = """\
Fit the same model to two distance tables (or to one word list on two embeddings) and report
the posterior difference b - a of every group-level mean, contrast and per-word mean with
credible intervals, and whether only the neutral/human controls moved (the pattern
Dobrzeniecka & Urbaniak found for debiasing). With --wordlist, A and B are embeddings
(files or 'default'); without it they are distance tables or published:TOPIC:EMBEDDING.
When both sides are tables, MAC with Manzini's paired t-test is reported alongside."""


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
    from ..errors import BayesbiasError

    try:
        return mac_ttest(mac_from_table(ta), mac_from_table(tb)).to_dict()
    except BayesbiasError as exc:
        return {"error": str(exc)}


def _weat(ta, tb, seed):
    """WEAT (two-sided, exact or Monte Carlo p) per pair of classes on both sides.

    Returns the rows (or ``{"error": ...}``) and the results per side.
    """
    from ..comparators.weat import weat_class_pairs
    from ..errors import BayesbiasError
    from .fit import weat_rows

    rows, pairs = [], {}
    try:
        for tag, table in (("a", ta), ("b", tb)):
            pairs[tag] = weat_class_pairs(table, alternative="two-sided", seed=seed)
            rows += [{"side": tag, **row} for row in weat_rows(pairs[tag])]
    except BayesbiasError as exc:
        return {"error": str(exc)}, {}
    return rows, pairs


def _p(p) -> str:
    from ..reconcile import format_p

    text = format_p(p)
    return text if text[:1] in "<n" else f"= {text}"


def run(args) -> int:
    """Run ``bayesbias compare``; return the exit code."""
    from pathlib import Path

    from ..models import compare_fits
    from .compare_report import is_report_output

    if is_report_output(args.output):
        from ..report.document import check_output

        check_output(args.output)  # an earlier report or a new folder: before the work
    labels = tuple(args.labels) if args.labels else (args.a, args.b)
    from ..progress import progress

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
    from ..reconcile import weat_change_sentence, weat_sentence

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
