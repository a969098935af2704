"""Exhaustive-checker benchmark: every named configuration at its default bounds, with and
without symmetry reduction, measured side by side in one run.

    .venv/bin/python bench/bench_checker.py [--configs design,unclean,...] [--workers 2]
                                            [--budget-states N]

Prints distinct states, transitions, depth, wall time and states/s per run, and the ratio of
states and time without symmetry reduction to with it.  Runs that would exceed
``--budget-states`` distinct states stop there and are marked INCOMPLETE (so the benchmark
always ends); figures for complete runs are exact.
"""

from __future__ import annotations

import argparse
import sys
import time

from model.checker import check
from model.config import NAMED, named


def run_one(name: str, symmetry: bool, workers: int, budget: int | None, overrides: dict) -> dict:
    cfg = named(name, **overrides)
    t0 = time.perf_counter()
    r = check(cfg, symmetry=symmetry, workers=workers, max_states=budget)
    wall = time.perf_counter() - t0
    verdict = "violation: " + r.violation.property if r.violation else ("holds" if r.complete else "INCOMPLETE")
    return {"config": cfg.describe(), "name": name, "symmetry": symmetry, "states": r.states, "transitions": r.transitions, "depth": r.depth, "seconds": wall, "rate": r.states / wall if wall else 0.0, "verdict": verdict}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=",".join(NAMED))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--budget-states", type=int, default=3_000_000)
    ap.add_argument("--brokers", type=int)
    ap.add_argument("--max-crashes", type=int)
    args = ap.parse_args(argv)
    unknown = [n for n in args.configs.split(",") if n not in NAMED]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(NAMED)}")
    overrides = {"brokers": args.brokers, "max_crashes": args.max_crashes}
    print(f"{'config':8s} {'symmetry':8s} {'states':>10s} {'transitions':>12s} {'depth':>5s} {'wall s':>8s} {'states/s':>9s}  verdict")
    for name in args.configs.split(","):
        rows = []
        for symmetry in (True, False):
            row = run_one(name, symmetry, args.workers, args.budget_states, overrides)
            rows.append(row)
            print(f"{name:8s} {'on' if symmetry else 'off':8s} {row['states']:>10,} {row['transitions']:>12,} {row['depth']:>5d} {row['seconds']:>8.1f} {row['rate']:>9,.0f}  {row['verdict']}", flush=True)
        on, off = rows
        if "INCOMPLETE" in (on["verdict"], off["verdict"]):  # a capped count is no measurement
            print(f"{'':8s} ratio off/on: n/a (a run stopped at --budget-states)   [{on['config']}]", flush=True)
        else:
            print(f"{'':8s} ratio off/on: states x{off['states'] / max(on['states'], 1):.2f}, time x{off['seconds'] / max(on['seconds'], 1e-9):.2f}   [{on['config']}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
