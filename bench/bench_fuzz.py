"""Hypothesis at budgets too long for CI, side by side: the fixed protocol through the whole
``deep`` budget, and the time the design's KAFKA-1211 loss takes to find from several seeds.

    python bench/bench_fuzz.py [--seeds 1 2 ... 10] [--no-deep]

Each design search runs what ``epochal fuzz --config design --seed N`` runs -- the same
budget (``examples_for``: the configuration's own 3,000 runs, not the profile's 100) and
the same steps per run (``steps_for``) -- so its figure is the CLI's time to the first
counterexample (before shrinking, which the CLI then adds).  One row per search:
configuration, profile, seed, runs, seconds to the first counterexample, and what was found.
The ``deep`` run of kip320 (5,000 runs of 150 steps at five brokers, two partitions, eight
records, epochs to 12, six crashes) must find nothing; each design search must find a
durability violation.  Exit 1 otherwise.  Figures: docs/benchmarks.md, "Hypothesis".
"""

from __future__ import annotations

import argparse
import statistics
import time

from properties.checkers.fuzz import FuzzOptions, examples_for, fuzz_config, run, steps_for

DESIGN_SEEDS = list(range(1, 11))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=DESIGN_SEEDS)
    ap.add_argument("--no-deep", action="store_true", help="skip the kip320 deep budget (about 10 minutes)")
    args = ap.parse_args(argv)
    ok = True
    print(f"{'config':>8} {'profile':>7} {'seed':>4} {'runs':>6} {'seconds':>8}  found")
    budget, steps = examples_for("design", "ci"), steps_for("design", "ci")
    found_in: list[float] = []
    for seed in args.seeds:
        r = run(fuzz_config("design"), FuzzOptions(seed=seed, max_examples=budget, steps=steps, shrink=False))
        found = r.violation.property if r.violation else "nothing"
        ok &= r.violation is not None
        seconds = r.first_seconds if r.first_seconds is not None else r.seconds
        if r.violation is not None:
            found_in.append(seconds)
        print(f"{'design':>8} {'ci':>7} {seed:>4} {r.runs:>6} {seconds:>8.1f}  {found}", flush=True)
    print(f"design ({budget} runs of {steps} steps, as the CLI): found from {len(found_in)} of "
          f"{len(args.seeds)} seeds" + (f", time to first counterexample median "
          f"{statistics.median(found_in):.1f} s, max {max(found_in):.1f} s" if found_in else ""))
    if not args.no_deep:
        t0 = time.perf_counter()
        r = run(fuzz_config("kip320"), FuzzOptions("deep", seed=1))
        seconds = time.perf_counter() - t0
        ok &= r.violation is None
        print(f"{'kip320':>8} {'deep':>7} {1:>4} {r.runs:>6} {seconds:>8.1f}  "
              f"{r.violation.property if r.violation else 'nothing'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
