"""A self-contained HTML report of :class:`bayesbias.groups.GroupRates` (``groups --report``).

Written with the report kit (:class:`bayesbias.report.document.Report`): ``index.html``,
``report.md``, ``tables/*.csv``, ``figures/cells.png`` and ``results.json``, atomically.
"""

from __future__ import annotations

from .document import Report

__all__ = ["groups_report", "write_groups_report"]


def groups_report(g, delta: float = 0.05) -> Report:
    """Build the report of a :class:`~bayesbias.groups.GroupRates` result."""
    pct = f"{g.ci_prob:.0%}"
    rep = Report("Group rates of a classifier",
                 f"{g.rows:,} rows in {g.n_cells} cells ({' x '.join(g.features)}); structure "
                 f"`{g.structure}`; {pct} equal-tailed intervals; verdicts against a tolerance "
                 f"of {delta:g}.")
    comp = g.comparisons(delta)
    rep.summary = [f"**{r.quantity}** ({r.metric}): {r['mean']:.3f} [{r.lower:.3f}, "
                   f"{r.upper:.3f}], {r.verdict}" for _, r in comp.iterrows()]
    s = rep.section("Verdicts")
    s.text(f"Each gap is computed on every posterior draw; its verdict is 'gap larger than "
           f"{delta:g}' when the whole {pct} interval lies above {delta:g}, 'within {delta:g}' "
           "when it lies below, and 'not enough evidence' otherwise. Drivers: the cells most "
           "often at the top and at the bottom across draws.")
    s.table(comp, "comparisons")
    s.table(g.differential_fairness(), "differential_fairness",
            "Foulds et al.'s differential-fairness epsilon over the cells with rows.")
    share = g.interaction_share()
    s.table(share, "interaction_share",
            "Share of the between-cell variance (logit scale) due to interactions: is the harm "
            "intersectional?")
    s = rep.section("Overall and per feature")
    s.table(g.overall.reset_index(), "overall", f"Post-stratified by {g.weighting}.")
    for f in g.features:
        s.table(g.marginal(f), f"marginal_{f}", f"Rates per level of {f}.")
    s = rep.section("Cells")
    s.text("Raw rate k/n against the pooled posterior mean, marker area by n; n = 0 cells "
           "(crosses) are the prior's answer.")
    s.figure_from(lambda path: g.plot(path), "cells")
    s.table(g.to_frame(), "cells")
    if g.terms:
        s = rep.section("Terms")
        s.text(f"Terms ({g.term_name}) nested in the cells: each term's logit is its cell's "
               f"plus a deviation Normal(0, sd_term); a cell's rate above is its terms' rates "
               f"post-stratified by {g.term_weighting} (column weight).")
        s.table(g.term_sd(), "term_sd", "sd of the terms' logits within a cell.")
        s.table(g.term_gaps(delta), "term_gaps",
                f"Gap between the terms of each cell (max - min), verdict against {delta:g}.")
        s.table(g.term_frame(), "terms")
    if g.notes:
        rep.section("Notes").bullets(g.notes)
    rep.section("Model").pre(g.spec.card())
    rep.choice("structure", g.structure)
    rep.choice("ci_prob", g.ci_prob)
    rep.choice("delta", delta)
    rep.choice("seed", g.seed)
    rep.data = g.to_dict(delta)
    return rep


def write_groups_report(g, folder, delta: float = 0.05):
    """Write the report folder; return its path."""
    return groups_report(g, delta).write(folder)
