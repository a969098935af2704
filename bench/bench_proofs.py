"""Proof and search benchmark: z3 induction, z3 BMC and Hypothesis, side by side.

    .venv/bin/python bench/bench_proofs.py [--seeds 5] [--depth 5] [--design-examples 3000]

* time of each inductive proof (lemmas and goals, 2 brokers, design and kip320 rules);
* BMC seconds per depth, from the initial state and after the 6-step replicated prefix,
  for design (counterexample) and kip320 (none);
* Hypothesis: per seed, the time to the first counterexample (before shrinking), the time
  with shrinking and the shrunk length -- for the design's KAFKA-1211 loss (the search of
  ``properties.checkers.fuzz.DESIGN_SEARCH``, ``deep`` profile, budget ``--design-examples`` runs: reports
  how often it was found at all) and for the unclean-election loss.  Medians over the seeds.
"""

from __future__ import annotations

import argparse
import statistics
import time

from model.config import named
from properties.checkers.fuzz import DESIGN_SEARCH, DESIGN_STEPS, FuzzOptions, fuzz_config, run
from properties.checkers.scenarios import play
from properties.checkers.symbolic import bmc, prove


def _proofs() -> None:
    print("== z3 induction (2 brokers, 1 partition; epochs/versions/crashes unbounded)")
    rows: dict[str, list[str]] = {}
    for name in ("design", "kip320"):
        for v in prove(named(name), 2):
            rows.setdefault(v.name, [v.kind]).append(f"{v.status} {v.seconds:5.2f} s")
    print(f"  {'property':<24} {'kind':<9} {'design':<18} {'kip320':<18}")
    for prop, (kind, *cells) in rows.items():
        print(f"  {prop:<24} {kind:<9} " + " ".join(f"{c:<18}" for c in cells))


def _bmc(depth: int) -> None:
    print(f"== z3 BMC of durability, seconds per depth (1..{depth})")
    for name in ("design", "kip320"):
        cfg = named(name)
        out = play("kafka_1211", cfg)
        for label, start, d in (("from initial", None, min(depth, 5)), ("after 6-step prefix", out.states[6], depth)):
            t0 = time.perf_counter()
            k, _, times = bmc(cfg, d, start=start)
            verdict = f"counterexample at depth {k}" if k else f"none to depth {d}"
            per = " ".join(f"{t:6.2f}" for t in times)
            print(f"  {name:<7} {label:<20} {verdict:<26} total {time.perf_counter() - t0:6.2f} s | {per}")


def _hypothesis(seeds: int, design_examples: int) -> None:
    print(f"== Hypothesis, {seeds} seeds: time to first counterexample, time with shrinking, shrunk length")
    cases = [
        ("design (KAFKA-1211)", fuzz_config("design", **DESIGN_SEARCH), "deep",
         dict(max_examples=design_examples, steps=DESIGN_STEPS)),
        ("unclean election", fuzz_config("unclean", brokers=2, partitions=1, records=2, max_epoch=4, max_crashes=2), "ci",
         dict(steps=15)),
    ]
    for label, cfg, profile, extra in cases:
        firsts, totals, lengths, misses = [], [], [], []
        for seed in range(1, seeds + 1):
            r = run(cfg, FuzzOptions(profile, seed=seed, **extra))
            if r.violation is None:
                misses.append(r.seconds)
                print(f"  {label:<20} seed {seed}: nothing in {r.seconds:.1f} s", flush=True)
                continue
            firsts.append(r.first_seconds or 0.0)
            totals.append(r.seconds)
            lengths.append(len(r.violation.steps))
            print(f"  {label:<20} seed {seed}: first {firsts[-1]:6.1f} s, shrunk in {r.seconds:6.1f} s to {lengths[-1]} steps", flush=True)
        found = f"found {len(firsts)}/{seeds}"
        med = (f"median first {statistics.median(firsts):6.1f} s, with shrinking {statistics.median(totals):6.1f} s, "
               f"shrunk length median {statistics.median(lengths)} (min {min(lengths)}, max {max(lengths)})") if firsts else "-"
        miss = f"; misses took {statistics.median(misses):.1f} s each (budget exhausted)" if misses else ""
        print(f"  {label:<20} {found:<11} {med}{miss}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--design-examples", type=int, default=3000, help="Hypothesis budget per seed for the design bug")
    ap.add_argument("--skip", default="", help="comma list of proofs,bmc,hypothesis to skip")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    if "proofs" not in skip:
        _proofs()
    if "bmc" not in skip:
        _bmc(a.depth)
    if "hypothesis" not in skip:
        _hypothesis(a.seeds, a.design_examples)


if __name__ == "__main__":
    main()
