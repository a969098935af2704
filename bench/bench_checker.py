"""Exhaustive-checker benchmark: every named configuration at its default bounds, with and
without symmetry reduction and with the partial-order reduction, measured side by side in
one run.

    .venv/bin/python bench/bench_checker.py [--configs design,unclean,...] [--workers 2]
                                            [--budget-states N] [--modes sym,nosym,por]
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por,sym
    .venv/bin/python bench/bench_checker.py --three-brokers --configs kip320 --modes por --workers 1,2 --max-depth 17

Prints distinct states, transitions, depth, wall time and states/s per run, and the ratios
of states and time of the plain symmetry-reduced search to the other modes.  Modes: ``sym``
symmetry reduction (the checker's default), ``nosym`` none, ``por`` symmetry plus the
partial-order reduction of ``model.reduction`` (whose state counts are those of the reduced
graph).  ``--three-brokers`` runs at ``model.three_brokers.THREE_BROKERS`` (3 brokers, 2
records, max epoch 3, 2 crashes), where Kafka's later bugs live.  Runs that would exceed
``--budget-states`` distinct states stop there and are marked INCOMPLETE (so the benchmark
always ends); figures for complete runs are exact.  ``--max-depth D`` bounds every run at D
steps instead (the same states for every worker count, so their times compare);
``--workers 1,2`` runs each mode with each worker count and prints the speed-up.
"""

from __future__ import annotations

import argparse
import sys
import time

from model.checker import check
from model.config import NAMED, named
from model.three_brokers import THREE_BROKERS

MODES = {"sym": (True, False), "nosym": (False, False), "por": (True, True)}  # (symmetry, reduction)


def run_one(name: str, mode: str, workers: int, budget: int | None, overrides: dict, max_depth: int | None = None) -> dict:
    symmetry, reduction = MODES[mode]
    cfg = named(name, **overrides)
    t0 = time.perf_counter()
    r = check(cfg, symmetry=symmetry, workers=workers, max_states=budget, reduction=reduction, max_depth=max_depth)
    wall = time.perf_counter() - t0
    if r.violation:
        verdict = "violation: " + r.violation.property
    elif r.stopped_by == "max_depth":
        verdict = f"none within {r.depth} steps"
    else:
        verdict = "holds" if r.complete else "INCOMPLETE"
    return {"config": cfg.describe(), "name": name, "mode": mode, "states": r.states, "transitions": r.transitions, "depth": r.depth, "seconds": wall, "rate": r.states / wall if wall else 0.0, "verdict": verdict}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(NAMED))
    ap.add_argument("--workers", default="1", help="worker count, or a comma list to compare (e.g. 1,2)")
    ap.add_argument("--max-depth", type=int, help="stop every run after this many steps")
    ap.add_argument("--budget-states", type=int, default=3_000_000)
    ap.add_argument("--modes", default="sym,nosym,por", help="comma list of sym, nosym, por (default: all three)")
    ap.add_argument("--brokers", type=int)
    ap.add_argument("--max-crashes", type=int)
    ap.add_argument("--three-brokers", action="store_true", help="the three-broker bounds of model.three_brokers")
    args = ap.parse_args(argv)
    unknown = [n for n in args.configs.split(",") if n not in NAMED]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(NAMED)}")
    modes = args.modes.split(",")
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes takes a comma list of {', '.join(MODES)}")
    try:
        worker_counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        ap.error("--workers takes a number or a comma list of numbers")
    if any(w < 1 for w in worker_counts):
        ap.error("--workers must be at least 1")
    overrides = dict(THREE_BROKERS) if args.three_brokers else {}
    overrides.update({k: v for k, v in {"brokers": args.brokers, "max_crashes": args.max_crashes}.items() if v is not None})
    print(f"{'config':8s} {'mode':6s} {'wk':>2s} {'states':>10s} {'transitions':>12s} {'depth':>5s} {'wall s':>8s} {'states/s':>9s}  verdict")
    for name in args.configs.split(","):
        rows = {}
        speedups = []
        for mode in modes:
            for workers in worker_counts:
                row = run_one(name, mode, workers, args.budget_states, overrides, args.max_depth)
                if workers == worker_counts[0]:
                    rows[mode] = row
                elif row["states"] == rows[mode]["states"]:
                    speedups.append(f"{mode} {workers} workers/{worker_counts[0]}: time x{row['seconds'] / max(rows[mode]['seconds'], 1e-9):.2f}")
                print(f"{name:8s} {mode:6s} {workers:>2d} {row['states']:>10,} {row['transitions']:>12,} {row['depth']:>5d} {row['seconds']:>8.1f} {row['rate']:>9,.0f}  {row['verdict']}", flush=True)
        ratios = list(speedups)
        base = rows.get("sym")
        for mode, row in rows.items():
            if base is None or mode == "sym":
                continue
            if "INCOMPLETE" in (base["verdict"], row["verdict"]):  # a capped count is no measurement
                ratios.append(f"{mode}/sym: n/a (a run stopped at --budget-states)")
            else:
                ratios.append(f"{mode}/sym: states x{row['states'] / max(base['states'], 1):.2f}, time x{row['seconds'] / max(base['seconds'], 1e-9):.2f}")
        config = next(iter(rows.values()))["config"]
        print(f"{'':8s} {'; '.join(ratios) or 'no ratio'}   [{config}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
