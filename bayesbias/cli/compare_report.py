"""``bayesbias compare -o DIR``: the before/after report of a debiasing audit.

Both verdicts and what changed, why (which connections moved, the control groups or the
stereotypes), WEAT and MAC on both sides, the per-word movements, the forest plot of the
differences, diagnostics, the settings, provenance and how to cite; the two fits are saved
under ``fits/``. Written with :class:`~bayesbias.report.Report` (atomic, escaped).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..citation import cite_bayesbias, references
from ..errors import BayesbiasError
from ..inputs.wordlists import load_wordlist
from ..plain import dropped_line
from ..provenance import provenance
from ..report.document import Report
from ..report.reproduce import provenance_section
from ..verdicts.recoverability import debiasing_frame, plot_debiasing
from ._common import to_jsonable

__all__ = ["is_report_output", "write_compare_report"]


def is_report_output(output) -> bool:
    """``-o`` names a report folder (anything but a ``.nc`` file name, the older use)."""
    return isinstance(output, str) and Path(output).suffix != ".nc"


def _side_table(va, vb, labels) -> pd.DataFrame:
    rows = []
    for ca in va.contrasts:
        cb = vb[ca.contrast]
        row = {"contrast": ca.contrast}
        for lab, c in zip(labels, (ca, cb), strict=True):
            row[f"{lab}: mean [interval]"] = (
                "no data" if c.status == "no data"
                else f"{c.mean:+.3f} [{c.lower:+.3f}, {c.upper:+.3f}]")
            row[f"{lab}: P(<0)"] = c.prob_below_zero
            row[f"{lab}: reading"] = c.status
        rows.append(row)
    return pd.DataFrame(rows)


def _metrics(args, labels):
    """Embedding metrics of both embeddings side by side (a frame), or why not (a string)."""
    from types import SimpleNamespace

    from ..comparators.metrics import REPORT_BOOTSTRAP, REPORT_NULL_REPS, report_metrics

    frames = []
    try:
        name = load_wordlist(args.wordlist).name
        for lab, source in zip(labels, (args.a, args.b), strict=True):
            s = SimpleNamespace(embedding=source, wordlists=(args.wordlist,), distances=(),
                                format=args.format, trust_pickle=args.trust_pickle,
                                on_missing=args.on_missing or "drop",
                                n_bootstrap=REPORT_BOOTSTRAP, null_reps=REPORT_NULL_REPS,
                                ci_prob=args.ci_prob, seed=args.seed)
            table = report_metrics(s, name)
            f = table.to_frame() if table is not None else pd.DataFrame()
            if f.empty:
                return pd.DataFrame()
            f = f.set_index(["metric", "X", "Y"])
            frames.append(pd.DataFrame({
                f"{lab}: value": f["value"],
                f"{lab}: interval": [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in
                                     zip(f["ci_lower"], f["ci_upper"], strict=True)],
                f"{lab}: null (resample)": [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in
                                            zip(f["null_resample_lower"],
                                                f["null_resample_upper"], strict=True)]}))
    except (BayesbiasError, KeyError) as exc:
        return str(exc)
    return frames[0].join(frames[1], how="outer").reset_index()


def write_compare_report(args, labels, ta, tb, fa, fb, comp, payload) -> Path:
    """Write the before/after report folder ``args.output``; return it."""
    a, b = labels
    inputs = ([("embedding", args.a), ("embedding", args.b), ("wordlist", args.wordlist),
               ("controls", "controls")] if args.wordlist
              else [("distances", args.a), ("distances", args.b)])
    prov = provenance([*inputs, ("model", args.model)])
    iv = comp.group_means.attrs["interval"]
    what = f"word list {args.wordlist}" if args.wordlist else "the same word list"
    report = Report(f"bayesbias compare{f', {args.wordlist}' if args.wordlist else ''}: "
                    f"{a} (before) vs {b} (after)",
                    f"The same model fitted to {what} on two sides, a = {a} and b = {b}; every "
                    f"difference is b - a with its {iv} (Dobrzeniecka & Urbaniak's comparison "
                    "of an embedding and its debiased version).")
    va, vb = comp.verdicts["a"], comp.verdicts["b"]
    report.summary = [f"**Before (a)**: {a}: {va.headline}",
                      f"**After (b)**: {b}: {vb.headline}",
                      f"**Rows**: {len(ta)} distances in a, {len(tb)} in b"]
    sec = report.section("Verdicts before and after")
    sec.bullets(comp.verdicts.get("changes", []), css="verdict")
    sec.table(_side_table(va, vb, labels), "verdicts",
              f"The contrasts behind each verdict ({iv}); `reading`: where the interval lies "
              "(below 0 = the first connection is closer)")
    sec.text(va.rule)

    sec = report.section("What changed and why")
    sec.bullets(comp.summary or ["no group-level mean moved credibly"])
    sec.text("A debiasing method that only moves the control groups (human and neutral "
             "attributes) changes bias scores built on raw distances without changing the "
             "stereotype distances; this is what `only control groups moved` checks."
             + (" Here: only the control groups moved." if comp.only_neutral_moved else ""))
    sec.table(comp.group_means, "group_means", f"Group-level mean distance per connection on "
              f"both sides and the difference b - a ({iv})")
    sec.table(comp.contrasts, "contrasts", f"Contrasts on both sides and their change ({iv})")
    sec.table(comp.list_means, "list_means", "Averages over the words both sides share (no "
              "between-word uncertainty)")
    sec.figure_from(comp.plot_forest, "differences",
                    f"Forest plot of the differences b - a ({iv}): per word, group-level means "
                    "and contrasts")

    sec = report.section("Comparators before and after")
    weat = payload.get("weat")
    if isinstance(weat, list) and weat:
        w = pd.DataFrame(weat)
        w["side"] = w["side"].map({"a": a, "b": b})
        sec.table(w, "weat", "WEAT per pair of classes on both sides (sample sd, two-sided "
                  "permutation p)")
    elif isinstance(weat, dict):
        sec.text(f"WEAT: not computed ({weat.get('error')}).")
    mac = payload.get("mac_ttest")
    if mac and "error" not in mac:
        sec.text(f"MAC (Manzini et al.): a = {mac['mac_a']:.4f}, b = {mac['mac_b']:.4f}; "
                 f"paired t-test t = {mac['statistic']:.3f}, p = {mac['p_value']:.4g} "
                 f"({mac['n_pairs']} pairs).")
    elif mac:
        sec.text(f"MAC: not computed ({mac['error']}).")

    if args.wordlist:
        metrics = _metrics(args, labels)
        if isinstance(metrics, str):
            sec.text(f"Embedding-bias metrics: not computed ({metrics}).")
        elif not metrics.empty:
            sec.table(metrics, "metrics", "Embedding-bias metrics of other toolkits (RND, "
                      "RNSB, ECT, RIPA, direct/indirect bias, WEAT-ES) on both embeddings: "
                      "value with its percentile bootstrap interval over words and the central "
                      "95% under the `resample` null (real vectors, random labels)")
            payload["metrics"] = metrics.to_dict(orient="records")

    rows = getattr(args, "_debiasing_rows", None)
    if rows:
        sec = report.section("Debiasing: removed, or hidden from WEAT?")
        sec.bullets([r["answer"] for r in rows if not r["name"].startswith("a: ")])
        sec.table(debiasing_frame(rows), "debiasing",
                  f"Recoverability of the classes from the {args.top} most biased words per "
                  f"class of a (chosen on a), per method: value [{args.ci_prob:.0%} interval] "
                  "and null band (central range under label permutation). Cluster alignment: "
                  "k-means, bootstrap over words; classifier accuracy: 5-fold cross-validated, "
                  "Jeffreys Beta interval; neighbour share: same-class share of the nearest "
                  "labelled words, bootstrap over words. Verdict: the Bayesian control-aware "
                  "verdict before -> after; WEAT min p: smallest two-sided permutation p over "
                  "class pairs.")
        sec.figure_from(lambda path: plot_debiasing({r["name"]: r["table"] for r in rows},
                                                    path),
                        "debiasing", "Each test per method: interval (red when it lies above "
                        "the null band) and the null band (grey)")

    sec = report.section("Per-word movements")
    words = comp.word_means.copy()
    words = words.iloc[(-words["diff_mean"].abs()).argsort(kind="stable")]
    sec.table(words, "word_movements", f"Change of each protected word's mean distance per "
              f"connection, largest first ({iv}; `excludes_zero`: the word moved credibly)")

    sec = report.section("Diagnostics")
    sec.bullets([f"{lab}: {fit.diagnostics()}" for lab, fit in zip(labels, (fa, fb),
                                                                  strict=True)]
                + [f"warning ({tag}): {w}" for tag, w in
                   payload.get("coverage_warning", {}).items() if w]
                + [dropped_line(miss, f"dropped on side {tag}")
                   for tag, miss in payload.get("dropped_words", {}).items()
                   if dropped_line(miss)])

    report.choice("sides", f"a = {args.a}, b = {args.b}" + (f"; word list {args.wordlist}"
                                                            if args.wordlist else ""))
    tune = fa.idata.attrs.get("tune", args.tune)  # the fit's: --tune or the model's default
    report.choice("model", f"{fa.spec.name} (hash {fa.spec.hash}); {args.chains} chains x "
                           f"{args.draws} draws after {tune} tuning steps; seed {args.seed}")
    report.choice("interval", f"{iv}; ROPE " + (f"±{args.rope:g}" if args.rope is not None
                                               else "none"))
    provenance_section(report, prov, rerun=False)
    sec = report.section("How to cite", last=True)
    from .. import __version__

    sec.text(f"Cite bayesbias ({cite_bayesbias(__version__)}) and:")
    keys = {"bayesian", "mac", "pymc", "arviz"} | ({"weat"} if isinstance(weat, list) else set())
    sec.bullets([f"{ref} (for {why})" for why, ref in references(keys)])
    report.data = to_jsonable(dict(payload, provenance=prov))

    def write_fits(folder: Path):
        folder.mkdir()
        fa.save(folder / "a.nc", provenance=prov)
        fb.save(folder / "b.nc", provenance=prov)

    return report.write(args.output, extra_files={"fits": write_fits})
