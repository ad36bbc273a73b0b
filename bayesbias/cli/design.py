"""``bayesbias design``: how many words a study needs (Bayesian assurance, WEAT/MAC power)."""

from __future__ import annotations

import argparse

import numpy as np

from .._atomic import check_output
from ..config import DEFAULT_MODEL, defaults
from ..errors import InputDataError, InvalidArgumentError
from ..models.families import family
from ..validation import validate_int
from ._common import (
    add_ci_prob,
    add_distances,
    add_json,
    add_option,
    add_output,
    add_parallel_options,
    add_parser,
    add_plot,
    add_seed,
    add_table_source,
    emit,
    positive_int,
    probability,
    write_study_outputs,
)
from .fit import load_table

DESCRIPTION = """\
Plan a study from a pilot. The pilot (a distance table, an embedding plus a word list, or a
saved hierarchical fit) gives a posterior over the group-level means and spreads per
connection. For every candidate design (protected words per class, stereotypes per class,
human and neutral controls) the command simulates --reps studies: a truth drawn from the
pilot's posterior, new words drawn from the fitted hierarchy, every distance drawn around
them. Each study is analysed with the verdict rule of the report (a contrast's HDI below 0:
associated - none, associated - human, associated - different), WEAT's permutation test
(every class pair) and MAC's paired t-test, one-sided at --alpha. Prints the assurance
(share of studies reaching each verdict) with its Monte Carlo se, and the smallest design
reaching --target for --verdict. --null-contrast CONTRAST sets that contrast to 0 in every
truth, so the shares are false-positive rates. Runs on Dask with --workers N or --scheduler ADDRESS;
the numbers depend on --seed only."""


def _int_list(text: str) -> list[int]:
    try:
        out = [validate_int(v, "value", low=1, high=10**6) for v in text.split(",")
               if v.strip()]
        if not out:
            raise InvalidArgumentError("empty")
    except InvalidArgumentError:
        raise argparse.ArgumentTypeError(
            f"must be positive integers separated by commas (e.g. 5,10,20), got {text!r}"
        ) from None
    return out


def register(sub) -> None:
    """Add the ``design`` sub-command to `sub`."""
    p = add_parser(
        sub, "design", "plan a study: assurance of the verdicts and WEAT/MAC power per design",
        "  bayesbias design --distances published:religion:reddit --words 5,10,15,20,30 \\\n"
        "                   --reps 200 --target 0.8 --plot design.png\n"
        "  bayesbias design --pilot-fit fit.nc --words 10 --stereotypes 3,6,9 --json\n"
        "  bayesbias design --distances published:religion:reddit --words 5 --reps 1000 \\\n"
        "                   --null-contrast 'associated - human'   # false-positive rate\n"
        "  bayesbias design --embedding default --wordlist religion --workers 2",
        description=DESCRIPTION,
    )
    add_distances(p, help="pilot distance table (file or published:TOPIC:EMBEDDING) "
                          "(default: none)")
    add_table_source(p)
    p.add_argument("--pilot-fit", default=None, metavar="FIT_NC",
                   help="a saved hierarchical fit (.nc from 'bayesbias fit -o') as the pilot "
                        "(default: none)")
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help="crossed (default: attribute words resampled too) or hierarchical spec "
                        "(name or .toml) for the pilot and the studies")
    p.add_argument("--words", type=_int_list, default=None,
                   help="protected words per class, comma-separated (default: 1, 2, 3 and 4 "
                        "times the pilot's)")
    p.add_argument("--stereotypes", type=_int_list, default=None,
                   help="stereotypes per class (default: the pilot's)")
    p.add_argument("--human", type=_int_list, default=None,
                   help="human-attribute controls (default: the pilot's)")
    p.add_argument("--none", type=_int_list, default=None,
                   help="neutral-word controls (default: the pilot's)")
    add_option(p, "--n-classes", deprecated=("--classes",), dest="n_classes", type=positive_int,
               default=None, metavar="N", help="number of protected classes (default: the "
                                                "pilot's)")
    p.add_argument("--reps", type=positive_int, default=200,
                   help="simulated studies per design (default 200)")
    p.add_argument("--target", type=probability, default=0.8,
                   help="assurance to reach (default 0.8)")
    p.add_argument("--verdict", default="associated - human",
                   help="verdict whose assurance must reach --target (default "
                        "'associated - human')")
    add_option(p, "--null-contrast", deprecated=("--null",), dest="null_contrast", default=None,
               metavar="CONTRAST",
               help="set this contrast to 0 in every truth, e.g. 'associated - human' "
                    "(false-positive rates) (default: none)")
    p.add_argument("--alpha", type=probability, default=0.05,
                   help="level of WEAT's and MAC's tests (default 0.05)")
    p.add_argument("--embeddings", type=_int_list, default=None,
                   help="numbers of embeddings to try, comma-separated, with a --pilot-fit of "
                        "the embedding_level model: how many embeddings a claim needs (a "
                        "plug-in Normal approximation from the pilot's draws; default "
                        "2,4,8,16,32 for such a pilot)")
    add_ci_prob(p, defaults.ci_prob, "HDI probability of the verdicts (default %(default)s)")
    p.add_argument("--method", choices=["exact", "nuts"], default="exact",
                   help="posterior of each simulated study: exact marginal (default, fast) "
                        "or full NUTS fits (slow; for checking)")
    add_seed(p, default=defaults.seed)
    add_parallel_options(p)
    add_plot(p, "save the power curves (PNG)")
    add_output(p, "write the results as JSON")
    add_json(p)
    p.set_defaults(run=run)


