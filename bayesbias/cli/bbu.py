"""``bayesbias bbu``: plan a bias study with Bernstein bounds (Ethayarajh 2020)."""

from __future__ import annotations

from ..classifier.bernstein import (
    bernstein_half_width,
    bernstein_min_n,
    smallest_claimable_delta,
)
from ..errors import InputDataError, InvalidArgumentError
from ._common import add_ci_prob, add_json, add_parser, emit, float_range, positive_int


def register(sub) -> None:
    """Add the ``bbu`` sub-command."""
    p = add_parser(
        sub, "bbu", "sample size and interval width for Bernstein-bounded unfairness",
        "  bayesbias bbu --delta 0.05 --ci-prob 0.95 --gamma 0.5 --variance 4 --json\n"
        "      # minimum n to claim a 0.05 disparity (paper: n > 11903)\n"
        "  bayesbias bbu --n 3160 --ci-prob 0.95 --gamma 0.5 --variance 4\n"
        "      # half-width and smallest claimable disparity with WinoBias's 3160 examples\n",
        description="Planning calculator for Bernstein-bounded unfairness (Ethayarajh 2020): "
                    "with --delta, the smallest number of annotated examples needed to claim "
                    "a disparity of that size (formula 4); with --n, the half-width t of the "
                    "confidence interval (formula 3), which is also the smallest disparity "
                    "that can be claimed.",
    )
    p.add_argument("--delta", type=float_range(1e-6, 2.0),
                   help="sample disparity to be claimed (1e-6 to 2) (default: none)")
    p.add_argument("--n", type=positive_int,
                   help="number of annotated examples available (default: none)")
    add_ci_prob(p, 0.95, "confidence rho of the interval (default 0.95)",
                deprecated=("--confidence",))
    p.add_argument("--gamma", type=float_range(0.0, 0.5, low_open=True), default=0.5,
                   help="lower bound on the smaller group proportion, in (0, 0.5] (default 0.5)")
    p.add_argument("--variance", type=float_range(0.0, 1e12, low_open=True), default=None,
                   help="variance sigma^2 of the amortized disparity (default: worst case "
                        "(C/gamma)^2)")
    p.add_argument("--max-cost", type=float_range(0.0, 1e6, low_open=True), default=1.0,
                   help="maximum cost C (default 1)")
    add_json(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Print the minimum n and / or the half-width."""
    if args.delta is None and args.n is None:
        raise InvalidArgumentError(
            "give --delta (for the minimum n) and/or --n (for the half-width)")
    common = dict(confidence=args.ci_prob, gamma=args.gamma, variance=args.variance,
                  C=args.max_cost)
    try:
        payload = {"confidence": args.ci_prob, "gamma": args.gamma, "C": args.max_cost,
                   "variance": args.variance if args.variance is not None
                   else (args.max_cost / args.gamma) ** 2,
                   "variance_is_worst_case": args.variance is None}
        lines = []
        if args.delta is not None:
            r = bernstein_min_n(args.delta, **common)
            payload.update(delta=args.delta, min_n=r["min_n"], n_bound=r["bound"])
            lines.append(f"to claim a disparity of {args.delta:g} with {args.ci_prob:.0%} "
                         f"confidence: n > {r['bound']:.1f}, i.e. at least {r['min_n']} "
                         "annotated examples")
        if args.n is not None:
            t = bernstein_half_width(args.n, **common)
            payload.update(n=args.n, half_width=t,
                           smallest_claimable_delta=smallest_claimable_delta(args.n, **common))
            lines.append(f"with n = {args.n}: half-width t = {t:.4f}; a bias claim at "
                         f"{args.ci_prob:.0%} confidence needs |sample disparity| > {t:.4f}")
            if args.delta is not None:
                payload["claimable"] = bool(args.delta > t)
                lines.append(f"a disparity of {args.delta:g} is "
                             f"{'' if args.delta > t else 'not '}claimable with n = {args.n}")
    except ValueError as exc:
        raise InputDataError(str(exc)) from None
    lines.append(f"(gamma = {args.gamma:g}, sigma^2 = {payload['variance']:g}"
                 f"{' (worst case)' if args.variance is None else ''}, C = {args.max_cost:g})")
    emit(args, payload, "\n".join(lines))
    return 0
