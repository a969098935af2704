"""Generated test cases over every configuration and knob, on real processes: ``epochal drive
--generate transitions`` for each target of ``impl.harness.drive.targets`` (every named
configuration, and kip320 with each admin knob), the pairs covered reported per configuration.

    python bench/bench_generate.py [--budget SECONDS] [--sample] [--max-states N] [--only NAME ...]
    python bench/bench_generate.py --guided SECONDS [--seed N]

One row per configuration: the states and transitions searched, the (action, outcome) pairs
found and covered by paths the implementation followed, the paths driven, the distinct model
transitions they took, the seconds (search included), and the verdicts; then the pairs not
covered.  ``--sample`` drives the slow suite's sample (``targets.sample_focus``) instead of
every path.  ``--guided`` runs ``--generate guided`` on every named configuration instead,
SECONDS each: one row per configuration.  Exit 1 if any path or run diverged or reproduced a
violation.
"""

from __future__ import annotations

import argparse
import json
import sys

from impl.harness.drive.targets import TARGETS, generate_every, guided_every


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=600, help="seconds per configuration (default 600)")
    ap.add_argument("--sample", action="store_true", help="the slow suite's sample, not every path")
    ap.add_argument("--max-states", type=int, default=50_000, help="the search's bound (default 50,000)")
    ap.add_argument("--only", nargs="*", choices=[t.name for t in TARGETS], help="these configurations only")
    ap.add_argument("--json", action="store_true", help="the reports as JSON")
    ap.add_argument("--guided", type=float, metavar="SECONDS", help="guided fuzzing of every named configuration")
    ap.add_argument("--seed", type=int, default=0, help="with --guided: the choices' seed (default 0)")
    args = ap.parse_args(argv)
    if args.guided:
        return _guided(args.guided, args.seed)
    targets = tuple(t for t in TARGETS if not args.only or t.name in args.only)
    every = generate_every(args.budget, sample=args.sample, max_states=args.max_states, targets=targets,
                           progress=lambda m: print(m, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(every.as_dict(), indent=1))
        return every.exit_code
    print("| configuration | brokers | states searched | transitions searched | pairs | pairs covered | paths driven "
          "| distinct transitions driven | seconds | verdicts |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for t, r in every.reports:
        verdicts = sorted({c["verdict"] for c in r.cases})
        diverged = [c for c in r.cases if c["verdict"] in ("diverged", "reproduced")]
        print(f"| {t.name} (`{t.command().removeprefix('epochal drive ')}`) | {t.brokers} | {r.states:,} "
              f"| {r.transitions:,} | {len(r.pairs)} | {len(r.covered_pairs)} | {len(r.cases)} "
              f"| {r.covered_transitions} | {r.seconds:.0f} | {', '.join(verdicts)}"
              + (f" ({len(diverged)} diverged)" if diverged else "") + " |")
    for line in every.rows():
        print(line)
    for t, r in every.reports:
        for c in r.cases:
            if c["divergence"]:
                d = c["divergence"]
                print(f"{t.name}: {c['pair'][0]}/{c['pair'][1]} diverged at step {d.get('step')} "
                      f"({d.get('action')}): {d.get('implementation_did')}")
    return every.exit_code


def _guided(budget_s: float, seed: int) -> int:
    reports = guided_every(budget_s, seed=seed, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print("| configuration | runs | steps | transitions | distinct model states | seconds | verdicts |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in reports:
        verdicts = sorted({x.verdict for x in r.runs})
        print(f"| {r.config} | {len(r.runs)} | {sum(x.steps for x in r.runs)} | {sum(x.transitions for x in r.runs)} "
              f"| {r.states} | {r.seconds:.0f} | {', '.join(verdicts)} |")
        for x in r.runs:
            if x.divergence:
                print(f"{r.config} run {x.n}: {x.verdict} at step {x.divergence.get('step')} "
                      f"({x.divergence.get('action')}): {x.divergence.get('implementation_did')}")
    return max((r.exit_code for r in reports), default=0)


if __name__ == "__main__":
    sys.exit(main())
