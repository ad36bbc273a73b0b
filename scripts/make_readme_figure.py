"""Draw the README's picture: the control-aware verdict of the religion list on the shipped GloVe.

Fits the default model (``crossed``, 4 chains x 1000 draws, seed 1: the numbers of
``bayesbias report``'s religion section) to the shipped ``religion`` word list on the shipped
GloVe subset, and draws two panels: the group-level mean cosine distance per connection and
the four verdict contrasts, each with its 89% HDI. Run from the repository root::

    python scripts/make_readme_figure.py            # writes docs/img/verdict-religion.png

``--forest PATH`` also writes the report's full forest plot (per-word means too).
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLOURS = {"associated": "#c0392b", "different": "#e67e22", "human": "#2e86c1",
           "none": "#7f8c8d"}


def draw(groups, contrasts, verdict, path) -> None:
    """Two panels: group means per connection, and the verdict contrasts (HDIs)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.5, 3.6), dpi=120)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
    for y, row in enumerate(groups.itertuples()):
        colour = COLOURS.get(row.connection, "black")
        left.plot([row.lower, row.upper], [y, y], color=colour, lw=3)
        left.plot(row.mean, y, "o", color=colour)
    left.set_yticks(range(len(groups)), groups["connection"])
    left.invert_yaxis()
    left.set_xlabel("group-level mean cosine distance (89% HDI)")
    left.set_title("closer = smaller distance", fontsize=10)
    for y, row in enumerate(contrasts.itertuples()):
        colour = "#1e8449" if row.upper < 0 else ("#922b21" if row.lower > 0 else "#555555")
        right.plot([row.lower, row.upper], [y, y], color=colour, lw=3)
        right.plot(row.mean, y, "o", color=colour)
        right.annotate(f"P(< 0) = {row.prob_below_zero:.2f}", (row.upper, y),
                       xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    right.axvline(0, color="black", lw=0.8, ls="--")
    right.set_yticks(range(len(contrasts)), contrasts["contrast"])
    right.invert_yaxis()
    lo, hi = contrasts["lower"].min(), contrasts["upper"].max()
    right.set_xlim(lo - 0.02, hi + 0.09)
    right.set_xlabel("difference in cosine distance (89% HDI)")
    right.set_title("the verdict contrasts", fontsize=10)
    fig.suptitle(verdict, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "docs" / "img" / "verdict-religion.png")
    parser.add_argument("--forest", type=Path, help="also write the report's forest plot")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    import bayesbias as bb
    from bayesbias.models import fit_model
    from bayesbias.verdicts import verdict_from_fit

    table = bb.distance_table(bb.load_embedding("default"), "religion", on_missing="drop")
    fit = fit_model(table, seed=args.seed)
    verdict = verdict_from_fit(fit)
    print(verdict)
    contrasts = fit.contrasts()
    contrasts = contrasts[contrasts["contrast"] != "different - none"]  # the four of the rule
    headline = "religion list, shipped GloVe subset:\n" + textwrap.fill(verdict.headline, 110)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    draw(fit.group_means(), contrasts, headline, args.output)
    print(f"wrote {args.output}")
    if args.forest:
        fit.plot_forest(args.forest)
        print(f"wrote {args.forest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
