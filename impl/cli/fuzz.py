"""``epochal fuzz``: Hypothesis stateful search of a model configuration (``properties.checkers.fuzz``).

Exit codes, like ``epochal check``: 0 nothing found within the profile's budget, 1 a
property violation was found (its shrunk steps are printed), 2 bad arguments.  "Nothing
found" is evidence, not proof: the search is random and bounded; ``epochal check`` and
``epochal prove`` are the exhaustive and symbolic answers.
"""

from __future__ import annotations

import argparse
import sys

from impl.cli.check import add_bound_arguments, bound_overrides
from impl.cli.errors import UsageError
from model.config import NAMED


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fuzz",
        help="search a model configuration with Hypothesis stateful testing (deep, shrinking)",
        description="Random walks over the model's actions at configurations too large to exhaust; a violation is shrunk to a short step list.",
    )
    p.add_argument("--config", required=True, choices=sorted(NAMED), help="named configuration")
    p.add_argument("--profile", choices=("ci", "deep"), default="ci", help="search budget (default ci)")
    p.add_argument("--seed", type=int, help="randomize the search from this seed (default: the profile's)")
    p.add_argument("--max-examples", type=int, help="override the profile's number of runs")
    p.add_argument("--steps", type=int, help="override the profile's steps per run (the design's loss: 30 at 2 brokers)")
    add_bound_arguments(p, {"brokers": "default 5", "partitions": "default 2", "records": "default 8 (up to 26)",
                            "max_epoch": "default 12 (up to 50)", "max_crashes": "default 6"})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from properties.checkers.fuzz import fuzz_config
    from properties.checkers.fuzz import run as fuzz

    try:
        cfg = fuzz_config(args.config, **bound_overrides(args))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if args.max_examples is not None and args.max_examples < 1:
        raise UsageError("--max-examples must be >= 1")
    if args.steps is not None and args.steps < 1:
        raise UsageError("--steps must be >= 1")
    print(f"fuzzing {cfg.describe()} (profile {args.profile}{'' if args.seed is None else f', seed {args.seed}'})", flush=True)
    from properties.checkers.fuzz import PROFILES

    budget = args.max_examples or PROFILES[args.profile].max_examples

    def progress(runs: int, seconds: float) -> None:
        print(f"  ... {runs} runs so far, budget {budget} valid runs ({seconds:.0f} s)", file=sys.stderr, flush=True)

    r = fuzz(cfg, args.profile, seed_value=args.seed, max_examples=args.max_examples, steps=args.steps,
             progress=progress)
    if r.violation is None:
        print(f"OK: no property violation found in {r.runs} runs ({r.seconds:.1f} s)")
        return 0
    print(r.violation.text())
    print(f"\nfound and shrunk to {len(r.violation.steps)} steps in {r.seconds:.1f} s")
    return 1
