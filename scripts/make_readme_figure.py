"""Draw the README's picture: the verdict contrasts of the religion list on the shipped GloVe.

The figure is the report's forest plot of the default (crossed) model for the shipped
``religion`` word list on the shipped GloVe subset (the same numbers as ``bayesbias report``'s
religion section, seed 1). Run from the repository root::

    python scripts/make_readme_figure.py            # writes docs/img/verdict-religion.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "docs" / "img" / "verdict-religion.png")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    import bayesbias as bb
    from bayesbias.models import fit_model
    from bayesbias.verdicts import verdict_from_fit

    table = bb.distance_table(bb.load_embedding("default"), "religion", on_missing="drop")
    fit = fit_model(table, seed=args.seed)
    print(verdict_from_fit(fit))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fit.plot_forest(args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