def _stereotype_grid(pilot, own) -> list[int]:
    """Stereotypes per class to try: the pilot's, and 2x and 4x with attribute effects."""
    if float(np.mean(pilot.omega)) > 0:
        return [own.stereotypes * k for k in (1, 2, 4)]
    return [own.stereotypes]


def _pilot(args, fit=None):
    from ..studies.design import Pilot

    if args.pilot_fit:
        if args.distances:
            raise InvalidArgumentError("give --distances or --pilot-fit, not both")
        from ..models import load_fit

        return Pilot.from_fit(fit if fit is not None else load_fit(args.pilot_fit))

    return Pilot.from_table(load_table(args.distances, args), args.model, seed=args.seed)


def _embeddings(args, fit) -> int:
    """How many embeddings a claim needs, from an embedding_level pilot fit."""
    from ..studies.embeddings import embeddings_needed

    result = embeddings_needed(fit, args.embeddings or (2, 4, 8, 16, 32),
                               ci_prob=args.ci_prob, target=args.target)
    payload = result.to_dict()
    payload.update(plot=args.plot, output=args.output)
    lines = [str(result)]
    write_study_outputs(args, result, payload, lines, indent=2)
    emit(args, payload, "\n".join(lines))
    return 0


def run(args) -> int:
    """Run ``bayesbias design``; return the exit code."""
    from ..studies.design import VERDICTS, _contrast_index, designs_grid, run_design

    for path, what in ((args.plot, "--plot"), (args.output, "-o")):
        if path:
            check_output(path, what=what)
    for label in filter(None, (args.null_contrast,)):
        if label not in VERDICTS and " - " not in label:
            raise InvalidArgumentError(f"--null-contrast {label!r}: write e.g. "
                                       "'associated - human'")
        try:
            _contrast_index(label)
        except InputDataError as exc:
            raise InvalidArgumentError(f"--null-contrast: {exc}") from None
    fit = None
    if args.embeddings or args.pilot_fit:
        from ..models import load_fit

        fit = load_fit(args.pilot_fit) if args.pilot_fit else None
        if args.embeddings and fit is None:
            raise InvalidArgumentError("--embeddings needs --pilot-fit: a saved fit of the "
                                       "embedding_level model ('bayesbias fit --model "
                                       "embedding_level -o fit.nc')")
        if fit is not None and (args.embeddings or family(fit.spec.family).EMBEDDINGS):
            return _embeddings(args, fit)
    pilot = _pilot(args, fit)
    own = pilot.design
    words = args.words or [own.words * k for k in (1, 2, 3, 4)]
    designs = designs_grid(args.n_classes or own.classes, words,
                           args.stereotypes or _stereotype_grid(pilot, own),
                           args.human or [own.human],
                           args.none or [own.none])
    result = run_design(pilot, designs, reps=args.reps, method=args.method, alpha=args.alpha,
                        ci_prob=args.ci_prob, null=args.null_contrast, seed=args.seed,
                        workers=args.workers, scheduler=args.scheduler, target=args.target,
                        fit_kwargs={"draws": 1000, "tune": 1000, "chains": 4})
    smallest = result.smallest(args.target, args.verdict)
    payload = result.to_dict(args.target, args.verdict)
    payload.update(plot=args.plot, output=args.output)
    if smallest["design"] is None:
        found = (f"no candidate reaches {args.target:.0%} assurance for '{args.verdict}' "
                 f"(best {smallest['best']:.2f}); try more words")
    else:
        found = (f"smallest design reaching {args.target:.0%} assurance for "
                 f"'{args.verdict}': {smallest['label']} ({smallest['assurance']:.2f}, "
                 f"Monte Carlo se {smallest['mc_se']:.2f})")
    lines = [str(result), "", found]
    if not result.complete:
        lines.append("interrupted: the table shows the replications that finished")
    write_study_outputs(args, result, payload, lines, indent=2)
    emit(args, payload, "\n".join(lines))
    return 0 if result.complete else 130
