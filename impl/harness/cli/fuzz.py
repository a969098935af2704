"""``epochal fuzz``: Hypothesis stateful search of a model configuration (``properties.checkers.fuzz``).

Exit codes (``impl.harness.cli.exits``): 1 a property violation was found (its shrunk steps are
printed), 2 bad arguments, 3 nothing found within the budget -- inconclusive, always: the
search is random and bounded, so it can never show that a violation does not exist, and it
never exits 0 ("holds").  ``epochal check`` (exhaustive) and ``epochal prove`` (symbolic) are
the commands that can answer 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from impl.harness.cli.check import BOUNDS, add_bound_arguments, add_knob_arguments, bound_overrides
from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import FOUND, INCONCLUSIVE
from impl.harness.cli.html_output import add_html_flag, check_writable
from impl.harness.cli.html_output import write as write_html
from impl.harness.cli.output import add_json_flag
from impl.harness.cli.verdict import config_object, model_violation, print_results, result_entry
from model.config import NAMED
from model.registry import EXPLORED

FUZZ_KNOBS = tuple(dict.fromkeys(e.knob for e in EXPLORED if e.knob is not None))
"""The knobs of the actions the Hypothesis machine runs (``EXPLORED``): the others' actions
never fire in a fuzz run, so it takes no flag for them."""


PROGRESS_SECONDS = 5.0
"""How often a fuzz run says which phase it is in and how far it got."""

PHASES = {
    "searching": "searching: {runs} runs so far, budget {budget} valid runs",
    "shrinking": "shrinking the counterexample found: {runs} runs in all so far",
    "minimizing": "minimizing the shrunk counterexample (each step left out in turn): {runs} runs in all",
}
"""The progress line of each phase of ``properties.checkers.fuzz.run``."""


def _defaults() -> dict[str, str]:
    from properties.checkers.fuzz import FUZZ_SCALE, SCALES

    out = {}
    for bound in BOUNDS + tuple(k.field for k in FUZZ_KNOBS):
        own = {n: SCALES.get(n, FUZZ_SCALE).get(bound) for n in sorted(NAMED)}
        if all(v is None for v in own.values()):
            out[bound] = "default: the configuration's own"
        elif len(set(own.values())) == 1:
            out[bound] = f"default {next(iter(own.values()))}"
        else:
            out[bound] = "default " + ", ".join(f"{v} ({n})" for n, v in own.items())
    out["records"] += "; up to 26"
    out["max_epoch"] += "; up to 50"
    return out


def register(sub: argparse._SubParsersAction) -> None:
    from properties.checkers.fuzz import PROFILES

    p = sub.add_parser(
        "fuzz",
        help="search a model configuration with Hypothesis stateful testing (deep, shrinking)",
        description="Random walks over the model's actions at configurations too large to exhaust; a violation is "
                    "shrunk to a short step list.  Nothing found is inconclusive (exit 3), never 'holds'.",
    )
    p.add_argument("--config", required=True, choices=sorted(NAMED), help="named configuration")
    p.add_argument("--profile", choices=sorted(PROFILES), default="ci",
                   help=f"search budget (default ci: {PROFILES['ci'].max_examples} runs of up to "
                        f"{PROFILES['ci'].stateful_step_count} steps; deep: {PROFILES['deep'].max_examples} of up to "
                        f"{PROFILES['deep'].stateful_step_count})")
    p.add_argument("--seed", type=int, help="randomize the search from this seed (default: the profile's fixed sequence)")
    p.add_argument("--max-examples", type=int, metavar="N",
                   help="runs in all (default: the profile's, or the configuration's own where it needs more: design 3000)")
    p.add_argument("--steps", type=int, metavar="N",
                   help="override the steps per run (default: the profile's, or the configuration's own: design 30)")
    p.add_argument("--no-shrink", dest="shrink", action="store_false",
                   help="report the first counterexample as found, without shrinking it (shrinking can take minutes)")
    defaults = _defaults()
    add_bound_arguments(p, defaults)
    add_knob_arguments(p, FUZZ_KNOBS, defaults)
    add_json_flag(p, "the result")
    add_html_flag(p, "the (shrunk) counterexample")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from properties.checkers.fuzz import FuzzOptions, examples_for, fuzz_config, steps_for
    from properties.checkers.fuzz import run as fuzz

    try:
        cfg = fuzz_config(args.config, **bound_overrides(args))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if args.max_examples is not None and args.max_examples < 1:
        raise UsageError("--max-examples must be >= 1")
    if args.steps is not None and args.steps < 1:
        raise UsageError("--steps must be >= 1")
    check_writable(args)
    budget = args.max_examples or examples_for(args.config, args.profile)
    steps = args.steps or steps_for(args.config, args.profile)
    out = sys.stderr if args.json else sys.stdout
    print(f"fuzzing {cfg.describe()} (profile {args.profile}{'' if args.seed is None else f', seed {args.seed}'}; "
          f"{budget} runs of up to {steps} steps)", file=out, flush=True)

    def progress(runs: int, seconds: float, phase: str) -> None:
        print(f"  ... {PHASES[phase].format(runs=runs, budget=budget)} ({seconds:.0f} s)", file=sys.stderr, flush=True)

    r = fuzz(cfg, FuzzOptions(args.profile, seed=args.seed, max_examples=budget, steps=steps, shrink=args.shrink,
                              progress=progress, every=PROGRESS_SECONDS))
    code = INCONCLUSIVE if r.violation is None else FOUND
    write_html(args, lambda path: html_report(path, r, budget, steps, args.shrink))
    if args.json:
        return print_results(args, code, [result_json(r, budget, steps, args.shrink)])
    if r.violation is None:
        within = "before Ctrl-C stopped it" if r.interrupted else "within the budget"
        print(f"INCONCLUSIVE: no property violation found {within} ({r.runs} runs of up to {steps} steps, "
              f"{r.seconds:.1f} s); a random search cannot show there is none -- epochal check can")
        return code
    print(r.violation.text())
    if args.shrink:
        print(f"\nfound after {r.first_seconds or 0:.1f} s and shrunk to {len(r.violation.steps)} steps in {r.seconds:.1f} s")
    else:
        print(f"\nfound after {r.first_seconds or 0:.1f} s ({len(r.violation.steps)} steps, not shrunk)")
    return code


def html_report(path: Any, r: Any, budget: int, steps: int, shrunk: bool) -> Any:
    from impl.harness.report import result_run, write_html_report

    if r.violation is None:
        note = (f"inconclusive: no property violation found within the budget ({r.runs} runs of up to {steps} "
                f"steps, {r.seconds:.1f} s)")
    else:
        note = (f"found after {r.first_seconds or 0:.1f} s"
                + (f", shrunk to {len(r.violation.steps)} steps" if shrunk else " (not shrunk)"))
    return write_html_report(path, result_run(r, note=note), title=f"epochal fuzz: {r.config.name}",
                             subtitle=f"profile {r.profile}, budget {budget} runs of up to {steps} steps")


def result_json(r: Any, budget: int, steps: int, shrunk: bool) -> dict[str, Any]:
    """The run's entry of ``results`` (the verdict object, ``impl.harness.cli.verdict``)."""
    return result_entry(config_object(r.config), INCONCLUSIVE if r.violation is None else FOUND,
                        model_violation(r.violation), profile=r.profile, seed=r.seed,
                        budget={"max_examples": budget, "steps": steps}, shrunk=r.violation is not None and shrunk,
                        found=r.violation is not None, interrupted=r.interrupted, runs=r.runs, seconds=round(r.seconds, 3),
                        first_seconds=None if r.first_seconds is None else round(r.first_seconds, 3))
